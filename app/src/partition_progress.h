// File: partition_progress.h
//
// PartitionProgress: the one owner of an assigned input partition's positions (next, checkpointed,
// committed, the output floor) and of its reconciliation sets. Every change is a named transition, and
// each transition checks the invariants below with assert(), active in the debug, ci and test builds:
//   - a checkpoint never runs ahead of processing: checkpointed <= next;
//   - nothing is committed past what was processed: committed <= next;
//   - a partition without a position (next -1) has neither a checkpoint nor a commit;
//   - at_least_once commits only a written checkpoint (commit_sent); exactly_once writes the checkpoint of
//     a commit (transaction_committed, then checkpoint_written) and rewinds only to a checkpoint (rewound).
// docs/state.md ("Who guards what") says which transition guards which promise of the service.
//
// A transition that pauses a partition (a "held" state, e.g. while it waits for a schema) fits here as a
// flag set by held() and cleared by released(), which processed() asserts is clear.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "bloomgate/connectors/topic_partition.h"

namespace bloomgate::app {

class PartitionProgress {
 public:
  // Input offsets at or after the restored position that the output already holds, with the output
  // offset of their record. Their events are decided again (so their keys are inserted) but not produced
  // again.
  using Reconciled = std::map<std::int64_t, std::int64_t>;

  // ---- where the partition stands ----
  std::int64_t next_offset() const { return next_; }  // the next input offset to process; -1: none yet
  std::int64_t committed_offset() const { return committed_; }
  std::int64_t checkpointed_offset() const { return checkpointed_; }  // next offset of the last checkpoint
  std::int64_t checkpointed_output() const { return checkpointed_output_; }  // its output offset (commit metadata)
  std::int64_t output_floor() const { return output_floor_; }
  const Reconciled& delivered() const { return delivered_; }
  bool positioned() const { return next_ >= 0; }
  // Processed events that no checkpoint holds yet.
  bool moved_since_checkpoint() const { return positioned() && next_ != checkpointed_; }
  // The last checkpoint is the partition's present (a clean stop may snapshot its filter).
  bool at_checkpoint() const { return positioned() && next_ == checkpointed_; }
  // at_least_once: a written checkpoint that Kafka does not have yet.
  bool checkpoint_uncommitted() const { return checkpointed_ >= 0 && checkpointed_ != committed_; }
  // exactly_once: processed events that no transaction committed yet.
  bool uncommitted() const { return positioned() && next_ != committed_; }
  // exactly_once: the filter decided an event since the last commit. Not the same as next having moved:
  // an event whose record was refused is decided and fetched, but its offset never advanced.
  bool decided_since_commit() const { return decided_since_commit_; }
  // The next checkpoint writes every slice (a fresh filter, or a store that does not hold it).
  bool full_image_next() const { return full_image_next_; }
  // Slices dropped from the filter whose deletion was in a checkpoint that failed to write.
  const std::vector<std::uint64_t>& unwritten_drops() const { return unwritten_drops_; }
  // Where a checkpoint taken now says the output stands, given the highest output offset acknowledged in
  // this process (-1: none): the first reconciled record still ahead pins it; else past everything
  // acknowledged, and past the output's end at assignment.
  std::int64_t output_position(std::int64_t max_acked) const;

  // ---- assignment ----
  // Restored from a checkpoint: the partition resumes exactly there.
  void restored(std::int64_t next_offset, std::int64_t output_offset);
  // No usable checkpoint: it starts at its committed offset or a watermark, and writes whole.
  void started_at(std::int64_t offset);
  // The filter is new or was refilled: the next checkpoint writes every slice.
  void needs_full_image() { full_image_next_ = true; }
  // The output tail was read: its end at assignment and the input offsets it already holds.
  void reconciled(std::int64_t output_end, Reconciled delivered);

  // ---- each event ----
  void decided() { decided_since_commit_ = true; }
  // Whether the output already holds the record of `offset`; forgets the offsets consumption has passed.
  bool take_delivered(std::int64_t offset);
  // The event at `offset` went where its verdict says (or was already delivered): the next one follows.
  void processed(std::int64_t offset);

  // ---- checkpoints ----
  // A checkpoint's image was taken: the filter's changes up to now count as persisted.
  void image_captured();
  // A captured image was not written: the next one writes whole and deletes `drops`.
  void image_unwritten(const std::vector<std::uint64_t>& drops);
  // The store made the checkpoint at `next_offset` durable, its output at `output_offset`.
  void checkpoint_written(std::int64_t next_offset, std::int64_t output_offset);
  // The store was quarantined: it holds nothing of the partition, whose next checkpoint writes whole.
  void store_replaced();

  // ---- commits ----
  // at_least_once: the last written checkpoint's offset was sent to Kafka.
  void commit_sent();
  // at_least_once: Kafka refused the commit of `offset`: the next checkpoint sends it again.
  void commit_refused(std::int64_t offset);
  // exactly_once: a transaction committed the partition at its next offset.
  void transaction_committed();
  // exactly_once: the transaction was aborted: back to the last commit's checkpoint (the caller restores
  // the filter from it and seeks the consumer to next_offset()).
  void rewound();

 private:
  void check() const;

  std::int64_t next_ = -1;
  std::int64_t committed_ = connectors::kNoOffset;
  std::int64_t checkpointed_ = -1;
  std::int64_t checkpointed_output_ = -1;
  std::int64_t output_floor_ = -1;  // the output's high watermark at assignment: nothing this partition
                                    // forwarded before then lies at or above it
  Reconciled delivered_;
  Reconciled delivered_at_last_commit_;  // exactly_once: for the rewind after an aborted transaction
  bool decided_since_commit_ = false;
  bool full_image_next_ = false;
  std::vector<std::uint64_t> unwritten_drops_;
};

}  // namespace bloomgate::app
