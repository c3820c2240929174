// The time-limited filter's checkpoints: a restore from the records of its image, over copies or views,
// small and large, is the imaged filter exactly. Streams use fixed seeds (given at each call).
#include "time_limited_filter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint_store.h"
#include "ground_truth.h"
#include "filter_options.h"

namespace bloomgate::filters {
namespace {

using testing::CheckpointStore;
using testing::Phase;
using testing::key_name;
using testing::run_stream;
using testing::seconds;
using testing::tlbf_options;

const TimePoint kStart = from_epoch_millis(1'700'000'000'000);

// A Poisson stream of `phases` from kStart (fixed seed), a fifth of its events repeating one of the last
// `recent_keys` keys.
void feed(TimeLimitedFilter& filter, const std::vector<Phase>& phases, std::uint64_t recent_keys,
          std::uint64_t seed) {
  run_stream(phases, 0.2, recent_keys, true, seed, kStart,
             [&](std::uint64_t key, TimePoint now) { filter.test_and_insert(key_name(key), now); });
}

TEST(TimeLimitedFilter, RoundTripThroughCheckpointRecords) {
  TimeLimitedFilter filter(tlbf_options(0.01, seconds(10), 1'000));
  feed(filter, {{seconds(15), 500}}, 1000, 71);
  CheckpointStore store(filter.image(ImageScope::kFull));
  filter.mark_persisted();
  const TimePoint later = kStart + seconds(15);
  for (int i = 0; i < 10; ++i) filter.test_and_insert(key_name(1'000'000 + i), later);
  const FilterImage delta = store.checkpoint(filter, ImageScope::kChangedSinceLastPersist);
  EXPECT_LE(delta.slices.size(), filter.params().k + 1U) << "only the slices being written change";
  EXPECT_GE(delta.slices.size(), filter.params().k) << "every slice an insertion wrote is in the delta";
  const auto restored = store.restore();
  EXPECT_EQ(serialize(*restored), serialize(filter));
  for (std::uint64_t key = 0; key < 3000; ++key) {
    ASSERT_EQ(restored->contains(key_name(key), later), filter.contains(key_name(key), later)) << key;
  }
}

// restore() over SliceViews (the store's zero-copy path): the same filter as over copies; the slices are
// asked for in ascending id order (a store sorted by id answers with one forward scan); a view need only
// live until the next lookup (here each lookup overwrites the one buffer the previous view pointed into);
// and each record's checksum is still verified.
TEST(TimeLimitedFilter, RestoresFromViewsAskingInAscendingIdOrder) {
  TimeLimitedFilter filter(tlbf_options(0.01, seconds(10), 1'000));
  feed(filter, {{seconds(15), 500}}, 1000, 72);
  const CheckpointStore store(filter.image(ImageScope::kFull));

  std::vector<std::uint64_t> asked;
  std::string buffer;
  const SliceViews views([&](std::uint64_t id) -> std::optional<std::string_view> {
    asked.push_back(id);
    std::fill(buffer.begin(), buffer.end(), '\x5a');  // what a stale view would now see
    const auto it = store.slices().find(id);
    if (it == store.slices().end()) return std::nullopt;
    buffer.assign(it->second);
    return std::string_view(buffer);
  });
  const auto restored = restore(store.meta(), views);
  EXPECT_EQ(serialize(*restored), serialize(filter));
  EXPECT_EQ(serialize(*restore(store.meta(), SliceViews::of(store.lookup()))), serialize(filter));
  EXPECT_EQ(asked.size(), filter.slice_count());
  EXPECT_TRUE(std::is_sorted(asked.begin(), asked.end()));
  EXPECT_EQ(std::adjacent_find(asked.begin(), asked.end()), asked.end()) << "a slice asked for twice";

  CheckpointStore damaged = store;
  std::string& record = damaged.slices().begin()->second;
  record[kRecordHeaderSize + 40] = static_cast<char>(record[kRecordHeaderSize + 40] ^ 0x01);
  const SliceViews damaged_views([&](std::uint64_t id) -> std::optional<std::string_view> {
    const auto it = damaged.slices().find(id);
    if (it == damaged.slices().end()) return std::nullopt;
    return std::string_view(it->second);
  });
  EXPECT_THROW(restore(damaged.meta(), damaged_views), FormatError);
}


// A restored filter must be the imaged one: the same records, answers and fill ratios. `store` is left
// holding the checkpoints.
void expect_restores_exactly(TimeLimitedFilter& filter, TimePoint now, CheckpointStore& store) {
  store.checkpoint(filter, ImageScope::kFull);
  for (int i = 0; i < 1000; ++i) filter.test_and_insert(key_name(9'000'000 + i), now);
  store.checkpoint(filter, ImageScope::kChangedSinceLastPersist);
  const auto restored = store.restore();
  EXPECT_EQ(serialize(*restored), serialize(filter));
  const auto original_stats = filter.stats(now);
  const auto restored_stats = restored->stats(now);
  ASSERT_EQ(restored_stats.slice_stats.size(), original_stats.slice_stats.size());
  for (std::size_t i = 0; i < original_stats.slice_stats.size(); ++i) {
    EXPECT_EQ(restored_stats.slice_stats[i].fill_ratio, original_stats.slice_stats[i].fill_ratio) << i;
  }
  // The restore decodes each slice into words of its own before they go into the segments; those words
  // are freed, so the restored filter holds no more than the imaged one (a restored segment has no free
  // columns, so it may hold less).
  EXPECT_LE(restored_stats.memory_bytes, original_stats.memory_bytes);
  for (std::uint64_t key = 0; key < 20'000; ++key) {
    ASSERT_EQ(restored->contains(key_name(key * 31), now), filter.contains(key_name(key * 31), now)) << key;
  }
}

// Over 2 MiB of slices of one size (one segment): the restore scatters while it reads (column_restore.h),
// into cells that are a fresh mapping nothing memsets (zeroed_words.h). Answers and bytes must still be the
// imaged filter's (a cell left set would answer keys the original does not, and be gathered into the next
// image); that every word, the padding included, starts zero is zeroed_words_test's.
TEST(TimeLimitedFilter, ALargeFilterOfOneSegmentRestoresExactly) {
  TimeLimitedFilter filter(tlbf_options(0.01, seconds(10), 1'600'000));
  feed(filter, {{seconds(20), 165'000}}, 100'000, 97);
  const TimePoint end = kStart + seconds(20);
  ASSERT_EQ(filter.segment_count(), 1U);
  ASSERT_GT(filter.stats(end).bits, std::uint64_t{16} << 20);
  CheckpointStore store;
  expect_restores_exactly(filter, end, store);
  // Damage found part way through, while the thread is scattering, is the FormatError it always was.
  const std::uint64_t middle = std::next(store.slices().begin(), 60)->first;
  std::string damaged = store.slices().at(middle);
  damaged[damaged.size() / 2] ^= 1;
  EXPECT_THROW(store.with_slice(middle, damaged).restore(), FormatError);
  EXPECT_THROW(store.with_slice(store.slices().rbegin()->first, std::nullopt).restore(), FormatError);
}

// The same filter after a rate change, its slices in several segments: the restore starts as for one
// segment, gives that up at the first slice of another size, and scatters the segments afterwards.
TEST(TimeLimitedFilter, ALargeFilterOfSeveralSegmentsRestoresExactly) {
  TimeLimitedFilter filter(tlbf_options(0.01, seconds(10), 600'000));
  feed(filter, {{seconds(12), 60'000}, {seconds(4), 150'000}}, 100'000, 96);
  const TimePoint end = kStart + seconds(16);
  ASSERT_GT(filter.segment_count(), 1U);
  ASSERT_GT(filter.stats(end).bits, std::uint64_t{8} << 20);
  CheckpointStore store;
  expect_restores_exactly(filter, end, store);
}

}  // namespace
}  // namespace bloomgate::filters
