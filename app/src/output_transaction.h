// File: output_transaction.h
//
// kafka.guarantee: exactly_once (docs/state.md, "Transactional mode"): the producer's transactions,
// driven the way librdkafka's examples/transactions.c drives them. One transaction spans one checkpoint
// interval: it begins before the interval's first record and ends with the interval's input offsets sent
// to it and a commit. What an error says decides what happens next:
//   retriable       the same call again, until the deadline;
//   requires abort  abort_transaction(): the caller rewinds its input and filters to the last commit;
//   anything else   (fatal, a deadline passed, an error librdkafka does not classify) the service stops.
//
// Thread-safety: the service thread only, never inside a librdkafka callback (the calls block).
#pragma once

#include <chrono>
#include <string>

#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/kafka_error.h"
#include "bloomgate/connectors/producer.h"
#include "bloomgate/connectors/topic_partition.h"

namespace bloomgate::app {

enum class TransactionOutcome {
  kCommitted,  // the records and offsets are committed (or there was nothing to commit)
  kAborted,    // nothing of the transaction is committed: rewind to the last commit
  kFailed,     // the producer is unusable or the outcome is unknown: stop
};

struct TransactionResult {
  TransactionOutcome outcome = TransactionOutcome::kCommitted;
  connectors::KafkaError error;  // why it was aborted or failed
};

class OutputTransaction {
 public:
  using Clock = std::chrono::steady_clock;

  // `producer` was created with a transactional_id and outlives this object.
  explicit OutputTransaction(connectors::Producer& producer) : producer_(producer) {}

  // Registers the transactional.id with its coordinator, which fences an earlier producer of the same id
  // and ends its open transaction. Throws std::runtime_error when that does not succeed by the deadline.
  void init(Clock::time_point deadline);

  // Begins a transaction unless one is open. An error means none could begin (fatal for the service).
  [[nodiscard]] connectors::KafkaError ensure_open();
  [[nodiscard]] bool is_open() const noexcept { return open_; }

  // Sends `offsets` (the consumer's next offsets, with commit metadata) to the open transaction and
  // commits it; begins one first when only offsets moved. Nothing open and no offsets: nothing to do.
  TransactionResult commit(const connectors::TopicPartitions& offsets, const connectors::Consumer& consumer,
                           Clock::time_point deadline);

  // Aborts the open transaction, if any; `why` is logged and returned as the result's error.
  TransactionResult abort(const connectors::KafkaError& why, Clock::time_point deadline);

 private:
  TransactionResult settle(const connectors::KafkaError& error, Clock::time_point deadline);

  connectors::Producer& producer_;
  bool open_ = false;
};

}  // namespace bloomgate::app
