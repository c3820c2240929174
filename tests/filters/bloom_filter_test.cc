// Unit tests of the classic (partitioned) Bloom filter: sizing, false negatives, measured FPR and
// persistence (corrupt records are corruption_test.cc's).
//
// Keys are deterministic strings built from the fixed seed kSeed and a counter, so every run inserts and
// queries the same keys and prints the same figures. No test measures time.
#include "bloom_filter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "bloomgate/filters/format.h"
#include "bloomgate/filters/options.h"
#include "checkpoint_store.h"
#include "filter_options.h"
#include "ground_truth.h"

namespace bloomgate::filters {
namespace {

using testing::CheckpointStore;
using testing::expect_equal_stats;
using testing::measured_fpr;

constexpr TimePoint kNow{};  // the filter ignores time
constexpr std::uint64_t kSeed = 0x5eed0001;

std::string key(std::string_view kind, std::uint64_t i) { return testing::seeded_key(kind, kSeed, i); }

FilterOptions bloom_options(std::uint64_t capacity, double error_rate) {
  return testing::options_for(FilterType::kBloom, error_rate, capacity);
}

TEST(BloomFilter, SizingFollowsTheFormula) {
  // n = 10^6, P = 1e-3: k = ceil(log2 1000) = 10; each slice ceil(10^6 * ln 1000 / (10 * ln^2 2)) = 1,437,759
  // bits, rounded up to 1,437,760; 14,377,600 bits in 28 pages of 64 KiB.
  BloomFilter filter(bloom_options(1'000'000, 1e-3));
  const FilterStats stats = filter.stats(kNow);
  EXPECT_EQ(stats.type, FilterType::kBloom);
  EXPECT_EQ(stats.k, 10U);
  EXPECT_EQ(stats.l, 0U);
  EXPECT_EQ(stats.bits, 14'377'600U);
  EXPECT_EQ(stats.slices, 28U);
  EXPECT_EQ(stats.slice_stats.size(), 28U);
  EXPECT_EQ(stats.elements, 0U);
  EXPECT_EQ(stats.target_fpr, 1e-3);
  EXPECT_EQ(stats.estimated_fpr, 0.0);
  EXPECT_FALSE(stats.effective_window.has_value());

  // n = 10^6, P = 1e-2: k = 7, 1,369,344 bits per slice.
  EXPECT_EQ(BloomFilter(bloom_options(1'000'000, 1e-2)).stats(kNow).bits, 7U * 1'369'344U);
}

TEST(BloomFilter, RejectsSizesPastTheCap) {
  EXPECT_THROW(BloomFilter{bloom_options(std::uint64_t{1} << 40, 1e-3)}, std::invalid_argument);
  EXPECT_THROW(BloomFilter{bloom_options(1000, 1e-30)}, std::invalid_argument);  // needs 100 probes
}

struct SizingCase {
  std::uint64_t capacity;
  double error_rate;
};

class BloomFilterAtCapacity : public ::testing::TestWithParam<SizingCase> {};

TEST_P(BloomFilterAtCapacity, NoFalseNegativesAndFprNearTarget) {
  const double target = GetParam().error_rate;
  const std::uint64_t capacity = GetParam().capacity;
  BloomFilter filter(bloom_options(capacity, target));
  for (std::uint64_t i = 0; i < capacity; ++i) filter.test_and_insert(key("present", i), kNow);
  for (std::uint64_t i = 0; i < capacity; ++i) ASSERT_TRUE(filter.contains(key("present", i), kNow)) << i;

  // 4000 / P absent keys (400 times the 10 / P minimum) put about 4000 expected false positives in the
  // sample, so the 1.1x bound is several standard deviations wide.
  const auto queries = static_cast<std::uint64_t>(4000.0 / target);
  const double measured = measured_fpr(filter, "absent", kSeed, queries, kNow);
  const FilterStats stats = filter.stats(kNow);
  std::cout << "[ figures  ] bloom P=" << target << " n=" << capacity << " k=" << stats.k
            << " bits/key=" << stats.bits_per_element << " insertions=" << stats.elements
            << " measured FPR=" << measured << " (" << measured / target << " x P) over " << queries
            << " absent keys, estimated FPR=" << stats.estimated_fpr << "\n";
  EXPECT_LE(measured, 1.1 * target);
  EXPECT_GT(measured, 0.5 * target);  // the filter is not oversized either
  EXPECT_NEAR(stats.estimated_fpr, measured, 0.1 * measured);
  EXPECT_LE(stats.elements, capacity);
  // Keys taken for false positives while filling are not counted: about P / 2 of them on average.
  EXPECT_GT(static_cast<double>(stats.elements), static_cast<double>(capacity) * (1.0 - target));
}

// 3000 keys put the slices just above the 4096-bit minimum, the smallest size where probe positions could
// still correlate (see partitioned_bloom.h).
INSTANTIATE_TEST_SUITE_P(Sizes, BloomFilterAtCapacity,
                         ::testing::Values(SizingCase{100'000, 1e-2}, SizingCase{100'000, 1e-3},
                                           SizingCase{3000, 1e-2}, SizingCase{3000, 1e-3}),
                         [](const ::testing::TestParamInfo<SizingCase>& case_info) {
                           return "n" + std::to_string(case_info.param.capacity) + "_P" +
                                  std::to_string(
                                      static_cast<int>(std::lround(-std::log10(case_info.param.error_rate))));
                         });

TEST(BloomFilter, DuplicateIsReportedAndCountedOnce) {
  BloomFilter filter(bloom_options(1000, 1e-3));
  EXPECT_FALSE(filter.test_and_insert("k", kNow));
  EXPECT_TRUE(filter.test_and_insert("k", kNow));
  EXPECT_TRUE(filter.contains("k", kNow));
  EXPECT_EQ(filter.stats(kNow).elements, 1U);
}

TEST(BloomFilter, EmptyAndOneMebibyteKeys) {
  BloomFilter filter(bloom_options(1000, 1e-3));
  const std::string big(std::size_t{1} << 20, 'x');
  EXPECT_FALSE(filter.contains("", kNow));
  EXPECT_FALSE(filter.test_and_insert("", kNow));
  EXPECT_TRUE(filter.test_and_insert("", kNow));
  EXPECT_FALSE(filter.test_and_insert(big, kNow));
  EXPECT_TRUE(filter.test_and_insert(big, kNow));
  EXPECT_TRUE(filter.contains(big, kNow));
  EXPECT_EQ(filter.stats(kNow).elements, 2U);
}

TEST(BloomFilter, TimeIsIgnored) {
  BloomFilter filter(bloom_options(1000, 1e-3));
  const TimePoint late = from_epoch_millis(1'000'000'000'000);
  EXPECT_FALSE(filter.test_and_insert("k", late));
  EXPECT_TRUE(filter.contains("k", kNow));
  EXPECT_TRUE(filter.test_and_insert("k", late + std::chrono::hours(24 * 365)));
}

TEST(BloomFilter, FullImageRoundTrips) {
  BloomFilter filter(bloom_options(1'000'000, 1e-3));
  for (std::uint64_t i = 0; i < 50'000; ++i) filter.test_and_insert(key("present", i), kNow);
  const FilterImage image = filter.image(ImageScope::kFull);
  EXPECT_EQ(image.slices.size(), 28U);
  EXPECT_TRUE(image.dropped_slice_ids.empty());
  const CheckpointStore store(filter.image(ImageScope::kFull));
  const auto restored = store.restore();
  ASSERT_EQ(restored->type(), FilterType::kBloom);
  for (std::uint64_t i = 0; i < 50'000; ++i) ASSERT_TRUE(restored->contains(key("present", i), kNow)) << i;
  expect_equal_stats(kNow, filter, *restored);
  for (std::uint64_t i = 0; i < 10'000; ++i) {
    ASSERT_EQ(filter.test_and_insert(key("later", i), kNow),
              restored->test_and_insert(key("later", i), kNow));
  }
  expect_equal_stats(kNow, filter, *restored);
  // Restored pages are as durable as the store they came from.
  EXPECT_TRUE(store.restore()->image(ImageScope::kChangedSinceLastPersist).slices.empty());
}

TEST(BloomFilter, CheckpointWritesOnlyDirtyPages) {
  BloomFilter filter(bloom_options(1'000'000, 1e-3));
  for (std::uint64_t i = 0; i < 1000; ++i) filter.test_and_insert(key("present", i), kNow);
  CheckpointStore store(filter.image(ImageScope::kFull));
  filter.mark_persisted();
  EXPECT_TRUE(filter.image(ImageScope::kChangedSinceLastPersist).slices.empty());

  EXPECT_TRUE(filter.test_and_insert(key("present", 7), kNow));  // a duplicate writes nothing
  EXPECT_TRUE(filter.image(ImageScope::kChangedSinceLastPersist).slices.empty());

  ASSERT_FALSE(filter.test_and_insert("one more key", kNow));
  const FilterImage changed = filter.image(ImageScope::kChangedSinceLastPersist);
  std::cout << "[ figures  ] bloom checkpoint after one insertion writes " << changed.slices.size()
            << " of 28 pages\n";
  EXPECT_GE(changed.slices.size(), 1U);
  EXPECT_LE(changed.slices.size(), 10U);  // at most one page per probe
  for (const auto& slice : changed.slices) {
    EXPECT_GE(slice.id, 1U);
    EXPECT_LE(slice.id, 28U);
  }
  store.apply(changed);
  filter.mark_persisted();
  const auto restored = store.restore();
  EXPECT_TRUE(restored->contains("one more key", kNow));
  expect_equal_stats(kNow, filter, *restored);
}

}  // namespace
}  // namespace bloomgate::filters
