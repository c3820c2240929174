// File: producer.cc
#include "bloomgate/connectors/producer.h"

#include "bloomgate/connectors/record_size.h"
#include "client.h"

#include <array>
#include <cstdlib>
#include <cstddef>
#include <string>

namespace bloomgate::connectors {
namespace {

using detail::to_timeout_ms;
using Clock = std::chrono::steady_clock;

// While waiting for queue space, serve delivery reports in slices this long (librdkafka's example
// polls for a whole second; a shorter slice returns sooner once space frees up).
constexpr std::chrono::milliseconds kQueueFullPollSlice{100};

// A native copy of the given headers; librdkafka takes it when the produce succeeds.
HeadersHandle make_headers(std::span<const HeaderView> headers) {
  HeadersHandle native(rd_kafka_headers_new(headers.size()));
  for (const HeaderView& header : headers) {
    const void* value = header.value ? header.value->data() : nullptr;
    const auto size = header.value ? static_cast<ssize_t>(header.value->size()) : 0;
    rd_kafka_header_add(native.get(), header.name.data(), static_cast<ssize_t>(header.name.size()), value, size);
  }
  return native;
}

rd_kafka_vu_t memory_argument(rd_kafka_vtype_t type, std::string_view bytes) {
  rd_kafka_vu_t argument{};
  argument.vtype = type;
  // RD_KAFKA_MSG_F_COPY makes librdkafka copy the bytes; the non-const pointer is its API's, not a write.
  // An engaged but default-constructed view has no data pointer; librdkafka would read that as null.
  static constexpr char kEmpty[] = "";
  argument.u.mem.ptr = const_cast<char*>(bytes.data() != nullptr ? bytes.data() : kEmpty);
  argument.u.mem.size = bytes.size();
  return argument;
}

std::int64_t configured_message_max_bytes(const KafkaConfig& config) {
  const std::optional<std::string> value = config.get("message.max.bytes");
  return value ? std::strtoll(value->c_str(), nullptr, 10) : kDefaultMessageMaxBytes;
}

}  // namespace

Producer::Producer(const KafkaConfig& config, ProducerOptions options)
    : callbacks_(std::move(options.hooks), std::move(options.on_delivery)),
      queue_full_timeout_(options.queue_full_timeout),
      message_max_bytes_(configured_message_max_bytes(config)) {
  ConfHandle conf = config.duplicate();
  detail::require_property(conf.get(), "enable.idempotence", "true");
  if (options.transactional_id) detail::require_property(conf.get(), "transactional.id", options.transactional_id->c_str());
  detail::install_guarded_callbacks(conf.get(), &callbacks_);
  rd_kafka_conf_set_dr_msg_cb(conf.get(), delivery_trampoline);
  handle_ = detail::create_client(RD_KAFKA_PRODUCER, std::move(conf), "producer");
}

void Producer::delivery_trampoline(rd_kafka_t* /*handle*/, const rd_kafka_message_t* message, void* opaque) {
  auto* callbacks = static_cast<Callbacks*>(static_cast<CallbackGuard*>(opaque));
  if (callbacks != nullptr && message != nullptr) callbacks->delivered(*message);
}

void Producer::Callbacks::delivered(const rd_kafka_message_t& message) noexcept {
  if (!on_delivery_) return;
  invoke("delivery report", [&] {
    DeliveryReport report;
    report.topic = message.rkt != nullptr ? rd_kafka_topic_name(message.rkt) : "";
    report.partition = message.partition;
    report.offset = message.offset;
    report.opaque = message._private;
    report.key = view_of(message.key, message.key_len);
    report.value = view_of(message.payload, message.len);
    report.message = &message;
    rd_kafka_timestamp_type_t type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
    const std::int64_t timestamp = rd_kafka_message_timestamp(&message, &type);
    if (type != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE) report.timestamp_ms = timestamp;
    if (message.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      report.error = KafkaError(message.err, std::string("delivery to ") + std::string(report.topic) + "[" +
                                                 std::to_string(message.partition) + "] failed");
    }
    on_delivery_(report);
  });
}

KafkaError Producer::produce(const std::string& topic, const OutgoingMessage& message) {
  HeadersHandle headers = message.headers.empty() ? HeadersHandle() : make_headers(message.headers);
  return produce(topic, message, headers);
}

KafkaError Producer::produce(const std::string& topic, const OutgoingMessage& message, HeadersHandle& headers) {
  KafkaError error = produce_once(topic, message, headers);
  if (error.code() != RD_KAFKA_RESP_ERR__QUEUE_FULL) return error;  // the common case reads no clock
  const Clock::time_point deadline = Clock::now() + queue_full_timeout_;
  while (Clock::now() < deadline) {
    // The local queue is full (queue.buffering.max.messages/kbytes): serve delivery reports, which
    // frees space as the broker acknowledges, then try again.
    rd_kafka_poll(handle_.get(), to_timeout_ms(kQueueFullPollSlice));
    error = produce_once(topic, message, headers);
    if (error.code() != RD_KAFKA_RESP_ERR__QUEUE_FULL) return error;
  }
  return error;
}

KafkaError Producer::produce_once(const std::string& topic, const OutgoingMessage& message, HeadersHandle& headers) {
  std::array<rd_kafka_vu_t, 8> arguments{};
  std::size_t count = 0;
  arguments[count].vtype = RD_KAFKA_VTYPE_TOPIC;
  arguments[count++].u.cstr = topic.c_str();
  arguments[count].vtype = RD_KAFKA_VTYPE_PARTITION;
  arguments[count++].u.i32 = message.partition;
  arguments[count].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
  arguments[count++].u.i = RD_KAFKA_MSG_F_COPY;
  if (message.key) arguments[count++] = memory_argument(RD_KAFKA_VTYPE_KEY, *message.key);
  if (message.value) arguments[count++] = memory_argument(RD_KAFKA_VTYPE_VALUE, *message.value);
  arguments[count].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
  arguments[count++].u.i64 = message.timestamp_ms;
  arguments[count].vtype = RD_KAFKA_VTYPE_OPAQUE;
  arguments[count++].u.ptr = message.opaque;
  if (headers) {
    arguments[count].vtype = RD_KAFKA_VTYPE_HEADERS;
    arguments[count++].u.headers = headers.get();
  }
  rd_kafka_error_t* failure = rd_kafka_produceva(handle_.get(), arguments.data(), count);
  if (failure == nullptr) {
    static_cast<void>(headers.release());  // the message owns them now
    return {};
  }
  return KafkaError::from_error_object(failure, "produce to \"" + topic + "\"");
}

int Producer::poll(std::chrono::milliseconds timeout) { return rd_kafka_poll(handle_.get(), to_timeout_ms(timeout)); }

KafkaError Producer::flush(std::chrono::milliseconds timeout) {
  const rd_kafka_resp_err_t code = rd_kafka_flush(handle_.get(), to_timeout_ms(timeout));
  if (code == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  return KafkaError(code, "flush: " + std::to_string(outq_len()) + " messages still in flight");
}

KafkaError Producer::init_transactions(std::chrono::milliseconds timeout) {
  return KafkaError::from_error_object(rd_kafka_init_transactions(handle_.get(), to_timeout_ms(timeout)),
                                       "init transactions");
}

KafkaError Producer::begin_transaction() {
  return KafkaError::from_error_object(rd_kafka_begin_transaction(handle_.get()), "begin a transaction");
}

KafkaError Producer::send_offsets_to_transaction(const TopicPartitions& offsets,
                                                 const rd_kafka_consumer_group_metadata_t& group,
                                                 std::chrono::milliseconds timeout) {
  const PartitionListHandle list = to_partition_list(offsets);
  return KafkaError::from_error_object(
      rd_kafka_send_offsets_to_transaction(handle_.get(), list.get(), &group, to_timeout_ms(timeout)),
      "send offsets to the transaction");
}

KafkaError Producer::commit_transaction(std::chrono::milliseconds timeout) {
  return KafkaError::from_error_object(rd_kafka_commit_transaction(handle_.get(), to_timeout_ms(timeout)),
                                       "commit the transaction");
}

KafkaError Producer::abort_transaction(std::chrono::milliseconds timeout) {
  return KafkaError::from_error_object(rd_kafka_abort_transaction(handle_.get(), to_timeout_ms(timeout)),
                                       "abort the transaction");
}

int Producer::outq_len() const { return rd_kafka_outq_len(handle_.get()); }

}  // namespace bloomgate::connectors
