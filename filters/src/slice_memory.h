// File: slice_memory.h
//
// Internal to filters/ (namespace detail): where the words of a restored filter's slices live.
//
// A restore builds a whole filter at once, and with 4 KiB pages every page of it costs a page fault when it
// is first written, which for a large filter takes longer than reading its bytes from the disk
// (docs/state.md has the figures). A SliceArena is one anonymous mapping, aligned to 2 MiB, that a restore
// carves all its slices from; the whole 2 MiB pages it fills are advised MADV_HUGEPAGE: where the kernel has
// transparent huge pages (mode "madvise" or "always") that is one fault per 2 MiB, elsewhere one per 4 KiB
// page. The part short of a whole huge page (all of a filter under 2 MiB) keeps 4 KiB pages, so an arena
// never holds more memory than its slices. Slices allocated later (the filter slides) come from the heap.
//
// Memory: the arena's pages go back to the kernel as its slices are dropped (MADV_DONTNEED of their
// pages); the mapping itself (address space only, by then) when the last of them is gone, which for a
// time-based filter is about one TTL after the restore.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace bloomgate::filters::detail {

class SliceArena {
 public:
  // An arena of `bytes` rounded up to a page, address space only until used; nullptr when the mapping
  // fails (the slices then come from the heap).
  static std::shared_ptr<SliceArena> create(std::size_t bytes) noexcept;
  // An arena with room for `count` allocations of `each` bytes (take() starts each on a page).
  static std::shared_ptr<SliceArena> create_for(std::size_t count, std::size_t each) noexcept;

  ~SliceArena();
  SliceArena(const SliceArena&) = delete;
  SliceArena& operator=(const SliceArena&) = delete;

  // `bytes` from the arena, starting on a page, or nullptr when it has no room left.
  void* take(std::size_t bytes) noexcept;
  bool owns(const void* p) const noexcept { return p >= base_ && p < base_ + size_; }
  // Memory take() returned: its pages go back to the kernel.
  void give_back(void* p, std::size_t bytes) noexcept;

 private:
  SliceArena(void* mapping, std::size_t mapping_size, char* base, std::size_t size) noexcept
      : mapping_(mapping), mapping_size_(mapping_size), base_(base), size_(size) {}

  void* mapping_;
  std::size_t mapping_size_;
  char* base_;
  std::size_t size_;
  std::size_t used_ = 0;
};

// The allocator of a slice's words: from its arena while there is room (a restored slice), else from the
// heap (std::allocator). A copy of a slice gets the heap; a move keeps the arena.
template <typename T>
class WordAllocator {
 public:
  using value_type = T;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using is_always_equal = std::false_type;

  WordAllocator() noexcept = default;
  explicit WordAllocator(std::shared_ptr<SliceArena> arena) noexcept : arena_(std::move(arena)) {}
  WordAllocator(const WordAllocator&) noexcept = default;  // no separate move: a moved-from one keeps its arena
  WordAllocator& operator=(const WordAllocator&) noexcept = default;
  template <typename U>
  WordAllocator(const WordAllocator<U>& other) noexcept : arena_(other.arena_) {}  // NOLINT: rebinding

  T* allocate(std::size_t n) {
    if (arena_ && n <= SIZE_MAX / sizeof(T)) {
      if (void* p = arena_->take(n * sizeof(T))) return static_cast<T*>(p);
    }
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (arena_ && arena_->owns(p)) {
      arena_->give_back(p, n * sizeof(T));
    } else {
      std::allocator<T>().deallocate(p, n);
    }
  }

  WordAllocator select_on_container_copy_construction() const noexcept { return WordAllocator(); }

  friend bool operator==(const WordAllocator& a, const WordAllocator& b) noexcept { return a.arena_ == b.arena_; }

 private:
  template <typename>
  friend class WordAllocator;
  std::shared_ptr<SliceArena> arena_;
};

using Words = std::vector<std::uint64_t, WordAllocator<std::uint64_t>>;

}  // namespace bloomgate::filters::detail
