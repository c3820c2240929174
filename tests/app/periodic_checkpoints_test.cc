// kafka.guarantee at_least_once (app/src/periodic_checkpoints.h) against the fakes of
// commit_protocol_test_support.h: a checkpoint written only once its records are delivered and committed
// only once written, commits held while the group rebalances, and the state topic acknowledging before a
// commit.
#include <gtest/gtest.h>

#include "commit_protocol_test_support.h"

namespace bloomgate::app {
namespace {

using namespace test_support;
using namespace std::chrono_literals;
using connectors::CommitMode;
using connectors::KafkaError;
using connectors::TopicPartition;
using connectors::TopicPartitions;

// ---- at_least_once: periodic checkpoints --------------------------------------------------------------

// A checkpoint is written only once every record produced before its capture is acknowledged, and
// committed only once written.
TEST(PeriodicCheckpoints, ACaptureIsWrittenOnlyAfterItsRecordsAreDelivered) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.consume(worker, 1, "b");
  t.interval_passed();  // captured at offset 2, its records in flight
  t.interval_passed();
  // Without a flush the capture is dropped, never written (a writer it was handed to would be joined here).
  t.protocol().settle(/*may_flush=*/false);
  EXPECT_EQ(t.stored_offset(0), -1);
  EXPECT_EQ(worker.progress.checkpointed_offset(), -1);
  EXPECT_TRUE(t.input.commits.empty());

  t.records.deliver_all();
  t.interval_passed();                      // captured again, its records delivered: handed to the writer
  t.protocol().settle(/*may_flush=*/true);  // joins the writer
  EXPECT_EQ(t.stored_offset(0), 2);
  EXPECT_EQ(worker.progress.checkpointed_offset(), 2);
  EXPECT_TRUE(t.input.commits.empty());  // settle writes; the caller's checkpoint commits
}

// Events processed after the capture belong to the next checkpoint, even when their records are
// delivered before the capture is written.
TEST(PeriodicCheckpoints, EventsAfterTheCaptureAreNotInItsCheckpoint) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.consume(worker, 1, "b");
  t.interval_passed();  // captured at 2
  t.consume(worker, 2, "c");
  t.consume(worker, 3, "d");
  t.records.deliver_all();
  t.protocol().settle(/*may_flush=*/true);
  EXPECT_EQ(t.stored_offset(0), 2);
  EXPECT_TRUE(worker.progress.moved_since_checkpoint());

  const CheckpointResult result = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
  EXPECT_TRUE(result.committed);
  EXPECT_EQ(t.stored_offset(0), 4);
  ASSERT_EQ(t.input.commits.size(), 1U);
  EXPECT_EQ(offsets_of(t.input.commits[0]), (std::vector<std::int64_t>{4}));
  EXPECT_EQ(t.input.commits[0][0].metadata, "4");  // the checkpoint's output offset: 4 records acknowledged
}

// A flush that does not finish writes no state and commits nothing.
TEST(PeriodicCheckpoints, AFlushThatFailsWritesAndCommitsNothing) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.output.flush_error = KafkaError::invalid_argument("flush timed out");
  const CheckpointResult result = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
  EXPECT_FALSE(result.flushed);
  EXPECT_FALSE(result.committed);
  EXPECT_EQ(t.stored_offset(0), -1);
  EXPECT_TRUE(t.input.commits.empty());
}

// A commit that fails (or that Kafka refuses later) leaves the checkpoint to be committed again, without
// new events.
TEST(PeriodicCheckpoints, ACommitThatFailsIsSentAgainByTheNextCheckpoint) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.input.commit_error = KafkaError::invalid_argument("commit refused");
  CheckpointResult result = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
  EXPECT_TRUE(result.flushed);
  EXPECT_FALSE(result.committed);
  EXPECT_EQ(t.stored_offset(0), 1);  // written: a restart on this directory resumes here
  EXPECT_EQ(worker.progress.committed_offset(), connectors::kNoOffset);

  t.input.commit_error = {};
  result = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
  EXPECT_TRUE(result.committed);
  ASSERT_EQ(t.input.commits.size(), 1U);
  EXPECT_EQ(offsets_of(t.input.commits[0]), (std::vector<std::int64_t>{1}));

  // An asynchronous commit refused afterwards (here for a request that timed out) is sent again by the next
  // interval.
  t.protocol().commit_answered(KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT, "offset commit"), t.input.commits[0]);
  t.interval_passed();  // nothing moved: the capture only commits what Kafka does not have
  ASSERT_EQ(t.input.commits.size(), 2U);
  EXPECT_EQ(offsets_of(t.input.commits[1]), (std::vector<std::int64_t>{1}));
}

