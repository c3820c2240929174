// The group consumer: committed offsets (with metadata) survive a restart with no replays, and
// cooperative-sticky rebalances hand partitions over, reported through assigned/revoked functions.
#include "bloomgate/connectors/admin.h"
#include "kafka_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>

namespace bloomgate::connectors {
namespace {

using namespace std::chrono_literals;
using namespace test_support;

void produce_numbered(const EmbeddedBroker& broker, const std::string& topic, int count) {
  Producer producer(producer_config(broker), ProducerOptions{});
  for (int i = 0; i < count; ++i) {
    const std::string key = "key-" + std::to_string(i);
    OutgoingMessage message;
    message.key = key;
    message.value = key;
    ASSERT_TRUE(producer.produce(topic, message).ok());
  }
  ASSERT_TRUE(producer.flush(10s).ok());
}

TEST(ConsumerGroup, ResumesAfterCommittedOffsetsWithoutReplays) {
  EmbeddedBroker broker;
  ASSERT_TRUE(broker.create_topic("in", 3).ok());
  constexpr int kTotal = 300;
  constexpr std::size_t kFirstBatch = 120;
  produce_numbered(broker, "in", kTotal);

  std::set<std::string> processed;
  std::map<std::int32_t, std::int64_t> next_offset;  // per partition: last processed + 1
  {
    ConsumerOptions options;
    options.group_id = "resume";
    Consumer first(consumer_config(broker), std::move(options));
    ASSERT_TRUE(first.subscribe({"in"}).ok());
    // Process exactly kFirstBatch messages (the consumer may have fetched more: those are not
    // processed, so they must come again to the next member).
    ASSERT_TRUE(poll_until({&first}, [&] { return processed.size() == kFirstBatch; }, test_support::kWaitLimit,
                           [&](ConsumedMessage& message) {
                             if (processed.size() == kFirstBatch || !message.error().ok()) return;
                             processed.insert(std::string(*message.key()));
                             next_offset[message.partition()] = message.offset() + 1;
                           }));
    TopicPartitions commit;
    for (const auto& [partition, offset] : next_offset) {
      TopicPartition entry;
      entry.topic = "in";
      entry.partition = partition;
      entry.offset = offset;
      entry.metadata = "checkpoint output offset " + std::to_string(offset * 10);
      commit.push_back(entry);
    }
    const KafkaError committed = first.commit(commit, CommitMode::kSync);
    ASSERT_TRUE(committed.ok()) << committed.describe();

    const KafkaResult<TopicPartitions> read_back = first.committed(commit, 5s);
    ASSERT_TRUE(read_back.ok()) << read_back.error().describe();
    for (const TopicPartition& entry : read_back.value()) {
      EXPECT_EQ(entry.offset, next_offset[entry.partition]);
      EXPECT_EQ(entry.metadata, "checkpoint output offset " + std::to_string(entry.offset * 10));
    }
    EXPECT_TRUE(first.close().ok());
  }

  ConsumerOptions options;
  options.group_id = "resume";
  std::map<std::int32_t, std::int64_t> first_offset_seen;
  Consumer second(consumer_config(broker), std::move(options));
  ASSERT_TRUE(second.subscribe({"in"}).ok());
  std::set<std::string> replayed;
  ASSERT_TRUE(poll_until({&second}, [&] { return processed.size() == kTotal; }, test_support::kWaitLimit,
                         [&](ConsumedMessage& message) {
                           if (!message.error().ok()) return;
                           first_offset_seen.try_emplace(message.partition(), message.offset());
                           if (!processed.insert(std::string(*message.key())).second) {
                             replayed.insert(std::string(*message.key()));
                           }
                         }))
      << processed.size() << " of " << kTotal;
  EXPECT_TRUE(replayed.empty()) << replayed.size() << " replayed, e.g. " << *replayed.begin();
  for (const auto& [partition, offset] : first_offset_seen) {
    EXPECT_EQ(offset, next_offset.count(partition) != 0 ? next_offset[partition] : 0) << "partition " << partition;
  }
}

// Tracks what one member owns, as its assigned/revoked/lost functions report it.
struct Membership {
  std::set<std::int32_t> owned;
  std::multiset<std::int32_t> ever_assigned;
  std::multiset<std::int32_t> ever_revoked;
  bool duplicate_assignment = false;

