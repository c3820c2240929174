// File: commit_protocol.h
//
// CommitProtocol: how one service loop makes its progress durable, chosen once at start-up by
// kafka.guarantee (make_commit_protocol): periodic checkpoints then offset commits (at_least_once,
// periodic_checkpoints.h) or Kafka transactions (exactly_once, transactional_commits.h). The loop, the
// output routing and the assignment call only this interface: no guarantee-mode branch is left in them.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/producer.h"
#include "commit_ports.h"
#include "partition_worker.h"
#include "service_context.h"

namespace bloomgate::app {

class PartitionState;

struct CheckpointResult {
  bool committed = true;           // flushed, and the commit (if any) was accepted
  std::size_t state_failures = 0;  // partitions whose state could not be written: not committed
  bool flushed = true;             // false: nothing was written or committed (committed is false too)
  bool aborted = false;            // exactly_once: the transaction was aborted, its input rewound
};

class CommitProtocol {
 public:
  virtual ~CommitProtocol() = default;

  // Before the producer is created: what the protocol needs of it (a transactional.id).
  virtual void configure_producer(connectors::ProducerOptions& options) const = 0;
  // After the producer is created, before the consumer joins the group.
  virtual void start() = 0;
  // From the loop whenever it checks its timers: the protocol's periodic work.
  virtual void tick(Clock::time_point now) = 0;
  // Makes the progress of `workers` durable now (a revocation, a stop, a dead letter with nowhere to go):
  // flush, write the state, commit, in the protocol's order.
  virtual CheckpointResult checkpoint_now(const std::vector<PartitionWorker*>& workers, connectors::CommitMode mode,
                                          Clock::time_point deadline) = 0;
  // Before anything else touches the workers or the store (a rebalance, the store's quarantine): finishes
  // what is in flight. Without `may_flush` it must not wait on the brokers.
  virtual void settle(bool may_flush) = 0;

  // Before each produced record; false when the service failed (the record is not produced).
  virtual bool before_produce() = 0;
  // A record the producer refused; true when the protocol absorbed it (the event is decided again later),
  // false when the service must fail.
  virtual bool absorb_produce_error(const connectors::KafkaError& error) = 0;
  // A failed delivery report (from a librdkafka callback: record it, act from the loop); true when absorbed.
  virtual bool absorb_delivery_failure(const connectors::KafkaError& error) = 0;
  // An asynchronous offset commit's answer.
  virtual void commit_answered(const connectors::KafkaError& error, const connectors::TopicPartitions& partitions) = 0;
  // Partitions lost to another member (nothing may be committed for them any more).
  virtual void partitions_lost(const connectors::TopicPartitions& partitions) = 0;
  // The member is about to rejoin the group (it revoked or lost partitions), and when its rebalance is done:
  // the assignment of a new generation arrived with nothing left to revoke (an empty one too).
  virtual void rebalancing() = 0;
  virtual void rebalance_done() = 0;
  // At exit: ends what is still open (after a failure) now rather than at a broker's timeout.
  virtual void close() = 0;
};

// The protocol kafka.guarantee asks for.
std::unique_ptr<CommitProtocol> make_commit_protocol(ServiceContext& context, PartitionState& state, CommitPorts ports);

}  // namespace bloomgate::app