// A commit refused because the group rebalances holds the periodic commits back until the member's next
// assignment: one sent with the generation that is ending would be answered ILLEGAL_GENERATION, which makes
// librdkafka drop the whole assignment and rejoin (another rebalance). Commits a revocation or a stop
// makes are sent regardless.
TEST(PeriodicCheckpoints, ACommitRefusedForARebalanceWaitsForTheNextAssignment) {
  for (const rd_kafka_resp_err_t refusal :
       {RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS, RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION}) {
    CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
    PartitionWorker& worker = t.assign(0, 0);
    t.consume(worker, 0, "a");
    t.records.deliver_all();
    t.interval_passed();  // captured and handed to the writer
    t.protocol().settle(/*may_flush=*/true);
    t.interval_passed();  // written: committed
    ASSERT_EQ(t.input.commits.size(), 1U) << rd_kafka_err2name(refusal);
    t.protocol().commit_answered(KafkaError(refusal, "offset commit"), t.input.commits[0]);

    t.consume(worker, 1, "b");
    t.records.deliver_all();
    for (int interval = 0; interval < 3; ++interval) {
      t.interval_passed();
      t.protocol().settle(/*may_flush=*/true);
    }
    EXPECT_EQ(t.stored_offset(0), 2) << rd_kafka_err2name(refusal);  // checkpoints go on being written
    EXPECT_EQ(t.input.commits.size(), 1U) << rd_kafka_err2name(refusal);

    const CheckpointResult stop = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
    EXPECT_TRUE(stop.committed) << rd_kafka_err2name(refusal);
    ASSERT_EQ(t.input.commits.size(), 2U) << rd_kafka_err2name(refusal);
    t.protocol().commit_answered(KafkaError(refusal, "offset commit"), t.input.commits[1]);

    t.protocol().rebalance_done();
    t.interval_passed();
    ASSERT_EQ(t.input.commits.size(), 3U) << rd_kafka_err2name(refusal);
    EXPECT_EQ(offsets_of(t.input.commits[2]), (std::vector<std::int64_t>{2}));
  }
}

// A member that revoked or lost partitions rejoins: its periodic commits wait from then on, before any
// refusal, until its rebalance is done.
TEST(PeriodicCheckpoints, AMemberThatRejoinsHoldsItsCommitsUntilItsRebalanceIsDone) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.records.deliver_all();
  t.protocol().rebalancing();
  for (int interval = 0; interval < 3; ++interval) {
    t.interval_passed();
    t.protocol().settle(/*may_flush=*/true);
  }
  EXPECT_EQ(t.stored_offset(0), 1);
  EXPECT_TRUE(t.input.commits.empty());
  t.protocol().rebalance_done();
  t.interval_passed();
  ASSERT_EQ(t.input.commits.size(), 1U);
  EXPECT_EQ(offsets_of(t.input.commits[0]), (std::vector<std::int64_t>{1}));
}

// Without an assignment (a member whose rebalance ended in a way it did not see), the hold ends after
// kRebalanceCommitHold and the commit is sent.
TEST(PeriodicCheckpoints, AHeldCommitIsSentWhenTheHoldEndsWithoutAnAssignment) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  const CheckpointResult result = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
  ASSERT_TRUE(result.committed);
  t.protocol().commit_answered(KafkaError(RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS, "offset commit"),
                               t.input.commits[0]);
  std::size_t intervals = 0;
  while (t.input.commits.size() == 1 && intervals < 20) {
    t.interval_passed();  // 2 s each
    ++intervals;
  }
  ASSERT_EQ(t.input.commits.size(), 2U);
  EXPECT_EQ(offsets_of(t.input.commits[1]), (std::vector<std::int64_t>{1}));
  EXPECT_GE(intervals * 2, 10U) << "sent before the hold of 10 s ended";
}

