// Unit tests of the scalable Bloom filter: the growth rule, the compound false-positive bound through
// eleven growth steps and persistence of only the newest sub-filter (corrupt records are
// corruption_test.cc's).
//
// Keys are deterministic strings built from the fixed seed kSeed and a counter, so every run inserts and
// queries the same keys and prints the same figures. No test measures time.
#include "scalable_bloom_filter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bloomgate/filters/format.h"
#include "bloomgate/filters/options.h"
#include "checkpoint_store.h"
#include "ground_truth.h"

namespace bloomgate::filters {
namespace {

using testing::CheckpointStore;
using testing::expect_equal_stats;
using testing::measured_fpr;

constexpr TimePoint kNow{};  // the filter ignores time
constexpr std::uint64_t kSeed = 0x5eed0003;

std::string key(std::string_view kind, std::uint64_t i) { return testing::seeded_key(kind, kSeed, i); }

FilterOptions scalable_options(std::uint64_t initial_capacity, double error_rate, std::uint32_t growth,
                               double tightening = 0.9) {
  FilterOptions options;
  options.type = FilterType::kScalable;
  options.expected_per_ttl = initial_capacity;
  options.error_rate = error_rate;
  options.growth = growth;
  options.tightening = tightening;
  return options;
}

// Inserts fresh keys "present/<i>" from *next_key on until the filter has accepted `target` insertions in
// total (keys taken for false positives are not inserted and do not count).
void insert_until(Filter& filter, std::uint64_t target, std::uint64_t& inserted, std::uint64_t& next_key) {
  while (inserted < target) {
    if (!filter.test_and_insert(key("present", next_key++), kNow)) ++inserted;
  }
}

std::vector<std::uint64_t> slice_ids(const FilterImage& image) {
  std::vector<std::uint64_t> ids;
  for (const auto& slice : image.slices) ids.push_back(slice.id);
  return ids;
}

struct GrowthCase {
  std::uint32_t growth;
  std::uint64_t initial_capacity;
  double error_rate;
};

class ScalableGrowth : public ::testing::TestWithParam<GrowthCase> {};

// Start small and grow eleven times, the compound FPR stays below P. The FPR is measured
// at each step's worst moment, with the newest sub-filter exactly full, then with eleven sub-filters.
TEST_P(ScalableGrowth, FprBoundHoldsThroughElevenGrowthSteps) {
  const GrowthCase c = GetParam();
  ScalableBloomFilter filter(scalable_options(c.initial_capacity, c.error_rate, c.growth));
  std::uint64_t inserted = 0;
  std::uint64_t next_key = 0;
  std::uint64_t capacity = c.initial_capacity;
  std::uint64_t full_at = 0;
  const auto step_queries = static_cast<std::uint64_t>(200.0 / c.error_rate);
  for (std::uint64_t sub_filters = 1; sub_filters <= 10; ++sub_filters, capacity *= c.growth) {
    full_at += capacity;
    insert_until(filter, full_at, inserted, next_key);
    const FilterStats stats = filter.stats(kNow);
    ASSERT_EQ(stats.slices, sub_filters);
    const double measured =
        measured_fpr(filter, "absent-" + std::to_string(sub_filters), kSeed, step_queries, kNow);
    std::cout << "[ figures  ] scalable s=" << c.growth << " n0=" << c.initial_capacity
              << " P=" << c.error_rate << " sub-filters=" << sub_filters
              << " (newest full) insertions=" << inserted << " measured FPR=" << measured
              << " estimated=" << stats.estimated_fpr << "\n";
    EXPECT_LE(measured, c.error_rate);
    EXPECT_LE(stats.estimated_fpr, c.error_rate);
  }

  insert_until(filter, full_at + 1, inserted, next_key);
  const FilterStats stats = filter.stats(kNow);
  ASSERT_EQ(stats.slices, 11U);
  const auto queries = static_cast<std::uint64_t>(2000.0 / c.error_rate);
  const double measured = measured_fpr(filter, "absent-final", kSeed, queries, kNow);
  std::cout << "[ figures  ] scalable s=" << c.growth << " n0=" << c.initial_capacity << " P=" << c.error_rate
            << " after 11 sub-filters: insertions=" << inserted << " keys offered=" << next_key
            << " bits/key=" << stats.bits_per_element << " compound measured FPR=" << measured << " ("
            << measured / c.error_rate << " x P) over " << queries
            << " absent keys, estimated=" << stats.estimated_fpr << "\n";
  EXPECT_LE(measured, c.error_rate);
  EXPECT_LE(stats.estimated_fpr, c.error_rate);
  EXPECT_NEAR(stats.estimated_fpr, measured, 0.15 * measured);
  for (std::uint64_t i = 0; i < next_key; ++i) ASSERT_TRUE(filter.contains(key("present", i), kNow)) << i;
}

// n0 = 4 for growth 4 keeps the eleventh sub-filter at 4 * 4^10 keys (11 MiB) and the test short.
INSTANTIATE_TEST_SUITE_P(GrowthFactors, ScalableGrowth,
                         ::testing::Values(GrowthCase{2, 1000, 1e-3}, GrowthCase{2, 100, 1e-2},
                                           GrowthCase{4, 4, 1e-3}),
                         [](const ::testing::TestParamInfo<GrowthCase>& case_info) {
                           return "s" + std::to_string(case_info.param.growth) + "_n" +
                                  std::to_string(case_info.param.initial_capacity) + "_P" +
                                  std::to_string(
                                      static_cast<int>(std::lround(-std::log10(case_info.param.error_rate))));
                         });

TEST(ScalableBloomFilter, SubFilterCountFollowsCapacities) {
  // n0 = 50, P = 0.05, s = 2: 100 insertions take two sub-filters.
  ScalableBloomFilter filter(scalable_options(50, 0.05, 2));
  std::uint64_t inserted = 0;
  std::uint64_t next_key = 0;
  EXPECT_EQ(filter.stats(kNow).slices, 1U);
  insert_until(filter, 100, inserted, next_key);
  EXPECT_EQ(filter.stats(kNow).slices, 2U);

  // Sub-filter j holds 50 * 2^j keys; the next one appears with the insertion after they are all full.
  std::uint64_t full_at = 150;  // sub-filters 0 and 1
  insert_until(filter, full_at, inserted, next_key);
  EXPECT_EQ(filter.stats(kNow).slices, 2U);
  insert_until(filter, full_at + 1, inserted, next_key);
  EXPECT_EQ(filter.stats(kNow).slices, 3U);
  for (std::uint64_t sub_filters = 3; sub_filters <= 6; ++sub_filters) {
    full_at += 50 * (std::uint64_t{1} << (sub_filters - 1));
    insert_until(filter, full_at, inserted, next_key);
    EXPECT_EQ(filter.stats(kNow).slices, sub_filters);
    insert_until(filter, full_at + 1, inserted, next_key);
    EXPECT_EQ(filter.stats(kNow).slices, sub_filters + 1);
  }

  const FilterStats stats = filter.stats(kNow);
  ASSERT_EQ(stats.slice_stats.size(), 7U);
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < stats.slice_stats.size(); ++i) {
    const SliceStats& slice = stats.slice_stats[i];  // newest first
    const std::uint64_t index = 6 - i;
    EXPECT_EQ(slice.id, index + 1);
    EXPECT_EQ(slice.insertions, index == 6 ? 1U : 50U << index);
    bits += slice.bits;
  }
  EXPECT_EQ(stats.bits, bits);
  EXPECT_EQ(stats.elements, inserted);
  EXPECT_EQ(stats.type, FilterType::kScalable);
  EXPECT_EQ(stats.l, 0U);
  EXPECT_EQ(stats.target_fpr, 0.05);
  EXPECT_LT(stats.estimated_fpr, 0.05);
  EXPECT_FALSE(stats.effective_window.has_value());
}

TEST(ScalableBloomFilter, SubFilterSizingFollowsTheRule) {
  // n0 = 1000, P = 1e-3, r = 0.9: sub-filter 0 has error 1e-4, k = 14 and 1408-bit slices raised to
  // the 4096-bit minimum.
  ScalableBloomFilter filter(scalable_options(1000, 1e-3, 2));
  EXPECT_EQ(filter.stats(kNow).k, 14U);
  EXPECT_EQ(filter.stats(kNow).bits, 14U * 4096U);
  // Sub-filter 5 has capacity 32,000, error 1e-4 * 0.9^5 = 5.9e-5, k = 15 and 43,264-bit slices.
  std::uint64_t inserted = 0;
  std::uint64_t next_key = 0;
  insert_until(filter, 1000 * 31 + 1, inserted, next_key);
  const FilterStats stats = filter.stats(kNow);
  ASSERT_EQ(stats.slices, 6U);
  EXPECT_EQ(stats.k, 15U);
  EXPECT_EQ(stats.slice_stats.front().bits, 15U * 43'264U);
}

TEST(ScalableBloomFilter, RejectsBadOptions) {
  EXPECT_THROW(ScalableBloomFilter{scalable_options(100, 1e-3, 3)}, std::invalid_argument);
  EXPECT_THROW(ScalableBloomFilter{scalable_options(100, 1e-3, 2, 1.0)}, std::invalid_argument);
  EXPECT_THROW(ScalableBloomFilter{scalable_options(std::uint64_t{1} << 40, 1e-3, 2)}, std::invalid_argument);
}

TEST(ScalableBloomFilter, GrowthStopsAtTheProbeLimit) {
  // With r = 1e-6 the errors fall by 10^6 per step: sub-filter 4 would need 81 probes, so growth stops at
  // four sub-filters (capacities 1, 2, 4, 8) and the newest absorbs the rest.
  ScalableBloomFilter filter(scalable_options(1, 0.5, 2, 1e-6));
  std::uint64_t inserted = 0;
  std::uint64_t next_key = 0;
  insert_until(filter, 200, inserted, next_key);
  const FilterStats stats = filter.stats(kNow);
  EXPECT_EQ(stats.slices, 4U);
  EXPECT_EQ(stats.slice_stats.front().insertions, 200U - 7U);
  EXPECT_EQ(stats.k, 61U);
  for (std::uint64_t i = 0; i < next_key; ++i) ASSERT_TRUE(filter.contains(key("present", i), kNow));
  // The overfull newest sub-filter is valid.
  const auto restored = CheckpointStore(filter.image(ImageScope::kFull)).restore();
  expect_equal_stats(kNow, filter, *restored);
}

TEST(ScalableBloomFilter, EmptyAndOneMebibyteKeys) {
  ScalableBloomFilter filter(scalable_options(1, 1e-3, 2));
  const std::string big(std::size_t{1} << 20, 'x');
  EXPECT_FALSE(filter.contains("", kNow));
  EXPECT_FALSE(filter.test_and_insert("", kNow));
  EXPECT_TRUE(filter.test_and_insert("", kNow));
  EXPECT_FALSE(filter.test_and_insert(big, kNow));  // goes into a second sub-filter
  EXPECT_TRUE(filter.test_and_insert(big, kNow));
  EXPECT_TRUE(filter.contains(big, kNow));
  EXPECT_TRUE(filter.contains("", kNow));
  const FilterStats stats = filter.stats(kNow);
  EXPECT_EQ(stats.elements, 2U);
  EXPECT_EQ(stats.slices, 2U);
}

TEST(ScalableBloomFilter, DuplicateInAnOlderSubFilterIsNotInsertedAgain) {
  ScalableBloomFilter filter(scalable_options(10, 1e-3, 2));
  std::uint64_t inserted = 0;
  std::uint64_t next_key = 0;
  insert_until(filter, 11, inserted, next_key);
  ASSERT_EQ(filter.stats(kNow).slices, 2U);
  EXPECT_TRUE(filter.test_and_insert(key("present", 0), kNow));
  const FilterStats stats = filter.stats(kNow);
  EXPECT_EQ(stats.elements, 11U);
  EXPECT_EQ(stats.slice_stats.front().insertions, 1U);
}

TEST(ScalableBloomFilter, CheckpointsWriteOnlyTheNewestSubFilter) {
  // n0 = 100, s = 2: 1000 insertions fill sub-filters 0..2 (100 + 200 + 400) and put 300 in sub-filter 3.
  ScalableBloomFilter filter(scalable_options(100, 1e-2, 2));
  std::uint64_t inserted = 0;
  std::uint64_t next_key = 0;
  insert_until(filter, 1000, inserted, next_key);
  const FilterImage full = filter.image(ImageScope::kFull);
  EXPECT_EQ(slice_ids(full), (std::vector<std::uint64_t>{1, 2, 3, 4}));
  EXPECT_TRUE(full.dropped_slice_ids.empty());
  CheckpointStore store(full);
  filter.mark_persisted();
  EXPECT_TRUE(filter.image(ImageScope::kChangedSinceLastPersist).slices.empty());

  const auto restored = store.restore();
  ASSERT_EQ(restored->type(), FilterType::kScalable);
  expect_equal_stats(kNow, filter, *restored);
  for (std::uint64_t i = 0; i < next_key; ++i) ASSERT_TRUE(restored->contains(key("present", i), kNow)) << i;
  EXPECT_TRUE(restored->image(ImageScope::kChangedSinceLastPersist).slices.empty());

  insert_until(filter, 1010, inserted, next_key);
  const FilterImage small_step = filter.image(ImageScope::kChangedSinceLastPersist);
  EXPECT_EQ(slice_ids(small_step), (std::vector<std::uint64_t>{4}));
  store.apply(small_step);
  filter.mark_persisted();
  expect_equal_stats(kNow, filter, *store.restore());

  insert_until(filter, 1600, inserted, next_key);  // past 1500: sub-filter 4 appears
  const FilterImage growth_step = filter.image(ImageScope::kChangedSinceLastPersist);
  EXPECT_EQ(slice_ids(growth_step), (std::vector<std::uint64_t>{4, 5}));
  store.apply(growth_step);
  filter.mark_persisted();
  const auto latest = store.restore();
  expect_equal_stats(kNow, filter, *latest);
  for (std::uint64_t i = 0; i < 5000; ++i) {
    ASSERT_EQ(filter.test_and_insert(key("later", i), kNow), latest->test_and_insert(key("later", i), kNow));
  }
  expect_equal_stats(kNow, filter, *latest);
}

}  // namespace
}  // namespace bloomgate::filters
