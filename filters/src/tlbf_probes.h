// File: filters/src/tlbf_probes.h
//
// Internal to filters/: the time-limited filter's probe values, computed by differences. They are the
// values of ProbeSequence (hash.h), h1 + j h2 + (j^3 - j) / 6 mixed, with the sum before the mix stepped
// from one probe to the next by h2 + j (j + 1) / 2: additions instead of three multiplications per probe,
// which the filter pays k times per key. Equal values are pinned by tests/filters/tlbf_probes_test.cc.
#pragma once

#include <cstdint>

#include "bloomgate/filters/bit_slice.h"
#include "bloomgate/filters/hash.h"

namespace bloomgate::filters::detail {

inline Probes probes_by_differences(KeyHash key, std::uint32_t k) noexcept {
  // ProbeSequence's h2: the murmur3 64-bit finalizer of the key hash, made odd.
  std::uint64_t h2 = key.value;
  h2 ^= h2 >> 33;
  h2 *= 0xff51afd7ed558ccdULL;
  h2 ^= h2 >> 33;
  h2 *= 0xc4ceb9fe1a85ec53ULL;
  h2 ^= h2 >> 33;
  h2 |= 1U;
  Probes probes;
  std::uint64_t sum = key.value;  // h1 + j h2 + (j^3 - j) / 6, at j = 0
  std::uint64_t step = 0;         // j (j + 1) / 2: the growth of (j^3 - j) / 6 from j to j + 1
  for (std::uint32_t j = 0; j < k; ++j) {
    std::uint64_t x = sum;
    x ^= x >> 29;
    probes.value[j] = x * 0xbf58476d1ce4e5b9ULL;
    sum += h2 + step;
    step += j + 1;
  }
  return probes;
}

}  // namespace bloomgate::filters::detail
