// File: bench/exact_ttl_set.h
//
// Baseline for filter_bench: the exact TTL set people write by hand, a std::unordered_map from the key's
// 64-bit hash to the time it was last recorded, with expiry checked on lookup and a periodic sweep that
// erases every entry older than the TTL. No false positives and no false negatives; memory grows with the
// number of distinct keys in the window (plus whatever the sweep has not yet erased).
//
// Semantics match the filters' default (refresh_on_duplicate = false): a key seen within the TTL of its
// recorded time is a duplicate and its time is left alone; otherwise the sighting is recorded.
//
// Memory is measured, not estimated: the map allocates through CountingAllocator, which takes memory from
// malloc and counts malloc_usable_size(p) plus one 8-byte chunk header per allocation (glibc's malloc
// layout), so buckets, nodes and the allocator's rounding are all included. The map and set objects
// themselves (a few dozen bytes) are not. On a C library without malloc_usable_size the requested bytes
// plus 16 per allocation are counted instead.
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <new>
#include <unordered_map>
#include <utility>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace bloomgate::bench {

// Bytes currently held by the allocations of one container.
struct MemoryCounter {
  std::uint64_t bytes = 0;
  std::uint64_t allocations = 0;
};

template <typename T>
class CountingAllocator {
 public:
  using value_type = T;

  explicit CountingAllocator(MemoryCounter* counter) noexcept : counter_(counter) {}
  template <typename U>
  CountingAllocator(const CountingAllocator<U>& other) noexcept : counter_(other.counter()) {}  // NOLINT

  T* allocate(std::size_t n) {
    void* p = std::malloc(n * sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    counter_->bytes += footprint(p, n);
    ++counter_->allocations;
    return static_cast<T*>(p);
  }

  void deallocate(T* p, std::size_t n) noexcept {
    counter_->bytes -= footprint(p, n);
    --counter_->allocations;
    std::free(p);
  }

  MemoryCounter* counter() const noexcept { return counter_; }

  template <typename U>
  friend bool operator==(const CountingAllocator& a, const CountingAllocator<U>& b) noexcept {
    return a.counter() == b.counter();
  }

 private:
  static std::uint64_t footprint([[maybe_unused]] void* p, [[maybe_unused]] std::size_t n) noexcept {
#if defined(__GLIBC__)
    return static_cast<std::uint64_t>(malloc_usable_size(p)) + 8U;
#else
    return static_cast<std::uint64_t>(n * sizeof(T)) + 16U;
#endif
  }

  MemoryCounter* counter_;
};

class ExactTtlSet {
 public:
  // `sweep_interval`: how often (in the caller's time) the whole map is scanned for expired entries.
  ExactTtlSet(std::int64_t ttl_ns, std::int64_t sweep_interval_ns)
      : ttl_ns_(ttl_ns), sweep_interval_ns_(sweep_interval_ns), map_(Allocator(&memory_)) {}

  ExactTtlSet(const ExactTtlSet&) = delete;
  ExactTtlSet& operator=(const ExactTtlSet&) = delete;

  // Returns true when the key was recorded within the TTL before `now_ns`; records it otherwise.
  bool test_and_insert(std::uint64_t key, std::int64_t now_ns) {
    if (now_ns - last_sweep_ns_ >= sweep_interval_ns_) sweep(now_ns);
    auto [it, inserted] = map_.try_emplace(key, now_ns);
    if (inserted) return false;
    if (now_ns - it->second <= ttl_ns_) return true;
    it->second = now_ns;  // expired: a new sighting
    return false;
  }

  bool contains(std::uint64_t key, std::int64_t now_ns) const {
    const auto it = map_.find(key);
    return it != map_.end() && now_ns - it->second <= ttl_ns_;
  }

  // Erases every entry older than the TTL.
  void sweep(std::int64_t now_ns) {
    std::erase_if(map_, [&](const auto& entry) { return now_ns - entry.second > ttl_ns_; });
    last_sweep_ns_ = now_ns;
  }

  std::size_t size() const noexcept { return map_.size(); }
  std::size_t bucket_count() const noexcept { return map_.bucket_count(); }
  // Heap bytes held by the map: buckets and nodes, with malloc's rounding and chunk headers.
  std::uint64_t bytes() const noexcept { return memory_.bytes; }

 private:
  using Allocator = CountingAllocator<std::pair<const std::uint64_t, std::int64_t>>;
  using Map = std::unordered_map<std::uint64_t, std::int64_t, std::hash<std::uint64_t>,
                                 std::equal_to<std::uint64_t>, Allocator>;

  std::int64_t ttl_ns_;
  std::int64_t sweep_interval_ns_;
  std::int64_t last_sweep_ns_ = 0;
  MemoryCounter memory_;  // declared before map_: the map's destructor still reports to it
  Map map_;
};

}  // namespace bloomgate::bench
