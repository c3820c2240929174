// File: commit_ports.h
//
// What the commit protocols (periodic_checkpoints.h, transactional_commits.h) need of the Kafka clients
// and of the output routing, as the narrowest interfaces: the service hands them the loop's producer,
// consumer and OutputRouter (KafkaCommitPorts); the unit tests hand them fakes
// (tests/app/commit_protocol_test_support.h). The state store is the real one in both.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/kafka_error.h"
#include "bloomgate/connectors/state_topic_records.h"
#include "bloomgate/connectors/topic_partition.h"
#include "output_transaction.h"

namespace bloomgate::app {

struct PartitionWorker;
class ServiceContext;

// The producer: what is in flight, and the wait for its delivery reports.
class OutputQueue {
 public:
  virtual ~OutputQueue() = default;
  // Serves delivery reports until none is outstanding or the timeout passes (an error).
  [[nodiscard]] virtual connectors::KafkaError flush(std::chrono::milliseconds timeout) = 0;
  [[nodiscard]] virtual int in_flight() const = 0;
};

// The consumer: offset commits and the rewind of its positions.
class InputPositions {
 public:
  virtual ~InputPositions() = default;
  [[nodiscard]] virtual connectors::KafkaError commit(const connectors::TopicPartitions& offsets,
                                                      connectors::CommitMode mode) = 0;
  [[nodiscard]] virtual connectors::KafkaError seek(const connectors::TopicPartitions& positions,
                                                    std::chrono::milliseconds timeout) = 0;
};

// The produced records, as OutputRouter counts them: by epoch (the records produced between two
// checkpoint captures), and the acknowledged output offsets.
class ProducedRecords {
 public:
  virtual ~ProducedRecords() = default;
  // Ends the current epoch and returns it: a capture taken now may be written once delivered_through(it).
  virtual std::uint64_t seal_epoch() = 0;
  [[nodiscard]] virtual bool delivered_through(std::uint64_t epoch) const = 0;
  // Where the partition's checkpoint says its output stands (output_router.h). -1 with by_key.
  [[nodiscard]] virtual std::int64_t output_offset(const PartitionWorker& worker) const = 0;
};

// exactly_once: the producer's transactions (output_transaction.h has what each outcome means).
class Transactions {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~Transactions() = default;
  virtual void init(Clock::time_point deadline) = 0;
  [[nodiscard]] virtual connectors::KafkaError ensure_open() = 0;
  [[nodiscard]] virtual bool is_open() const = 0;
  // Sends the consumer's `offsets` to the open transaction and commits it.
  virtual TransactionResult commit(const connectors::TopicPartitions& offsets, Clock::time_point deadline) = 0;
  virtual TransactionResult abort(const connectors::KafkaError& why, Clock::time_point deadline) = 0;
};

// state.topic, at_least_once: the state topic's own idempotent producer (acks=all).
class StateTopicSink {
 public:
  virtual ~StateTopicSink() = default;
  // Produces `records` in order to partition `partition` of the state topic and waits until every one is
  // acknowledged, at most `timeout`, and no longer once `abandoned` is set: no error only when all were.
  [[nodiscard]] virtual connectors::KafkaError produce_acknowledged(
      std::int32_t partition, const std::vector<connectors::StateTopicRecord>& records,
      std::chrono::milliseconds timeout, const std::atomic<bool>& abandoned) = 0;
  // The largest payload of one chunk its producer takes (state_chunk_bytes).
  [[nodiscard]] virtual std::size_t chunk_bytes() const { return connectors::kDefaultStateChunkBytes; }
};

// state.topic, exactly_once: the state topic's records go through the loop's transactional producer into
// the open transaction, counted in flight as the output's records are (OutputRouter).
class TransactionalStateRecords {
 public:
  virtual ~TransactionalStateRecords() = default;
  // False when it was not produced: the service failed, or the producer refused it and the protocol
  // aborted the transaction (absorb_produce_error).
  [[nodiscard]] virtual bool produce_state(std::int32_t partition, const connectors::StateTopicRecord& record) = 0;
  // The largest payload of one chunk the producer takes (state_chunk_bytes).
  [[nodiscard]] virtual std::size_t chunk_bytes() const { return connectors::kDefaultStateChunkBytes; }
};

struct CommitPorts {
  OutputQueue& output;
  InputPositions& input;
  ProducedRecords& records;
  // Called once the producer exists (the protocol's start()).
  std::function<std::unique_ptr<Transactions>()> make_transactions;
  // at_least_once: called at start(); nullptr (or no function) when state.topic is not set.
  std::function<std::unique_ptr<StateTopicSink>()> make_state_topic = {};
  // exactly_once: nullptr when state.topic is not set.
  TransactionalStateRecords* state_records = nullptr;
};

// The ports over one loop's clients (created after the protocol: each call reaches the client of the
// moment) and its router.
class KafkaCommitPorts final : public OutputQueue, public InputPositions {
 public:
  KafkaCommitPorts(ServiceContext& context, ProducedRecords& records, TransactionalStateRecords& state_records)
      : context_(context), records_(records), state_records_(state_records) {}

  connectors::KafkaError flush(std::chrono::milliseconds timeout) override;
  int in_flight() const override;
  connectors::KafkaError commit(const connectors::TopicPartitions& offsets, connectors::CommitMode mode) override;
  connectors::KafkaError seek(const connectors::TopicPartitions& positions, std::chrono::milliseconds timeout) override;

  CommitPorts ports();

 private:
  ServiceContext& context_;
  ProducedRecords& records_;
  TransactionalStateRecords& state_records_;
};

}  // namespace bloomgate::app
