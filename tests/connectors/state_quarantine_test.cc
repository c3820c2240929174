// The quarantine of a damaged state directory (connectors/state/src/state_quarantine.h): its contents go
// into a folder inside it and the directory itself is never renamed, since it is often a mount point (a
// Docker VOLUME, a Kubernetes PVC), which rename(2) refuses with EBUSY. The last test mounts a tmpfs on
// the directory in a mount namespace of its own; it needs root (CAP_SYS_ADMIN) and is skipped without.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "bloomgate/connectors/state_store.h"
#include "state_store_test_support.h"

namespace bloomgate::connectors {
namespace {

using namespace state_test;  // NOLINT(google-build-using-namespace): the suite's shared helpers

ino_t inode_of(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_ino;
}

std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

// A store in `dir` holding one checkpoint of partition events/`partition`, closed again.
void write_store(const std::string& dir, std::int32_t partition) {
  const auto store = StateStore::open(dir);
  const auto filter = filters::make_filter(tlbf_options());
  const TimePoint now = insert_keys(*filter, "q", 0, 1'000, kStart, milliseconds(1));
  checkpoint(*store, *filter, make_checkpoint(PartitionId{"events", partition}, 1'000, now));
  store->flush();
}

TEST(StateQuarantine, MovesTheContentsIntoAFolderInsideAndNeverRenamesTheDirectory) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  write_store(dir, 0);
  const ino_t before = inode_of(dir);

  const std::string moved = StateStore::quarantine(dir);
  EXPECT_EQ(moved.rfind(dir + "/quarantine-", 0), 0U) << moved;
  EXPECT_EQ(inode_of(dir), before) << "the state directory itself was renamed";
  EXPECT_EQ(names_in(dir), std::set<std::string>{fs::path(moved).filename().string()});
  EXPECT_TRUE(fs::exists(fs::path(moved) / "CURRENT"));
  EXPECT_FALSE(files_with_extension(moved, ".sst").empty());
  // What was set aside is still a readable store, for whoever looks into the damage.
  EXPECT_EQ(StateStore::open_read_only(moved)->list().size(), 1U);

  // The directory opens empty; readers of it (bloomgate inspect) do not see the quarantine folder.
  write_store(dir, 7);
  const auto listed = StateStore::open_read_only(dir)->list();
  ASSERT_EQ(listed.size(), 1U);
  EXPECT_EQ(listed.front().id.partition, 7);
}

TEST(StateQuarantine, AQuarantineOfAnOpenStoreKeepsTheDirectoryInPlace) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  write_store(dir, 0);
  const auto store = StateStore::open(dir);
  const ino_t before = inode_of(dir);
  const std::string moved = store->quarantine_and_reopen();
  EXPECT_EQ(moved.rfind(dir + "/quarantine-", 0), 0U) << moved;
  EXPECT_EQ(inode_of(dir), before) << "the state directory itself was renamed";
  EXPECT_TRUE(store->list().empty());
}

// Quarantined again and again (a failing disk): only the newest kept, so the copies do not fill the volume.
// lost+found, which the root of an ext4 volume has, stays where fsck expects it.
TEST(StateQuarantine, KeepsTheNewestThreeQuarantinesAndLeavesLostAndFound) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  fs::create_directories(dir + "/lost+found");
  std::vector<std::string> moved;
  for (int i = 0; i < 5; ++i) {
    std::ofstream(dir + "/damaged-" + std::to_string(i)) << i;
    moved.push_back(StateStore::quarantine(dir));
  }
  std::set<std::string> expected{"lost+found"};
  for (std::size_t i = 2; i < 5; ++i) expected.insert(fs::path(moved[i]).filename().string());
  EXPECT_EQ(names_in(dir), expected);
  EXPECT_TRUE(fs::exists(moved[4] + "/damaged-4"));
}

// A crash between the moves leaves a ".partial" folder and part of the files: the next open finishes the
// quarantine before RocksDB sees the directory, so no file of the damaged database ends up in the new one.
TEST(StateQuarantine, AnInterruptedQuarantineIsFinishedBeforeTheDirectoryOpens) {
  TempDir tmp;
  const std::string dir = tmp.path("state");
  write_store(dir, 0);
  const std::string partial = dir + "/quarantine-20260101T000000Z.partial";
  fs::create_directory(partial);
  for (const fs::path& table : files_with_extension(dir, ".sst")) fs::rename(table, partial / table.filename());

  EXPECT_TRUE(StateStore::open(dir)->list().empty());
  const std::string finished = dir + "/quarantine-20260101T000000Z";
  EXPECT_FALSE(fs::exists(partial));
  EXPECT_TRUE(fs::exists(finished + "/CURRENT"));
  EXPECT_FALSE(files_with_extension(finished, ".sst").empty());
  EXPECT_EQ(StateStore::open_read_only(finished)->list().size(), 1U) << "the quarantined store is whole";
}

// In a child process with a mount namespace of its own: a tmpfs mounted on the state directory, files in
// it, quarantined. Exit 0: done, the mount still in place; 77: no permission to mount (skipped); else failed.
constexpr int kCannotMount = 77;

int quarantine_on_a_mount_point(const std::string& dir) {
  if (::unshare(CLONE_NEWNS) != 0) return kCannotMount;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return kCannotMount;
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, nullptr) != 0) return kCannotMount;
  std::ofstream(dir + "/CURRENT") << "MANIFEST-000005\n";
  std::ofstream(dir + "/000004.log") << "damaged";
  try {
    const std::string moved = StateStore::quarantine(dir);
    const bool contents_moved = fs::exists(moved + "/CURRENT") && fs::exists(moved + "/000004.log") &&
                                !fs::exists(dir + "/CURRENT");
    return contents_moved ? 0 : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "quarantine on a mount point: %s\n", e.what());
    return 1;
  }
}

TEST(StateQuarantine, WorksWhenTheStateDirectoryIsAMountPoint) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs on the state directory needs root";
  TempDir tmp;
  const std::string dir = tmp.path("state");
  fs::create_directory(dir);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) std::_Exit(quarantine_on_a_mount_point(dir));  // file system calls only: no threads started
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == kCannotMount) GTEST_SKIP() << "no permission to create a mount namespace here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the quarantine failed on a mount point (its message is on stderr)";
}

}  // namespace
}  // namespace bloomgate::connectors
