// File: assignment.h
//
// Assignment: what the service does when the group assigns it partitions or takes them away (docs/state.md).
// Each assigned partition is restored from its checkpoint, or starts at its committed offset with a filter
// rebuilt from one TTL of its input history and writes a first checkpoint there; then the output partition
// is read from the checkpoint's output offset to its high watermark (reconciliation), so the input offsets
// it already holds are decided again but not produced again. A revoked partition is checkpointed and
// committed first; a lost one is not (the commit protocol decides what else it means).
//
// Off the rebalance path (docs/state.md, "Restores off the rebalance path"): the rebalance callback only
// records the new partitions, which the consumer applies paused (ConsumerOptions::assign_paused), and hands
// each one's restore to the restore thread (restore_runner.h); the callback returns at once, and the loop
// keeps polling and consuming its other partitions. Who runs what:
// - loop thread, in the callback: the commit protocol's settle, the partitions' reports (assigned,
//   restoring), the quarantine bookkeeping (take_lost_with_quarantine), the job's submission; on a
//   revocation or loss, the cancellation of the partition's restore and a bounded wait for it to stop;
// - restore thread (run_restore): restore(), start_points(), rebuild(), reconcile() and
//   report_checkpoints_behind_commit() for one partition at a time, on the job's own worker and report copy,
//   the thread-safe state store, the thread-safe Admin and Consumer::committed(), and its own side readers;
// - loop thread, in poll_restores() every iteration: a finished job is applied (its report copied back,
//   its worker added to PartitionState, its first checkpoint written after the protocol settled), then its
//   partition is sought to its start offset and resumed. Until then PartitionState has no worker for it:
//   nothing is consumed, checkpointed or committed for it, and /readyz answers 503.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bloomgate/connectors/topic_partition.h"
#include "commit_protocol.h"
#include "input_rebuilder.h"
#include "output_reconciler.h"
#include "partition_state.h"
#include "restore_runner.h"
#include "service_context.h"
#include "service_reporting.h"

namespace bloomgate::app {

class Assignment {
 public:
  Assignment(ServiceContext& context, PartitionState& state, CommitProtocol& protocol, ServiceReporter& reporter)
      : context_(context), state_(state), protocol_(protocol), reporter_(reporter) {}

  // The consumer's assigned function: hands each partition's restore to the restore thread and returns;
  // the consumer applies the partitions paused. Not ready meanwhile: /readyz says 503 from the start of the
  // assignment until its last partition is restored.
  void assigned(connectors::TopicPartitions& partitions);
  // The consumer's revoked (lost false) and lost (lost true) functions. A partition still restoring is
  // cancelled: nothing of its restore is checkpointed or committed.
  void revoked(const connectors::TopicPartitions& partitions, bool lost);
  // From the loop, every iteration: applies the restores that finished, and resumes their partitions.
  void poll_restores();
  // Before the consumer closes (a stop, a failure): cancels every restore and joins the restore thread.
  void stop_restores();
  // Partitions assigned here whose restore has not been applied yet.
  std::size_t restoring() const { return restoring_.size(); }

 private:
  struct StartPoint {
    std::int64_t offset = connectors::kNoOffset;  // unknown: librdkafka decides
    bool committed = false;                       // the offset is the group's committed one
    std::optional<std::int64_t> output_offset;    // from the commit metadata
  };

  void submit_restores(const connectors::TopicPartitions& partitions);
  void quarantine_if_wanted();
  void cancel_restores(const connectors::TopicPartitions& partitions);
  void quarantine_from_restore_thread();
  void run_restore(RestoreJob& job);
  void run_restore_steps(RestoreJob& job);
  bool apply_restore(RestoreJob& job);
  void mirror_restore_progress();
  void publish_restoring();
  void report_checkpoints_behind_commit(const std::vector<PartitionWorker*>& restored);
  std::vector<StartPoint> start_points(const std::vector<connectors::TopicPartition*>& partitions);
  std::optional<connectors::PartitionCheckpoint> restore(const PartitionKey& key, const config::PipelineSettings& pipeline,
                                                         PartitionReport& report);
  bool input_holds(const connectors::PartitionId& id, std::int64_t next_offset) const;
  SideReaderOptions side_reader_options(const std::string& role) const;
  void rebuild(PartitionWorker& worker);
  void insert_waiting_for_schema(PartitionWorker& worker, const connectors::ConsumedMessage& message);
  void reconcile(const std::vector<ReconcileRequest>& requests, const std::vector<PartitionWorker*>& workers);

  ServiceContext& context_;
  PartitionState& state_;
  CommitProtocol& protocol_;
  ServiceReporter& reporter_;
  // A revocation in this round (cooperative-sticky): the assignment that follows it in the same round ends
  // the first of the rebalance's two rounds, and the member rejoins for the second.
  bool second_round_follows_ = false;
  // Loop thread: the partitions whose restore is not applied yet, and the restore thread.
  std::map<PartitionKey, std::shared_ptr<RestoreJob>> restoring_;
  std::vector<std::shared_ptr<RestoreJob>> finished_;  // taken from runner_, not applied yet (a seek to retry)
  // Restore thread only: the job it runs, and event_of()'s storage during a rebuild.
  RestoreJob* job_ = nullptr;
  std::vector<connectors::HeaderView> header_views_;
  // Declared last: destroyed (cancelled and joined) before anything its thread uses.
  RestoreRunner runner_{[this](RestoreJob& job) { run_restore(job); }};
};

// "orders/0 orders/3", for the logs.
std::string describe(const connectors::TopicPartitions& partitions);

}  // namespace bloomgate::app
