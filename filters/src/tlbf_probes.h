// File: filters/src/tlbf_probes.h
//
// Internal to filters/: the time-limited filter's probe values, computed by differences. They are the
// values of ProbeSequence (hash.h), h1 + j h2 + (j^3 - j) / 6 mixed, with the sum before the mix stepped
// from one probe to the next: additions instead of three multiplications per probe, which the filter pays
// k times per key. Upwards (probes_by_differences, every value into an array) the sum grows by
// h2 + j (j + 1) / 2 from j to j + 1; downwards (DescendingProbes, one value at a time, in the order of the
// phase tables) it shrinks by h2 + j (j - 1) / 2 from j to j - 1. Equal values are pinned by
// tests/filters/tlbf_probes_test.cc.
#pragma once

#include <array>
#include <cstdint>

#include "bit_slice.h"
#include "bloomgate/filters/hash.h"

namespace bloomgate::filters::detail {

// ProbeSequence's h2: the murmur3 64-bit finalizer of the key hash, made odd.
inline std::uint64_t second_probe_hash(KeyHash key) noexcept {
  std::uint64_t h2 = key.value;
  h2 ^= h2 >> 33;
  h2 *= 0xff51afd7ed558ccdULL;
  h2 ^= h2 >> 33;
  h2 *= 0xc4ceb9fe1a85ec53ULL;
  h2 ^= h2 >> 33;
  return h2 | 1U;
}

// ProbeSequence's value from the sum before the mix: (sum ^ sum >> kProbeMixShift) * kProbeMix.
inline constexpr unsigned kProbeMixShift = 29;
inline constexpr std::uint64_t kProbeMix = 0xbf58476d1ce4e5b9ULL;
inline std::uint64_t mixed_probe(std::uint64_t sum) noexcept {
  sum ^= sum >> kProbeMixShift;
  return sum * kProbeMix;
}

// Writes value[0..k) in place: returning the array would copy all kMaxProbes words per key.
inline void probes_by_differences(KeyHash key, std::uint32_t k, Probes& probes) noexcept {
  const std::uint64_t h2 = second_probe_hash(key);
  std::uint64_t sum = key.value;  // h1 + j h2 + (j^3 - j) / 6, at j = 0
  std::uint64_t step = 0;         // j (j + 1) / 2: the growth of (j^3 - j) / 6 from j to j + 1
  for (std::uint32_t j = 0; j < k; ++j) {
    probes.value[j] = mixed_probe(sum);
    sum += h2 + step;
    step += j + 1;
  }
}

// (j^3 - j) / 6 and j (j - 1) / 2 for every hash index, so that a descent starts with one multiplication.
struct DescentOffsets {
  std::uint64_t cubic = 0;
  std::uint64_t triangle = 0;
};
inline constexpr std::array<DescentOffsets, kMaxProbes> kDescentOffsets = [] {
  std::array<DescentOffsets, kMaxProbes> offsets{};
  for (std::uint64_t j = 1; j < kMaxProbes; ++j) offsets[j] = {(j * j * j - j) / 6, j * (j - 1) / 2};
  return offsets;
}();

// The values of hash indexes j, j - 1, j - 2, ... in that order (j < kMaxProbes), from one multiplication
// at j.
class DescendingProbes {
 public:
  DescendingProbes(KeyHash key, std::uint64_t h2, std::uint64_t j) noexcept
      : sum_(key.value + j * h2 + kDescentOffsets[j].cubic), drop_(h2 + kDescentOffsets[j].triangle), index_(j) {}
  std::uint64_t value() const noexcept { return mixed_probe(sum_); }
  void step_down() noexcept {
    sum_ -= drop_;
    --index_;
    drop_ -= index_;
  }

 private:
  std::uint64_t sum_;    // h1 + j h2 + (j^3 - j) / 6
  std::uint64_t drop_;   // h2 + j (j - 1) / 2: the sum at j less the sum at j - 1
  std::uint64_t index_;  // j
};

// A key's probe values, computed when first asked for: the one-segment query in cache steps through the
// values it needs itself (ColumnSegment::locate_any_run), so most keys never fill the array.
class KeyProbes {
 public:
  KeyProbes() noexcept = default;  // for arrays of keys ahead; assigned before use
  KeyProbes(KeyHash key, std::uint32_t k) noexcept : key_(key), k_(k) {}
  // Makes these the probes of `key`, without copying the value array (a batch reuses its slots this way).
  void assign(KeyHash key, std::uint32_t k) noexcept {
    key_ = key;
    k_ = k;
    computed_ = false;
  }
  KeyHash key() const noexcept { return key_; }
  const Probes& values() const noexcept {
    if (!computed_) {
      probes_by_differences(key_, k_, values_);
      computed_ = true;
    }
    return values_;
  }

 private:
  KeyHash key_{};
  std::uint32_t k_ = 0;
  mutable bool computed_ = false;
  mutable Probes values_;
};

}  // namespace bloomgate::filters::detail
