// The RocksDB state store under damage: damaged table files, a damaged or truncated WAL and a full disk
// surface as typed errors, never as a crash or a silently different filter; a quarantine in place moves
// the state aside for every thread using the store; restores read views of the stored slices.
#include <gtest/gtest.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bloomgate/connectors/state_store.h"
#include "state_store_test_support.h"
#include "../support/full_disk_file_system.h"

namespace bloomgate::connectors {
namespace {

using namespace state_test;  // NOLINT(google-build-using-namespace): the suite's shared helpers

// Checkpoints four partitions' filters, flushes them to table files and overwrites 64 bytes in the middle
// of each table file; returns what each partition held.
std::map<PartitionId, std::string> write_then_damage_tables(const std::string& dir) {
  std::map<PartitionId, std::string> expected;
  {
    const auto store = StateStore::open(dir);
    for (std::int32_t p = 0; p < 4; ++p) {
      const PartitionId id{"events", p};
      const auto filter = filters::make_filter(tlbf_options());
      const TimePoint now = insert_keys(*filter, to_string(id), 0, 5'000, kStart, milliseconds(2));
      checkpoint(*store, *filter, make_checkpoint(id, p + 1, now));
      expected.emplace(id, filters::serialize(*filter));
    }
    store->flush();
  }
  const auto tables = files_with_extension(dir, ".sst");
  EXPECT_FALSE(tables.empty()) << "flush() wrote no table file";
  for (const auto& table : tables) flip_bytes(table, fs::file_size(table) / 2, 64);
  return expected;
}

// The store over damaged table files, or nullptr when open() already reports them (as kCorrupt).
std::unique_ptr<StateStore> open_damaged(const std::string& dir) {
  try {
    return StateStore::open(dir);
  } catch (const StateStoreError& e) {
    EXPECT_EQ(e.kind(), Kind::kCorrupt) << e.what();
    return nullptr;
  }
}

// Restores every partition of `expected` from a store over damaged tables (nullptr: open() refused it, which
// counts as one detection): each restore either gives back exactly what was written or throws kCorrupt,
// never a filter's FormatError. Returns the detections.
std::size_t corrupt_restores(StateStore* store, const std::map<PartitionId, std::string>& expected,
                             const std::function<std::unique_ptr<Filter>(const PartitionId&)>& restore_partition) {
  if (store == nullptr) return 1;
  std::size_t detected = 0;
  for (const auto& [id, blob] : expected) {
    try {
      const auto restored = restore_partition(id);
      if (restored == nullptr) {
        ADD_FAILURE() << to_string(id) << " restored to nothing";
        continue;
      }
      EXPECT_EQ(filters::serialize(*restored), blob) << to_string(id) << " was restored to another filter";
    } catch (const StateStoreError& e) {
      EXPECT_EQ(e.kind(), Kind::kCorrupt) << e.what();
      ++detected;
    } catch (const filters::FormatError& e) {
      ADD_FAILURE() << "damage got past the store to the filter: " << e.what();
    }
  }
  return detected;
}

// Damaged table files: open refuses (kCorrupt) or every read of damaged data throws kCorrupt; whatever

TEST(StateStore, DamagedTableFilesAreReportedAsCorrupt) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  const std::map<PartitionId, std::string> expected = write_then_damage_tables(dir);
  std::unique_ptr<StateStore> store = open_damaged(dir);
  std::size_t detected = corrupt_restores(store.get(), expected, [&](const PartitionId& id) { return restore(*store, id); });
  try {
    if (store) (void)store->list();
  } catch (const StateStoreError& e) {
    EXPECT_EQ(e.kind(), Kind::kCorrupt) << e.what();
  }
  EXPECT_GT(detected, 0U) << "the damage went unnoticed";

  // The remedy for a damaged table file: move the directory's contents aside and start empty.
  store.reset();
  const std::string moved = StateStore::quarantine(dir);
  EXPECT_EQ(moved.rfind(dir + "/quarantine-", 0), 0U) << moved;
  EXPECT_TRUE(files_with_extension(dir, ".sst").empty());
  EXPECT_FALSE(files_with_extension(moved, ".sst").empty());
  EXPECT_TRUE(StateStore::open(dir)->list().empty());
  const std::string moved_again = StateStore::quarantine(dir);
  EXPECT_NE(moved_again, moved);
  EXPECT_TRUE(fs::is_directory(moved_again));
  try {
    StateStore::quarantine(dir + "-missing");
    ADD_FAILURE() << "quarantined a directory that does not exist";
  } catch (const StateStoreError& e) {
    EXPECT_EQ(e.kind(), Kind::kInvalidArgument) << e.what();
  }
}

// A store shared by several threads (the service's workers) is quarantined in place: the other threads'
// calls wait for it and then go to the new, empty database; what was written before went aside with the
// directory, and the count tells every user so.
TEST(StateStore, AQuarantineInPlaceMovesTheStateAsideForEveryThreadUsingTheStore) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  const auto store = StateStore::open(dir);
  const auto filter = filters::make_filter(tlbf_options());
  const TimePoint now = insert_keys(*filter, "q", 0, 1'000, kStart, milliseconds(1));
  const FilterImage image = filter->image(ImageScope::kFull);
  const PartitionId before{"events", 0};
  store->write_checkpoint(make_checkpoint(before, 1'000, now), image);
  EXPECT_EQ(store->quarantines(), 0U);

  std::atomic<bool> quarantined{false};
  std::int64_t last_offset = 0;
  std::thread writer([&] {  // keeps writing partition 1 through the quarantine, and 5 times after it
    for (int after = 0; after < 5; ++last_offset) {
      store->write_checkpoint(make_checkpoint(PartitionId{"events", 1}, last_offset + 1, now), image);
      if (quarantined.load()) ++after;
    }
  });
  const std::string moved = store->quarantine_and_reopen();
  quarantined.store(true);
  writer.join();

  EXPECT_EQ(store->quarantines(), 1U);
  EXPECT_EQ(moved.rfind(dir + "/quarantine-", 0), 0U) << moved;
  EXPECT_TRUE(fs::is_directory(moved));
  EXPECT_FALSE(store->read(before).has_value()) << "the state written before went aside";
  const auto last = store->read(PartitionId{"events", 1});
  ASSERT_TRUE(last.has_value()) << "writes after the quarantine go to the new database";
  EXPECT_EQ(last->checkpoint.next_offset, last_offset);
  store->write_checkpoint(make_checkpoint(before, 2'000, now), image);
  EXPECT_EQ(store->read(before)->checkpoint.next_offset, 2'000);
}

// restore_filter(), the restore path: views of RocksDB's blocks instead of copies, one forward scan. The
// same filter as the copying slices(); with_slices() answers any lookup order, and nothing for a slice
// that is not stored.
TEST(StateStore, RestoreFilterBuildsTheSameFilterFromViewsOfTheStoredSlices) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  const PartitionId id{"events", 5};
  const auto filter = filters::make_filter(tlbf_options());
  TimePoint now = insert_keys(*filter, "v", 0, 20'000, kStart, milliseconds(1));
  {
    const auto store = StateStore::open(dir);
    checkpoint(*store, *filter, make_checkpoint(id, 20'000, now));
    store->flush();  // the first checkpoint in a table file, the second in the memtable: both are read
    now = insert_keys(*filter, "v", 20'000, 1'000, now + milliseconds(3), milliseconds(3));
    checkpoint(*store, *filter, make_checkpoint(id, 21'000, now));
  }
  const auto store = StateStore::open(dir);
  const auto stored = store->read(id);
  ASSERT_TRUE(stored.has_value());
  const auto restored = store->restore_filter(id, stored->filter_meta);
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(filters::serialize(*restored), filters::serialize(*filter));
  EXPECT_EQ(filters::serialize(*restored), filters::serialize(*filters::restore(stored->filter_meta, store->slices(id))));
  for (std::uint64_t i = 0; i < 21'000; i += 7) {
    ASSERT_EQ(restored->contains(key_name("v", i), now), filter->contains(key_name("v", i), now)) << i;
  }

  const FilterImage full = filter->image(ImageScope::kFull);
  std::vector<std::uint64_t> order;
  for (const auto& slice : full.slices) order.push_back(slice.id);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  std::map<std::uint64_t, std::string> records;
  for (const auto& slice : full.slices) records.emplace(slice.id, slice.record);
  const std::uint64_t past_the_last = records.rbegin()->first + 1;
  store->with_slices(id, [&](const filters::SliceViews& views) {
    for (const std::uint64_t slice_id : order) {
      const auto view = views(slice_id);
      ASSERT_TRUE(view.has_value()) << slice_id;
      EXPECT_EQ(*view, records.at(slice_id)) << slice_id;
      EXPECT_EQ(views(slice_id), records.at(slice_id)) << "the same slice twice in a row: " << slice_id;
    }
    EXPECT_FALSE(views(past_the_last).has_value());
    EXPECT_EQ(views(records.begin()->first), records.begin()->second) << "back to the first after the end";
  });
  // The metadata record is the caller's: with it, a partition that holds none of its slices is a filter
  // with missing slices.
  EXPECT_THROW((void)store->restore_filter({"events", 6}, stored->filter_meta), filters::FormatError);
}

bool same_records(const Filter& a, const Filter& b) { return filters::serialize(a) == filters::serialize(b); }

// A clean stop writes a snapshot after its checkpoint; the next start restores from it, on disk, to the
// same filter. The next checkpoint deletes it, so a later start restores from the slices again, and a
// snapshot written beside another checkpoint than its own is passed over.
TEST(StateStore, RestoresFromTheSnapshotOfItsCheckpointAndOnlyFromThat) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  const PartitionId id{"events", 3};
  TimePoint now;
  const auto filter = snapshotting_filter(now);
  {
    const auto store = StateStore::open(dir);
    checkpoint(*store, *filter, make_checkpoint(id, 1'200'000, now));
    const auto snapshot = filter->snapshot();
    ASSERT_TRUE(snapshot.has_value());
    EXPECT_GT(store->write_snapshot(id, *snapshot), filters::kSnapshotBandBytes * (snapshot->bands.size() - 1));
    store->flush();
  }
  std::unique_ptr<Filter> restored;
  {
    const auto store = StateStore::open(dir);
    RestoreReport report;
    restored = store->restore_filter(id, store->read(id)->filter_meta, &report);
    EXPECT_TRUE(report.from_snapshot);
    EXPECT_EQ(report.snapshot_ignored, "");
    EXPECT_TRUE(same_records(*restored, *filter)) << "the snapshot restored another filter";
    for (std::uint64_t i = 1'200'000; i < 1'210'000; ++i) {
      now += std::chrono::microseconds(25);
      restored->test_and_insert(key_name("s", i), now);
    }
    checkpoint(*store, *restored, make_checkpoint(id, 1'210'000, now));
  }
  const auto store = StateStore::open(dir);
  RestoreReport report;
  auto again = store->restore_filter(id, store->read(id)->filter_meta, &report);
  EXPECT_FALSE(report.from_snapshot);
  EXPECT_EQ(report.snapshot_ignored, "") << "the checkpoint deleted the snapshot";
  EXPECT_TRUE(same_records(*again, *restored));

  // Misuse: a snapshot of the filter before its last checkpoint, written after it.
  const auto stale = filter->snapshot();
  store->write_snapshot(id, *stale);
  again = store->restore_filter(id, store->read(id)->filter_meta, &report);
  EXPECT_FALSE(report.from_snapshot);
  EXPECT_EQ(report.snapshot_ignored, "it was taken at another checkpoint");
  EXPECT_TRUE(same_records(*again, *restored));

  // drop() takes the snapshot with everything else: a new filter checkpointed there restores from its slices.
  store->write_snapshot(id, *restored->snapshot());
  store->drop(id);
  EXPECT_FALSE(store->read(id).has_value());
  const auto fresh = filters::make_filter(tlbf_options());
  now = insert_keys(*fresh, "f", 0, 1'000, kStart, milliseconds(1));
  checkpoint(*store, *fresh, make_checkpoint(id, 1'000, now));
  again = store->restore_filter(id, store->read(id)->filter_meta, &report);
  EXPECT_FALSE(report.from_snapshot);
  EXPECT_EQ(report.snapshot_ignored, "");
  EXPECT_TRUE(same_records(*again, *fresh));
}

// Damage in a table file reaches restore_filter() as kCorrupt, never as a filter built from it nor as a
// FormatError (which the service would take for intact records and keep the directory): RocksDB's block
// checksums are verified as the blocks are read. Otherwise DamagedTableFilesAreReportedAsCorrupt.
TEST(StateStore, RestoreFilterReportsDamagedTableFilesAsCorrupt) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  const std::map<PartitionId, std::string> expected = write_then_damage_tables(dir);
  std::unique_ptr<StateStore> store = open_damaged(dir);
  std::size_t detected = corrupt_restores(store.get(), expected, [&](const PartitionId& id) {
    const auto stored = store->read(id);
    if (!stored) throw std::runtime_error(to_string(id) + " has no checkpoint");
    return store->restore_filter(id, stored->filter_meta);
  });
  EXPECT_GT(detected, 0U) << "the damage went unnoticed";
}

// Records that RocksDB stores intact but that are wrong: another slice's record under a slice's key is
// kCorrupt (the store checks which record it hands out); a record whose own checksum fails is the filter's
// FormatError (restore verifies every record's checksum once).
TEST(StateStore, RestoreFilterRejectsAForeignRecordAndABadRecordChecksum) {
  TempDir tmp;
  const auto store = StateStore::open(tmp.path("state"));
  const auto filter = filters::make_filter(tlbf_options());
  const TimePoint now = insert_keys(*filter, "r", 0, 5'000, kStart, milliseconds(2));
  const FilterImage image = filter->image(ImageScope::kFull);
  ASSERT_GE(image.slices.size(), 2U);

  FilterImage foreign = image;
  foreign.slices[0].record = image.slices[1].record;
  store->write_checkpoint(make_checkpoint({"f", 0}, 1, now), foreign);
  try {
    (void)store->restore_filter({"f", 0}, store->read({"f", 0})->filter_meta);
    ADD_FAILURE() << "restored a filter with another slice's record in it";
  } catch (const StateStoreError& e) {
    EXPECT_EQ(e.kind(), Kind::kCorrupt) << e.what();
  }

  FilterImage bad_checksum = image;
  std::string& record = bad_checksum.slices[0].record;
  record[filters::kRecordHeaderSize + 40] = static_cast<char>(record[filters::kRecordHeaderSize + 40] ^ 0x10);
  store->write_checkpoint(make_checkpoint({"f", 1}, 1, now), bad_checksum);
  EXPECT_THROW((void)store->restore_filter({"f", 1}, store->read({"f", 1})->filter_meta), filters::FormatError);

  store->write_checkpoint(make_checkpoint({"f", 2}, 1, now), image);
  EXPECT_EQ(filters::serialize(*store->restore_filter({"f", 2}, image.meta)), filters::serialize(*filter));
}

struct WalRun {
  struct Written {
    PartitionCheckpoint checkpoint;
    std::string filter;  // serialized
  };
  std::map<std::int64_t, Written> by_offset;  // by next_offset
  PartitionId id{"events", 7};
};

// Six checkpoints of one partition that stay in the WAL (no flush).
WalRun write_wal_checkpoints(const std::string& dir) {
  WalRun run;
  const auto store = StateStore::open(dir);
  const auto filter = filters::make_filter(tlbf_options());
  TimePoint now = kStart;
  for (std::int64_t n = 1; n <= 6; ++n) {
    now = insert_keys(*filter, "w", static_cast<std::uint64_t>(n) * 1'000, 1'000, now + milliseconds(1),
                      milliseconds(2));
    const PartitionCheckpoint c = make_checkpoint(run.id, n * 1'000, now);
    checkpoint(*store, *filter, c);
    run.by_offset.emplace(n * 1'000, WalRun::Written{c, filters::serialize(*filter)});
  }
  return run;
}

TEST(StateStore, DamagedWalRefusesToOpen) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  const WalRun run = write_wal_checkpoints(dir);
  const auto logs = files_with_extension(dir, ".log");
  ASSERT_EQ(logs.size(), 1U);
  ASSERT_EQ(files_with_extension(dir, ".sst").size(), 0U) << "the checkpoints should be in the WAL only";
  flip_bytes(logs.front(), fs::file_size(logs.front()) / 2, 16);
  try {
    const auto store = StateStore::open(dir);
    const auto stored = store->read(run.id);
    ADD_FAILURE() << "opened over a damaged WAL; the partition reads back at "
                  << (stored ? std::to_string(stored->checkpoint.next_offset) : "nothing");
  } catch (const StateStoreError& e) {
    EXPECT_EQ(e.kind(), Kind::kCorrupt) << e.what();
  }
}

// A WAL cut short (as by a crash in the middle of a write) recovers a consistent earlier checkpoint:
// the checkpoint and the filter of the same write_checkpoint, never a mix.
TEST(StateStore, TruncatedWalRecoversAnEarlierCheckpointWhole) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  const WalRun run = write_wal_checkpoints(dir);
  const auto logs = files_with_extension(dir, ".log");
  ASSERT_EQ(logs.size(), 1U);
  fs::resize_file(logs.front(), fs::file_size(logs.front()) / 2);
  try {
    const auto store = StateStore::open(dir);
    const auto stored = store->read(run.id);
    if (!stored) return;  // not even the first checkpoint survived: nothing, which is consistent
    const std::int64_t offset = stored->checkpoint.next_offset;
    ASSERT_EQ(run.by_offset.count(offset), 1U) << "recovered an offset never written: " << offset;
    EXPECT_LT(offset, 6'000) << "half the WAL cannot hold the last checkpoint";
    const WalRun::Written& written = run.by_offset.at(offset);
    EXPECT_EQ(stored->checkpoint, written.checkpoint);
    const auto restored = filters::restore(stored->filter_meta, store->slices(run.id));
    EXPECT_EQ(filters::serialize(*restored), written.filter) << "at offset " << offset;
  } catch (const StateStoreError& e) {
    EXPECT_EQ(e.kind(), Kind::kCorrupt) << e.what();
  }
}

// A full disk fails the checkpoint with kIo and leaves the previous one in place, readable; once there is
// room again, the next checkpoint succeeds (the store closes and reopens the database). The parameter:
// whether the file system reports its free space.
class FullDisk : public ::testing::TestWithParam<bool> {};

TEST_P(FullDisk, FailsTheCheckpointAndKeepsThePreviousOne) {
  const bool report_free_space = GetParam();
  TempDir tmp;
  const std::string dir = tmp.path("state");
  const auto full = std::make_shared<std::atomic<bool>>(false);
  const auto env = bloomgate::testing::full_disk_env(full, report_free_space);
  const PartitionId id{"events", 2};
  const auto filter = filters::make_filter(tlbf_options());
  TimePoint now = insert_keys(*filter, "d", 0, 2'000, kStart, milliseconds(1));
  std::string last_blob;
  {
    StateStoreOptions options;
    options.environment = env.get();
    const auto store = StateStore::open(dir, options);
    checkpoint(*store, *filter, make_checkpoint(id, 1, now));
    const std::string first_blob = filters::serialize(*filter);

    now = insert_keys(*filter, "d", 2'000, 500, now + milliseconds(1), milliseconds(1));
    full->store(true);
    const FilterImage image = filter->image(ImageScope::kChangedSinceLastPersist);
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        store->write_checkpoint(make_checkpoint(id, 2, now), image);
        FAIL() << "a checkpoint on a full disk succeeded";
      } catch (const StateStoreError& e) {
        EXPECT_EQ(e.kind(), Kind::kIo) << e.what();
        EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
      }
    }
    // Not marked persisted: the next image still holds these changes. The store shows checkpoint 1.
    EXPECT_EQ(store->list().size(), 1U);
    const auto stored = store->read(id);
    ASSERT_TRUE(stored.has_value());
    EXPECT_EQ(stored->checkpoint.next_offset, 1);
    EXPECT_EQ(filters::serialize(*filters::restore(stored->filter_meta, store->slices(id))), first_blob);

    full->store(false);
    now = insert_keys(*filter, "d", 2'500, 100, now + milliseconds(1), milliseconds(1));
    const PartitionCheckpoint next = make_checkpoint(id, 3, now);
    checkpoint(*store, *filter, next);
    last_blob = filters::serialize(*filter);
    ASSERT_EQ(store->read(id)->checkpoint, next);
  }
  const auto store = StateStore::open(dir);
  const auto restored = restore(*store, id);
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(store->read(id)->checkpoint, make_checkpoint(id, 3, now));
  EXPECT_EQ(filters::serialize(*restored), last_blob);
}

// The first write to a fresh WAL fails: RocksDB 7.8's own resume would keep that WAL and its failed
// writer (facebook/rocksdb#11643, #12998), and the next write abort in Debian's assert-enabled build.
TEST_P(FullDisk, OnTheFirstWriteOfAWalTheNextCheckpointStillSucceeds) {
  const bool report_free_space = GetParam();
  TempDir tmp;
  const std::string dir = tmp.path("state");
  const auto full = std::make_shared<std::atomic<bool>>(false);
  const auto env = bloomgate::testing::full_disk_env(full, report_free_space);
  const PartitionId id{"events", 4};
  const auto filter = filters::make_filter(tlbf_options());
  const TimePoint now = insert_keys(*filter, "f", 0, 1'000, kStart, milliseconds(1));
  StateStoreOptions options;
  options.environment = env.get();
  const auto store = StateStore::open(dir, options);
  full->store(true);
  EXPECT_THROW(store->write_checkpoint(make_checkpoint(id, 1, now), filter->image(ImageScope::kFull)),
               StateStoreError);
  EXPECT_FALSE(store->read(id).has_value());
  full->store(false);
  checkpoint(*store, *filter, make_checkpoint(id, 2, now));
  const auto restored = restore(*store, id);
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(filters::serialize(*restored), filters::serialize(*filter));
}

INSTANTIATE_TEST_SUITE_P(StateStore, FullDisk, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? std::string("FreeSpaceKnown") : std::string("FreeSpaceUnknown");
                         });

TEST(StateStore, ErrorKindsHaveNames) {
  EXPECT_STREQ(to_string(Kind::kLocked), "locked");
  EXPECT_STREQ(to_string(Kind::kCorrupt), "corrupt");
  EXPECT_STREQ(to_string(Kind::kIo), "io");
  EXPECT_STREQ(to_string(Kind::kInvalidArgument), "invalid-argument");
  EXPECT_EQ(to_string(PartitionId{"orders", 12}), "orders-12");
}

}  // namespace
}  // namespace bloomgate::connectors
