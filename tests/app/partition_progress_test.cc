// PartitionProgress (app/src/partition_progress.h): each named transition moves the positions and the
// reconciliation sets as the commit protocols rely on. A transition that breaks an invariant asserts
// (the ci preset keeps assertions), so an ordering mutated in the code ends these tests.
#include "partition_progress.h"

#include <gtest/gtest.h>

namespace bloomgate::app {
namespace {

TEST(PartitionProgress, StartsWithoutAPositionACheckpointOrACommit) {
  const PartitionProgress progress;
  EXPECT_EQ(progress.committed_offset(), connectors::kNoOffset);
  for (const bool state : {progress.positioned(), progress.moved_since_checkpoint(), progress.at_checkpoint(),
                           progress.checkpoint_uncommitted(), progress.uncommitted()}) {
    EXPECT_FALSE(state);
  }
}

TEST(PartitionProgress, ARestoredPartitionResumesAtItsCheckpoint) {
  PartitionProgress progress;
  progress.restored(40, 17);
  EXPECT_EQ(progress.next_offset(), 40);
  EXPECT_EQ(progress.checkpointed_offset(), 40);
  EXPECT_EQ(progress.checkpointed_output(), 17);
  EXPECT_TRUE(progress.at_checkpoint());
  EXPECT_FALSE(progress.moved_since_checkpoint());
  // Restored is not committed: the first checkpoint commits it.
  EXPECT_TRUE(progress.checkpoint_uncommitted());
}

TEST(PartitionProgress, ProcessingMovesPastTheCheckpointUntilTheNextOneIsWritten) {
  PartitionProgress progress;
  progress.started_at(0);
  progress.processed(0);
  progress.processed(1);
  EXPECT_EQ(progress.next_offset(), 2);
  EXPECT_TRUE(progress.moved_since_checkpoint());
  progress.checkpoint_written(2, 5);
  EXPECT_TRUE(progress.at_checkpoint());
  EXPECT_EQ(progress.checkpointed_output(), 5);
}

// at_least_once: a checkpoint captured at one offset is written while later events are processed; the
// commit sends the checkpoint's offset, never the present one.
TEST(PartitionProgress, AtLeastOnceCommitsTheWrittenCheckpointNotThePresent) {
  PartitionProgress progress;
  progress.started_at(10);
  progress.processed(10);  // captured here: next 11
  progress.processed(11);  // processed while the capture is written
  progress.checkpoint_written(11, 3);
  EXPECT_TRUE(progress.moved_since_checkpoint());
  ASSERT_TRUE(progress.checkpoint_uncommitted());
  progress.commit_sent();
  EXPECT_EQ(progress.committed_offset(), 11);
  EXPECT_FALSE(progress.checkpoint_uncommitted());
}

// A refused asynchronous commit is forgotten, so the next checkpoint sends it again even without new
// events; the answer for an older commit changes nothing.
TEST(PartitionProgress, ARefusedCommitIsSentAgain) {
  PartitionProgress progress;
  progress.started_at(0);
  progress.processed(0);
  progress.checkpoint_written(1, 0);
  progress.commit_sent();
  progress.commit_refused(0);  // not the offset committed last
  EXPECT_EQ(progress.committed_offset(), 1);
  progress.commit_refused(1);
  EXPECT_EQ(progress.committed_offset(), connectors::kNoOffset);
  EXPECT_TRUE(progress.checkpoint_uncommitted());
}

TEST(PartitionProgress, AnUnwrittenImageMakesTheNextOneWholeAndKeepsItsDrops) {
  PartitionProgress progress;
  progress.needs_full_image();
  EXPECT_TRUE(progress.full_image_next());
  progress.image_captured();
  EXPECT_FALSE(progress.full_image_next());
  progress.image_unwritten({7, 8});
  progress.image_unwritten({9});
  EXPECT_TRUE(progress.full_image_next());
  EXPECT_EQ(progress.unwritten_drops(), (std::vector<std::uint64_t>{7, 8, 9}));
  progress.image_captured();
  EXPECT_TRUE(progress.unwritten_drops().empty());
}

// A quarantined store holds nothing of the partition: the next checkpoint writes it whole, events or not.
TEST(PartitionProgress, AReplacedStoreForgetsTheCheckpoint) {
  PartitionProgress progress;
  progress.restored(5, 2);
  progress.store_replaced();
  EXPECT_EQ(progress.checkpointed_offset(), -1);
  EXPECT_TRUE(progress.moved_since_checkpoint());
  EXPECT_TRUE(progress.full_image_next());
}

// Reconciliation: the offsets the output holds are taken once each, and those consumption passed are
// forgotten; the first reconciled record still ahead pins the checkpoint's output offset.
TEST(PartitionProgress, ReconciledRecordsAreTakenOnceAndPinTheOutputPosition) {
  PartitionProgress progress;
  progress.restored(100, 50);
  progress.reconciled(60, {{101, 55}, {103, 57}});
  EXPECT_EQ(progress.output_position(70), 55);  // whatever was acknowledged since
  EXPECT_FALSE(progress.take_delivered(100));
  EXPECT_TRUE(progress.take_delivered(101));
  EXPECT_FALSE(progress.take_delivered(101));
  EXPECT_EQ(progress.output_position(70), 57);
  EXPECT_FALSE(progress.take_delivered(104));  // passes 103 without taking it
  EXPECT_TRUE(progress.delivered().empty());
  // Past the reconciled records: past what was acknowledged, never below the output's end at assignment.
  EXPECT_EQ(progress.output_position(70), 71);
  EXPECT_EQ(progress.output_position(-1), 60);
}

// exactly_once: a commit moves the committed offset to the present and keeps the reconciliation set as
// it was then; an abort rewinds to that commit's checkpoint and set.
TEST(PartitionProgress, AnAbortRewindsToTheLastCommit) {
  PartitionProgress progress;
  progress.restored(10, 4);
  progress.reconciled(4, {{10, 4}, {12, 6}, {20, 9}});
  ASSERT_TRUE(progress.take_delivered(10));
  progress.processed(10);
  progress.processed(11);
  progress.decided();
  progress.transaction_committed();
  EXPECT_EQ(progress.committed_offset(), 12);
  EXPECT_FALSE(progress.decided_since_commit());
  progress.checkpoint_written(12, 6);

  ASSERT_TRUE(progress.take_delivered(12));
  progress.processed(12);
  progress.decided();
  progress.processed(13);
  progress.rewound();
  EXPECT_EQ(progress.next_offset(), 12);
  EXPECT_FALSE(progress.decided_since_commit());
  EXPECT_EQ(progress.delivered(), (PartitionProgress::Reconciled{{12, 6}, {20, 9}}));
  EXPECT_TRUE(progress.at_checkpoint());
}

// A transaction with nothing new for the partition leaves its commit where it was.
TEST(PartitionProgress, ACommitWithoutNewEventsKeepsTheCommittedOffset) {
  PartitionProgress progress;
  EXPECT_FALSE(progress.uncommitted());
  progress.transaction_committed();
  EXPECT_EQ(progress.committed_offset(), connectors::kNoOffset);
  progress.started_at(3);
  progress.transaction_committed();
  EXPECT_EQ(progress.committed_offset(), 3);
  EXPECT_FALSE(progress.uncommitted());
}

}  // namespace
}  // namespace bloomgate::app
