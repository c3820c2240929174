#include "zeroed_words.h"

#include <sys/mman.h>

#include <cstring>
#include <new>
#include <utility>

#include "huge_page_allocator.h"

namespace bloomgate::filters::detail {
namespace {

std::size_t round_up(std::size_t n, std::size_t to) noexcept { return (n + to - 1) / to * to; }

}  // namespace

ZeroedWords::ZeroedWords(std::size_t count) : count_(count) {
  if (count > SIZE_MAX / sizeof(std::uint64_t) - kHugePageBytes) throw std::bad_alloc();
  const std::size_t bytes = count * sizeof(std::uint64_t);
  if (bytes < kHugePageBytes) {
    words_ = static_cast<std::uint64_t*>(::operator new(bytes == 0 ? 1 : bytes, std::align_val_t{kSmallAlign}));
    std::memset(words_, 0, bytes);
    return;
  }
  // One huge page more than needed, so that the words can start on a 2 MiB boundary; the slack before and
  // after them is address space only.
  const std::size_t mapping_bytes = round_up(bytes, kHugePageBytes) + kHugePageBytes;
  void* mapping = ::mmap(nullptr, mapping_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) throw std::bad_alloc();
  mapping_ = mapping;
  mapping_bytes_ = mapping_bytes;
  const auto start = reinterpret_cast<std::uintptr_t>(mapping);
  words_ = reinterpret_cast<std::uint64_t*>(round_up(start, kHugePageBytes));
  // Huge pages only for whole ones: the part past the last keeps small pages (also where the system's mode
  // is "always"), as HugePageAllocator's buffers did, so no segment holds up to 2 MiB more than its cells.
  const std::size_t huge = bytes / kHugePageBytes * kHugePageBytes;
  (void)::madvise(words_, huge, MADV_HUGEPAGE);  // refused without THP: small pages then
  if (bytes > huge) (void)::madvise(reinterpret_cast<char*>(words_) + huge, bytes - huge, MADV_NOHUGEPAGE);
#ifdef MADV_POPULATE_WRITE
  (void)::madvise(words_, bytes, MADV_POPULATE_WRITE);  // the kernel rounds the length up to a page
#endif
}

ZeroedWords::~ZeroedWords() { release(); }

ZeroedWords::ZeroedWords(ZeroedWords&& other) noexcept
    : words_(std::exchange(other.words_, nullptr)),
      count_(std::exchange(other.count_, 0)),
      mapping_(std::exchange(other.mapping_, nullptr)),
      mapping_bytes_(std::exchange(other.mapping_bytes_, 0)) {}

ZeroedWords::ZeroedWords(const ZeroedWords& other) : ZeroedWords(other.count_) {
  if (count_ > 0) std::memcpy(words_, other.words_, count_ * sizeof(std::uint64_t));
}

ZeroedWords& ZeroedWords::operator=(const ZeroedWords& other) {
  if (this != &other) *this = ZeroedWords(other);
  return *this;
}

ZeroedWords& ZeroedWords::operator=(ZeroedWords&& other) noexcept {
  if (this != &other) {
    release();
    words_ = std::exchange(other.words_, nullptr);
    count_ = std::exchange(other.count_, 0);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
  }
  return *this;
}

void ZeroedWords::release() noexcept {
  if (mapping_bytes_ != 0) {
    ::munmap(mapping_, mapping_bytes_);
  } else if (words_ != nullptr) {
    ::operator delete(words_, std::align_val_t{kSmallAlign});
  }
  words_ = nullptr;
  mapping_ = nullptr;
  mapping_bytes_ = 0;
  count_ = 0;
}

}  // namespace bloomgate::filters::detail