  ConsumerOptions options(const std::string& group) {
    ConsumerOptions result;
    result.group_id = group;
    result.on_assigned = [this](TopicPartitions& partitions) {
      for (const TopicPartition& partition : partitions) {
        duplicate_assignment |= !owned.insert(partition.partition).second;
        ever_assigned.insert(partition.partition);
      }
    };
    result.on_revoked = [this](TopicPartitions& partitions) {
      for (const TopicPartition& partition : partitions) {
        owned.erase(partition.partition);
        ever_revoked.insert(partition.partition);
      }
    };
    result.on_lost = result.on_revoked;
    return result;
  }
};

std::set<std::int32_t> all_partitions(int count) {
  std::set<std::int32_t> result;
  for (std::int32_t partition = 0; partition < count; ++partition) result.insert(partition);
  return result;
}

TEST(ConsumerGroup, CooperativeStickySplitsPartitionsAndHandsThemBackOnClose) {
  EmbeddedBroker broker;
  constexpr int kPartitions = 4;
  ASSERT_TRUE(broker.create_topic("split", kPartitions).ok());
  Membership first_member;
  Membership second_member;
  Consumer first(consumer_config(broker), first_member.options("split-group"));
  ASSERT_TRUE(first.subscribe({"split"}).ok());
  ASSERT_TRUE(poll_until({&first}, [&] { return first_member.owned == all_partitions(kPartitions); }))
      << "the first member never got every partition";

  auto second = std::make_unique<Consumer>(consumer_config(broker), second_member.options("split-group"));
  ASSERT_TRUE(second->subscribe({"split"}).ok());
  const auto split = [&] {
    std::set<std::int32_t> both = first_member.owned;
    both.insert(second_member.owned.begin(), second_member.owned.end());
    return !first_member.owned.empty() && !second_member.owned.empty() &&
           first_member.owned.size() + second_member.owned.size() == kPartitions && both == all_partitions(kPartitions);
  };
  ASSERT_TRUE(poll_until({&first, second.get()}, split))
      << "first owns " << first_member.owned.size() << ", second owns " << second_member.owned.size();
  EXPECT_EQ(first_member.owned.size(), 2U);
  EXPECT_EQ(second_member.owned.size(), 2U);
  // Cooperative: the first member gave up only what moved, and never had its kept partitions revoked.
  EXPECT_EQ(first_member.ever_revoked.size(), 2U);
  for (const std::int32_t kept : first_member.owned) EXPECT_EQ(first_member.ever_revoked.count(kept), 0U) << kept;
  const KafkaResult<TopicPartitions> assignment = second->assignment();
  ASSERT_TRUE(assignment.ok());
  EXPECT_EQ(assignment.value().size(), second_member.owned.size());

  // The second member leaves: its partitions are revoked there and assigned to the first.
  const std::set<std::int32_t> moving = second_member.owned;
  EXPECT_TRUE(second->close().ok());
  EXPECT_TRUE(second_member.owned.empty());
  for (const std::int32_t partition : moving) EXPECT_EQ(second_member.ever_revoked.count(partition), 1U);
  second.reset();
  ASSERT_TRUE(poll_until({&first}, [&] { return first_member.owned == all_partitions(kPartitions); }))
      << "the first member did not get the partitions back";
  for (const std::int32_t partition : moving) EXPECT_EQ(first_member.ever_assigned.count(partition), 2U) << partition;
  EXPECT_FALSE(first_member.duplicate_assignment);
  EXPECT_FALSE(second_member.duplicate_assignment);
}

// A member that is stopped while it joins, before its first assignment (a worker told to stop while the
// group rebalances): close() leaves the group without aborting the process (librdkafka 2.0.2's
// cooperative-sticky assignor does, destroying a member with no assignor state), and without reporting the
// partitions the rebalance then hands it for the moment it takes to give them back.
TEST(ConsumerGroup, AMemberClosedBeforeItsFirstAssignmentLeavesQuietly) {
  EmbeddedBroker broker;
  constexpr int kPartitions = 4;
  ASSERT_TRUE(broker.create_topic("joining", kPartitions).ok());
  Membership first_member;
  Consumer first(consumer_config(broker), first_member.options("joining-group"));
  ASSERT_TRUE(first.subscribe({"joining"}).ok());
  ASSERT_TRUE(poll_until({&first}, [&] { return first_member.owned == all_partitions(kPartitions); }));
  for (const auto pause : {1000ms}) {
    Membership late_member;
    Consumer late(consumer_config(broker), late_member.options("joining-group"));
    ASSERT_TRUE(late.subscribe({"joining"}).ok());
    // Only the late member polls: the rebalance waits for the first member to rejoin, so the late one has
    // joined and has no assignment when it is closed.
    const auto until = std::chrono::steady_clock::now() + pause;
    (void)poll_until({&late}, [&] { return std::chrono::steady_clock::now() >= until; });
    const bool had_assignment = !late_member.ever_assigned.empty();
    const std::size_t reported = late_member.ever_assigned.size();
    // The first member polls while the late one closes, as the other workers of a process do: the rebalance
    // that brings the late member its first assignment needs it.
    std::atomic<bool> closed{false};
    std::thread keep_polling([&] { (void)poll_until({&first}, [&] { return closed.load(); }); });
    EXPECT_TRUE(late.close().ok()) << "pause " << pause.count() << " ms";
    closed = true;
    keep_polling.join();
    EXPECT_EQ(late_member.ever_assigned.size(), reported) << "close() reported an assignment";
    if (!had_assignment) {
      EXPECT_TRUE(late_member.ever_revoked.empty()) << "close() reported a revocation";
    }
    ASSERT_TRUE(poll_until({&first}, [&] { return first_member.owned == all_partitions(kPartitions); }))
        << "the first member did not get every partition back after a " << pause.count() << " ms pause";
  }
}

TEST(ConsumerGroup, AssignedFunctionChoosesTheStartOffset) {
  EmbeddedBroker broker;
  ASSERT_TRUE(broker.create_topic("replay", 1).ok());
  produce_numbered(broker, "replay", 50);
  ConsumerOptions options;
  options.group_id = "start-offset";
  options.on_assigned = [](TopicPartitions& partitions) {
    for (TopicPartition& partition : partitions) partition.offset = 40;  // as a checkpoint would say
  };
  Consumer consumer(consumer_config(broker), std::move(options));
  ASSERT_TRUE(consumer.subscribe({"replay"}).ok());
  std::vector<std::int64_t> offsets;
  ASSERT_TRUE(poll_until({&consumer}, [&] { return offsets.size() == 10; }, test_support::kWaitLimit,
                         [&](ConsumedMessage& message) {
                           if (message.error().ok()) offsets.push_back(message.offset());
                         }));
  EXPECT_EQ(offsets.front(), 40);
  EXPECT_EQ(offsets.back(), 49);
}

// With assign_paused the assigned partition fetches nothing while it is paused (the service restores its
// state meanwhile); once sought to a start and resumed, it is consumed from there, each record once.
TEST(ConsumerGroup, AnAssignmentAppliedPausedFetchesNothingUntilSoughtAndResumed) {
  EmbeddedBroker broker;
  ASSERT_TRUE(broker.create_topic("paused", 1).ok());
  produce_numbered(broker, "paused", 50);
  ConsumerOptions options;
  options.group_id = "paused-group";
  options.assign_paused = true;
  bool assigned = false;
  options.on_assigned = [&](TopicPartitions& partitions) { assigned = assigned || !partitions.empty(); };
  Consumer consumer(consumer_config(broker), std::move(options));
  ASSERT_TRUE(consumer.subscribe({"paused"}).ok());
  std::vector<std::int64_t> offsets;
  const auto take = [&](ConsumedMessage& message) {
    if (message.error().ok()) offsets.push_back(message.offset());
  };
  ASSERT_TRUE(poll_until({&consumer}, [&] { return assigned; }, test_support::kWaitLimit, take));
  // Two seconds of polls: long enough for many fetches (fetch.wait.max.ms is short here) had it not been paused.
  (void)poll_until({&consumer}, [] { return false; }, std::chrono::seconds(2), take);
  EXPECT_TRUE(offsets.empty()) << "a paused partition handed out " << offsets.size() << " records";
  const TopicPartitions start{{"paused", 0, 30, {}, {}}};
  ASSERT_TRUE(poll_until({&consumer}, [&] { return consumer.seek(start, std::chrono::seconds(5)).ok(); },
                         test_support::kWaitLimit, take));
  ASSERT_TRUE(consumer.resume(start).ok());
  ASSERT_TRUE(poll_until({&consumer}, [&] { return !offsets.empty() && offsets.back() == 49; }, test_support::kWaitLimit,
                         take));
  EXPECT_EQ(offsets.size(), 20U);
  EXPECT_EQ(offsets.front(), 30);
}

// poll_batch() hands out many records per call, in offset order, each once; a seek while a batch is in hand
// (the rewind after an aborted transaction) marks that partition's remaining records stale, and the next
// batches start at the new position.
TEST(ConsumerGroup, BatchesComeInOrderAndASeekMakesTheRestOfABatchStale) {
  EmbeddedBroker broker;
  ASSERT_TRUE(broker.create_topic("batched", 1).ok());
  constexpr int kRecords = 2000;
  produce_numbered(broker, "batched", kRecords);
  ConsumerOptions options;
  options.group_id = "batched-group";
  Consumer consumer(consumer_config(broker), std::move(options));
  ASSERT_TRUE(consumer.subscribe({"batched"}).ok());

  std::vector<ConsumedMessage> batch;
  std::vector<std::int64_t> offsets;
  std::size_t largest_batch = 0;
  bool seeked = false;
  std::size_t before_seek = 0;  // records taken before the seek
  std::size_t stale = 0;
  bool seek_ok = false;
  const auto read_all_again = [&] { return seeked && !offsets.empty() && offsets.back() == kRecords - 1; };
  const auto read_a_batch = [&] {
    consumer.poll_batch(20ms, 256, batch);
    largest_batch = std::max(largest_batch, batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!batch[i].error().ok()) continue;
      if (consumer.moved_since_batch(batch[i])) {
        ++stale;
        continue;
      }
      offsets.push_back(batch[i].offset());
      // Halfway through the first full batch past offset 100, rewind to offset 100 as an abort would.
      if (!seeked && batch[i].offset() >= 100 && i + 1 < batch.size()) {
        seek_ok = consumer.seek({TopicPartition{"batched", 0, 100, {}, {}}}, 5s).ok();
        seeked = true;
        before_seek = offsets.size();
      }
    }
  };
  bloomgate::test_support::poll_until(read_all_again, kWaitLimit, read_a_batch);
  ASSERT_TRUE(seeked);
  ASSERT_TRUE(seek_ok);
  EXPECT_GT(largest_batch, 1U) << "every call returned at most one record";
  EXPECT_GT(stale, 0U) << "the records after the seek were not marked stale";
  // Before the seek: 0, 1, ... up to the seek point; after it: 100 onwards, each once, in order.
  ASSERT_GT(offsets.size(), before_seek);
  for (std::size_t i = 0; i < before_seek; ++i) EXPECT_EQ(offsets[i], static_cast<std::int64_t>(i));
  for (std::size_t i = before_seek; i < offsets.size(); ++i) {
    EXPECT_EQ(offsets[i], static_cast<std::int64_t>(100 + i - before_seek));
  }
  EXPECT_EQ(offsets.back(), kRecords - 1);
  batch.clear();  // before the consumer
}

}  // namespace
}  // namespace bloomgate::connectors
