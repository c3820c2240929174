// The RocksDB state store against a real database in a temporary directory: checkpoints of real
// time-limited filters round-trip through it, partitions stay apart, the LOCK keeps a second store (in
// this process or another) out, and damaged table files, a damaged WAL and a full disk surface as errors,
// never as a crash or a silently different filter. Random streams use fixed seeds.
#include "bloomgate/connectors/state_store.h"

#include <gtest/gtest.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"
#include "../support/full_disk_file_system.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for posix_spawn

namespace bloomgate::connectors {
namespace {

namespace fs = std::filesystem;
using filters::Filter;
using filters::FilterImage;
using filters::ImageScope;
using filters::TimePoint;
using Kind = StateStoreError::Kind;
using std::chrono::milliseconds;
using std::chrono::seconds;

const TimePoint kStart = filters::from_epoch_millis(1'700'000'000'000);

// A directory under testing::TempDir(), removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir();
    if (!pattern.empty() && pattern.back() != '/') pattern.push_back('/');
    pattern += "bloomgate-state-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern + " failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string path(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

filters::FilterOptions tlbf_options() {
  filters::FilterOptions o;
  o.type = filters::FilterType::kTimeLimited;
  o.error_rate = 0.01;
  o.ttl = seconds(10);
  o.expected_per_ttl = 2'000;
  return o;
}

std::string key_name(const std::string& prefix, std::uint64_t i) { return prefix + "-key-" + std::to_string(i); }

// Inserts keys prefix-key-first .. first+count-1, one every `step` from `start`; returns the last time.
TimePoint insert_keys(Filter& filter, const std::string& prefix, std::uint64_t first, std::uint64_t count,
                      TimePoint start, milliseconds step) {
  TimePoint now = start;
  for (std::uint64_t i = 0; i < count; ++i) {
    now = start + step * static_cast<std::int64_t>(i);
    filter.test_and_insert(key_name(prefix, first + i), now);
  }
  return now;
}

PartitionCheckpoint make_checkpoint(const PartitionId& id, std::int64_t next_offset, TimePoint now) {
  PartitionCheckpoint c;
  c.id = id;
  c.next_offset = next_offset;
  c.output_offset = next_offset * 10 + 7;
  c.written_at_ms = 1'700'000'000'000 + next_offset;
  c.filter_time_ns = filters::to_epoch_nanos(now);
  return c;
}

// One checkpoint as the service takes it: the changed records, then mark_persisted once durable.
CheckpointWrite checkpoint(StateStore& store, Filter& filter, const PartitionCheckpoint& c,
                           FilterImage* image_out = nullptr) {
  FilterImage image = filter.image(ImageScope::kChangedSinceLastPersist);
  const CheckpointWrite written = store.write_checkpoint(c, image);
  filter.mark_persisted();
  if (image_out != nullptr) *image_out = std::move(image);
  return written;
}

std::unique_ptr<Filter> restore(const StateStore& store, const PartitionId& id) {
  const auto stored = store.read(id);
  if (!stored) return nullptr;
  return filters::restore(stored->filter_meta, store.slices(id));
}

std::vector<fs::path> files_with_extension(const std::string& dir, const std::string& extension) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == extension) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Inverts `count` bytes of the file at `offset`.
void flip_bytes(const fs::path& file, std::uint64_t offset, std::size_t count) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f) << file;
  std::string bytes(count, '\0');
  f.seekg(static_cast<std::streamoff>(offset));
  f.read(bytes.data(), static_cast<std::streamsize>(count));
  for (char& c : bytes) c = static_cast<char>(~c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(count));
  ASSERT_TRUE(f) << file;
}

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
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!fs::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
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
// reads succeed return exactly what was written.
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

  // The remedy for a damaged table file: move the directory aside and start empty.
  store.reset();
  const std::string moved = StateStore::quarantine(dir);
  EXPECT_EQ(moved.rfind(dir + ".corrupt-", 0), 0U) << moved;
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_FALSE(files_with_extension(moved, ".sst").empty());
  EXPECT_TRUE(StateStore::open(dir)->list().empty());
  const std::string moved_again = StateStore::quarantine(dir);
  EXPECT_NE(moved_again, moved);
  EXPECT_TRUE(fs::is_directory(moved_again));
  try {
    StateStore::quarantine(dir);
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
  EXPECT_EQ(moved.rfind(dir + ".corrupt-", 0), 0U) << moved;
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

// 400,000 keys per TTL of 10 s for 30 s: slices of 78,720 bits, all columns of one segment, the filter a
// clean stop snapshots (filters/src/time_limited_snapshot.cc).
std::unique_ptr<Filter> snapshotting_filter(TimePoint& now) {
  filters::FilterOptions o = tlbf_options();
  o.expected_per_ttl = 400'000;
  auto filter = filters::make_filter(o);
  for (std::uint64_t i = 0; i < 1'200'000; ++i) {
    now = kStart + std::chrono::microseconds(25) * static_cast<std::int64_t>(i);
    filter->test_and_insert(key_name("s", i), now);
  }
  return filter;
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
