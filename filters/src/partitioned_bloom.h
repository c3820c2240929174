// File: partitioned_bloom.h
//
// Internal: one fixed-capacity partitioned Bloom filter (python-bloomfilter's BloomFilter: k partitions of
// m/k bits, one probe in each), the building block of BloomFilter (one of them) and ScalableBloomFilter (a growing list of them).
// Defined here and in bloom_filter.cc.
//
// Layout: k slices of slice_bits bits each, one after the other in a PagedWords array; probe j of a key
// (ProbeSequence, mapped with fast_range) sets or tests one bit of slice j. slice_bits is rounded up to
// a multiple of 64 so that every slice starts on a word and its fill can be counted word by word.
//
// Why slices have at least kMinSliceBits: fast_range keeps the high bits of h1 + j*h2 + (j^3-j)/6, so in
// a slice of m bits a key's k positions are fixed by about log2(m) high bits of h1 and log2(m*k) of h2.
// Two keys then agree on all k positions with probability about 1/(m^2 k), a floor under the FPR that
// the fill-based formula does not see. Measured (10^7 absent keys): n = 100, P = 1e-3 in 192-bit slices
// gave 3.1e-4 against 1.4e-4 expected from the fill; n = 1000, P = 1e-4 in 1408-bit slices 1.22x; from
// 4096-bit slices on the excess is within noise (n = 2990, P = 1e-4: 1.01x). The floor costs small
// filters at most k * 512 bytes.
//
// Invariants:
// - 1 <= k <= kMaxProbes, slice_bits is a multiple of 64 and at least kMinSliceBits,
//   k * slice_bits <= the caller's cap.
// - insertions counts only keys that set at least one new bit (add_if_absent is the only writer), so
//   insertions <= set bits <= k * insertions. restore_insertions() checks this against loaded bits.
//
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bloomgate/filters/format.h"
#include "bloomgate/filters/hash.h"
#include "paged_words.h"
#include "popcount.h"

namespace bloomgate::filters::detail {

// ceil(log2(1/P)) stays at or below 64 for any P >= 2^-64; tighter targets are refused.
inline constexpr std::uint32_t kMaxProbes = 64;
// See the layout note above: below this, correlated probe positions raise the FPR above the estimate.
inline constexpr std::uint64_t kMinSliceBits = 4096;

// The sizing of one partitioned filter and the fields its metadata persists for it.
struct BloomGeometry {
  std::uint64_t capacity = 0;  // n: insertions at which the FPR reaches error_rate
  double error_rate = 0;       // P
  std::uint32_t k = 0;         // probes per key = number of slices
  std::uint64_t slice_bits = 0;

  std::uint64_t slice_words() const noexcept { return slice_bits / 64; }
  std::uint64_t total_bits() const noexcept { return slice_bits * k; }
  std::uint64_t total_words() const noexcept { return slice_words() * k; }

  // d.2: k = ceil(log2(1/P)), slice_bits = ceil(n * |ln P| / (k * (ln 2)^2)) rounded up to a multiple of
  // 64, and at least kMinSliceBits. nullopt when that needs more than max_bits in total or more than
  // kMaxProbes probes.
  static std::optional<BloomGeometry> plan(std::uint64_t capacity, double error_rate, std::uint64_t max_bits);

  // Persisted as u64 capacity, f64 error_rate, u32 k, u64 slice_bits (28 bytes).
  static constexpr std::size_t kEncodedSize = 28;
  void write(ByteWriter& out) const;
  // Reads the fields and rejects (FormatError) impossible ones and any (k, slice_bits) other than what
  // plan() gives for the stored capacity and error rate, before anything is allocated from them.
  static BloomGeometry read(ByteReader& in, std::uint64_t max_bits);
};

class PartitionedBloom {
 public:
  explicit PartitionedBloom(const BloomGeometry& geometry)
      : geometry_(geometry), words_(geometry.total_words()) {}

  const BloomGeometry& geometry() const noexcept { return geometry_; }
  std::uint64_t insertions() const noexcept { return insertions_; }
  bool at_capacity() const noexcept { return insertions_ >= geometry_.capacity; }

  bool contains(KeyHash key) const noexcept {
    const ProbeSequence probes(key);
    for (std::uint32_t slice = 0; slice < geometry_.k; ++slice) {
      const BitRef bit = locate(probes, slice);
      if ((words_[bit.word] & bit.mask) == 0) return false;
    }
    return true;
  }

  // Sets the key's bits; returns true (and counts an insertion) when at least one was clear, i.e. the
  // key was absent. Only changed words mark their page dirty, so a duplicate leaves the pages clean.
  bool add_if_absent(KeyHash key) noexcept {
    const ProbeSequence probes(key);
    bool added = false;
    for (std::uint32_t slice = 0; slice < geometry_.k; ++slice) {
      const BitRef bit = locate(probes, slice);
      if ((words_[bit.word] & bit.mask) != 0) continue;
      words_.mut(bit.word) |= bit.mask;
      added = true;
    }
    if (added) ++insertions_;
    return added;
  }

  std::uint64_t set_bits() const noexcept { return words_.popcount(); }
  double fill_ratio() const noexcept;
  double slice_fill(std::uint32_t slice) const noexcept;
  // Probability that an absent key finds all k of its bits set: the product of the measured slice fills.
  double estimated_fpr() const noexcept;

  // The paged bit array, for a filter that persists it page by page.
  PagedWords& words() noexcept { return words_; }
  const PagedWords& words() const noexcept { return words_; }
  // The heap bytes it holds (its words' and page marks'), not the object itself.
  std::uint64_t memory_bytes() const noexcept { return words_.memory_bytes(); }

  // The whole bit array as little-endian words, for a filter that persists it as one record.
  std::string encode_words() const;
  // Inverse of encode_words(); the payload must be exactly total_words() words. Leaves the pages clean.
  void decode_words(std::string_view payload);

  // Sets the insertion count read from metadata once the bits are loaded; throws FormatError when it
  // cannot have produced them (see the invariants above).
  void restore_insertions(std::uint64_t insertions);

 private:
  struct BitRef {
    std::size_t word;
    std::uint64_t mask;
  };

  BitRef locate(const ProbeSequence& probes, std::uint32_t slice) const noexcept {
    const std::uint64_t bit = fast_range(probes(slice), geometry_.slice_bits);
    return {slice * geometry_.slice_words() + (bit >> 6), std::uint64_t{1} << (bit & 63U)};
  }

  BloomGeometry geometry_;
  PagedWords words_;
  std::uint64_t insertions_ = 0;
};

}  // namespace bloomgate::filters::detail
