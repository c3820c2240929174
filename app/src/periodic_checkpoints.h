// File: periodic_checkpoints.h
//
// kafka.guarantee at_least_once: flush, write the state, then commit (docs/state.md). A partition's
// checkpoint is written only when every record produced for the events before its next offset has been
// acknowledged, and its offset is committed only when its checkpoint is durable. The periodic checkpoint
// is captured without a flush and written on the checkpoint writer's thread while consumption goes on
// (docs/state.md, "Checkpoints off the polling thread"); revocation, a stop and a dead letter with nowhere
// to go checkpoint synchronously. With state.topic each checkpoint is also produced to the state topic, and
// a partition's offset is committed only once the state topic acknowledged its checkpoint too
// (state_topic_publisher.h).
//
// While the group rebalances, the periodic commits wait: a commit that the coordinator refuses as
// REBALANCE_IN_PROGRESS or ILLEGAL_GENERATION, a revocation or a loss holds the next ones back until the
// member's rebalance is done (or kRebalanceCommitHold, whichever comes first). Under cooperative-sticky a
// revocation is followed by a second round: the assignment of its first round does not end the hold. A
// commit sent with the generation that just ended is answered ILLEGAL_GENERATION once the next one forms,
// and librdkafka then drops the member's whole assignment as lost and rejoins, which starts another
// rebalance for every member: commits sent again at each checkpoint interval would keep the group
// rebalancing (docs/decisions/commits-during-rebalances.md).
// Commits that a revocation or a stop makes are sent regardless.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "checkpoint_writer.h"
#include "commit_protocol.h"
#include "partition_state.h"
#include "state_topic_publisher.h"

namespace bloomgate::app {

class PeriodicCheckpoints final : public CommitProtocol {
 public:
  PeriodicCheckpoints(ServiceContext& context, PartitionState& state, const CommitPorts& ports);

  void configure_producer(connectors::ProducerOptions&) const override {}
  void start() override;
  void tick(Clock::time_point now) override;
  CheckpointResult checkpoint_now(const std::vector<PartitionWorker*>& workers, connectors::CommitMode mode,
                                  Clock::time_point deadline) override;
  void settle(bool may_flush) override;
  bool before_produce() override { return true; }
  bool absorb_produce_error(const connectors::KafkaError&) override { return false; }
  bool absorb_delivery_failure(const connectors::KafkaError&) override { return false; }
  void commit_answered(const connectors::KafkaError& error, const connectors::TopicPartitions& partitions) override;
  void partitions_lost(const connectors::TopicPartitions&) override {}
  void rebalancing() override { commits_held_until_ = last_tick_ + kRebalanceCommitHold; }
  void rebalance_done() override { commits_held_until_ = {}; }
  void close() override {}

 private:
  static constexpr std::chrono::seconds kRebalanceCommitHold{10};

  bool commit_checkpointed(const std::vector<PartitionWorker*>& workers, connectors::CommitMode mode);
  void capture();
  void advance();
  void written_in_background(CheckpointWriter::Done done);
  StateTopicPublisher* publisher() { return publisher_ ? &*publisher_ : nullptr; }
  void submit_pending();

  struct PendingCheckpoint {
    std::uint64_t epoch = 0;  // written once the records of this epoch and before are acknowledged
    std::vector<PartitionWorker*> workers;
    std::vector<connectors::PartitionImage> images;  // moved to the writer when submitted
  };

  ServiceContext& context_;
  PartitionState& state_;
  OutputQueue& output_;
  InputPositions& input_;
  ProducedRecords& records_;
  std::function<std::unique_ptr<StateTopicSink>()> make_state_topic_;
  std::optional<StateTopicPublisher> publisher_;  // with state.topic, from start()
  Clock::time_point next_checkpoint_;
  Clock::time_point last_tick_{};
  Clock::time_point commits_held_until_{};  // periodic commits wait while the group rebalances
  std::optional<PendingCheckpoint> pending_;
  CheckpointWriter writer_{kGroupCommitBytes};  // must stop before the state store closes
};

}  // namespace bloomgate::app