// A revocation during a capture: the capture is flushed for and written, then the leaving partition is
// checkpointed and committed; the partition that stays is written but not committed.
TEST(PeriodicCheckpoints, ARevocationInTheMiddleOfACheckpointCommitsTheLeavingPartition) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& leaving = t.assign(0, 0);
  PartitionWorker& staying = t.assign(1, 0);
  t.consume(leaving, 0, "a");
  t.consume(staying, 0, "b");
  t.interval_passed();  // captured, records in flight
  t.consume(leaving, 1, "c");

  t.protocol().settle(/*may_flush=*/true);  // Assignment::revoked's order: settle, then checkpoint
  EXPECT_EQ(t.output.flushes, 1);
  EXPECT_EQ(t.stored_offset(0), 1);
  EXPECT_EQ(t.stored_offset(1), 1);
  const CheckpointResult result = t.protocol().checkpoint_now({&leaving}, CommitMode::kSync, Clock::now() + 1s);
  EXPECT_TRUE(result.committed);
  EXPECT_EQ(t.stored_offset(0), 2);
  ASSERT_EQ(t.input.commits.size(), 1U);
  ASSERT_EQ(t.input.commits[0].size(), 1U);
  EXPECT_EQ(t.input.commits[0][0].partition, 0);
  EXPECT_EQ(t.input.commits[0][0].offset, 2);
  EXPECT_EQ(staying.progress.committed_offset(), connectors::kNoOffset);
}

// A lost partition: no waiting on the brokers, and a capture whose records are in flight is dropped
// (its partitions write whole next time), never written without them.
TEST(PeriodicCheckpoints, ALostPartitionDropsACaptureWithRecordsInFlight) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.interval_passed();  // captured: its changes count as persisted
  ASSERT_FALSE(worker.progress.full_image_next());

  t.protocol().settle(/*may_flush=*/false);
  t.protocol().partitions_lost({{"orders", 0, connectors::kNoOffset, {}, {}}});
  EXPECT_EQ(t.output.flushes, 0);
  EXPECT_EQ(t.stored_offset(0), -1);
  EXPECT_TRUE(worker.progress.full_image_next());
  EXPECT_TRUE(t.input.commits.empty());
}


// ---- at_least_once with state.topic ----------------------------------------------------------------

// A synchronous checkpoint: the state topic acknowledges the checkpoint before its offset is committed, and
// what it holds reads back as that checkpoint.
TEST(PeriodicCheckpointsWithStateTopic, TheOffsetIsCommittedOnlyAfterTheStateTopicAcknowledgedItsCheckpoint) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce, /*state_topic=*/true);
  PartitionWorker& worker = t.assign(1, 0);
  ASSERT_NE(t.state_topic_sink, nullptr);
  t.consume(worker, 0, "a");
  t.consume(worker, 1, "b");
  const CheckpointResult result = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
  EXPECT_TRUE(result.committed);
  ASSERT_EQ(t.input.commits.size(), 1U);
  EXPECT_EQ(offsets_of(t.input.commits[0]), (std::vector<std::int64_t>{2}));
  ASSERT_FALSE(t.state_topic_sink->calls.empty());
  EXPECT_EQ(t.state_topic_sink->calls[0].partition, 1);  // the input partition's number
  EXPECT_EQ(t.state_topic_sink->calls[0].commits_before, 0U) << "committed before the state topic acknowledged";

  const auto read = read_back(t.state_topic_sink->calls, 1);
  ASSERT_TRUE(std::holds_alternative<connectors::StateTopicCheckpoint>(read)) << std::get<connectors::StateTopicGap>(read).reason;
  EXPECT_EQ(std::get<connectors::StateTopicCheckpoint>(read).manifest.checkpoint.next_offset, 2);
  EXPECT_GT(worker.report->state_topic_produced_bytes, 0U);
  EXPECT_EQ(worker.report->state_topic_produce_failures, 0U);
}

