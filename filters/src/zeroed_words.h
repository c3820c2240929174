// File: zeroed_words.h
//
// Internal to filters/ (namespace detail): the zero-filled words of a column segment (column_segment.h).
//
// The cells are never memset where the kernel already zeroes them (a memset would repeat that work on the
// thread that waits for the cells; docs/state.md has the figures): a buffer of at least one huge page
// (2 MiB) is a fresh anonymous mapping, zero by the kernel's guarantee and never written here, aligned to
// 2 MiB and advised MADV_HUGEPAGE (huge_page_allocator.h says why); its pages are then faulted in at once
// with MADV_POPULATE_WRITE, which takes the kernel's zeroing without a write of our own (where the kernel
// lacks it, Linux < 5.14, the pages fault on first use, zero all the same). Smaller buffers come from
// operator new and are zeroed with a memset.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bloomgate::filters::detail {

class ZeroedWords {
 public:
  ZeroedWords() noexcept = default;
  // `count` words, all zero, the first on a 64-byte line; throws std::bad_alloc.
  explicit ZeroedWords(std::size_t count);
  ~ZeroedWords();
  ZeroedWords(ZeroedWords&& other) noexcept;
  ZeroedWords& operator=(ZeroedWords&& other) noexcept;
  // A copy (of a segment, ColumnSegment's tests) has memory of its own, allocated as above.
  ZeroedWords(const ZeroedWords& other);
  ZeroedWords& operator=(const ZeroedWords& other);

  std::uint64_t* data() noexcept { return words_; }
  const std::uint64_t* data() const noexcept { return words_; }
  std::size_t size() const noexcept { return count_; }
  std::uint64_t& operator[](std::size_t i) noexcept { return words_[i]; }
  std::uint64_t operator[](std::size_t i) const noexcept { return words_[i]; }
  bool mapped() const noexcept { return mapping_bytes_ != 0; }  // a mapping of its own, not the heap
  // The memory the words take: their bytes, rounded up to a 4 KiB page when mapped (every page of the
  // words is faulted in; the rest of the mapping is address space only).
  std::uint64_t memory_bytes() const noexcept {
    const std::uint64_t bytes = static_cast<std::uint64_t>(count_) * sizeof(std::uint64_t);
    return mapped() ? (bytes + 4095) / 4096 * 4096 : bytes;
  }

 private:
  void release() noexcept;

  std::uint64_t* words_ = nullptr;
  std::size_t count_ = 0;
  void* mapping_ = nullptr;       // the whole mapping, when mapped()
  std::size_t mapping_bytes_ = 0;
};

}  // namespace bloomgate::filters::detail
