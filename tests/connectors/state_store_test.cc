// The RocksDB state store against a real database in a temporary directory: checkpoints of real
// time-limited filters round-trip through it, partitions stay apart, a group commit is all or nothing, and
// the LOCK keeps a second store (in this process or another) out. Random streams use fixed seeds.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <spawn.h>
#include <xxhash.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bloomgate/connectors/state_store.h"
#include "../support/poll_until.h"
#include "state_store_test_support.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for posix_spawn

namespace bloomgate::connectors {
namespace {

using namespace state_test;  // NOLINT(google-build-using-namespace): the suite's shared helpers

TEST(StateStore, RoundTripOfATimeLimitedFilter) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  const PartitionId id{"events", 3};
  const auto filter = filters::make_filter(tlbf_options());

  // 20,000 keys over 20 s (twice the TTL): the filter has rotated and settled at k + l slices.
  TimePoint now = insert_keys(*filter, "p", 0, 20'000, kStart, milliseconds(1));
  std::set<std::uint64_t> stored_slice_ids;
  FilterImage first_image;
  FilterImage second_image;
  {
    const auto store = StateStore::open(dir);
    const CheckpointWrite first = checkpoint(*store, *filter, make_checkpoint(id, 20'000, now), &first_image);
    EXPECT_EQ(first.slices_written, first_image.slices.size());
    for (const auto& slice : first_image.slices) stored_slice_ids.insert(slice.id);

    // 1,000 more keys over the next 3 s: a few generations end, the oldest slices expire.
    now = insert_keys(*filter, "p", 20'000, 1'000, now + milliseconds(3), milliseconds(3));
    const FilterImage full = filter->image(ImageScope::kFull);
    const CheckpointWrite second = checkpoint(*store, *filter, make_checkpoint(id, 21'000, now), &second_image);
    EXPECT_EQ(second.slices_written, second_image.slices.size());
    EXPECT_EQ(second.slices_deleted, second_image.dropped_slice_ids.size());
    EXPECT_LT(second.slices_written, full.slices.size()) << "only the changed slices are written";
    EXPECT_LT(second.bytes, full.record_bytes());
    EXPECT_LT(second.bytes, first.bytes);

    // The slices the filter dropped since the first checkpoint are deleted.
    std::vector<std::uint64_t> dropped_stored;
    for (const std::uint64_t dropped : second_image.dropped_slice_ids) {
      if (stored_slice_ids.count(dropped) != 0) dropped_stored.push_back(dropped);
    }
    ASSERT_FALSE(dropped_stored.empty()) << "the test needs the filter to drop a stored slice";
    const auto lookup = store->slices(id);
    for (const std::uint64_t dropped : dropped_stored) EXPECT_FALSE(lookup(dropped).has_value()) << dropped;
    // Every slice of the filter is stored, byte for byte.
    for (const auto& slice : full.slices) EXPECT_EQ(lookup(slice.id), slice.record) << slice.id;
  }

  // Reopened: the last checkpoint and a filter that answers exactly like the original.
  const auto store = StateStore::open(dir);
  const auto stored = store->read(id);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->checkpoint, make_checkpoint(id, 21'000, now));
  EXPECT_EQ(stored->filter_meta, second_image.meta);
  const auto restored = filters::restore(stored->filter_meta, store->slices(id));
  EXPECT_EQ(filters::serialize(*restored), filters::serialize(*filter));
  std::mt19937_64 rng(20'240'601);
  std::uniform_int_distribution<std::uint64_t> inserted(0, 20'999);
  std::size_t present = 0;
  for (int i = 0; i < 10'000; ++i) {
    const std::string key = key_name("p", inserted(rng));
    ASSERT_EQ(restored->contains(key, now), filter->contains(key, now)) << key;
    if (filter->contains(key, now)) ++present;
  }
  EXPECT_GT(present, 3'000U) << "the keys of the last TTL (about 8,000 of 21,000) are present";
  for (std::uint64_t i = 0; i < 10'000; ++i) {
    const std::string key = key_name("absent", rng());
    ASSERT_EQ(restored->contains(key, now), filter->contains(key, now)) << key;
  }
  // The restored filter carries on like the original.
  const TimePoint later = now + seconds(1);
  for (std::uint64_t i = 0; i < 200; ++i) {
    EXPECT_EQ(restored->test_and_insert(key_name("q", i), later), filter->test_and_insert(key_name("q", i), later));
  }
}

TEST(StateStore, NeverWrittenPartitionReadsNothing) {
  TempDir tmp;
  const auto store = StateStore::open(tmp.path("state"));
  EXPECT_EQ(store->dir(), tmp.path("state"));
  const PartitionId id{"events", 0};
  EXPECT_FALSE(store->read(id).has_value());
  EXPECT_FALSE(store->slices(id)(0).has_value());
  EXPECT_TRUE(store->list().empty());
  EXPECT_EQ(restore(*store, id), nullptr);
}

// The restore note (state_store.h): where a partition's state came from at its last assignment. Its bytes
// are pinned field by field; a store written before notes existed (a checkpoint and no note) reads as
// having none; a note alone (its checkpoint dropped) is not listed; drop() takes it; damage is kCorrupt.
TEST(StateStore, RestoreNotesArePinnedByteForByteAndOlderStoresReadWithout) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  const PartitionId id{"events", 3};
  const PartitionId other{"events", 4};
  const RestoreNote note{id, "state_topic", 1'700'000'000'123};
  {
    const auto store = StateStore::open(dir);
    auto filter = filters::make_filter(tlbf_options());
    const TimePoint now = insert_keys(*filter, "a", 0, 100, kStart, milliseconds(1));
    checkpoint(*store, *filter, make_checkpoint(id, 100, now));
    checkpoint(*store, *filter, make_checkpoint(other, 100, now));
    EXPECT_EQ(store->read_restore_note(id), std::nullopt) << "a checkpoint written without a note";
    store->write_restore_notes(std::vector<RestoreNote>{note, {other, "rebuild", 5}});
    EXPECT_EQ(store->read_restore_note(id), note);
    store->drop(other);
    EXPECT_EQ(store->read_restore_note(other), std::nullopt) << "drop() takes the note with the rest";
    store->write_restore_notes(std::vector<RestoreNote>{{other, "local", 6}});  // a note without a checkpoint
    EXPECT_EQ(store->list().size(), 1U) << "a partition with only a note has no checkpoint to list";
  }
  const std::string key = std::string("bgs1\0events\0\0\0\0\3r", 17);
  std::string value;
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::OpenForReadOnly(rocksdb::Options(), dir, &raw).ok());
    const std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), key, &value).ok());
  }
  std::string body = "BGRN";
  body += '\1';
  for (int i = 0; i < 8; ++i) body += static_cast<char>((1'700'000'000'123LL >> (8 * i)) & 0xff);
  body += '\x0b';
  body += "state_topic";
  const std::string covered = key + body;
  const std::uint64_t sum = XXH3_64bits(covered.data(), covered.size());
  std::string expected = body;
  for (int i = 0; i < 8; ++i) expected += static_cast<char>((sum >> (8 * i)) & 0xff);
  EXPECT_EQ(value, expected);

  // The same bytes under another partition's key fail their checksum.
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), dir, &raw).ok());
    const std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), std::string("bgs1\0events\0\0\0\0\4r", 17), value).ok());
  }
  const auto store = StateStore::open(dir);
  EXPECT_EQ(store->read_restore_note(id), note);
  try {
    (void)store->read_restore_note(other);
    ADD_FAILURE() << "a note under another key was read";
  } catch (const StateStoreError& e) {
    EXPECT_EQ(e.kind(), StateStoreError::Kind::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("fails its checksum"), std::string::npos) << e.what();
  }
}

