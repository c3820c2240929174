// File: huge_page_allocator.h
//
// Internal to filters/ (namespace detail), used by bench/ so the baselines get the memory a segment's
// cells get (zeroed_words.h, which also uses the constants below).
// An allocator for bit arrays: a buffer of at least one huge page (2 MiB) is aligned to 2 MiB and
// madvise(MADV_HUGEPAGE)d, so the kernel backs it with transparent huge pages where it can. A filter of
// 256 MiB spans 65,536 small pages, far more than the TLB holds, and every random probe would add a page
// walk to its cache miss; it spans only 128 huge pages. Smaller buffers come from operator new. Where
// huge pages are unavailable madvise fails harmlessly and the buffer uses small pages.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace bloomgate::filters::detail {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
// Smaller buffers start on a cache line, so data laid out by lines (column_segment.h) stays on them.
inline constexpr std::size_t kSmallAlign = 64;

template <typename T>
struct HugePageAllocator {
  using value_type = T;

  HugePageAllocator() noexcept = default;
  template <typename U>
  explicit HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHugePageBytes) return static_cast<T*>(::operator new(bytes, std::align_val_t{kSmallAlign}));
    void* p = nullptr;
    // No rounding of the size: the tail beyond the last whole huge page keeps small pages, not 2 MiB of waste.
    if (posix_memalign(&p, kHugePageBytes, bytes) != 0) throw std::bad_alloc();
    ::madvise(p, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
    return static_cast<T*>(p);
  }

  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) < kHugePageBytes) {
      ::operator delete(p, std::align_val_t{kSmallAlign});
    } else {
      std::free(p);
    }
  }

  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) noexcept { return true; }
};

}  // namespace bloomgate::filters::detail
