// Snapshots of the time-limited filter (filter.h, FilterSnapshot): what a clean stop writes beside the
// slice records. A snapshot must restore exactly the filter the slices restore, must never be used with a
// metadata record it was not taken with, and must reject any band that is not its own. Streams use fixed
// seeds (given at each call).
#include <gtest/gtest.h>
#include <xxhash.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"
#include "time_limited_filter.h"
#include "checkpoint_store.h"
#include "ground_truth.h"
#include "record_fields.h"
#include "filter_options.h"

namespace bloomgate::filters {
namespace {

using testing::CheckpointStore;
using testing::envelope;
using testing::Fields;
using testing::key_name;
using testing::run_stream;
using testing::seconds;
using testing::tlbf_options;

const TimePoint kStart = from_epoch_millis(1'700'000'000'000);
const TimePoint kEnd = kStart + seconds(30);

// 400,000 keys per TTL: slices of 78,720 bits, all in one segment after 30 s (time_limited_filter_test).
std::unique_ptr<TimeLimitedFilter> large_filter(std::uint64_t seed) {
  auto filter = std::make_unique<TimeLimitedFilter>(tlbf_options(0.01, seconds(10), 400'000));
  run_stream({{seconds(30), 52'000}}, 0.2, 100'000, true, seed, kStart,
             [&](std::uint64_t key, TimePoint now) { filter->test_and_insert(key_name(key), now); });
  return filter;
}

// Band lookups over a snapshot's bands, counting the calls.
SliceViews bands_of(const std::vector<std::string>& bands, int* calls = nullptr) {
  return SliceViews([&bands, calls](std::uint64_t band) -> std::optional<std::string_view> {
    if (calls != nullptr) ++*calls;
    if (band >= bands.size()) return std::nullopt;
    return bands[band];
  });
}

TEST(Snapshot, RestoresTheFilterItsSlicesRestoreAndKeepsWorkingAlike) {
  const auto filter = large_filter(91);
  ASSERT_EQ(filter->segment_count(), 1U);
  const FilterImage image = filter->image(ImageScope::kFull);
  const std::optional<FilterSnapshot> snapshot = filter->snapshot();
  ASSERT_TRUE(snapshot.has_value());
  EXPECT_GT(snapshot->bands.size(), 1U);
  for (const std::string& band : snapshot->bands) EXPECT_LE(band.size(), kSnapshotBandBytes + 64);

  const auto from_snapshot = restore_snapshot(image.meta, snapshot->header, bands_of(snapshot->bands));
  ASSERT_NE(from_snapshot, nullptr);
  const auto from_slices = CheckpointStore(image).restore();
  EXPECT_TRUE(serialize(*from_snapshot) == serialize(*filter)) << "the records differ";
  const FilterStats expected = filter->stats(kEnd);
  const FilterStats got = from_snapshot->stats(kEnd);
  EXPECT_EQ(got.bits, expected.bits);  // the free columns too: the segment is the original's
  ASSERT_EQ(got.slice_stats.size(), expected.slice_stats.size());
  for (std::size_t i = 0; i < expected.slice_stats.size(); ++i) {
    EXPECT_EQ(got.slice_stats[i].fill_ratio, expected.slice_stats[i].fill_ratio) << i;
    EXPECT_EQ(got.slice_stats[i].insertions, expected.slice_stats[i].insertions) << i;
  }
  // Restored slices are persisted ones: the next incremental image writes none of them.
  EXPECT_TRUE(from_snapshot->image(ImageScope::kChangedSinceLastPersist).slices.empty());

  // Another 20 s of the stream: slices expire, columns wrap around the ring, and all three answer alike.
  Filter* const filters[] = {filter.get(), from_snapshot.get(), from_slices.get()};
  std::vector<bool> answers[3];
  for (int f = 0; f < 3; ++f) {
    run_stream({{seconds(20), 52'000}}, 0.2, 100'000, true, 92, kEnd, [&](std::uint64_t key, TimePoint now) {
      answers[f].push_back(filters[f]->test_and_insert(key_name(key + 10'000'000), now));
    });
  }
  EXPECT_EQ(answers[1], answers[0]);
  EXPECT_EQ(answers[2], answers[0]);
  EXPECT_TRUE(serialize(*from_snapshot) == serialize(*filter)) << "the records differ";
}

TEST(Snapshot, IsIgnoredOnceTheFilterChangedAfterIt) {
  const auto filter = large_filter(93);
  const std::optional<FilterSnapshot> snapshot = filter->snapshot();
  ASSERT_TRUE(snapshot.has_value());
  filter->test_and_insert(key_name(77'000'000), kEnd);  // a checkpoint after this writes a new metadata record
  const FilterImage image = filter->image(ImageScope::kFull);
  int calls = 0;
  EXPECT_EQ(restore_snapshot(image.meta, snapshot->header, bands_of(snapshot->bands, &calls)), nullptr);
  EXPECT_EQ(calls, 0) << "no band is read for a snapshot of another metadata record";
  // Taken again now, it matches.
  const std::optional<FilterSnapshot> again = filter->snapshot();
  ASSERT_TRUE(again.has_value());
  const auto restored = restore_snapshot(image.meta, again->header, bands_of(again->bands));
  ASSERT_NE(restored, nullptr);
  EXPECT_TRUE(serialize(*restored) == serialize(*filter)) << "the records differ";
}

TEST(Snapshot, RejectsBandsThatAreNotItsOwn) {
  const auto filter = large_filter(94);
  const std::string meta = filter->image(ImageScope::kChangedSinceLastPersist).meta;
  const FilterSnapshot snapshot = *filter->snapshot();
  const auto restore_with = [&](std::vector<std::string> bands) {
    return restore_snapshot(meta, snapshot.header, bands_of(bands));
  };
  std::vector<std::string> flipped = snapshot.bands;
  flipped[2][flipped[2].size() / 2] ^= 0x10;
  EXPECT_THROW(restore_with(flipped), FormatError);
  std::vector<std::string> missing = snapshot.bands;
  missing.pop_back();
  EXPECT_THROW(restore_with(missing), FormatError);
  std::vector<std::string> swapped = snapshot.bands;
  std::swap(swapped[1], swapped[2]);
  EXPECT_THROW(restore_with(swapped), FormatError);
  // A band of an older snapshot of the same filter: the same number and size, another header.
  filter->test_and_insert(key_name(78'000'000), kEnd);
  const FilterSnapshot later = *filter->snapshot();
  std::vector<std::string> foreign = later.bands;
  foreign[1] = snapshot.bands[1];
  const std::string later_meta = filter->image(ImageScope::kChangedSinceLastPersist).meta;
  EXPECT_THROW(restore_snapshot(later_meta, later.header, bands_of(foreign)), FormatError);
  std::string bad_header = snapshot.header;
  bad_header[40] ^= 1;
  EXPECT_THROW(restore_snapshot(meta, bad_header, bands_of(snapshot.bands)), FormatError);
  EXPECT_NE(restore_with(snapshot.bands), nullptr) << "control: the snapshot as written restores";
}

// A snapshot of an earlier version holds cells in another layout (rows in lines) and its header has no
// layout field: refused as a FormatError, so the store restores from the slices (state_store.cc).
TEST(Snapshot, RefusesTheCellsOfAnEarlierLayout) {
  const auto filter = large_filter(93);
  const std::string meta = filter->image(ImageScope::kChangedSinceLastPersist).meta;
  const FilterSnapshot snapshot = *filter->snapshot();
  const Record header = decode_single_record(snapshot.header);
  const std::string earlier = encode_record(RecordKind::kSnapshot, FilterType::kTimeLimited, 0,
                                            header.payload.substr(0, header.payload.size() - 4));
  try {
    (void)restore_snapshot(meta, earlier, bands_of(snapshot.bands));
    FAIL() << "an earlier layout's snapshot was restored";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("earlier layout"), std::string::npos) << e.what();
  }
}

TEST(Snapshot, OnlyALargeFilterOfOneSegmentHasOne) {
  TimeLimitedFilter small(tlbf_options(0.01, seconds(10), 2'000));
  run_stream({{seconds(30), 260}}, 0.2, 1'000, true, 95, kStart,
             [&](std::uint64_t key, TimePoint now) { small.test_and_insert(key_name(key), now); });
  ASSERT_EQ(small.segment_count(), 1U) << "small slices share a segment too";
  EXPECT_FALSE(small.snapshot().has_value()) << "slices under 2^16 bits restore from their records";
  TimeLimitedFilter changing(tlbf_options(0.01, seconds(10), 400'000));
  run_stream({{seconds(12), 40'000}, {seconds(4), 150'000}}, 0.2, 100'000, true, 96, kStart,
             [&](std::uint64_t key, TimePoint now) { changing.test_and_insert(key_name(key), now); });
  ASSERT_GT(changing.segment_count(), 1U);
  EXPECT_FALSE(changing.snapshot().has_value()) << "several segments restore from their slices";
  FilterOptions bloom;
  bloom.type = FilterType::kBloom;
  bloom.expected_per_ttl = 1'000'000;
  EXPECT_FALSE(make_filter(bloom)->snapshot().has_value());
}

// The persisted bytes of a snapshot, read field by field as schema_test.cc reads the other records: the
// header's envelope and fixed fields, the newest slice's entry (the others as a digest, 103 entries being too
// many to list), the cell layout, and each band's envelope and link to the header, with the cells of all
// bands as one digest. A change fails naming the part that moved, and must come with a new format version.
TEST(Schema, TimeLimitedSnapshot) {
  const FilterSnapshot snapshot = *large_filter(91)->snapshot();
  constexpr std::size_t kFixedBytes = 48;
  constexpr std::size_t kEntryBytes = 44;
  EXPECT_EQ(envelope(snapshot.header),
            "BGFR version=1 kind=3 type=1 seed=626c6f6f6d676174 id=0 length=4584 checksum=xxh3");
  const std::string_view header = decode_single_record(snapshot.header).payload;
  EXPECT_EQ(Fields(header.substr(0, kFixedBytes)).hex64("meta checksum").u64("rows").u32("columns")
                .u32("column of age 0").u64("words").u32("band words").u32("bands").u64("slices").str(),
            "meta checksum=98ff41f2e1418a6c rows=78720 columns=107 column of age 0=53 words=132840 "
            "band words=32768 bands=5 slices=103");
  EXPECT_EQ(Fields(header.substr(kFixedBytes, kEntryBytes)).u64("id").u64("insertions").u32("hash index")
                .i64("stamp").u64("generation insertions").u64("set bits").str(),
            "id=472 insertions=830 hash index=4 stamp=-9223372036854775808 generation insertions=0 set bits=824");
  const std::size_t entries_end = header.size() - 4;
  const std::string_view older = header.substr(kFixedBytes + kEntryBytes, entries_end - kFixedBytes - kEntryBytes);
  EXPECT_EQ(older.size() % kEntryBytes, 0U);
  EXPECT_EQ(XXH3_64bits(older.data(), older.size()), 12408771814855391323ULL);
  EXPECT_EQ(Fields(header.substr(entries_end)).u32("cell layout").str(), "cell layout=2");

  XXH3_state_t* cells = XXH3_createState();
  XXH3_64bits_reset(cells);
  const std::vector<std::string> band_envelopes = {
      "BGFR version=1 kind=4 type=1 seed=626c6f6f6d676174 id=0 length=262152 checksum=xxh3",
      "BGFR version=1 kind=4 type=1 seed=626c6f6f6d676174 id=1 length=262152 checksum=xxh3",
      "BGFR version=1 kind=4 type=1 seed=626c6f6f6d676174 id=2 length=262152 checksum=xxh3",
      "BGFR version=1 kind=4 type=1 seed=626c6f6f6d676174 id=3 length=262152 checksum=xxh3",
      "BGFR version=1 kind=4 type=1 seed=626c6f6f6d676174 id=4 length=14152 checksum=xxh3"};
  ASSERT_EQ(snapshot.bands.size(), band_envelopes.size());
  for (std::size_t i = 0; i < snapshot.bands.size(); ++i) {
    EXPECT_EQ(envelope(snapshot.bands[i]), band_envelopes[i]);
    const std::string_view payload = decode_single_record(snapshot.bands[i]).payload;
    EXPECT_EQ(Fields(payload.substr(0, 8)).hex64("header").str(),
              Fields(snapshot.header.substr(snapshot.header.size() - 8)).hex64("header").str());
    XXH3_64bits_update(cells, payload.data() + 8, payload.size() - 8);
  }
  EXPECT_EQ(XXH3_64bits_digest(cells), 2819121438019302834ULL);
  XXH3_freeState(cells);
}

}  // namespace
}  // namespace bloomgate::filters