TEST(StateStore, PartitionsAndTopicsDoNotSeeEachOther) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  // Topic "a" is a prefix of "ab"; partition 256 shares its last byte with partition 0 and its length
  // with partition 1. Every filter numbers its slices from 0, so their slice keys differ only by prefix.
  const std::vector<PartitionId> ids = {{"a", 1}, {"a", 256}, {"ab", 1}, {"ab", 0}};
  std::map<PartitionId, std::unique_ptr<Filter>> filters_by_id;
  TimePoint now = kStart;
  {
    const auto store = StateStore::open(dir);
    std::int64_t offset = 100;
    for (const auto& id : ids) {
      auto filter = filters::make_filter(tlbf_options());
      now = insert_keys(*filter, to_string(id), 0, 3'000, kStart, milliseconds(2));
      checkpoint(*store, *filter, make_checkpoint(id, offset++, now));
      filters_by_id.emplace(id, std::move(filter));
    }
  }
  const auto store = StateStore::open(dir);
  std::int64_t offset = 100;
  for (const auto& id : ids) {
    const auto stored = store->read(id);
    ASSERT_TRUE(stored.has_value()) << to_string(id);
    EXPECT_EQ(stored->checkpoint, make_checkpoint(id, offset++, now)) << to_string(id);
    const auto restored = filters::restore(stored->filter_meta, store->slices(id));
    EXPECT_EQ(filters::serialize(*restored), filters::serialize(*filters_by_id.at(id))) << to_string(id);
    EXPECT_TRUE(restored->contains(key_name(to_string(id), 2'999), now)) << to_string(id);
  }
  EXPECT_FALSE(store->read({"a", 0}).has_value());
  EXPECT_FALSE(store->read({"a", 2}).has_value());
  EXPECT_FALSE(store->read({"abc", 1}).has_value());

  std::vector<PartitionCheckpoint> expected;
  for (const auto& id : {PartitionId{"a", 1}, PartitionId{"a", 256}, PartitionId{"ab", 0}, PartitionId{"ab", 1}}) {
    expected.push_back(store->read(id)->checkpoint);
  }
  EXPECT_EQ(store->list(), expected);

  // drop() removes that partition only, durably; the partition can then be checkpointed afresh.
  const FilterImage dropped_image = filters_by_id.at({"a", 1})->image(ImageScope::kFull);
  store->drop({"a", 1});
  EXPECT_FALSE(store->read({"a", 1}).has_value());
  for (const auto& slice : dropped_image.slices) EXPECT_FALSE(store->slices({"a", 1})(slice.id).has_value());
  expected.erase(expected.begin());
  EXPECT_EQ(store->list(), expected);
  for (const auto& id : {PartitionId{"a", 256}, PartitionId{"ab", 1}, PartitionId{"ab", 0}}) {
    const auto restored = restore(*store, id);
    ASSERT_NE(restored, nullptr) << to_string(id);
    EXPECT_EQ(filters::serialize(*restored), filters::serialize(*filters_by_id.at(id))) << to_string(id);
  }
  const auto fresh = filters::make_filter(tlbf_options());
  insert_keys(*fresh, "fresh", 0, 100, now, milliseconds(1));
  checkpoint(*store, *fresh, make_checkpoint({"a", 1}, 5, now));
  const auto restored = restore(*store, {"a", 1});
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(filters::serialize(*restored), filters::serialize(*fresh));
}

TEST(StateStore, AGroupCommitWritesEveryPartitionOrNone) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  const std::vector<PartitionId> ids = {{"t", 0}, {"t", 1}, {"u", 0}};
  std::map<PartitionId, std::unique_ptr<Filter>> filters_by_id;
  std::vector<PartitionImage> group;
  TimePoint now = kStart;
  for (const auto& id : ids) {
    auto filter = filters::make_filter(tlbf_options());
    now = insert_keys(*filter, to_string(id), 0, 2'000, kStart, milliseconds(2));
    group.push_back({make_checkpoint(id, 10 + id.partition, now), filter->image(ImageScope::kFull)});
    filters_by_id.emplace(id, std::move(filter));
  }
  {
    const auto store = StateStore::open(dir);
    const std::vector<CheckpointWrite> written = store->write_checkpoints(group);
    ASSERT_EQ(written.size(), ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(written[i].slices_written, group[i].image.slices.size()) << to_string(ids[i]);
      EXPECT_GT(written[i].bytes, group[i].image.record_bytes()) << "each partition's share of the batch";
    }
    EXPECT_TRUE(store->write_checkpoints({}).empty());

    // One invalid partition in the group: nothing of the group is written, not even the valid ones.
    const std::vector<PartitionImage> refused = {{make_checkpoint({"v", 0}, 1, now), group[0].image},
                                                 {make_checkpoint({"", 0}, 1, now), group[1].image}};
    try {
      (void)store->write_checkpoints(refused);
      ADD_FAILURE() << "a group with an invalid partition was written";
    } catch (const StateStoreError& e) {
      EXPECT_EQ(e.kind(), Kind::kInvalidArgument) << e.what();
    }
    EXPECT_FALSE(store->read({"v", 0}).has_value());
  }
  const auto store = StateStore::open(dir);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto stored = store->read(ids[i]);
    ASSERT_TRUE(stored.has_value()) << to_string(ids[i]);
    EXPECT_EQ(stored->checkpoint, group[i].checkpoint);
    const auto lookup = store->slices(ids[i]);
    const auto restored = filters::restore(stored->filter_meta, lookup);
    EXPECT_EQ(filters::serialize(*restored), filters::serialize(*filters_by_id.at(ids[i]))) << to_string(ids[i]);
    // The lookup reads all slices in one scan and hands each out once; asked again, it reads it again.
    for (const auto& slice : group[i].image.slices) EXPECT_EQ(lookup(slice.id), slice.record) << slice.id;
  }
}

TEST(StateStore, DropIsDurable) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  const auto filter = filters::make_filter(tlbf_options());
  const TimePoint now = insert_keys(*filter, "k", 0, 500, kStart, milliseconds(1));
  {
    const auto store = StateStore::open(dir);
    checkpoint(*store, *filter, make_checkpoint({"t", 0}, 1, now));
    checkpoint(*store, *filter, make_checkpoint({"t", 1}, 2, now));
    store->drop({"t", 0});
  }
  const auto store = StateStore::open(dir);
  EXPECT_FALSE(store->read({"t", 0}).has_value());
  ASSERT_TRUE(store->read({"t", 1}).has_value());
  ASSERT_EQ(store->list().size(), 1U);
  EXPECT_EQ(store->list()[0].id, (PartitionId{"t", 1}));
}

TEST(StateStore, InvalidArgumentsWriteNothing) {
  TempDir tmp;
  const auto store = StateStore::open(tmp.path("state"));
  const auto filter = filters::make_filter(tlbf_options());
  const FilterImage image = filter->image(ImageScope::kFull);
  const auto expect_invalid = [](auto&& call) {
    try {
      call();
      ADD_FAILURE() << "no StateStoreError";
    } catch (const StateStoreError& e) {
      EXPECT_EQ(e.kind(), Kind::kInvalidArgument) << e.what();
    }
  };
  expect_invalid([&] { store->write_checkpoint(make_checkpoint({"", 0}, 1, kStart), image); });
  expect_invalid([&] { store->write_checkpoint(make_checkpoint({std::string("a\0b", 3), 0}, 1, kStart), image); });
  expect_invalid([&] { store->write_checkpoint(make_checkpoint({"t", -1}, 1, kStart), image); });
  FilterImage no_meta = image;
  no_meta.meta.clear();
  expect_invalid([&] { store->write_checkpoint(make_checkpoint({"t", 0}, 1, kStart), no_meta); });
  FilterImage slice_as_meta = image;
  ASSERT_FALSE(image.slices.empty());
  slice_as_meta.meta = image.slices.front().record;
  expect_invalid([&] { store->write_checkpoint(make_checkpoint({"t", 0}, 1, kStart), slice_as_meta); });
  expect_invalid([&] { (void)store->read({"t", -5}); });
  expect_invalid([&] { (void)store->slices({"", 0}); });
  expect_invalid([&] { store->drop({"", 0}); });
  EXPECT_TRUE(store->list().empty());
}

TEST(StateStore, SecondOpenInThisProcessIsLocked) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  auto first = StateStore::open(dir);
  try {
    StateStore::open(dir);
    FAIL() << "a second open of " << dir << " succeeded";
  } catch (const StateStoreError& e) {
    EXPECT_EQ(e.kind(), Kind::kLocked) << e.what();
    EXPECT_NE(std::string(e.what()).find("state directory " + dir), std::string::npos) << e.what();
  }
  first.reset();
  EXPECT_NE(StateStore::open(dir), nullptr) << "the lock goes with the store";
}

