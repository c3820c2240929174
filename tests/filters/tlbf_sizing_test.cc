// The time-limited filter's sizing arithmetic (bloomgate/filters/tlbf_sizing.h), each function against
// values worked out by hand from the formulas of docs/filters.md, "Sizing the time-limited filter".
#include "tlbf_sizing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace bloomgate::filters::tlbf {
namespace {

constexpr std::uint64_t kNoCap = std::uint64_t{1} << 40;

TEST(TlbfSizing, GenerationSizeIsTheSmallestShareOfTheRegion) {
  // k = 3: ceil(100 / 3) = 34, ceil(90 / 2) = 45, ceil(30 / 1) = 30.
  EXPECT_EQ(generation_size(std::vector<std::uint64_t>{100, 90, 30}, kNoCap), 30U);
  EXPECT_EQ(generation_size(std::vector<std::uint64_t>{100, 90, 300}, kNoCap), 34U);
  EXPECT_EQ(generation_size(std::vector<std::uint64_t>{0, 0}, kNoCap), 1U);  // at least 1
  EXPECT_EQ(generation_size(std::vector<std::uint64_t>{1000, 1000}, 10), 10U);
}

TEST(TlbfSizing, TargetGenerationIsTheRateOverOnePeriodPlusOne) {
  // 1,000 insertions in 1 s, a period of 0.1 s: 100, plus one.
  EXPECT_EQ(target_generation(1000, 1'000'000'000, 1e8, 1e9, kNoCap), 101U);
  EXPECT_EQ(target_generation(1000, 1'000'000'000, 1e8, 50, kNoCap), 51U);  // the growth limit
  EXPECT_EQ(target_generation(1000, 0, 1e8, 400, kNoCap), 401U);            // no time: 1 ns, then the limit
  EXPECT_EQ(target_generation(1000, 1'000'000'000, 1e8, 1e9, 60), 60U);     // the cap
}

TEST(TlbfSizing, NewSliceCapacityFollowsTheSlicesThatCapGenerations) {
  // Nothing caps: k generations of the target.
  EXPECT_EQ(new_slice_capacity(std::vector<std::uint64_t>{1000, 1000}, 3, 10), 30U);
  // The slice at position 1 has room for 4 over its 2 generations left: 2 each, then one of the target.
  EXPECT_EQ(new_slice_capacity(std::vector<std::uint64_t>{4, 1000}, 3, 10), 14U);
  // The slice at position 2 has one generation left, with room for 5: the new slice's first generation
  // takes 5, its two others the target.
  EXPECT_EQ(new_slice_capacity(std::vector<std::uint64_t>{1000, 5}, 3, 10), 25U);
}

TEST(TlbfSizing, SliceBitsHalfFillTheCapacity) {
  EXPECT_EQ(slice_bits(693, 15, kNoCap), 1000U);  // ceil(693 / ln 2) = ceil(999.79)
  EXPECT_EQ(slice_bits(1, 15, kNoCap), 30U);      // at least 2k
  EXPECT_EQ(slice_bits(1'000'000, 15, 1000), 1000U);
}

TEST(TlbfSizing, SharedRowsLieWithinAnEighthBelowAndASixtyFourthAbove) {
  EXPECT_TRUE(shares_rows(6400, 5600, false));
  EXPECT_FALSE(shares_rows(6400, 5599, false));
  EXPECT_TRUE(shares_rows(6400, 6500, false));
  EXPECT_FALSE(shares_rows(6400, 6501, false));
  EXPECT_TRUE(shares_rows(6400, 6400, true));
  EXPECT_FALSE(shares_rows(6400, 6401, true));
}

TEST(TlbfSizing, SegmentRowsAddHeadroom) {
  EXPECT_EQ(segment_rows(10000, 10000, 0.0, kNoCap), 10079U);   // at least 1/128: 10,078.125 up
  EXPECT_EQ(segment_rows(10000, 10000, 0.05, kNoCap), 11250U);  // 2.5 x 0.05, at most 1/8
  EXPECT_EQ(segment_rows(10000, 10000, 0.02, kNoCap), 10500U);  // 2.5 x 0.02
  EXPECT_EQ(segment_rows(12500, 10000, 0.0, kNoCap), 15625U);   // grew by 1/4: as much again
  EXPECT_EQ(segment_rows(20000, 10000, 0.0, kNoCap), 25000U);   // grew more: 1/4 at most
  EXPECT_EQ(segment_rows(10000, 10000, 0.05, 10100), 10100U);   // the cap, but never below the size
  EXPECT_EQ(segment_rows(10000, 10000, 0.05, 9000), 10000U);
}

TEST(TlbfSizing, PoissonDeviationOfTheRateWindow) {
  // 8 generations of g = bits ln 2 / k insertions: 1 / sqrt(8 g).
  const double g = 14427.0 * std::log(2.0) / 10;
  EXPECT_DOUBLE_EQ(poisson_deviation(14427, 10, 8), 1 / std::sqrt(8 * g));
  EXPECT_DOUBLE_EQ(poisson_deviation(3, 10, 8), 1 / std::sqrt(8.0));  // g at least 1
}

TEST(TlbfSizing, AskSpreadWaitsForThirtyTwoSizes) {
  AskSpread steady;
  for (int i = 0; i < 31; ++i) steady.record(1000);
  EXPECT_LT(steady.deviation(), 0);
  steady.record(1000);
  EXPECT_DOUBLE_EQ(steady.deviation(), 0);
  AskSpread alternating;  // 900 and 1100 in turn: a deviation near 100 / 1000
  for (int i = 0; i < 400; ++i) alternating.record(i % 2 == 0 ? 900 : 1100);
  EXPECT_NEAR(alternating.deviation(), 0.1, 0.01);
}

TEST(TlbfSizing, SegmentRowsTakeTheRampHeadroomWhenItIsMore) {
  EXPECT_EQ(segment_rows(10000, 10000, 0.0, kNoCap, 0.5), 15000U);
  EXPECT_EQ(segment_rows(12500, 10000, 0.0, kNoCap, 0.1), 15625U);  // the growth's 1/4 is more
  EXPECT_EQ(segment_rows(10000, 10000, 0.0, 12000, 0.5), 12000U);   // the cap
}

// Asks rising 5% a slide: the first segment opened because they grew only starts the count, the second
// extrapolates 1.05 per slide over k - 1 = 14 slides (1.05^14 - 1 = 0.98), at most 1/2.
TEST(TlbfSizing, ARampOpensSegmentsForTheGrowthOfTheNextKMinusOneSlides) {
  constexpr std::uint32_t k = 15;
  RampTracker ramp;
  EXPECT_EQ(ramp.open(1000, true, k), 0.0);
  ramp.asked(1000);
  ramp.asked(1050);
  EXPECT_DOUBLE_EQ(ramp.open(1102, true, k), std::min(0.5, std::pow(1102.0 / 1000, 14.0 / 2) - 1));
  ramp.asked(1102);
  RampTracker slow;  // 1% a slide over 4 slides: 1.01^14 - 1
  EXPECT_EQ(slow.open(1000, true, k), 0.0);
  for (const std::uint64_t ask : {1000U, 1010U, 1020U, 1030U}) slow.asked(ask);
  EXPECT_NEAR(slow.open(1041, true, k), std::pow(1.041, 14.0 / 4) - 1, 1e-12);
}

// A ramp segment takes the asks from the one it opened for up to its rows and a 64th while they do not
// fall; a fall, or a segment opened for any other reason, ends that.
TEST(TlbfSizing, ARampSegmentTakesRisingAsksOnly) {
  constexpr std::uint32_t k = 15;
  RampTracker ramp;
  ramp.open(1000, true, k);
  ramp.asked(1000);
  ASSERT_GT(ramp.open(1100, true, k), 0.0);
  ramp.asked(1100);
  const std::uint64_t rows = 1650;
  EXPECT_TRUE(ramp.takes(1100, rows));
  EXPECT_TRUE(ramp.takes(1200, rows));
  EXPECT_TRUE(ramp.takes(rows + rows / 64, rows));
  EXPECT_FALSE(ramp.takes(rows + rows / 64 + 1, rows));
  ramp.asked(1200);
  EXPECT_FALSE(ramp.takes(1150, rows)) << "the asks fell";
  EXPECT_EQ(ramp.open(1150, false, k), 0.0);
  ramp.asked(1150);
  EXPECT_FALSE(ramp.takes(1300, rows)) << "the newest segment is not a ramp segment";
}

// Asks that go up and down by noise never ramp: each growth opening follows a fall, so none is the second
// in a row.
TEST(TlbfSizing, NoiseDoesNotRamp) {
  RampTracker ramp;
  for (int i = 0; i < 100; ++i) {
    const bool up = i % 2 == 0;
    EXPECT_EQ(ramp.open(up ? 1100 : 900, up, 15), 0.0) << i;
    ramp.asked(up ? 1100 : 900);
  }
}

}  // namespace
}  // namespace bloomgate::filters::tlbf
