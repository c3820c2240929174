// The count-based age-partitioned filter: its sliding-window guarantee and its FPR. Fixed seeds.
#include "age_partitioned_filter.h"

#include <gtest/gtest.h>

#include <vector>

#include "filter_options.h"
#include "ground_truth.h"

namespace bloomgate::filters {
namespace {

using testing::absent_key_name;
using testing::key_name;

const TimePoint kNow = from_epoch_millis(1'700'000'000'000);

FilterOptions apbf_options(double error_rate, std::uint64_t window) {
  return testing::options_for(FilterType::kAgePartitioned, error_rate, window);
}

TEST(AgePartitionedFilter, SizingFollowsTheWindow) {
  FilterOptions options = apbf_options(1e-3, 74'000);
  options.level = 5;
  AgePartitionedFilter filter(options);
  EXPECT_EQ(filter.params(), (SlicedParams{15, 74}));
  EXPECT_EQ(filter.generation_size(), 1000U);
  EXPECT_EQ(filter.slice_bits(), 21696U) << "ceil(15 * 1000 / ln 2) = 21641, rounded up to 64-bit words";
}

TEST(AgePartitionedFilter, TheLastWindowInsertionsAreAlwaysPresent) {
  const std::uint64_t window = 10'000;
  AgePartitionedFilter filter(apbf_options(1e-2, window));
  // A key reported present at its first sighting (a false positive) is not recorded, so the window is
  // counted in recorded insertions.
  std::vector<std::uint64_t> recorded;
  for (std::uint64_t i = 0; i < 100'000; ++i) {
    if (!filter.test_and_insert(key_name(i), kNow)) recorded.push_back(i);
    if (i % 997 != 0) continue;
    const std::size_t first = recorded.size() > window ? recorded.size() - window : 0;
    for (std::size_t r = first; r < recorded.size(); r += 37) {
      ASSERT_TRUE(filter.contains(key_name(recorded[r]), kNow)) << i << " recorded #" << r;
    }
  }
}

TEST(AgePartitionedFilter, InsertionsBeyondTheSlackAreForgotten) {
  const std::uint64_t window = 10'000;
  AgePartitionedFilter filter(apbf_options(1e-2, window));
  for (std::uint64_t i = 0; i < 50'000; ++i) filter.test_and_insert(key_name(i), kNow);
  // Older than (l+1)*g + k*g insertions: every slice that held them has been dropped.
  const std::uint64_t g = filter.generation_size();
  const std::uint64_t forgotten_before = 50'000 - (filter.params().l + filter.params().k + 1) * g;
  std::uint64_t present = 0;
  for (std::uint64_t i = 0; i < forgotten_before; ++i) present += filter.contains(key_name(i), kNow) ? 1U : 0U;
  EXPECT_LE(static_cast<double>(present) / static_cast<double>(forgotten_before), 0.011);
}

TEST(AgePartitionedFilter, MeasuredFprWithinTenPercentOfTarget) {
  for (double target : {1e-2, 1e-3}) {
    AgePartitionedFilter filter(apbf_options(target, 20'000));
    std::uint64_t probes = 0;
    std::uint64_t positives = 0;
    const auto probes_per_insert = static_cast<std::uint64_t>(200 / target / 40'000) + 1;
    for (std::uint64_t i = 0; i < 100'000; ++i) {
      filter.test_and_insert(key_name(i), kNow);
      if (i < 60'000) continue;
      for (std::uint64_t j = 0; j < probes_per_insert; ++j) {
        positives += filter.contains(absent_key_name(probes++), kNow) ? 1U : 0U;
      }
    }
    const double measured = static_cast<double>(positives) / static_cast<double>(probes);
    std::printf("age_partitioned target %.0e: measured %.3e over %llu probes\n", target, measured,
                static_cast<unsigned long long>(probes));
    EXPECT_LE(measured, 1.1 * target);
  }
}

TEST(AgePartitionedFilter, DuplicatesDoNotConsumeTheWindowUnlessRefreshed) {
  AgePartitionedFilter plain(apbf_options(1e-2, 1'000));
  for (int i = 0; i < 100'000; ++i) plain.test_and_insert(std::string_view("same"), kNow);
  EXPECT_EQ(plain.stats(kNow).elements, 1U);
  FilterOptions refreshing = apbf_options(1e-2, 1'000);
  refreshing.refresh_on_duplicate = true;
  AgePartitionedFilter refreshed(refreshing);
  for (int i = 0; i < 5'000; ++i) refreshed.test_and_insert(std::string_view("same"), kNow);
  EXPECT_GT(refreshed.stats(kNow).elements, 1'000U);
}

TEST(AgePartitionedFilter, ChangedOnlyCheckpointWritesTheInsertionRegion) {
  AgePartitionedFilter filter(apbf_options(1e-2, 10'000));
  for (int i = 0; i < 30'000; ++i) filter.test_and_insert(key_name(i), kNow);
  filter.mark_persisted();
  for (int i = 0; i < 10; ++i) filter.test_and_insert(key_name(1'000'000 + i), kNow);
  const FilterImage delta = filter.image(ImageScope::kChangedSinceLastPersist);
  EXPECT_LE(delta.slices.size(), filter.params().k + 1U);
  EXPECT_LE(delta.dropped_slice_ids.size(), 1U);
}

}  // namespace
}  // namespace bloomgate::filters
