// File: assignment.h
//
// Assignment: what the service does when the group assigns it partitions or takes them away (docs/state.md).
// Each assigned partition is restored from its checkpoint, or starts at its committed offset with a filter
// rebuilt from one TTL of its input history and writes a first checkpoint there; then the output partition
// is read from the checkpoint's output offset to its high watermark (reconciliation), so the input offsets
// it already holds are decided again but not produced again. A revoked partition is checkpointed and
// committed first; a lost one is not (the commit protocol decides what else it means).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bloomgate/connectors/topic_partition.h"
#include "commit_protocol.h"
#include "input_rebuilder.h"
#include "output_reconciler.h"
#include "partition_state.h"
#include "service_context.h"
#include "service_reporting.h"

namespace bloomgate::app {

class Assignment {
 public:
  Assignment(ServiceContext& context, PartitionState& state, CommitProtocol& protocol, ServiceReporter& reporter)
      : context_(context), state_(state), protocol_(protocol), reporter_(reporter) {}

  // The consumer's assigned function: restores (or rebuilds) and reconciles each partition before its first
  // event is fetched, and may set each partition's start offset. Not ready meanwhile: /readyz says 503 from
  // the start of the assignment until its last partition is restored.
  void assigned(connectors::TopicPartitions& partitions);
  // The consumer's revoked (lost false) and lost (lost true) functions.
  void revoked(const connectors::TopicPartitions& partitions, bool lost);

 private:
  struct StartPoint {
    std::int64_t offset = connectors::kNoOffset;  // unknown: librdkafka decides
    bool committed = false;                       // the offset is the group's committed one
    std::optional<std::int64_t> output_offset;    // from the commit metadata
  };

  void assign_partitions(connectors::TopicPartitions& partitions);
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
  std::vector<connectors::HeaderView> header_views_;  // event_of()'s storage during a rebuild
};

// "orders/0 orders/3", for the logs.
std::string describe(const connectors::TopicPartitions& partitions);

}  // namespace bloomgate::app
