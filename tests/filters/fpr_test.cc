// The FPR mathematics of fpr.h against the published (k, l) table of the age-partitioned Bloom filter
// (values computed from its worst-case recursion).
#include "bloomgate/filters/fpr.h"

#include <gtest/gtest.h>

#include <vector>

namespace bloomgate::filters {
namespace {

TEST(Fpr, LinearModelReproducesTableB7) {
  struct Row {
    SlicedParams params;
    double fpr;
  };
  for (const Row& row : {Row{{4, 3}, 1.006e-01}, Row{{7, 5}, 1.123e-02}, Row{{10, 7}, 1.211e-03},
                         Row{{11, 46}, 9.948e-03}, Row{{15, 74}, 9.999e-04}, Row{{14, 11}, 9.916e-05},
                         Row{{19, 117}, 1.003e-04}, Row{{22, 95}, 9.604e-06}}) {
    EXPECT_NEAR(apbf_fpr(row.params), row.fpr, row.fpr * 1e-3) << row.params.k << "," << row.params.l;
  }
}

TEST(Fpr, TableParamsForDecadeRates) {
  EXPECT_EQ(choose_sliced_params(1e-2, 5), (SlicedParams{12, 88}));
  EXPECT_EQ(choose_sliced_params(1e-3, 5), (SlicedParams{15, 74}));
  EXPECT_EQ(choose_sliced_params(1e-4, 0), (SlicedParams{14, 11}));
  EXPECT_EQ(choose_sliced_params(1e-1, 5), (SlicedParams{8, 56})) << "1e-1 has no level 5: level 4 stands in";
}

// The published pairs whose worst case is more than 5% over the rate (level 0 of 1e-2, 1e-3 and 1e-5) take
// the rule's pair instead, one slice fewer in the window; the others are returned as published. Every
// pair returned for the table's rates stays within 5% of the rate.
TEST(Fpr, PublishedPairsOverTheRateTakeTheRule) {
  EXPECT_EQ(choose_sliced_params(1e-2, 0), (SlicedParams{7, 4}));
  EXPECT_EQ(choose_sliced_params(1e-3, 0), (SlicedParams{10, 6}));
  EXPECT_EQ(choose_sliced_params(1e-5, 0), (SlicedParams{17, 12}));
  EXPECT_EQ(choose_sliced_params(1e-1, 0), (SlicedParams{4, 3})) << "0.6% over: kept";
  for (const double rate : {1e-1, 1e-2, 1e-3, 1e-4, 1e-5}) {
    for (std::uint32_t level = 0; level <= kMaxLevel; ++level) {
      EXPECT_LE(apbf_fpr(choose_sliced_params(rate, level)), 1.05 * rate) << rate << " level " << level;
    }
  }
}

TEST(Fpr, LevelSixExtendsTheTableByItsOwnRule) {
  EXPECT_EQ(choose_sliced_params(1e-2, 6), (SlicedParams{13, 171}));
  EXPECT_EQ(choose_sliced_params(1e-3, 6), (SlicedParams{16, 140}));
  EXPECT_EQ(choose_sliced_params(1e-4, 6), (SlicedParams{20, 222}));
  for (double rate : {1e-2, 1e-3, 1e-4}) EXPECT_LE(apbf_fpr(choose_sliced_params(rate, 6)), rate);
}

TEST(Fpr, SpaceOptimalLevelTakesTheFewestBitsPerKey) {
  EXPECT_EQ(space_optimal_level(1e-2), 5U) << "12 x 101 / 88 = 13.77 against 13.87 at level 4";
  EXPECT_EQ(space_optimal_level(1e-3), 6U) << "16 x 157 / 140 = 17.94 against 18.24 at level 5";
  EXPECT_EQ(space_optimal_level(1e-4), 6U) << "20 x 243 / 222 = 21.89 against 22.25 at level 5";
}

TEST(Fpr, ComputedParamsForOtherRatesMeetTheRate) {
  for (double rate : {0.05, 0.005, 2e-4, 3e-6}) {
    for (std::uint32_t level = 0; level <= kMaxLevel; ++level) {
      const SlicedParams p = choose_sliced_params(rate, level);
      EXPECT_LE(apbf_fpr(p), rate) << rate << " level " << level;
      EXPECT_GT(apbf_fpr({p.k, p.l + 1}), rate) << "l is the largest admissible";
    }
  }
}

TEST(Fpr, GeneralizedRecursionEdges) {
  const std::vector<double> empty(20, 0.0);
  const std::vector<double> full(20, 1.0);
  EXPECT_EQ(sliced_fpr(5, empty), 0.0);
  EXPECT_EQ(sliced_fpr(5, full), 1.0);
  EXPECT_EQ(sliced_fpr(30, full), 0.0) << "fewer slices than k can never match";
  // One window of k slices at fill r: r^k.
  const std::vector<double> window(4, 0.5);
  EXPECT_DOUBLE_EQ(sliced_fpr(4, window), 0.0625);
  // An expired slice (fill 0) in the middle splits the sequence into independent halves.
  std::vector<double> split(9, 0.5);
  split[4] = 0.0;
  EXPECT_NEAR(sliced_fpr(4, split), 1 - (1 - 0.0625) * (1 - 0.0625), 1e-12);
}

TEST(Fpr, SliceSizing) {
  EXPECT_EQ(half_fill_slice_bits(1000, 16), 1472U) << "ceil(1000 / ln 2) = 1443, rounded up to 64-bit words";
  EXPECT_EQ(half_fill_slice_bits(1, 40), 64U);
  EXPECT_EQ(half_fill_capacity(1472), 1020U);
}

}  // namespace
}  // namespace bloomgate::filters
