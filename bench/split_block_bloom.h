// File: bench/split_block_bloom.h
//
// Baseline for filter_bench: a split-block Bloom filter (SBBF), the layout of Putze, Sanders and Singler's
// blocked Bloom filter as specialised by Impala, Kudu and Parquet ("Parquet SBBF"). It is the speed limit of
// any Bloom filter: every key touches exactly one 256-bit block, i.e. one cache line, and never a second.
//
// Layout: an array of 256-bit blocks, each eight 32-bit lanes. A key's 64-bit hash picks its block with a
// multiply-shift over the high bits (bloomgate::filters::fast_range) and sets one bit in each lane (k = 8):
// lane i gets bit (uint32(hash) * kSalt[i]) >> 27, with the eight odd salts of the Parquet specification.
//
// Sizing: the false-positive rate of a block holding i keys is (1 - (31/32)^i)^8, and the number of keys per
// block is Poisson with mean 256 / bits_per_key, so fpr(bits_per_key) = sum_i Poisson(i) (1 - (31/32)^i)^8.
// bits_per_key_for(eps) inverts it by bisection: 10.5 bits per key at 1e-2, 16.9 at 1e-3, 26.3 at 1e-4.
//
// Scalar code on purpose: the eight lanes are plain loops the compiler may vectorise with SSE2; no AVX is
// required. There is no notion of time: the filter remembers every key it was given.
// Thread-safety: none.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "bit_slice.h"
#include "bloomgate/filters/hash.h"
#include "huge_page_allocator.h"

namespace bloomgate::bench {

class SplitBlockBloom {
 public:
  static constexpr std::uint32_t kLanes = 8;
  static constexpr std::uint32_t kBlockBits = 256;

  // Expected false-positive rate at `bits_per_key` bits per inserted key (see the file comment).
  static double fpr(double bits_per_key) {
    const double lambda = kBlockBits / bits_per_key;  // mean keys per block
    const auto last = static_cast<int>(lambda + 12.0 * std::sqrt(lambda) + 64.0);
    double sum = 0;
    double log_poisson = -lambda;  // log P(0)
    for (int i = 0; i <= last; ++i) {
      if (i > 0) log_poisson += std::log(lambda) - std::log(static_cast<double>(i));
      const double lane_set = 1.0 - std::pow(31.0 / 32.0, i);
      sum += std::exp(log_poisson) * std::pow(lane_set, static_cast<double>(kLanes));
    }
    return sum;
  }

  // The bits per key at which fpr() equals `error_rate` (bisection; fpr falls as bits grow).
  static double bits_per_key_for(double error_rate) {
    double lo = 1.0;
    double hi = 256.0;
    for (int iteration = 0; iteration < 100; ++iteration) {
      const double mid = 0.5 * (lo + hi);
      if (fpr(mid) > error_rate) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return hi;
  }

  // A filter for `expected_keys` keys at `error_rate`: ceil(expected_keys * bits_per_key / 256) blocks.
  SplitBlockBloom(std::uint64_t expected_keys, double error_rate)
      : blocks_(block_count(expected_keys, error_rate)) {}

  // Returns true when all eight bits of the key were already set; sets them either way.
  bool test_and_insert(std::uint64_t hash) noexcept {
    Block& block = blocks_[block_index(hash)];
    const std::array<std::uint32_t, kLanes> m = mask(hash);
    std::uint32_t missing = 0;
    for (std::uint32_t i = 0; i < kLanes; ++i) {
      missing |= m[i] & ~block.lanes[i];
      block.lanes[i] |= m[i];
    }
    insertions_ += missing != 0 ? 1U : 0U;
    return missing == 0;
  }

  // test_and_insert of every key in order, with the same lookahead as the filters' batches
  // (filters::detail::kBatchLookahead): each key's block is requested that many keys early.
  void test_and_insert_batch(std::span<const filters::KeyHash> keys, std::span<bool> present) noexcept {
    constexpr std::size_t kAhead = filters::detail::kBatchLookahead;
    for (std::size_t i = 0; i < std::min(kAhead, keys.size()); ++i) prefetch(keys[i].value);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (i + kAhead < keys.size()) prefetch(keys[i + kAhead].value);
      present[i] = test_and_insert(keys[i].value);
    }
  }

  bool contains(std::uint64_t hash) const noexcept {
    const Block& block = blocks_[block_index(hash)];
    const std::array<std::uint32_t, kLanes> m = mask(hash);
    std::uint32_t missing = 0;
    for (std::uint32_t i = 0; i < kLanes; ++i) missing |= m[i] & ~block.lanes[i];
    return missing == 0;
  }

  std::uint64_t bits() const noexcept { return static_cast<std::uint64_t>(blocks_.size()) * kBlockBits; }
  // Keys that changed the filter (test_and_insert returned false).
  std::uint64_t insertions() const noexcept { return insertions_; }

 private:
  struct alignas(32) Block {
    std::array<std::uint32_t, kLanes> lanes{};
  };

  static constexpr std::array<std::uint32_t, kLanes> kSalt = {0x47b6137bU, 0x44974d91U, 0x8824ad5bU,
                                                              0xa2b7289dU, 0x705495c7U, 0x2df1424bU,
                                                              0x9efc4947U, 0x5c6bfb31U};

  static std::size_t block_count(std::uint64_t expected_keys, double error_rate) {
    const double blocks = std::ceil(static_cast<double>(expected_keys) * bits_per_key_for(error_rate) / kBlockBits);
    return blocks < 1.0 ? 1U : static_cast<std::size_t>(blocks);
  }

  void prefetch(std::uint64_t hash) const noexcept { __builtin_prefetch(&blocks_[block_index(hash)]); }

  std::size_t block_index(std::uint64_t hash) const noexcept {
    return static_cast<std::size_t>(filters::fast_range(hash, blocks_.size()));
  }

  static std::array<std::uint32_t, kLanes> mask(std::uint64_t hash) noexcept {
    const auto low = static_cast<std::uint32_t>(hash);
    std::array<std::uint32_t, kLanes> m{};
    for (std::uint32_t i = 0; i < kLanes; ++i) m[i] = std::uint32_t{1} << ((low * kSalt[i]) >> 27);
    return m;
  }

  // The same allocator as the time-limited filter's segments, so out of cache both pay the same page walks.
  std::vector<Block, filters::detail::HugePageAllocator<Block>> blocks_;
  std::uint64_t insertions_ = 0;
};

}  // namespace bloomgate::bench
