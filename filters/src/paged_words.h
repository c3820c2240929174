// Internal: a flat array of 64-bit words split into fixed-size pages, each with a dirty mark, so that a
// checkpoint of a single-array filter (bloom, continuous, spectral) rewrites only the pages written since
// the last persist. Each page is persisted as one slice record whose id is the page index + 1.
#pragma once

#include "memory_accounting.h"
#include "popcount.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/format.h"

namespace bloomgate::filters::detail {

class PagedWords {
 public:
  static constexpr std::size_t kWordsPerPage = 8192;  // 64 KiB: small enough to rewrite, large enough to batch

  explicit PagedWords(std::size_t words = 0)
      : words_(words), dirty_((words + kWordsPerPage - 1) / kWordsPerPage, 1) {}

  std::size_t size() const noexcept { return words_.size(); }
  std::size_t pages() const noexcept { return dirty_.size(); }

  std::uint64_t operator[](std::size_t i) const noexcept { return words_[i]; }
  // Marks the page holding word i dirty and returns the word for writing.
  std::uint64_t& mut(std::size_t i) noexcept {
    dirty_[i / kWordsPerPage] = 1;
    return words_[i];
  }
  const std::uint64_t* data() const noexcept { return words_.data(); }
  // The heap bytes it holds: the words and the page marks (not the object itself).
  std::uint64_t memory_bytes() const noexcept { return heap_bytes(words_) + heap_bytes(dirty_); }

  std::uint64_t popcount() const noexcept { return popcount_words(words_.data(), words_.size()); }

  // The image of a filter whose cells are these words: its metadata record around `meta_payload`, then one
  // slice record per page (all pages, or only dirty ones).
  FilterImage image(FilterType type, ImageScope scope, std::string_view meta_payload) const {
    FilterImage image;
    image.meta = encode_record(RecordKind::kMeta, type, 0, meta_payload);
    for (std::size_t p = 0; p < pages(); ++p) {
      if (scope == ImageScope::kChangedSinceLastPersist && !dirty_[p]) continue;
      ByteWriter w;
      w.words(page(p));
      image.slices.push_back({p + 1, encode_record(RecordKind::kSlice, type, p + 1, w.take())});
    }
    return image;
  }

  // Reads every page back through `lookup`; throws FormatError when one is missing or malformed.
  void load_pages(FilterType type, const SliceViews& lookup) {
    for (std::size_t p = 0; p < pages(); ++p) {
      const auto bytes = lookup(p + 1);
      if (!bytes) throw FormatError("missing page " + std::to_string(p + 1) + " of the filter");
      const Record rec = decode_single_record(*bytes);
      if (rec.kind != RecordKind::kSlice || rec.type != type || rec.slice_id != p + 1) {
        throw FormatError("page record " + std::to_string(p + 1) + " does not belong to this filter");
      }
      ByteReader r(rec.payload);
      auto out = std::span<std::uint64_t>(words_).subspan(p * kWordsPerPage, page(p).size());
      r.words(out, "page words");
      r.expect_end("page record");
    }
    std::fill(dirty_.begin(), dirty_.end(), 0);
  }

  // Fetches and checks the last page of a `words`-word array before anything that size is allocated, so a
  // metadata record claiming a huge filter fails on a missing or short record instead of an allocation.
  static void require_last_page(FilterType type, std::uint64_t words, const SliceViews& lookup) {
    const std::uint64_t pages = (words + kWordsPerPage - 1) / kWordsPerPage;
    const std::string name = std::string(filter_type_name(type)) + " filter";
    const auto bytes = lookup(pages);
    if (!bytes) throw FormatError(name + ": missing page " + std::to_string(pages));
    const Record rec = decode_single_record(*bytes);
    const std::uint64_t last_words = words - (pages - 1) * kWordsPerPage;
    if (rec.kind != RecordKind::kSlice || rec.type != type || rec.slice_id != pages ||
        rec.payload.size() != last_words * 8) {
      throw FormatError(name + ": last page does not match the metadata");
    }
  }

  void mark_clean() noexcept { std::fill(dirty_.begin(), dirty_.end(), 0); }

 private:
  std::span<const std::uint64_t> page(std::size_t p) const noexcept {
    const std::size_t begin = p * kWordsPerPage;
    return std::span<const std::uint64_t>(words_).subspan(begin, std::min(kWordsPerPage, words_.size() - begin));
  }

  std::vector<std::uint64_t> words_;
  std::vector<std::uint8_t> dirty_;
};

}  // namespace bloomgate::filters::detail
