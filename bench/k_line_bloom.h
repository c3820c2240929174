// File: bench/k_line_bloom.h
//
// Baseline for filter_bench: the memory floor of any filter that reads k independent cache lines per key.
// A classic Bloom filter with k probes, each in its own 64-byte line, all k lines requested before any is
// read, and set when one was missing. That is the time-limited filter's row path (column_segment.h: k
// rows, one line each, prefetched together, then matched and set) with none of its other work: no window
// search, no validity, no generations.
//
// Why it is measured: the out-of-cache target (4 x the split-block filter) is a ratio against one
// line per key. A time-limited filter at its bits-per-element target needs k of 12 / 16 / 20 at 1e-2 /
// 1e-3 / 1e-4 (levels 5-6 of the (k, l) table, docs/filters.md, "False-positive model"), and its k bits
// cannot share lines without the blocked-Bloom FPR penalty (docs/filters.md, "The floor of k lines"). So
// this filter, timed on the same stream and the same memory, is how fast the time-limited filter could be
// if all its own work cost nothing, and its ratio to the split-block filter says whether 4 x is reachable
// on this machine at all.
//
// Positions: line fast_range(probe_j, lines) from the high bits of the key's j-th probe (the same
// ProbeSequence as the filters), bit probe_j mod 512 in it from the low bits. Thread-safety: none.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "bit_slice.h"
#include "bloomgate/filters/hash.h"
#include "huge_page_allocator.h"

namespace bloomgate::bench {

class KLineBloom {
 public:
  static constexpr std::uint64_t kLineWords = 8;

  // `bytes` of lines (at least one), `k` probes per key (1 .. kMaxProbes).
  KLineBloom(std::uint64_t bytes, std::uint32_t k)
      : k_(k), lines_(bytes / 64 == 0 ? 1 : bytes / 64), words_(lines_ * kLineWords, 0) {}

  // Returns true when all k bits of the key were already set; sets them either way.
  bool test_and_insert(std::uint64_t hash) noexcept {
    const filters::detail::Probes probes(filters::KeyHash{hash}, k_);
    std::array<std::uint64_t*, filters::detail::kMaxProbes> word;
    std::array<std::uint64_t, filters::detail::kMaxProbes> mask;
    for (std::uint32_t j = 0; j < k_; ++j) {
      const std::uint64_t line = filters::fast_range(probes.value[j], lines_);
      const std::uint64_t bit = probes.value[j] % 512;
      word[j] = &words_[line * kLineWords + bit / 64];
      mask[j] = std::uint64_t{1} << (bit % 64);
      __builtin_prefetch(word[j]);
    }
    std::uint64_t missing = 0;
    for (std::uint32_t j = 0; j < k_; ++j) missing |= mask[j] & ~*word[j];
    if (missing != 0) {
      for (std::uint32_t j = 0; j < k_; ++j) *word[j] |= mask[j];
    }
    return missing == 0;
  }

  std::uint32_t k() const noexcept { return k_; }
  std::uint64_t bytes() const noexcept { return lines_ * 64; }

 private:
  std::uint32_t k_;
  std::uint64_t lines_;
  // The same allocator as the time-limited filter's segments and the split-block filter: the same page walks.
  std::vector<std::uint64_t, filters::detail::HugePageAllocator<std::uint64_t>> words_;
};

}  // namespace bloomgate::bench
