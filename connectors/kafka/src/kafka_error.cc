// File: kafka_error.cc
#include "bloomgate/connectors/kafka_error.h"

#include "bloomgate/connectors/handles.h"

namespace bloomgate::connectors {

KafkaError::KafkaError(rd_kafka_resp_err_t code, std::string context)
    : KafkaError(code, std::move(context), classify(code)) {}

KafkaError::KafkaError(rd_kafka_resp_err_t code, std::string message, Classification classification)
    : code_(code),
      message_(std::move(message)),
      fatal_(classification.fatal),
      retriable_(classification.retriable),
      requires_abort_(classification.requires_abort) {}

KafkaError KafkaError::from_error_object(rd_kafka_error_t* error, const std::string& context) {
  const ErrorHandle owned(error);
  if (owned == nullptr) return {};
  Classification classification;
  classification.fatal = rd_kafka_error_is_fatal(owned.get()) != 0;
  classification.retriable = rd_kafka_error_is_retriable(owned.get()) != 0;
  classification.requires_abort = rd_kafka_error_txn_requires_abort(owned.get()) != 0;
  return KafkaError(rd_kafka_error_code(owned.get()), context + ": " + rd_kafka_error_string(owned.get()),
                    classification);
}

KafkaError KafkaError::invalid_argument(std::string message) {
  return KafkaError(RD_KAFKA_RESP_ERR__INVALID_ARG, std::move(message), Classification{});
}

std::string KafkaError::code_name() const { return rd_kafka_err2name(code_); }

std::string KafkaError::describe() const {
  if (ok()) return "no error";
  std::string text = code_name() + ": " + message_;
  if (fatal_) text += " [fatal]";
  if (retriable_) text += " [retriable]";
  if (requires_abort_) text += " [requires-abort]";
  return text;
}

// A bare rd_kafka_resp_err_t carries no classification, so this mirrors what Kafka's Java client
// (RetriableException subclasses) and librdkafka itself treat as transient.
//   fatal: __FATAL (librdkafka raised a fatal error: the instance must be destroyed; the underlying
//          reason comes from rd_kafka_fatal_error, see the error callback), __FENCED and
//          PRODUCER_FENCED (another instance took over our identity).
//   retriable: transport and timeout errors, leadership and coordinator moves, rebalances in
//          progress, a full local queue, and UNKNOWN_TOPIC_OR_PART (a topic being created). A
//          _MSG_TIMED_OUT delivery failure is retriable in the sense that producing the message again
//          may succeed; doing so may duplicate it, which the caller has to weigh.
//   requires_abort: never from a bare code; only transactional APIs say so, through rd_kafka_error_t.
// Everything else (authorization, invalid arguments, unknown members, illegal generations) is
// permanent for the call that got it: retrying the same call will not help.
KafkaError::Classification KafkaError::classify(rd_kafka_resp_err_t code) noexcept {
  Classification classification;
  switch (code) {
    case RD_KAFKA_RESP_ERR__FATAL:
    case RD_KAFKA_RESP_ERR__FENCED:
    case RD_KAFKA_RESP_ERR_PRODUCER_FENCED:
      classification.fatal = true;
      break;
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE:
    case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
    case RD_KAFKA_RESP_ERR__QUEUE_FULL:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__WAIT_COORD:
    case RD_KAFKA_RESP_ERR__RESOLVE:
    case RD_KAFKA_RESP_ERR__RETRY:
    case RD_KAFKA_RESP_ERR__IN_PROGRESS:
    case RD_KAFKA_RESP_ERR__PREV_IN_PROGRESS:
    case RD_KAFKA_RESP_ERR__OUTDATED:
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
    case RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION:
    case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
    case RD_KAFKA_RESP_ERR_PREFERRED_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
    case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
    case RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS:
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR:
    case RD_KAFKA_RESP_ERR_FETCH_SESSION_ID_NOT_FOUND:
    case RD_KAFKA_RESP_ERR_OFFSET_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_UNSTABLE_OFFSET_COMMIT:
    case RD_KAFKA_RESP_ERR_CONCURRENT_TRANSACTIONS:
    case RD_KAFKA_RESP_ERR_THROTTLING_QUOTA_EXCEEDED:
      classification.retriable = true;
      break;
    default:
      break;
  }
  return classification;
}

KafkaException::KafkaException(KafkaError error) : std::runtime_error(error.describe()), error_(std::move(error)) {}

}  // namespace bloomgate::connectors
