#include "output_transaction.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

namespace bloomgate::app {
namespace {

using connectors::KafkaError;
using Clock = OutputTransaction::Clock;

// librdkafka treats a timeout of 0 as "do not wait": every call gets at least this much.
constexpr std::chrono::milliseconds kShortestCall{100};

std::chrono::milliseconds left_until(Clock::time_point deadline) {
  return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()), kShortestCall);
}

// Calls `call(timeout)` again while it answers with a retriable error and the deadline has not passed.
template <class Call>
KafkaError until_not_retriable(const Call& call, Clock::time_point deadline) {
  for (;;) {
    KafkaError error = call(left_until(deadline));
    if (error.ok() || !error.is_retriable() || Clock::now() >= deadline) return error;
    spdlog::warn("transaction: {}; trying again", error.describe());
  }
}

}  // namespace

void OutputTransaction::init(Clock::time_point deadline) {
  const KafkaError error =
      until_not_retriable([this](std::chrono::milliseconds timeout) { return producer_.init_transactions(timeout); }, deadline);
  if (!error.ok()) throw std::runtime_error("initializing the producer's transactions failed: " + error.describe());
}

KafkaError OutputTransaction::ensure_open() {
  if (open_) return {};
  KafkaError error = producer_.begin_transaction();
  open_ = error.ok();
  return error;
}

TransactionResult OutputTransaction::commit(const connectors::TopicPartitions& offsets,
                                            const connectors::Consumer& consumer, Clock::time_point deadline) {
  if (!open_ && offsets.empty()) return {};
  if (KafkaError error = ensure_open(); !error.ok()) return {TransactionOutcome::kFailed, error};
  if (!offsets.empty()) {
    const connectors::GroupMetadataHandle group = consumer.group_metadata();
    if (group == nullptr) {
      return {TransactionOutcome::kFailed, KafkaError::invalid_argument("the consumer has no group metadata")};
    }
    const KafkaError sent = until_not_retriable(
        [&](std::chrono::milliseconds timeout) { return producer_.send_offsets_to_transaction(offsets, *group, timeout); },
        deadline);
    if (!sent.ok()) return settle(sent, deadline);
  }
  const KafkaError committed = until_not_retriable(
      [this](std::chrono::milliseconds timeout) { return producer_.commit_transaction(timeout); }, deadline);
  if (!committed.ok()) return settle(committed, deadline);
  open_ = false;
  return {};
}

TransactionResult OutputTransaction::abort(const KafkaError& why, Clock::time_point deadline) {
  if (!open_) return {TransactionOutcome::kAborted, why};
  spdlog::warn("aborting the transaction: {}", why.describe());
  const KafkaError error = until_not_retriable(
      [this](std::chrono::milliseconds timeout) { return producer_.abort_transaction(timeout); }, deadline);
  if (!error.ok()) return {TransactionOutcome::kFailed, error};
  open_ = false;
  return {TransactionOutcome::kAborted, why};
}

// A send or commit that failed: abort when librdkafka says the transaction can be aborted and retried;
// anything else (fatal, retriable past the deadline, unclassified) leaves the outcome to a restart, whose
// init() fences this producer and completes or aborts the transaction at the coordinator.
TransactionResult OutputTransaction::settle(const KafkaError& error, Clock::time_point deadline) {
  if (error.requires_abort() && !error.is_fatal()) return abort(error, deadline);
  return {TransactionOutcome::kFailed, error};
}

}  // namespace bloomgate::app