constexpr const char* kHoldDirVariable = "BLOOMGATE_TEST_HOLD_STATE_DIR";

bool wait_for_file(const std::string& path, std::chrono::seconds timeout) {
  return bloomgate::test_support::poll_until([&] { return fs::exists(path); }, timeout, milliseconds(10));
}

// Runs only in the child process of SecondProcessIsLockedOut: holds the store until told to let go.
TEST(StateStoreLockHolder, HoldsTheStoreWhenAskedTo) {
  const char* dir = std::getenv(kHoldDirVariable);
  if (dir == nullptr) GTEST_SKIP() << "runs only as the child process of StateStore.SecondProcessIsLockedOut";
  const auto store = StateStore::open(dir);
  std::ofstream(std::string(dir) + ".ready") << "ready\n";
  ASSERT_TRUE(wait_for_file(std::string(dir) + ".release", seconds(30)));
}

TEST(StateStore, SecondProcessIsLockedOut) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  // Another process runs this test binary, filtered to the holder above (exec: no forked RocksDB state).
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.push_back(std::string(kHoldDirVariable) + "=" + dir);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string arg0 = "state_store_test";
  std::string filter = "--gtest_filter=StateStoreLockHolder.HoldsTheStoreWhenAskedTo";
  std::vector<char*> argv = {arg0.data(), filter.data(), nullptr};
  pid_t child = 0;
  ASSERT_EQ(posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data()), 0);
  const auto reap = [&] {
    int status = 0;
    EXPECT_EQ(waitpid(child, &status, 0), child);
    return status;
  };
  if (!wait_for_file(dir + ".ready", seconds(30))) {
    kill(child, SIGKILL);
    reap();
    FAIL() << "the child process never opened the store";
  }
  try {
    StateStore::open(dir);
    ADD_FAILURE() << "opened a directory another process holds";
  } catch (const StateStoreError& e) {
    EXPECT_EQ(e.kind(), Kind::kLocked) << e.what();
    const std::string message = e.what();
    EXPECT_NE(message.find("state directory " + dir + " is in use by another bloomgate process"), std::string::npos)
        << message;
  }
  std::ofstream(dir + ".release") << "release\n";
  const int status = reap();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_NE(StateStore::open(dir), nullptr) << "the lock goes with the process";
}

}  // namespace
}  // namespace bloomgate::connectors
