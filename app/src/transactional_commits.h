// File: transactional_commits.h
//
// kafka.guarantee exactly_once (docs/state.md, "Transactional mode"): the producer is transactional
// (transactional.id <group_id>.<instance_name>); each checkpoint interval is one transaction holding the
// records and the input offsets, and each partition's state is written after the commit. An abortable error
// aborts the transaction and rewinds every partition to its last commit (consumer position and filter,
// restored from the store); a fatal one stops the service. Revocation commits the open transaction; a lost
// partition aborts it. With state.topic each committing partition's checkpoint is produced to the state
// topic inside the transaction, before its commit (as Kafka Streams writes its changelog under EOS), and
// the tombstones of what a committed checkpoint replaced go into the next transaction.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "commit_protocol.h"
#include "partition_state.h"

namespace bloomgate::app {

class TransactionalCommits final : public CommitProtocol {
 public:
  TransactionalCommits(ServiceContext& context, PartitionState& state, CommitPorts ports);

  void configure_producer(connectors::ProducerOptions& options) const override;
  void start() override;
  void tick(Clock::time_point now) override;
  // Every partition takes part, whichever are leaving: the transaction holds the records of all of them.
  CheckpointResult checkpoint_now(const std::vector<PartitionWorker*>& workers, connectors::CommitMode mode,
                                  Clock::time_point deadline) override;
  void settle(bool) override {}
  bool before_produce() override;
  bool absorb_produce_error(const connectors::KafkaError& error) override;
  bool absorb_delivery_failure(const connectors::KafkaError& error) override;
  void commit_answered(const connectors::KafkaError&, const connectors::TopicPartitions&) override {}
  void partitions_lost(const connectors::TopicPartitions& partitions) override;
  void rebalancing() override {}
  void rebalance_done() override {}
  void close() override;

 private:
  CheckpointResult commit(Clock::time_point deadline);
  bool stage_state_records(const std::vector<PartitionWorker*>& committing,
                           std::vector<connectors::PartitionImage>& images);
  void state_records_aborted(const std::vector<PartitionWorker*>& committing);
  CheckpointResult abort_and_rewind(const connectors::KafkaError& why);
  CheckpointResult rewound_after_abort();
  void rewind_to_last_commit();
  bool rewind(PartitionWorker& worker);

  ServiceContext& context_;
  PartitionState& state_;
  CommitPorts ports_;
  Clock::time_point next_checkpoint_;
  std::unique_ptr<Transactions> transaction_;               // made at start(), over the producer
  std::optional<connectors::KafkaError> transaction_doomed_;  // a delivery failed: the open transaction must abort
  bool discarding_aborted_ = false;                         // serving the purged records' reports after an abort
  // state.topic: the tombstones of checkpoints committed, for the next transaction, by state partition.
  std::map<std::int32_t, std::vector<connectors::StateTopicRecord>> tombstones_;
  // state.topic: those of the checkpoints in the open transaction, and their bytes, until it commits.
  std::map<std::int32_t, std::vector<connectors::StateTopicRecord>> staged_tombstones_;
  std::vector<StatePublication> staged_;
};

}  // namespace bloomgate::app
