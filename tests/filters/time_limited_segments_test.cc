// The time-limited filter with slices of 2^16 bits or more, which share column segments: the guarantees
// hold at a steady rate, through rate changes (segments opening and retiring) and in batches. Streams use
// fixed seeds (given at each call).
#include "time_limited_filter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "checkpoint_store.h"
#include "ground_truth.h"
#include "filter_options.h"

namespace bloomgate::filters {
namespace {

using testing::CheckpointStore;
using testing::Phase;
using testing::absent_key_name;
using testing::key_name;
using testing::replay;
using testing::seconds;
using testing::tlbf_options;

const TimePoint kStart = from_epoch_millis(1'700'000'000'000);

// Forwards to a time-limited filter, records the most segments it had, and counts the answers of
// test_and_insert (its rows located once for the prefetch, the query and the insertion) that differ from
// contains() asked just before (rows located afresh).
class SegmentCounter final : public Filter {
 public:
  SegmentCounter(TimeLimitedFilter& filter, std::size_t& most_segments) : filter_(filter), most_(most_segments) {}
  FilterType type() const noexcept override { return filter_.type(); }
  bool test_and_insert(KeyHash key, TimePoint now) override {
    const bool queried = filter_.contains(key, now);
    const bool present = filter_.test_and_insert(key, now);
    if (present != queried) ++mismatches;
    most_ = std::max(most_, filter_.segment_count());
    return present;
  }
  std::uint64_t mismatches = 0;
  bool contains(KeyHash key, TimePoint now) const override { return filter_.contains(key, now); }
  FilterStats stats(TimePoint now) const override { return filter_.stats(now); }
  FilterImage image(ImageScope scope) const override { return filter_.image(scope); }
  void mark_persisted() override { filter_.mark_persisted(); }
  using Filter::contains;
  using Filter::test_and_insert;

