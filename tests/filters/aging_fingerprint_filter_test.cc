// The aging-fingerprint filter's own promises: the expiry window (present through the TTL, gone one epoch
// later), the tables that follow a burst and the shrink after it, the false-positive rate at the target in a
// steady stream and within 1.5x of it in a 100x burst, refresh on duplicate, the age of a duplicate, and
// checkpoints of the pages that changed. Streams use fixed seeds (ground_truth.h's run_stream, seeds 300+).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "aging_fingerprint_filter.h"
#include "bloomgate/filters/options.h"
#include "checkpoint_store.h"
#include "filter_options.h"
#include "ground_truth.h"

namespace bloomgate::filters {
namespace {

using testing::CheckpointStore;
using testing::key_name;
using testing::milliseconds;
using testing::seconds;

const TimePoint kStart = from_epoch_millis(1'700'000'000'000);
constexpr Duration kTtl = seconds(7);  // epochs of exactly 1 s

std::unique_ptr<AgingFingerprintFilter> make(double error_rate, std::uint64_t expected, bool refresh = false) {
  return std::make_unique<AgingFingerprintFilter>(
      testing::options_for(FilterType::kAgingFingerprint, error_rate, expected, kTtl, refresh));
}

TEST(AgingFingerprint, AKeyLivesThroughTheTtlAndGoesWithinAnEpochAfter) {
  const auto filter = make(0.001, 1'000);
  EXPECT_EQ(filter->epoch_length(), seconds(1));
  const TimePoint written = kStart + milliseconds(2'500);  // epoch 2 of the filter's clock
  filter->test_and_insert(std::string_view("warm-up"), kStart);
  EXPECT_FALSE(filter->test_and_insert(std::string_view("k"), written));
  EXPECT_TRUE(filter->contains(std::string_view("k"), written + kTtl));
  EXPECT_TRUE(filter->contains(std::string_view("k"), kStart + milliseconds(9'999)));  // end of epoch 2 + 7
  EXPECT_FALSE(filter->contains(std::string_view("k"), kStart + seconds(10)));         // epoch 2 + 8
}

TEST(AgingFingerprint, ExpiredSlotsAreSweptWithoutANewKey) {
  const auto filter = make(0.01, 2'000);
  for (int i = 0; i < 1'000; ++i) filter->test_and_insert(key_name(i), kStart + milliseconds(i));
  // Duplicates only, 9 s later: every slot has expired and the per-call sweep reclaims the regions.
  for (int i = 0; i < 200; ++i) filter->test_and_insert(key_name(0), kStart + seconds(9) + milliseconds(i));
  EXPECT_EQ(filter->stats(kStart + seconds(10)).elements, 1U);
}

TEST(AgingFingerprint, WithAgeTellsTheEpochOfTheSighting) {
  const auto filter = make(0.001, 1'000);
  filter->test_and_insert(std::string_view("k"), kStart);
  const Sighting later = filter->test_and_insert_with_age(std::string_view("k"), kStart + milliseconds(3'400));
  ASSERT_TRUE(later.present);
  ASSERT_TRUE(later.age.has_value());
  EXPECT_EQ(*later.age, milliseconds(3'400));  // written in the epoch that starts at kStart
}

TEST(AgingFingerprint, RefreshExtendsALifetimeAndWithoutItTheFirstSightingCounts) {
  for (const bool refresh : {false, true}) {
    const auto filter = make(0.001, 1'000, refresh);
    filter->test_and_insert(std::string_view("k"), kStart);
    filter->test_and_insert(std::string_view("k"), kStart + seconds(5));
    EXPECT_EQ(filter->contains(std::string_view("k"), kStart + seconds(11)), refresh) << refresh;
  }
}

// A filter sized for far more keys than it gets, and one key refreshed every half second: a stretch of
// nothing but refreshes must not be taken for a silence in which every slot expired (and the table
// replaced at once).
TEST(AgingFingerprint, RefreshesAloneKeepATableFromBeingReplaced) {
  const auto filter = make(0.001, 100'000, /*refresh=*/true);
  filter->test_and_insert(std::string_view("k"), kStart);
  for (int i = 1; i <= 40; ++i) {
    ASSERT_TRUE(filter->test_and_insert(std::string_view("k"), kStart + milliseconds(500 * i))) << "refresh " << i;
  }
}

// A burst of 100 times the expected rate: new tables follow, nothing recorded within the TTL is lost, the
// false-positive rate stays within 1.5x the target while the tables drain, and a single table sized for the
// steady rate is left once the burst is over.
TEST(AgingFingerprint, ABurstGrowsTablesThatShrinkBackAfterIt) {
  const auto filter = make(0.001, 10'000);
  const std::vector<testing::Phase> phases = {{seconds(14), 10'000.0 / 7}, {seconds(2), 500'000}, {seconds(40), 10'000.0 / 7}};
  testing::ExactTtlSet recorded(kTtl, false);
  std::uint64_t false_negatives = 0;
  std::size_t most_tables = 0;
  double worst_fpr = 0;
  TimePoint last_check = kStart;
  std::uint64_t probe_seed = 0;
  testing::run_stream(phases, 0.3, 3'000, true, 301, kStart, [&](std::uint64_t key, TimePoint now) {
    const bool expected = recorded.present(key, now);
    const bool reported = filter->test_and_insert(key_name(key), now);
    if (!reported) recorded.observe(key, now);
    if (expected && !reported) ++false_negatives;
    most_tables = std::max(most_tables, filter->tables());
    if (now - last_check >= seconds(1)) {
      last_check = now;
      worst_fpr = std::max(worst_fpr, testing::measured_fpr(*filter, "absent", ++probe_seed, 20'000, now));
    }
  });
  EXPECT_EQ(false_negatives, 0U);
  EXPECT_GE(most_tables, 2U);
  EXPECT_LE(worst_fpr, 1.5e-3);
  EXPECT_EQ(filter->tables(), 1U);
  const FilterStats stats = filter->stats(kStart + seconds(56));
  EXPECT_LT(stats.memory_bytes * 8 / 10'000, 40U) << "bits per key of the steady rate after the burst";
}

// A steady stream at the expected rate, measured once the window is full: FPR at most 1.1x the target, and
// whole memory under 20 bits per key in the window at 1e-3.
TEST(AgingFingerprint, SteadyStreamMeetsTheTargetRateAndMemory) {
  const auto filter = make(0.001, 20'000);
  TimePoint end = kStart;
  testing::run_stream({{seconds(21), 20'000.0 / 7}}, 0.3, 5'000, true, 302, kStart, [&](std::uint64_t key, TimePoint now) {
    filter->test_and_insert(key_name(key), now);
    end = now;
  });
  EXPECT_LE(testing::measured_fpr(*filter, "absent", 7, 200'000, end), 1.1e-3);
  const FilterStats stats = filter->stats(end);
  EXPECT_EQ(filter->tables(), 1U);
  EXPECT_LE(static_cast<double>(stats.memory_bytes) * 8 / 20'000, 20.0);
  EXPECT_NEAR(stats.estimated_fpr, testing::measured_fpr(*filter, "absent", 8, 200'000, end), 3e-4);
}

TEST(AgingFingerprint, ACheckpointWritesOnlyThePagesThatChanged) {
  const auto filter = make(0.001, 200'000);
  for (int i = 0; i < 1'000; ++i) filter->test_and_insert(key_name(i), kStart);
  CheckpointStore store(filter->image(ImageScope::kFull));
  const std::size_t pages = store.slices().size();
  ASSERT_GT(pages, 4U);
  filter->mark_persisted();
  filter->test_and_insert(std::string_view("one more"), kStart);
  const FilterImage changed = filter->image(ImageScope::kChangedSinceLastPersist);
  EXPECT_LE(changed.slices.size(), 3U) << "its bucket, its partner and a swept region";
  store.apply(changed);
  EXPECT_EQ(serialize(*store.restore()), serialize(*filter));
}

TEST(AgingFingerprint, ADrainedTableIsDroppedFromTheCheckpoint) {
  const auto filter = make(0.01, 1'000);
  for (int i = 0; i < 5'000; ++i) filter->test_and_insert(key_name(i), kStart + milliseconds(i / 10));
  ASSERT_GE(filter->tables(), 2U);
  filter->mark_persisted();
  filter->test_and_insert(std::string_view("later"), kStart + seconds(20));
  EXPECT_EQ(filter->tables(), 1U);
  EXPECT_FALSE(filter->image(ImageScope::kChangedSinceLastPersist).dropped_slice_ids.empty());
}

TEST(AgingFingerprint, ErrorRatesBeyondTheLongestFingerprintAreRefusedByName) {
  try {
    make_filter(testing::options_for(FilterType::kAgingFingerprint, 1e-9, 1'000));
    FAIL() << "no error";
  } catch (const OptionError& e) {
    EXPECT_EQ(e.option(), "error_rate");
  }
}

}  // namespace
}  // namespace bloomgate::filters
