// File: fpr.h
//
// The false-positive mathematics of the age-partitioned family (docs/filters.md, "False-positive model"), kept apart
// from any bit layout so the sizing policy, the statistics and the tests share one implementation.
#pragma once

#include <cstdint>
#include <span>

#include "bloomgate/filters/filter_types.h"

namespace bloomgate::filters {

// A (k, l) configuration: a key must match k consecutive slices; l extra slices hold aged data.
struct SlicedParams {
  std::uint32_t k = 0;
  std::uint32_t l = 0;
  friend bool operator==(SlicedParams, SlicedParams) = default;
};

// Levels 0..kMaxTableLevel are the rows of the (k, l) table (docs/filters.md, "False-positive model"); kMaxLevel
// (filter_types.h) goes one k further by the table's own rule (see choose_sliced_params): at 1e-3 and 1e-4 it
// needs fewer bits per key than level 5.

// The (k, l) pair for an error rate and a level (0..6). For the error rates of the (k, l) table, 1e-1 .. 1e-5
// (docs/filters.md, "False-positive model"), and levels 0..5 the table's pairs are returned as they are,
// unless their worst-case FPR (apbf_fpr) is more than 5% over eps (level 0 at 1e-2, 1e-3 and 1e-5).
// Otherwise: k = ceil(log2(1/eps)) + level, and l the largest value whose worst-case FPR stays at or below eps.
SlicedParams choose_sliced_params(double error_rate, std::uint32_t level);

// The level whose (k, l) takes the fewest bits per key in the window: k (k + l + 1) / (l ln 2), i.e.
// k+l slices of k·g/ln 2 bits for l·g keys, plus the one slice a steady time-limited filter often holds
// beyond k+l (a slide keeps the oldest slice while it is not quite expired). The FPR is at or below eps at
// every level, so this trades only probes per query for memory.
std::uint32_t space_optimal_level(double error_rate);

// Worst-case FPR of an age-partitioned filter, just before a shift, with the linear fill model
// r_i = (i+1)/(2k) in the insertion region and 1/2 in the aged region.
double apbf_fpr(SlicedParams params);

// The same recursion over an arbitrary slice sequence, newest first: `fill[i]` is the
// probability that slice i has the probed bit set (0 for an expired slice). A key is reported present when
// k consecutive slices match.
double sliced_fpr(std::uint32_t k, std::span<const double> fill);

// Bits of a slice that takes `insertions` keys and should reach fill ratio 1/2: ceil(insertions / ln 2),
// rounded up to whole 64-bit words, at least `min_bits`.
std::uint64_t half_fill_slice_bits(double insertions, std::uint64_t min_bits);

// Capacity of a slice of `bits` bits: floor(bits * ln 2), the insertions that bring its fill to 1/2.
std::uint64_t half_fill_capacity(std::uint64_t bits);

}  // namespace bloomgate::filters