 private:
  TimeLimitedFilter& filter_;
  std::size_t& most_;
};


// Slices of 2^16 bits or more share segments (sizes within 1/16, rounded up). A filter of that size at a
// Poisson rate a little off its expected one: no false negatives, FPR within the bound, one segment in the
// steady state, its checkpoint records restore to the same answers and bytes.
TEST(TimeLimitedFilter, LargeSlicesShareSegmentsAndKeepTheGuarantees) {
  const double target = 0.01;
  const std::uint64_t expected = 400'000;  // slices of 78,720 bits at (12, 88)
  TimeLimitedFilter filter(tlbf_options(target, seconds(10), expected));
  const std::vector<Phase> phases = {{seconds(30), 52'000}};  // 416,000 new keys per TTL
  const auto out = replay(filter, seconds(10), kStart, phases, 0.2, 100'000, true, 91, false);
  EXPECT_EQ(out.false_negatives, 0U);
  const TimePoint end = kStart + seconds(30);
  std::uint64_t false_positives = 0;
  constexpr std::uint64_t kProbes = 100'000;
  for (std::uint64_t i = 0; i < kProbes; ++i) false_positives += filter.contains(absent_key_name(i), end) ? 1U : 0U;
  const double fpr = static_cast<double>(false_positives) / kProbes;
  const auto stats = filter.stats(end);
  std::printf("large slices: FPR %.3e, %llu slices, %.2f bits per element, slice sizes %llu to %llu\n", fpr,
              static_cast<unsigned long long>(stats.slices), stats.bits_per_element,
              static_cast<unsigned long long>(stats.slice_stats.back().bits),
              static_cast<unsigned long long>(stats.slice_stats.front().bits));
  EXPECT_LE(fpr, 1.1 * target);
  std::uint64_t slice_bits = 0;
  for (const SliceStats& slice : stats.slice_stats) slice_bits += slice.bits;
  EXPECT_EQ(stats.slice_stats.front().bits, stats.slice_stats.back().bits) << "one segment";
  EXPECT_LE(stats.bits, slice_bits + stats.slice_stats.front().bits) << "at most one free column";

  CheckpointStore store;
  store.checkpoint(filter, ImageScope::kFull);
  for (int i = 0; i < 1000; ++i) filter.test_and_insert(key_name(5'000'000 + i), end);
  store.checkpoint(filter, ImageScope::kChangedSinceLastPersist);
  const auto restored = store.restore();
  EXPECT_EQ(serialize(*restored), serialize(filter));
  for (std::uint64_t key = 0; key < 20'000; ++key) {
    ASSERT_EQ(restored->contains(key_name(key * 37), end), filter.contains(key_name(key * 37), end)) << key;
  }
}

// Rate changes move the size a new slice asks for out of the shared range, so new segments open, grow and replace the old
// ones, and for a while the query spans several segments or falls back to the walk: no false negatives.
TEST(TimeLimitedFilter, LargeSlicesThroughRateChanges) {
  const std::uint64_t expected = 400'000;
  TimeLimitedFilter filter(tlbf_options(0.01, seconds(10), expected));
  const std::vector<Phase> phases = {{seconds(12), 50'000}, {seconds(6), 150'000}, {seconds(12), 20'000},
                                     {seconds(10), 50'000}};
  std::size_t most_segments = 0;
  SegmentCounter probe{filter, most_segments};
  const auto out = replay(probe, seconds(10), kStart, phases, 0.2, 100'000, true, 93, false);
  const auto stats = filter.stats(kStart + seconds(40));
  std::uint64_t slice_bits = 0;
  for (const SliceStats& slice : stats.slice_stats) slice_bits += slice.bits;
  std::printf("rate changes: %llu events, at most %zu segments, %zu at the end; memory %.3f x the slices' bits\n",
              static_cast<unsigned long long>(out.events), most_segments, filter.segment_count(),
              static_cast<double>(stats.bits) / static_cast<double>(slice_bits));
  EXPECT_EQ(out.false_negatives, 0U);
  EXPECT_EQ(probe.mismatches, 0U);
  EXPECT_GT(most_segments, 1U) << "the rate changes opened segments";
}

// The service's shape at its start: a filter created for 14,000 keys per TTL is fed 8 x that, with a TTL
// longer than the data, so the rate estimate ramps up slide after slide and nothing expires. Each segment
// of the ramp holds slices for the growth of the next k - 1 slides, so there are few and their free columns
// hold fewer bits than the slices.
TEST(TimeLimitedFilter, ARateRampKeepsFewSegmentsAndLittleFreeMemory) {
  TimeLimitedFilter filter(tlbf_options(0.001, seconds(100), 14'000));
  std::size_t most_segments = 0;
  SegmentCounter probe{filter, most_segments};
  const auto out = replay(probe, seconds(100), kStart, {{seconds(15), 1'120}}, 0.3, 10'000, true, 97, false);
  const auto stats = filter.stats(kStart + seconds(15));
  std::uint64_t slice_bits = 0;
  for (const SliceStats& slice : stats.slice_stats) slice_bits += slice.bits;
  const std::uint64_t free_bits = filter.free_segment_bits();
  std::printf("rate ramp: %llu events, at most %zu segments; slices %llu bits, free columns and rounding %llu, "
              "whole memory %llu\n",
              static_cast<unsigned long long>(out.events), most_segments, static_cast<unsigned long long>(slice_bits),
              static_cast<unsigned long long>(free_bits), static_cast<unsigned long long>(stats.memory_bytes * 8));
  EXPECT_EQ(out.false_negatives, 0U);
  EXPECT_EQ(probe.mismatches, 0U);
  EXPECT_LE(most_segments, 8U);
  EXPECT_LE(free_bits, slice_bits);
  EXPECT_GE(stats.memory_bytes * 8, stats.bits + free_bits) << "the whole memory holds the free columns too";
}

// The batch locates each key's rows one key ahead, so a slide between its prefetch and its query must not
// leave it reading or setting the rows of a layout that has changed: same answers, same filter.
TEST(TimeLimitedFilter, ALargeFilterBatchedThroughRateChangesAnswersLikeOneCallPerKey) {
  TimeLimitedFilter one_by_one(tlbf_options(0.01, seconds(10), 400'000));
  TimeLimitedFilter batched(tlbf_options(0.01, seconds(10), 400'000));
  std::mt19937_64 rng(95);  // fixed seed: keys, gaps and batch sizes
  std::vector<KeyHash> keys;
  std::vector<TimePoint> times;
  TimePoint now = kStart;
  std::uint64_t next_key = 0;
  for (const auto& [span, per_second] : std::vector<std::pair<int, int>>{{12, 40'000}, {4, 120'000}, {8, 15'000}}) {
    const TimePoint end = now + seconds(span);
    for (; now < end; now += std::chrono::nanoseconds(1'000'000'000 / per_second)) {
      const bool repeat = next_key > 1000 && rng() % 10 < 3;
      keys.push_back(hash_key(key_name(repeat ? next_key - 1 - rng() % 1000 : next_key++)));
      times.push_back(now);
    }
  }
  std::size_t most_segments = 0;
  for (std::size_t begin = 0; begin < keys.size();) {
    const std::size_t size = std::min<std::size_t>(1 + rng() % 700, keys.size() - begin);
    std::unique_ptr<bool[]> answers(new bool[size]);
    batched.test_and_insert_batch(std::span(keys).subspan(begin, size), std::span(times).subspan(begin, size),
                                  std::span(answers.get(), size));
    for (std::size_t i = 0; i < size; ++i) {
      ASSERT_EQ(answers[i], one_by_one.test_and_insert(keys[begin + i], times[begin + i])) << begin + i;
    }
    most_segments = std::max(most_segments, batched.segment_count());
    begin += size;
  }
  EXPECT_EQ(serialize(batched), serialize(one_by_one));
  EXPECT_GT(most_segments, 1U) << "the rate changes opened segments";
}

}  // namespace
}  // namespace bloomgate::filters
