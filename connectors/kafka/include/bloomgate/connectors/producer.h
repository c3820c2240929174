// File: producer.h
//
// The idempotent producer (enable.idempotence=true, always: its own retries add no duplicates and do
// not reorder). One instance serves every output topic and partition.
//
// Delivery reports: every produced message gets exactly one DeliveryReport, with the offset it was
// written at or the error that failed it, and the per-message opaque given to produce(). Reports are
// delivered by poll(), flush() and by produce() itself when it waits for queue space, always on the
// thread that made that call. Exceptions from the delivery function are caught (client_hooks.h).
//
// Queue full: produce() serves delivery reports and retries (librdkafka's producer example) until
// `queue_full_timeout` has passed, then returns the retriable _QUEUE_FULL error.
//
// Ownership: owns its rd_kafka_t; the destructor does NOT flush (a crash does not either, and the
// service's correctness may not depend on it): call flush() first. Not movable: librdkafka holds a
// pointer to this object's callback state.
//
// Transactions (ProducerOptions::transactional_id set; librdkafka's examples/transactions.c): call
// init_transactions() once, then begin_transaction(), produce, send_offsets_to_transaction(),
// commit_transaction() (or abort_transaction()). Each returns the KafkaError built from librdkafka's
// rd_kafka_error_t, so is_retriable() / requires_abort() / is_fatal() say what to do next; the caller
// decides (app/src/output_transaction.h).
//
// Thread-safety: produce/poll/flush/outq_len may be called from several threads (rd_kafka_t is
// thread-safe), but the delivery function then runs on whichever thread polls.
#pragma once

#include "bloomgate/connectors/client_hooks.h"
#include "bloomgate/connectors/handles.h"
#include "bloomgate/connectors/kafka_config.h"
#include "bloomgate/connectors/kafka_error.h"
#include "bloomgate/connectors/message.h"
#include "bloomgate/connectors/topic_partition.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace bloomgate::connectors {

struct DeliveryReport {
  std::string_view topic;  // valid during the callback only
  std::int32_t partition = kAnyPartition;
  std::int64_t offset = RD_KAFKA_OFFSET_INVALID;  // where it was written; invalid on error
  std::optional<std::int64_t> timestamp_ms;
  KafkaError error;
  void* opaque = nullptr;  // as given to produce()
  // What was produced, valid during the callback only: for a record refused as too large, what to write
  // instead. `message` is the native one (headers_wire_size(), rd_kafka_message_headers()).
  std::optional<std::string_view> key;
  std::optional<std::string_view> value;
  const rd_kafka_message_t* message = nullptr;
};
using DeliveryFunction = std::function<void(const DeliveryReport& report)>;

struct OutgoingMessage {
  std::int32_t partition = kAnyPartition;  // kAnyPartition: the partitioner hashes the key
  std::optional<std::string_view> key;     // nothing: a null key
  std::optional<std::string_view> value;   // nothing: a null value (tombstone)
  std::span<const HeaderView> headers;
  std::int64_t timestamp_ms = 0;  // 0: librdkafka stamps the current time
  void* opaque = nullptr;         // returned in the DeliveryReport
};

struct ProducerOptions {
  DeliveryFunction on_delivery;  // may be empty
  ClientHooks hooks;
  std::chrono::milliseconds queue_full_timeout{10'000};
  std::optional<std::string> transactional_id;  // set: a transactional producer
};

class Producer {
 public:
  // `config` must name bootstrap.servers. Throws KafkaException if the client cannot be created.
  Producer(const KafkaConfig& config, ProducerOptions options);
  ~Producer() = default;
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;
  Producer(Producer&&) = delete;
  Producer& operator=(Producer&&) = delete;

  // Enqueues a message (key, value and headers are copied). An error here means the message was NOT
  // enqueued and no delivery report will come for it.
  [[nodiscard]] KafkaError produce(const std::string& topic, const OutgoingMessage& message);
  // The same with headers already built (message.headers must be empty): librdkafka takes them as they
  // are instead of a copy of each header. Produced, they go with the message (`headers` is left empty);
  // refused, they stay in `headers` for the caller (to write the record another way).
  [[nodiscard]] KafkaError produce(const std::string& topic, const OutgoingMessage& message, HeadersHandle& headers);

  // Serves delivery reports and errors; returns how many events were served.
  int poll(std::chrono::milliseconds timeout);

  // Waits until every enqueued message has its delivery report (served here), or the timeout passes
  // (retriable _TIMED_OUT; outq_len() then says how many are still in flight).
  [[nodiscard]] KafkaError flush(std::chrono::milliseconds timeout);

  // Transactions; only for a producer created with a transactional_id.
  [[nodiscard]] KafkaError init_transactions(std::chrono::milliseconds timeout);
  [[nodiscard]] KafkaError begin_transaction();
  // `offsets`: the next input offsets (with metadata) of the consumer whose group `group` describes.
  [[nodiscard]] KafkaError send_offsets_to_transaction(const TopicPartitions& offsets,
                                                       const rd_kafka_consumer_group_metadata_t& group,
                                                       std::chrono::milliseconds timeout);
  [[nodiscard]] KafkaError commit_transaction(std::chrono::milliseconds timeout);
  [[nodiscard]] KafkaError abort_transaction(std::chrono::milliseconds timeout);

  // Messages (and requests) enqueued but not yet delivered or failed.
  [[nodiscard]] int outq_len() const;

  // The producer's effective message.max.bytes: produce() refuses a record whose record_wire_size()
  // (record_size.h) is over it.
  [[nodiscard]] std::int64_t message_max_bytes() const noexcept { return message_max_bytes_; }

  // Exceptions thrown by on_delivery / on_log / on_error and caught.
  [[nodiscard]] std::uint64_t callback_exceptions() const noexcept { return callbacks_.exceptions_caught(); }

  [[nodiscard]] rd_kafka_t* native_handle() const noexcept { return handle_.get(); }

 private:
  class Callbacks : public CallbackGuard {
   public:
    Callbacks(ClientHooks hooks, DeliveryFunction on_delivery)
        : CallbackGuard(std::move(hooks)), on_delivery_(std::move(on_delivery)) {}
    void delivered(const rd_kafka_message_t& message) noexcept;

   private:
    DeliveryFunction on_delivery_;
  };
  static void delivery_trampoline(rd_kafka_t* handle, const rd_kafka_message_t* message, void* opaque);

  // `headers`: null, or built headers that librdkafka takes (the handle is released) on success.
  [[nodiscard]] KafkaError produce_once(const std::string& topic, const OutgoingMessage& message,
                                        HeadersHandle& headers);

  Callbacks callbacks_;  // declared before handle_: outlives it
  std::chrono::milliseconds queue_full_timeout_;
  std::int64_t message_max_bytes_;
  KafkaHandle handle_;
};

}  // namespace bloomgate::connectors
