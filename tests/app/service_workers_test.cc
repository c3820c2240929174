// What the workers of one process share: how many there are, their group identities, and the one
// snapshot /metrics and /readyz answer from.
#include "bloomgate/app/service_workers.h"

#include <gtest/gtest.h>

namespace bloomgate::app {
namespace {

PartitionReport report(std::int32_t partition, bool assigned, std::int64_t next_offset, std::uint64_t consumed) {
  PartitionReport r;
  r.pipeline = "orders";
  r.topic = "orders";
  r.partition = partition;
  r.assigned = assigned;
  r.next_offset = next_offset;
  r.consumed = consumed;
  r.counters.forwarded = consumed / 2;
  r.counters.duplicates = consumed - consumed / 2;
  r.checkpoints = 1;
  r.last_checkpoint_seconds = static_cast<double>(next_offset);
  r.dead_letters_by_reason[2] = 1;
  r.duplicate_ages.counts[3] = consumed;
  r.duplicate_ages.sum = 0.5;
  return r;
}

TEST(ResolveWorkers, AutoIsOnePerCoreAndNoMoreThanThePartitions) {
  EXPECT_EQ(resolve_workers(config::kAutoWorkers, 8, 4), 4U);
  EXPECT_EQ(resolve_workers(config::kAutoWorkers, 2, 12), 2U);
  EXPECT_EQ(resolve_workers(config::kAutoWorkers, 2, 0), 1U);  // no partitions yet: one member waits for them
  EXPECT_EQ(resolve_workers(3, 2, 1), 3U);                     // a number is taken as it is
  EXPECT_GE(usable_cores(), 1U);
}

TEST(WorkerConfig, WorkersBeyondTheFirstGetInstanceNamesOfTheirOwn) {
  config::Config config;
  config.kafka.group_id = "dedup";
  config.kafka.instance_name = "pod-0";
  EXPECT_EQ(worker_config(config, 0).kafka.instance_name, "pod-0");
  EXPECT_EQ(worker_config(config, 2).kafka.instance_name, "pod-0.worker-2");
  EXPECT_EQ(config::transactional_id(worker_config(config, 1).kafka), "dedup.pod-0.worker-1");
  config.kafka.instance_name.clear();  // dynamic membership: nothing to tell apart
  EXPECT_EQ(worker_config(config, 1).kafka.instance_name, "");
}

TEST(MergeSnapshots, APartitionOwnedByTwoWorkersInTurnSumsItsCountersAndShowsItsOwnersGauges) {
  ServiceSnapshot first;  // owned partition 0, then lost it to the second worker
  first.partitions = {report(0, false, 100, 100), report(1, true, 40, 40)};
  first.consumed = 140;
  first.forwarded = 70;
  first.commits = 3;
  first.running = true;
  first.processing_latency.counts[1] = 5;
  ServiceSnapshot second;
  second.partitions = {report(0, true, 250, 150), report(1, false, -1, 0)};
  second.consumed = 150;
  second.forwarded = 75;
  second.commits = 2;
  second.running = true;
  second.processing_latency.counts[1] = 7;

  const std::vector<ServiceSnapshot> both{first, second};
  const ServiceSnapshot merged = merge_snapshots(both);
  EXPECT_EQ(merged.consumed, 290U);
  EXPECT_EQ(merged.forwarded, 145U);
  EXPECT_EQ(merged.commits, 5U);
  EXPECT_EQ(merged.processing_latency.counts[1], 12U);
  EXPECT_TRUE(merged.running);
  ASSERT_EQ(merged.partitions.size(), 2U);
  const PartitionReport& zero = merged.partitions[0];
  EXPECT_EQ(zero.partition, 0);
  EXPECT_TRUE(zero.assigned);
  EXPECT_EQ(zero.next_offset, 250);                  // the owner's gauges
  EXPECT_DOUBLE_EQ(zero.last_checkpoint_seconds, 250);
  EXPECT_EQ(zero.consumed, 250U);                    // both workers' counters
  EXPECT_EQ(zero.counters.forwarded, 50U + 75U);
  EXPECT_EQ(zero.checkpoints, 2U);
  EXPECT_EQ(zero.dead_letters_by_reason[2], 2U);
  EXPECT_EQ(zero.duplicate_ages.counts[3], 250U);
  EXPECT_DOUBLE_EQ(zero.duplicate_ages.sum, 1.0);
  const PartitionReport& one = merged.partitions[1];
  EXPECT_TRUE(one.assigned);
  EXPECT_EQ(one.next_offset, 40);
  EXPECT_EQ(one.consumed, 40U);
}

TEST(MergeSnapshots, AnUnownedPartitionShowsTheGaugesOfTheWorkerFurthestInItsInput) {
  ServiceSnapshot a;
  a.partitions = {report(3, false, 500, 500)};
  ServiceSnapshot b;
  b.partitions = {report(3, false, 900, 400)};
  const std::vector<ServiceSnapshot> both{a, b};
  const ServiceSnapshot merged = merge_snapshots(both);
  ASSERT_EQ(merged.partitions.size(), 1U);
  EXPECT_FALSE(merged.partitions[0].assigned);
  EXPECT_EQ(merged.partitions[0].next_offset, 900);
  EXPECT_EQ(merged.partitions[0].consumed, 900U);
}

TEST(MergeSnapshots, TheProcessIsReadyOnlyWhenEveryWorkerIs) {
  ServiceSnapshot ready;
  ready.running = true;
  ServiceSnapshot restoring;
  restoring.running = false;
  const std::vector<ServiceSnapshot> mixed{ready, restoring};
  EXPECT_FALSE(merge_snapshots(mixed).running);
  const std::vector<ServiceSnapshot> none;
  EXPECT_FALSE(merge_snapshots(none).running);
}

}  // namespace
}  // namespace bloomgate::app
