#include "bloomgate/filters/fpr.h"

#include <array>
#include <cmath>
#include <limits>
#include <vector>

namespace bloomgate::filters {
namespace {

// RedisBloom's (k, l) pairs for error 1e-1 .. 1e-5 (rows) and levels 0..5.
// Error 1e-1 has no level 5 in the source; level 4 stands in for it.
constexpr std::array<std::array<SlicedParams, 6>, 5> kTable = {{
    {{{4, 3}, {5, 7}, {6, 14}, {7, 28}, {8, 56}, {8, 56}}},
    {{{7, 5}, {8, 8}, {9, 14}, {10, 25}, {11, 46}, {12, 88}}},
    {{{10, 7}, {11, 9}, {12, 14}, {13, 23}, {14, 40}, {15, 74}}},
    {{{14, 11}, {15, 15}, {16, 22}, {17, 36}, {18, 63}, {19, 117}}},
    {{{17, 13}, {18, 16}, {19, 22}, {20, 33}, {21, 54}, {22, 95}}},
}};

constexpr std::uint32_t kMaxComputedL = 1000;
// A published pair is kept while its worst case (apbf_fpr) is at most this much over the rate; a pair
// further over takes the rule's pair, as rates off the table do (level 0 of 1e-2, 1e-3 and 1e-5).
constexpr double kPublishedPairTolerance = 1.05;

// Index of the (k, l) table (docs/filters.md, "False-positive model")'s row when error_rate is one of its decades.
int table_row(double error_rate) {
  for (int row = 0; row < 5; ++row) {
    const double decade = std::pow(10.0, -(row + 1));
    if (std::fabs(error_rate - decade) <= decade * 1e-9) return row;
  }
  return -1;
}

std::vector<double> linear_fill_model(SlicedParams p) {
  std::vector<double> fill(p.k + p.l, 0.5);
  for (std::uint32_t i = 0; i < p.k; ++i) fill[i] = (i + 1.0) / (2.0 * p.k);
  return fill;
}

}  // namespace

double sliced_fpr(std::uint32_t k, std::span<const double> fill) {
  const std::size_t n = fill.size();
  if (k == 0 || n < k) return 0.0;
  // next[a] = F(a, i+1): the probability of reaching k consecutive matches from position i+1 with a
  // matches already in hand; evaluated from the oldest slice towards the newest.
  std::vector<double> next(k + 1, 0.0);
  std::vector<double> current(k + 1, 0.0);
  next[k] = 1.0;
  for (std::size_t i = n; i-- > 0;) {
    current[k] = 1.0;
    for (std::uint32_t a = 0; a < k; ++a) {
      const bool enough_left = n - i >= k - a;
      current[a] = enough_left ? fill[i] * next[a + 1] + (1.0 - fill[i]) * next[0] : 0.0;
    }
    std::swap(next, current);
  }
  return next[0];
}

double apbf_fpr(SlicedParams params) {
  const std::vector<double> fill = linear_fill_model(params);
  return sliced_fpr(params.k, fill);
}

SlicedParams choose_sliced_params(double error_rate, std::uint32_t level) {
  if (level > kMaxLevel) level = kMaxLevel;
  if (const int row = table_row(error_rate); row >= 0 && level <= kMaxTableLevel) {
    const SlicedParams published = kTable[static_cast<std::size_t>(row)][level];
    if (apbf_fpr(published) <= error_rate * kPublishedPairTolerance) return published;
  }
  const auto k = static_cast<std::uint32_t>(std::ceil(std::log2(1.0 / error_rate))) + level;
  // apbf_fpr grows with l, so the largest admissible l is found by bisection.
  std::uint32_t lo = 1;
  std::uint32_t hi = kMaxComputedL;
  if (apbf_fpr({k, lo}) > error_rate) return {k, lo};
  while (lo < hi) {
    const std::uint32_t mid = (lo + hi + 1) / 2;
    if (apbf_fpr({k, mid}) <= error_rate) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return {k, lo};
}

std::uint32_t space_optimal_level(double error_rate) {
  std::uint32_t best = 0;
  double best_cost = std::numeric_limits<double>::infinity();
  for (std::uint32_t level = 0; level <= kMaxLevel; ++level) {
    const SlicedParams p = choose_sliced_params(error_rate, level);
    const double cost = static_cast<double>(p.k) * (p.k + p.l + 1.0) / p.l;
    if (cost < best_cost) {
      best = level;
      best_cost = cost;
    }
  }
  return best;
}

std::uint64_t half_fill_slice_bits(double insertions, std::uint64_t min_bits) {
  const double raw = std::ceil(insertions / std::log(2.0));
  std::uint64_t bits = raw < static_cast<double>(min_bits) ? min_bits : static_cast<std::uint64_t>(raw);
  return (bits + 63) / 64 * 64;
}

std::uint64_t half_fill_capacity(std::uint64_t bits) {
  return static_cast<std::uint64_t>(std::floor(static_cast<double>(bits) * std::log(2.0)));
}

}  // namespace bloomgate::filters