// A checkpoint the state topic does not acknowledge is not committed, even though the store wrote it, and
// the next one is a full image: every slice its manifest lists is written at its own epoch.
TEST(PeriodicCheckpointsWithStateTopic, AFailedProduceCommitsNothingAndTheNextCheckpointIsAFullImage) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce, /*state_topic=*/true);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  ASSERT_TRUE(t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s).committed);
  ASSERT_EQ(t.input.commits.size(), 1U);

  t.consume(worker, 1, "b");
  t.state_topic_sink->error = KafkaError(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, "scripted");
  const CheckpointResult failed = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
  EXPECT_FALSE(t.context().failed()) << "a state-topic failure is not the service's";
  EXPECT_EQ(failed.state_failures, 1U);
  EXPECT_EQ(t.stored_offset(0), 2);  // the store has it: a restart on this directory resumes there
  EXPECT_EQ(worker.progress.checkpointed_offset(), 1);
  EXPECT_EQ(t.input.commits.size(), 1U) << "an offset committed without the state topic's acknowledgement";
  EXPECT_EQ(worker.report->state_topic_produce_failures, 1U);

  t.state_topic_sink->error = {};
  t.consume(worker, 2, "c");
  t.state_topic_sink->calls.clear();
  ASSERT_TRUE(t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s).committed);
  ASSERT_EQ(t.input.commits.size(), 2U);
  EXPECT_EQ(offsets_of(t.input.commits[1]), (std::vector<std::int64_t>{3}));
  const auto read = read_back(t.state_topic_sink->calls, 0);
  ASSERT_TRUE(std::holds_alternative<connectors::StateTopicCheckpoint>(read)) << std::get<connectors::StateTopicGap>(read).reason;
  const connectors::StateManifest& manifest = std::get<connectors::StateTopicCheckpoint>(read).manifest;
  EXPECT_EQ(manifest.checkpoint.next_offset, 3);
  std::size_t slices = 0;
  for (const connectors::ManifestEntry& entry : manifest.entries) {
    EXPECT_EQ(entry.epoch, manifest.epoch) << "a record of an earlier checkpoint in what follows a failure";
    slices += entry.name.kind == 's' ? 1 : 0;
  }
  EXPECT_GT(slices, 0U);
}

// The periodic checkpoint produces on the writer's thread; a capture the state topic did not acknowledge is
// written to the store but not committed.
TEST(PeriodicCheckpointsWithStateTopic, ABackgroundCheckpointIsCommittedOnlyOnceAcknowledged) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce, /*state_topic=*/true);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.records.deliver_all();
  t.state_topic_sink->error = KafkaError(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, "scripted");
  t.interval_passed();                      // captured and handed to the writer
  t.protocol().settle(/*may_flush=*/true);  // joins it
  EXPECT_EQ(t.stored_offset(0), 1);
  EXPECT_EQ(worker.progress.checkpointed_offset(), -1);
  EXPECT_TRUE(t.input.commits.empty());
  EXPECT_FALSE(worker.state_topic_writer->has_baseline()) << "the next checkpoint must be a full image";

  t.state_topic_sink->error = {};  // the writer's thread is joined: no job reads it now
  t.consume(worker, 1, "b");
  t.records.deliver_all();
  t.interval_passed();  // captured and handed to the writer
  t.protocol().settle(/*may_flush=*/true);
  EXPECT_EQ(worker.progress.checkpointed_offset(), 2);
  t.interval_passed();  // nothing moved since: commits what was written
  ASSERT_EQ(t.input.commits.size(), 1U);
  EXPECT_EQ(offsets_of(t.input.commits[0]), (std::vector<std::int64_t>{2}));
}

// A producer that takes less than the default chunk (producer.message.max.bytes) gets chunks that fit it,
// with room for the key and the framing; never less than 1 KiB.
TEST(StateChunkBytes, FitTheProducersMessageMaxBytes) {
  EXPECT_EQ(state_chunk_bytes(1'000'000), connectors::kDefaultStateChunkBytes);  // librdkafka's default
  EXPECT_EQ(state_chunk_bytes(100'000), 100'000U - 4096U);
  EXPECT_EQ(state_chunk_bytes(2'000), 1024U);
}

}  // namespace
}  // namespace bloomgate::app
