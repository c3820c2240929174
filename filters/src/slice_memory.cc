#include "slice_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace bloomgate::filters::detail {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

std::size_t page_size() noexcept {
  static const std::size_t size = [] {
    const long page = ::sysconf(_SC_PAGESIZE);
    return page > 0 ? static_cast<std::size_t>(page) : std::size_t{4096};
  }();
  return size;
}

std::size_t round_up(std::size_t n, std::size_t to) noexcept { return (n + to - 1) / to * to; }

}  // namespace

std::shared_ptr<SliceArena> SliceArena::create(std::size_t bytes) noexcept {
  if (bytes == 0 || bytes > (std::size_t{1} << 40)) return nullptr;
  const std::size_t size = round_up(bytes, page_size());
  // One huge page more than needed, so that the arena can start on a 2 MiB boundary; the slack is never
  // touched (address space only).
  const std::size_t mapping_size = size + kHugePage;
  void* mapping = ::mmap(nullptr, mapping_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                         -1, 0);
  if (mapping == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(mapping);
  char* base = static_cast<char*>(mapping) + (round_up(start, kHugePage) - start);
  // Huge pages only where the arena fills them: a filter smaller than 2 MiB, or the last part of a larger
  // one, keeps 4 KiB pages, so no restore holds up to 2 MiB more than its slices (MADV_NOHUGEPAGE for
  // that part, in case the system's mode is "always").
  const std::size_t huge = size / kHugePage * kHugePage;
#ifdef MADV_HUGEPAGE
  if (huge > 0) (void)::madvise(base, huge, MADV_HUGEPAGE);  // refused without THP: 4 KiB pages then
#endif
#ifdef MADV_NOHUGEPAGE
  if (size > huge) (void)::madvise(base + huge, size - huge, MADV_NOHUGEPAGE);
#endif
  try {
    return std::shared_ptr<SliceArena>(new SliceArena(mapping, mapping_size, base, size));
  } catch (...) {
    ::munmap(mapping, mapping_size);
    return nullptr;
  }
}

std::shared_ptr<SliceArena> SliceArena::create_for(std::size_t count, std::size_t each) noexcept {
  const std::size_t rounded = round_up(each == 0 ? 1 : each, page_size());
  if (count == 0 || count > (std::size_t{1} << 40) / rounded) return nullptr;
  return create(count * rounded);
}

SliceArena::~SliceArena() { ::munmap(mapping_, mapping_size_); }

void* SliceArena::take(std::size_t bytes) noexcept {
  const std::size_t rounded = round_up(bytes == 0 ? 1 : bytes, page_size());
  if (rounded > size_ - used_) return nullptr;
  void* p = base_ + used_;
  used_ += rounded;
  return p;
}

void SliceArena::give_back(void* p, std::size_t bytes) noexcept {
  // The chunk starts on a page and owns its pages up to the next page boundary (take()).
  (void)::madvise(p, round_up(bytes == 0 ? 1 : bytes, page_size()), MADV_DONTNEED);
}

}  // namespace bloomgate::filters::detail
