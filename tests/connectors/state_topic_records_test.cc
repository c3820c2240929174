// A partition's checkpoints as state-topic records (state_topic_records.h): what a restore reads back after
// full and incremental checkpoints, an interrupted checkpoint, tombstones, chunking, damage, and the bytes of
// the two value formats. No Kafka: the records planned are fed to the assembler as a consumer would.
#include "bloomgate/connectors/state_topic_records.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <set>

#include "bloomgate/connectors/checkpoint_filter.h"
#include "bloomgate/filters/format.h"
#include "state_store_test_support.h"

namespace bloomgate::connectors {
namespace {

using namespace state_test;  // NOLINT(google-build-using-namespace): the suite's shared helpers

const PartitionId kPartition{"orders", 3};

// What a consumer of the state partition from its beginning would hand the assembler.
StateTopicAssembler read_back(const std::vector<StateTopicRecord>& log, const PartitionId& id = kPartition) {
  StateTopicAssembler assembler(id);
  for (const StateTopicRecord& r : log) {
    assembler.add(r.key, r.value ? std::optional<std::string_view>(*r.value) : std::nullopt);
  }
  return assembler;
}

void append(std::vector<StateTopicRecord>& log, const std::vector<StateTopicRecord>& records) {
  log.insert(log.end(), records.begin(), records.end());
}

StateTopicCheckpoint expect_checkpoint(const std::vector<StateTopicRecord>& log) {
  auto result = read_back(log).finish();
  if (const auto* gap = std::get_if<StateTopicGap>(&result)) {
    ADD_FAILURE() << "no checkpoint: " << gap->reason;
    return {};
  }
  return std::get<StateTopicCheckpoint>(std::move(result));
}

std::string expect_gap(const std::vector<StateTopicRecord>& log) {
  auto result = read_back(log).finish();
  if (std::holds_alternative<StateTopicCheckpoint>(result)) {
    ADD_FAILURE() << "a checkpoint was read back";
    return {};
  }
  return std::get<StateTopicGap>(result).reason;
}

std::unique_ptr<Filter> restore_from(const StateTopicCheckpoint& read) {
  return filters::restore(read.meta, [&read](std::uint64_t id) -> std::optional<std::string> {
    const auto it = read.slices.find(id);
    if (it == read.slices.end()) return std::nullopt;
    return it->second;
  });
}

// The whole state of a filter, byte for byte.
std::string full_image_bytes(const Filter& filter) {
  const FilterImage image = filter.image(ImageScope::kFull);
  std::string bytes = image.meta;
  for (const FilterImage::Slice& slice : image.slices) bytes += std::to_string(slice.id) + ":" + slice.record;
  return bytes;
}

// Checkpoints `filter` through `writer` (changed records after the first), producing everything.
StateTopicPlan checkpoint_to(StateTopicWriter& writer, Filter& filter, std::int64_t next_offset, TimePoint now,
                             ImageScope scope = ImageScope::kChangedSinceLastPersist) {
  const FilterImage image = filter.image(scope);
  StateTopicPlan plan =
      writer.plan(make_checkpoint(kPartition, next_offset, now), image, 1'700'000'000'000 + next_offset);
  filter.mark_persisted();
  return plan;
}

TEST(StateTopicRecords, AFullCheckpointReadBackRestoresTheSameFilterAndPosition) {
  auto filter = filters::make_filter(tlbf_options());
  const TimePoint now = insert_keys(*filter, "a", 0, 3'000, kStart, milliseconds(2));
  StateTopicWriter writer(kPartition);
  const StateTopicPlan plan = checkpoint_to(writer, *filter, 3'000, now, ImageScope::kFull);
  EXPECT_TRUE(plan.tombstones_after_ack.empty());
  EXPECT_EQ(plan.records.back().key, state_topic_manifest_key(kPartition)) << "the manifest is produced last";

  const StateTopicCheckpoint read = expect_checkpoint(plan.records);
  EXPECT_EQ(read.manifest.epoch, plan.epoch);
  EXPECT_EQ(read.manifest.checkpoint, make_checkpoint(kPartition, 3'000, now));
  const auto restored = restore_from(read);
  EXPECT_EQ(full_image_bytes(*restored), full_image_bytes(*filter));
  EXPECT_TRUE(restored->contains(key_name("a", 2'999), now));
}

TEST(StateTopicRecords, IncrementalCheckpointsKeepTheUnchangedSlicesOfEarlierEpochs) {
  auto filter = filters::make_filter(tlbf_options());
  StateTopicWriter writer(kPartition);
  std::vector<StateTopicRecord> log;
  TimePoint now = insert_keys(*filter, "a", 0, 2'000, kStart, milliseconds(5));
  append(log, checkpoint_to(writer, *filter, 2'000, now, ImageScope::kFull).records);
  // A few more keys change the newest slice only; a later stretch of time drops every slice and adds new ones.
  now = insert_keys(*filter, "b", 0, 50, now, milliseconds(1));
  const StateTopicPlan second = checkpoint_to(writer, *filter, 2'050, now);
  append(log, second.records);
  append(log, second.tombstones_after_ack);
  std::set<std::uint64_t> epochs;
  for (const ManifestEntry& e : expect_checkpoint(log).manifest.entries) epochs.insert(e.epoch);
  EXPECT_GT(epochs.size(), 1U) << "every slice was rewritten: the checkpoints were not incremental";
  EXPECT_EQ(full_image_bytes(*restore_from(expect_checkpoint(log))), full_image_bytes(*filter));
  now = insert_keys(*filter, "c", 0, 4'000, now + seconds(8), milliseconds(5));
  const StateTopicPlan third = checkpoint_to(writer, *filter, 6'050, now);
  append(log, third.records);
  append(log, third.tombstones_after_ack);

  const StateTopicCheckpoint read = expect_checkpoint(log);
  EXPECT_EQ(read.manifest.epoch, third.epoch);
  EXPECT_EQ(full_image_bytes(*restore_from(read)), full_image_bytes(*filter));
}

TEST(StateTopicRecords, ACheckpointCutOffBeforeItsManifestLeavesThePreviousOneWhole) {
  auto filter = filters::make_filter(tlbf_options());
  StateTopicWriter writer(kPartition);
  std::vector<StateTopicRecord> log;
  TimePoint now = insert_keys(*filter, "a", 0, 2'000, kStart, milliseconds(5));
  const StateTopicPlan first = checkpoint_to(writer, *filter, 2'000, now, ImageScope::kFull);
  append(log, first.records);
  const std::string before = full_image_bytes(*filter);
  now = insert_keys(*filter, "b", 0, 2'000, now, milliseconds(5));
  const StateTopicPlan second = checkpoint_to(writer, *filter, 4'000, now);
  ASSERT_GT(second.records.size(), 2U);
  // Everything of the second checkpoint but its manifest, which a crash kept from being produced.
  log.insert(log.end(), second.records.begin(), second.records.end() - 1);

  const StateTopicCheckpoint read = expect_checkpoint(log);
  EXPECT_EQ(read.manifest.epoch, first.epoch) << "a restore mixed two checkpoints";
  EXPECT_EQ(read.manifest.checkpoint.next_offset, 2'000);
  EXPECT_EQ(full_image_bytes(*restore_from(read)), before);
}

TEST(StateTopicRecords, TombstonesDeleteExactlyTheRecordsTheNewManifestNoLongerLists) {
  auto filter = filters::make_filter(tlbf_options());
  StateTopicWriter writer(kPartition);
  TimePoint now = insert_keys(*filter, "a", 0, 2'000, kStart, milliseconds(5));
  const StateTopicPlan first = checkpoint_to(writer, *filter, 2'000, now, ImageScope::kFull);
  now = insert_keys(*filter, "b", 0, 4'000, now + seconds(12), milliseconds(5));
  const FilterImage changed = filter->image(ImageScope::kChangedSinceLastPersist);
  ASSERT_FALSE(changed.dropped_slice_ids.empty()) << "the test needs a checkpoint that drops slices";
  const StateTopicPlan second = writer.plan(make_checkpoint(kPartition, 6'000, now), changed, 1'700'000'100'000);

  const StateManifest listed = expect_checkpoint(second.records).manifest;  // the second manifest alone
  std::set<std::string> needed;
  for (const ManifestEntry& e : listed.entries) {
    for (std::uint32_t c = 0; c < e.chunks; ++c) needed.insert(state_topic_chunk_key(kPartition, e.name, e.epoch, c));
  }
  std::set<std::string> written_first;
  for (const StateTopicRecord& r : first.records) written_first.insert(r.key);
  std::set<std::string> expected_tombstones;
  for (const std::string& key : written_first) {
    if (key != state_topic_manifest_key(kPartition) && !needed.contains(key)) expected_tombstones.insert(key);
  }
  std::set<std::string> tombstones;
  for (const StateTopicRecord& r : second.tombstones_after_ack) {
    EXPECT_FALSE(r.value.has_value());
    tombstones.insert(r.key);
  }
  EXPECT_EQ(tombstones, expected_tombstones);
  std::vector<StateTopicRecord> log = first.records;
  append(log, second.records);
  append(log, second.tombstones_after_ack);
  EXPECT_EQ(full_image_bytes(*restore_from(expect_checkpoint(log))), full_image_bytes(*filter));
}

TEST(StateTopicRecords, RecordsLargerThanAChunkAreSplitAndJoinedAgain) {
  auto filter = filters::make_filter(tlbf_options());
  const TimePoint now = insert_keys(*filter, "a", 0, 3'000, kStart, milliseconds(2));
  StateTopicWriter writer(kPartition, 512);
  const StateTopicPlan plan = checkpoint_to(writer, *filter, 3'000, now, ImageScope::kFull);
  std::size_t chunked = 0;
  for (const StateTopicRecord& r : plan.records) {
    if (r.key.find("#1") != std::string::npos) ++chunked;
    if (r.key != state_topic_manifest_key(kPartition)) {
      EXPECT_LE(r.value->size(), 512U + 25 + 8) << r.key;
    }
  }
  EXPECT_GT(chunked, 0U) << "no record needed a second chunk";
  EXPECT_EQ(full_image_bytes(*restore_from(expect_checkpoint(plan.records))), full_image_bytes(*filter));
}

class DamagedStateTopic : public ::testing::Test {
 protected:
  void SetUp() override {
    filter_ = filters::make_filter(tlbf_options());
    const TimePoint now = insert_keys(*filter_, "a", 0, 2'000, kStart, milliseconds(5));
    StateTopicWriter writer(kPartition, 4'096);
    log_ = checkpoint_to(writer, *filter_, 2'000, now, ImageScope::kFull).records;
    ASSERT_GE(log_.size(), 3U);
  }
  StateTopicRecord& a_slice_chunk() {
    for (StateTopicRecord& r : log_) {
      if (r.key.find("/s") != std::string::npos) return r;
    }
    throw std::logic_error("no slice chunk");
  }
  std::unique_ptr<Filter> filter_;
  std::vector<StateTopicRecord> log_;
};

TEST_F(DamagedStateTopic, AMissingChunkIsAGapNamingTheRecord) {
  const std::string key = a_slice_chunk().key;
  std::erase_if(log_, [&](const StateTopicRecord& r) { return r.key == key; });
  EXPECT_NE(expect_gap(log_).find("is missing"), std::string::npos) << expect_gap(log_);
}

TEST_F(DamagedStateTopic, ATombstonedChunkIsAGap) {
  log_.push_back({a_slice_chunk().key, std::nullopt});
  EXPECT_NE(expect_gap(log_).find("is missing"), std::string::npos);
}

TEST_F(DamagedStateTopic, ATruncatedChunkIsAGap) {
  a_slice_chunk().value->resize(a_slice_chunk().value->size() / 2);
  EXPECT_NE(expect_gap(log_).find("checksum"), std::string::npos) << expect_gap(log_);
}

TEST_F(DamagedStateTopic, AFlippedByteInAChunkIsAGap) {
  (*a_slice_chunk().value)[30] ^= 0x10;
  EXPECT_NE(expect_gap(log_).find("checksum"), std::string::npos);
}

TEST_F(DamagedStateTopic, AChunkCopiedUnderAnotherKeyIsAGap) {
  StateTopicRecord& first = a_slice_chunk();
  for (StateTopicRecord& r : log_) {
    if (&r != &first && r.key.find("/s") != std::string::npos) {
      r.value = first.value;
      break;
    }
  }
  EXPECT_NE(expect_gap(log_).find("checksum"), std::string::npos);
}

TEST_F(DamagedStateTopic, ADamagedManifestIsAGap) {
  (*log_.back().value)[10] ^= 0x01;
  EXPECT_NE(expect_gap(log_).find("the state manifest fails its checksum"), std::string::npos);
}

TEST_F(DamagedStateTopic, NoManifestIsAGap) {
  log_.pop_back();
  EXPECT_EQ(expect_gap(log_), "no manifest for orders-3");
  append(log_, {{state_topic_manifest_key(kPartition), std::nullopt}});
  EXPECT_EQ(expect_gap(log_), "no manifest for orders-3");
}

TEST(StateTopicRecords, EachInputPartitionReadsOnlyItsOwnRecords) {
  const PartitionId other{"orders", 13};
  auto mine = filters::make_filter(tlbf_options());
  auto theirs = filters::make_filter(tlbf_options());
  const TimePoint now = insert_keys(*mine, "mine", 0, 1'000, kStart, milliseconds(5));
  insert_keys(*theirs, "theirs", 0, 1'000, kStart, milliseconds(5));
  StateTopicWriter my_writer(kPartition);
  StateTopicWriter their_writer(other);
  const StateTopicPlan a = my_writer.plan(make_checkpoint(kPartition, 10, now), mine->image(ImageScope::kFull), 1);
  const StateTopicPlan b = their_writer.plan(make_checkpoint(other, 20, now), theirs->image(ImageScope::kFull), 1);
  std::vector<StateTopicRecord> log;
  for (std::size_t i = 0; i < std::max(a.records.size(), b.records.size()); ++i) {  // interleaved
    if (i < b.records.size()) log.push_back(b.records[i]);
    if (i < a.records.size()) log.push_back(a.records[i]);
  }
  EXPECT_EQ(full_image_bytes(*restore_from(expect_checkpoint(log))), full_image_bytes(*mine));
  auto their_read = read_back(log, other).finish();
  ASSERT_TRUE(std::holds_alternative<StateTopicCheckpoint>(their_read));
  EXPECT_EQ(std::get<StateTopicCheckpoint>(their_read).manifest.checkpoint.next_offset, 20);
}

TEST(StateTopicRecords, EpochsIncreaseAndComeFromTheClockAcrossOwners) {
  EXPECT_EQ(next_state_epoch(0, 1'000), 1'000U << 10);
  EXPECT_EQ(next_state_epoch(1'000U << 10, 1'000), (1'000U << 10) + 1) << "two checkpoints in one millisecond";
  EXPECT_EQ(next_state_epoch(5'000U << 10, 1'000), (5'000U << 10) + 1) << "a clock that went back";
  EXPECT_EQ(state_topic_partition({"orders", 7}), 7);
}

// ---- the bytes ------------------------------------------------------------------------------------------

std::string le(std::uint64_t value, std::size_t width) {
  std::string out;
  for (std::size_t i = 0; i < width; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  return out;
}

std::string with_keyed_checksum(std::string_view key, std::string body) {
  const std::string covered = std::string(key) + body;
  return body + le(XXH3_64bits(covered.data(), covered.size()), 8);
}

TEST(StateTopicSchema, TheKeysAreVersionedTextNamingPartitionRecordEpochAndChunk) {
  EXPECT_EQ(state_topic_manifest_key(kPartition), "bgst1/orders/3/manifest");
  EXPECT_EQ(state_topic_chunk_key(kPartition, {'s', 17}, 42, 2), "bgst1/orders/3/s17@42#2");
  EXPECT_EQ(state_topic_chunk_key(kPartition, {'m', 0}, 7, 0), "bgst1/orders/3/m0@7#0");
}

TEST(StateTopicSchema, AChunkValueIsPinnedFieldByField) {
  const std::string key = "bgst1/orders/3/s17@42#1";
  const std::string expected = with_keyed_checksum(
      key, std::string("BGSC") + le(1, 1) + le(42, 8) + le(1, 4) + le(3, 4) + le(5, 4) + "hello");
  EXPECT_EQ(encode_state_chunk(key, 42, 1, 3, "hello"), expected);
}

TEST(StateTopicSchema, AManifestValueIsPinnedFieldByFieldAndDecodesBack) {
  const std::string key = state_topic_manifest_key(kPartition);
  StateManifest m;
  m.epoch = 0x0102030405060708;
  m.checkpoint = PartitionCheckpoint{kPartition, 100, 200, 300, 400};
  m.entries = {ManifestEntry{{'m', 0}, 9, 1, 64, 0xAABB}, ManifestEntry{{'s', 5}, 8, 2, 1'000, 0xCCDD}};
  std::string body = std::string("BGSM") + le(1, 1) + le(m.epoch, 8) + le(100, 8) + le(200, 8) + le(300, 8) +
                     le(400, 8) + le(2, 4);
  body += "m" + le(0, 8) + le(9, 8) + le(1, 4) + le(64, 8) + le(0xAABB, 8);
  body += "s" + le(5, 8) + le(8, 8) + le(2, 4) + le(1'000, 8) + le(0xCCDD, 8);
  const std::string value = encode_state_manifest(key, m);
  EXPECT_EQ(value, with_keyed_checksum(key, body));
  StateManifest decoded = decode_state_manifest(key, value);
  decoded.checkpoint.id = kPartition;  // the key names the partition, the value does not
  EXPECT_EQ(decoded, m);
  EXPECT_THROW(decode_state_manifest("bgst1/orders/4/manifest", value), filters::FormatError);
}

// ---- loading a checkpoint read back (checkpoint_filter.h, the rule the state store's restore uses) ----

TEST(StateTopicRecords, ACheckpointReadBackLoadsFromItsSlicesAsTheStoreLoadsOne) {
  auto filter = filters::make_filter(tlbf_options());
  const TimePoint now = insert_keys(*filter, "a", 0, 3'000, kStart, milliseconds(2));
  StateTopicWriter writer(kPartition, 4'096);  // several chunks per slice
  std::vector<StateTopicRecord> log;
  append(log, checkpoint_to(writer, *filter, 3'000, now, ImageScope::kFull).records);
  RestoreReport report;
  report.snapshot_ignored = "left over";
  const auto restored = restore_checkpoint_filter(expect_checkpoint(log), report);
  ASSERT_NE(restored, nullptr);
  EXPECT_FALSE(report.from_snapshot);
  EXPECT_EQ(report.snapshot_ignored, "") << "no snapshot was written, so none was passed over";
  EXPECT_EQ(full_image_bytes(*restored), full_image_bytes(*filter));
  for (std::uint64_t i = 0; i < 3'000; i += 97) EXPECT_TRUE(restored->contains(key_name("a", i), now)) << i;
}

TEST(StateTopicRecords, ACheckpointWithTheSnapshotOfACleanStopLoadsFromTheSnapshot) {
  TimePoint now;
  const auto filter = snapshotting_filter(now);
  const auto snapshot = filter->snapshot();
  ASSERT_TRUE(snapshot.has_value());
  StateTopicWriter writer(kPartition);
  const FilterImage image = filter->image(ImageScope::kFull);
  const StateTopicPlan plan =
      writer.plan(make_checkpoint(kPartition, 1'200'000, now), image, 1'700'000'000'000, &*snapshot);
  const StateTopicCheckpoint read = expect_checkpoint(plan.records);
  ASSERT_TRUE(read.snapshot.has_value());
  RestoreReport report;
  const auto restored = restore_checkpoint_filter(read, report);
  ASSERT_NE(restored, nullptr);
  EXPECT_TRUE(report.from_snapshot);
  EXPECT_EQ(filters::serialize(*restored), filters::serialize(*filter)) << "the snapshot restored another filter";

  // A snapshot of the filter before its last change, listed beside the newer metadata: passed over.
  for (std::uint64_t i = 1'200'000; i < 1'210'000; ++i) {
    now += std::chrono::microseconds(25);
    filter->test_and_insert(key_name("s", i), now);
  }
  const FilterImage newer = filter->image(ImageScope::kFull);
  StateTopicWriter later(kPartition);
  const StateTopicCheckpoint stale =
      expect_checkpoint(later.plan(make_checkpoint(kPartition, 1'210'000, now), newer, 1'700'000'000'001, &*snapshot).records);
  const auto from_slices = restore_checkpoint_filter(stale, report);
  EXPECT_FALSE(report.from_snapshot);
  EXPECT_EQ(report.snapshot_ignored, "it was taken at another checkpoint");
  EXPECT_EQ(filters::serialize(*from_slices), filters::serialize(*filter));
}

}  // namespace
}  // namespace bloomgate::connectors
