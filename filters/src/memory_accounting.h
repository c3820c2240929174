// Internal to filters/ (namespace detail): the heap bytes a container holds, for FilterStats::memory_bytes
// (every byte a filter holds). A filter's stats() adds its object's size and these for each container it
// owns, element objects included; what each element allocates in turn it adds itself.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <cstdint>
#include <deque>
#include <vector>

#if !defined(__GLIBCXX__)
#error "heap_bytes(std::deque) reads libstdc++'s deque iterators"
#endif

namespace bloomgate::filters::detail {

// A vector's allocation: its capacity, not its size.
template <typename T, typename Allocator>
std::uint64_t heap_bytes(const std::vector<T, Allocator>& v) noexcept {
  return static_cast<std::uint64_t>(v.capacity()) * sizeof(T);
}

// The size of a deque's map of node pointers. libstdc++ keeps the map and its size as the first two words
// of the deque (_Deque_impl: _M_map, _M_map_size, then the two iterators), in a base the deque hides; they
// are read as such, and used only when the deque's first and last nodes lie within that map. Otherwise, the
// map libstdc++ starts with: the nodes plus two, at least 8.
template <typename T, typename Allocator>
std::uint64_t deque_map_entries(const std::deque<T, Allocator>& d) noexcept {
  using Map = decltype(d.begin()._M_node);
  static_assert(sizeof(d) == 2 * sizeof(Map) + 2 * sizeof(d.begin()), "not libstdc++'s deque layout");
  Map map = nullptr;
  std::size_t map_size = 0;
  std::memcpy(&map, &d, sizeof map);
  std::memcpy(&map_size, reinterpret_cast<const char*>(&d) + sizeof map, sizeof map_size);
  const auto first = d.begin()._M_node;
  const auto last = d.end()._M_node;
  if (map != nullptr && first >= map && last < map + map_size) return map_size;
  return std::max<std::uint64_t>(8, static_cast<std::uint64_t>(last - first) + 3);
}

// A deque's allocation as libstdc++ lays it out: nodes of 512 bytes (one element when an element is
// larger), from the node of its first element to that of its end, and its map of node pointers.
template <typename T, typename Allocator>
std::uint64_t heap_bytes(const std::deque<T, Allocator>& d) noexcept {
  constexpr std::uint64_t kNodeBytes = 512;
  constexpr std::uint64_t per_node = sizeof(T) < kNodeBytes ? kNodeBytes / sizeof(T) : 1;
  const auto nodes = static_cast<std::uint64_t>(d.end()._M_node - d.begin()._M_node) + 1;
  return nodes * per_node * sizeof(T) + deque_map_entries(d) * sizeof(T*);
}

}  // namespace bloomgate::filters::detail
