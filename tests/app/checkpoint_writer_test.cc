// The checkpoint writer (app/src/checkpoint_writer.h) on a real RocksDB store in a temporary directory:
// group commits split where the images add up to the group size, every image of a written group readable
// afterwards, and a full disk failing its groups with the store's error while later ones still write.

#include "checkpoint_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "../support/full_disk_file_system.h"
#include "bloomgate/app/temporary_directory.h"
#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"

namespace bloomgate::app {
namespace {

using connectors::PartitionImage;
using connectors::StateStore;

// A small time-limited filter with `keys` keys, and its whole image as partition `partition`'s checkpoint.
PartitionImage image_of_partition(std::int32_t partition, int keys) {
  filters::FilterOptions options;
  options.type = filters::FilterType::kTimeLimited;
  options.error_rate = 1e-3;
  options.ttl = std::chrono::minutes(10);
  options.expected_per_ttl = 1000;
  const auto filter = filters::make_filter(options);
  const filters::TimePoint now = filters::from_epoch_millis(1'700'000'000'000);
  for (int i = 0; i < keys; ++i) (void)filter->test_and_insert("key-" + std::to_string(i), now);
  PartitionImage image;
  image.checkpoint.id = {"events", partition};
  image.checkpoint.next_offset = keys;
  image.checkpoint.output_offset = keys;
  image.checkpoint.written_at_ms = 1'700'000'000'000;
  image.checkpoint.filter_time_ns = filters::to_epoch_nanos(now);
  image.image = filter->image(filters::ImageScope::kFull);
  return image;
}

TEST(CheckpointWriter, GroupsSplitWhereTheImagesReachTheGroupSizeAndAllAreWritten) {
  const TemporaryDirectory dir("checkpoint-writer");
  const auto store = StateStore::open(dir.path("state"));
  std::vector<PartitionImage> images;
  for (std::int32_t p = 0; p < 5; ++p) images.push_back(image_of_partition(p, 100 + p));
  // Two images reach the group size, so the groups are {0, 1}, {2, 3}, {4}.
  const std::uint64_t group_bytes = images[0].image.record_bytes() + images[1].image.record_bytes();

  CheckpointWriter writer(group_bytes);
  writer.submit(*store, std::vector<PartitionImage>(images));  // a copy: the test compares with them
  EXPECT_TRUE(writer.busy());
  const CheckpointWriter::Done done = writer.take();
  EXPECT_FALSE(writer.busy());
  ASSERT_FALSE(done.fatal);
  ASSERT_EQ(done.groups.size(), 3U);
  const std::size_t bounds[][2] = {{0, 2}, {2, 4}, {4, 5}};
  for (std::size_t g = 0; g < 3; ++g) {
    EXPECT_EQ(done.groups[g].begin, bounds[g][0]);
    EXPECT_EQ(done.groups[g].end, bounds[g][1]);
    EXPECT_FALSE(done.groups[g].error);
    EXPECT_EQ(done.groups[g].written.size(), bounds[g][1] - bounds[g][0]);
  }
  EXPECT_EQ(done.images.size(), 5U) << "the images come back with the outcome";
  for (std::int32_t p = 0; p < 5; ++p) {
    const auto stored = store->read({"events", p});
    ASSERT_TRUE(stored) << p;
    EXPECT_EQ(stored->checkpoint.next_offset, 100 + p);
    EXPECT_EQ(stored->filter_meta, images[static_cast<std::size_t>(p)].image.meta);
  }
}

TEST(CheckpointWriter, AFullDiskFailsItsGroupsWithTheStoresErrorAndTheNextJobWrites) {
  const TemporaryDirectory dir("checkpoint-writer");
  const auto full = std::make_shared<std::atomic<bool>>(false);
  const auto env = bloomgate::testing::full_disk_env(full, /*report_free_space=*/false);
  connectors::StateStoreOptions options;
  options.environment = env.get();
  const auto store = StateStore::open(dir.path("state"), options);
  CheckpointWriter writer(1);  // a group per image

  full->store(true);
  writer.submit(*store, {image_of_partition(0, 10), image_of_partition(1, 10)});
  const CheckpointWriter::Done failed = writer.take();
  ASSERT_FALSE(failed.fatal);
  ASSERT_EQ(failed.groups.size(), 2U);
  for (const GroupWrite& group : failed.groups) {
    ASSERT_TRUE(group.error);
    EXPECT_EQ(group.error->kind(), connectors::StateStoreError::Kind::kIo) << group.error->what();
    EXPECT_TRUE(group.written.empty());
  }
  EXPECT_FALSE(store->read({"events", 0}));

  full->store(false);
  writer.submit(*store, {image_of_partition(0, 20)});
  const CheckpointWriter::Done written = writer.take();
  ASSERT_EQ(written.groups.size(), 1U);
  EXPECT_FALSE(written.groups[0].error) << written.groups[0].error->what();
  const auto stored = store->read({"events", 0});
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->checkpoint.next_offset, 20);
}

}  // namespace
}  // namespace bloomgate::app
