// kafka.guarantee exactly_once (app/src/transactional_commits.h) against the fakes of
// commit_protocol_test_support.h: the transaction carries the offsets and the state follows the commit, an
// abort rewinds, and with state.topic the checkpoint is inside the transaction.
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

// ---- exactly_once: transactional commits --------------------------------------------------------------

// The transaction carries every partition's next offset and its output offset; the state is written
// after the commit, at the committed offset.
TEST(TransactionalCommits, ACommitCarriesTheOffsetsAndWritesTheStateAfterIt) {
  CommitProtocolTest t(config::Guarantee::kExactlyOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.consume(worker, 1, "b");
  t.interval_passed();
  ASSERT_EQ(t.transactions.committed_offsets.size(), 1U);
  EXPECT_EQ(offsets_of(t.transactions.committed_offsets[0]), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(t.transactions.committed_offsets[0][0].metadata, "2");
  EXPECT_EQ(worker.progress.committed_offset(), 2);
  EXPECT_EQ(t.stored_offset(0), 2);
  EXPECT_EQ(t.context().counters.transactions_committed, 1U);
}

// A commit that fails for good stops the service and writes no state past the last commit.
TEST(TransactionalCommits, ACommitThatFailsWritesNoState) {
  CommitProtocolTest t(config::Guarantee::kExactlyOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.transactions.outcomes.push_back(TransactionOutcome::kFailed);
  t.interval_passed();
  EXPECT_TRUE(t.context().failed());
  EXPECT_EQ(t.stored_offset(0), -1);
  EXPECT_EQ(worker.progress.committed_offset(), connectors::kNoOffset);
}

// An aborted transaction: the partition goes back to the last commit, its consumer position and its
// filter (restored from the checkpoint written after that commit), so its events are decided again.
TEST(TransactionalCommits, AnAbortedTransactionRewindsToTheLastCommit) {
  CommitProtocolTest t(config::Guarantee::kExactlyOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.interval_passed();  // committed at 1
  EXPECT_EQ(t.consume(worker, 1, "b"), Outcome::kForward);
  t.transactions.outcomes.push_back(TransactionOutcome::kAborted);
  t.interval_passed();

  EXPECT_EQ(t.context().counters.transactions_aborted, 1U);
  EXPECT_FALSE(t.context().failed());
  ASSERT_EQ(t.input.seeks.size(), 1U);
  EXPECT_EQ(offsets_of(t.input.seeks[0]), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(worker.progress.next_offset(), 1);
  EXPECT_FALSE(worker.progress.decided_since_commit());
  // The rewound filter holds what was committed, not what the aborted transaction decided.
  EXPECT_EQ(CommitProtocolTest::decide_again(worker, 1, "b"), Outcome::kForward);
  EXPECT_EQ(CommitProtocolTest::decide_again(worker, 2, "a"), Outcome::kDuplicate);
}

// A delivery that failed dooms the open transaction: the next tick aborts and rewinds, before its interval.
TEST(TransactionalCommits, AFailedDeliveryAbortsAtTheNextTick) {
  CommitProtocolTest t(config::Guarantee::kExactlyOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.interval_passed();
  t.consume(worker, 1, "b");
  EXPECT_TRUE(t.protocol().absorb_delivery_failure(KafkaError::invalid_argument("delivery failed")));
  t.protocol().tick(Clock::now());  // before the interval
  EXPECT_EQ(t.transactions.aborts, 1);
  EXPECT_EQ(worker.progress.next_offset(), 1);
  EXPECT_EQ(t.transactions.committed_offsets.size(), 1U);
}

// A lost partition may already belong to another member: the open transaction (which holds its records)
// is aborted, and the partitions kept go back to the last commit.
TEST(TransactionalCommits, ALostPartitionAbortsTheOpenTransaction) {
  CommitProtocolTest t(config::Guarantee::kExactlyOnce);
  PartitionWorker& kept = t.assign(0, 0);
  for (const std::int32_t partition : {0, 1}) {
    PartitionWorker& worker = partition == 0 ? kept : t.assign(partition, 0);
    t.consume(worker, 0, "a" + std::to_string(partition));
  }
  t.interval_passed();  // both committed at 1
  for (PartitionWorker* worker : t.state().all_workers()) t.consume(*worker, 1, "b");
  t.state().remove({"orders", 1});
  t.protocol().partitions_lost({{"orders", 1, connectors::kNoOffset, {}, {}}});
  EXPECT_EQ(t.transactions.aborts, 1);
  ASSERT_EQ(t.input.seeks.size(), 1U);
  ASSERT_EQ(t.input.seeks[0].size(), 1U);
  EXPECT_EQ(t.input.seeks[0][0].partition, 0);
  EXPECT_EQ(kept.progress.next_offset(), 1);
}

// exactly_once with state.topic: the checkpoint at the commit is produced inside the transaction, before
// its commit, and reads back as the committed position.
TEST(TransactionalCommitsWithStateTopic, TheCheckpointIsInTheTransactionThatCommitsItsOffsets) {
  CommitProtocolTest t(config::Guarantee::kExactlyOnce, /*state_topic=*/true);
  PartitionWorker& worker = t.assign(1, 0);
  t.consume(worker, 0, "a");
  t.consume(worker, 1, "b");
  t.interval_passed();
  ASSERT_EQ(t.transactions.committed_offsets.size(), 1U);
  ASSERT_FALSE(t.state_records.produced.empty());
  for (const FakeStateTopic::Call& call : t.state_records.produced) {
    EXPECT_EQ(call.partition, 1);
    EXPECT_EQ(call.commits_before, 0U) << "a state record produced after its transaction committed";
  }
  const auto read = read_back(t.state_records.produced, 1);
  ASSERT_TRUE(std::holds_alternative<connectors::StateTopicCheckpoint>(read)) << std::get<connectors::StateTopicGap>(read).reason;
  EXPECT_EQ(std::get<connectors::StateTopicCheckpoint>(read).manifest.checkpoint.next_offset,
            worker.progress.committed_offset());
  EXPECT_EQ(t.stored_offset(1), 2);
  EXPECT_GT(worker.report->state_topic_produced_bytes, 0U);
}

// An aborted transaction takes its state records with it: the partition's next checkpoint is a full image,
// and what a read_committed reader of the state topic sees reads back as the committed checkpoint.
TEST(TransactionalCommitsWithStateTopic, AnAbortedTransactionMakesTheNextCheckpointAFullImage) {
  CommitProtocolTest t(config::Guarantee::kExactlyOnce, /*state_topic=*/true);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.interval_passed();  // committed at 1
  std::vector<FakeStateTopic::Call> committed = t.state_records.produced;
  t.state_records.produced.clear();
  t.consume(worker, 1, "b");
  t.transactions.outcomes.push_back(TransactionOutcome::kAborted);
  t.interval_passed();  // aborted: what it produced is not in the topic
  EXPECT_FALSE(t.context().failed());
  EXPECT_FALSE(worker.state_topic_writer->has_baseline());
  t.state_records.produced.clear();

  t.consume(worker, 1, "b");
  t.interval_passed();  // committed at 2
  ASSERT_EQ(t.transactions.committed_offsets.size(), 2U);
  committed.insert(committed.end(), t.state_records.produced.begin(), t.state_records.produced.end());
  const auto read = read_back(committed, 0);
  ASSERT_TRUE(std::holds_alternative<connectors::StateTopicCheckpoint>(read)) << std::get<connectors::StateTopicGap>(read).reason;
  const connectors::StateManifest& manifest = std::get<connectors::StateTopicCheckpoint>(read).manifest;
  EXPECT_EQ(manifest.checkpoint.next_offset, 2);
  for (const connectors::ManifestEntry& entry : manifest.entries) {
    EXPECT_EQ(entry.epoch, manifest.epoch) << "a record of a checkpoint before the abort";
  }
}

}  // namespace
}  // namespace bloomgate::app
