// File: kafka_error.h
//
// The error value of the Kafka layer (modern-cpp-kafka's Error, trimmed): a librdkafka error code, a
// message that says what was being done, and the three facts a caller needs to decide what to do next:
//   fatal            the client instance is unusable (fenced, fatal idempotence error): destroy it;
//   retriable        the same call may succeed if repeated (timeouts, leader moves, queue full);
//   requires_abort   a transaction must be aborted and its input rewound (transactional mode only).
// A default-constructed KafkaError is success (`ok()`); anything else is an error.
//
// Where librdkafka hands out an rd_kafka_error_t, the three facts come from it
// (rd_kafka_error_is_fatal / is_retriable / txn_requires_abort). Where it only hands out an
// rd_kafka_resp_err_t (delivery reports, commits, metadata), they are derived from the code by
// `classify()`: see kafka_error.cc for the list and why each code is there.
//
// Errors on the data path are values; configuration and client construction, which happen at start-up,
// throw KafkaException (carrying the same KafkaError), so the service fails fast before it touches a topic.
//
// Thread-safety: a value type; distinct objects may be used from distinct threads.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cassert>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace bloomgate::connectors {

class KafkaError {
 public:
  // Success.
  KafkaError() = default;

  // From a plain error code, classified by `classify()`. `context` says what was being done.
  KafkaError(rd_kafka_resp_err_t code, std::string context);

  struct Classification {
    bool fatal = false;
    bool retriable = false;
    bool requires_abort = false;
  };

  // From a code whose classification is known from elsewhere (rd_kafka_fatal_error: always fatal).
  KafkaError(rd_kafka_resp_err_t code, std::string message, Classification classification);

  // From an error object, which it destroys. nullptr means success.
  static KafkaError from_error_object(rd_kafka_error_t* error, const std::string& context);

  // An error raised by this layer itself rather than by librdkafka (bad argument, bad state).
  static KafkaError invalid_argument(std::string message);

  // No operator bool on purpose: `if (error)` reads both ways; `if (!error.ok())` does not.
  [[nodiscard]] bool ok() const noexcept { return code_ == RD_KAFKA_RESP_ERR_NO_ERROR; }

  [[nodiscard]] rd_kafka_resp_err_t code() const noexcept { return code_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }
  [[nodiscard]] std::string code_name() const;  // "_QUEUE_FULL", "UNKNOWN_TOPIC_OR_PART", ...
  [[nodiscard]] bool is_fatal() const noexcept { return fatal_; }
  [[nodiscard]] bool is_retriable() const noexcept { return retriable_; }
  [[nodiscard]] bool requires_abort() const noexcept { return requires_abort_; }

  // "code_name: message [fatal|retriable|requires-abort]", for logs.
  [[nodiscard]] std::string describe() const;

  // The classification of a bare error code (see kafka_error.cc).
  static Classification classify(rd_kafka_resp_err_t code) noexcept;

 private:
  rd_kafka_resp_err_t code_ = RD_KAFKA_RESP_ERR_NO_ERROR;
  std::string message_;
  bool fatal_ = false;
  bool retriable_ = false;
  bool requires_abort_ = false;
};

// Thrown only at start-up: bad configuration, a client that cannot be created.
class KafkaException : public std::runtime_error {
 public:
  explicit KafkaException(KafkaError error);
  [[nodiscard]] const KafkaError& error() const noexcept { return error_; }

 private:
  KafkaError error_;
};

// A value or the KafkaError that prevented it (std::expected is C++23).
template <class T>
class KafkaResult {
 public:
  KafkaResult(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor): like expected
  KafkaResult(KafkaError error) : state_(std::move(error)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<KafkaError>(state_).ok() && "a KafkaResult error must be an error");
  }

  [[nodiscard]] bool ok() const noexcept { return std::holds_alternative<T>(state_); }

  [[nodiscard]] const T& value() const& { return std::get<T>(state_); }
  [[nodiscard]] T& value() & { return std::get<T>(state_); }
  [[nodiscard]] T&& value() && { return std::get<T>(std::move(state_)); }
  [[nodiscard]] const KafkaError& error() const { return std::get<KafkaError>(state_); }

 private:
  std::variant<T, KafkaError> state_;
};

}  // namespace bloomgate::connectors
