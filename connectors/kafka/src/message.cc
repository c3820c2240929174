// File: message.cc
#include "bloomgate/connectors/message.h"

#include <cstddef>
#include <string>

namespace bloomgate::connectors {
ConsumedMessage::ConsumedMessage(MessageHandle message) : message_(std::move(message)) {}

KafkaError ConsumedMessage::error() const {
  if (message_->err == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  // For an errored message, the payload holds librdkafka's error string.
  return KafkaError(message_->err, std::string(rd_kafka_message_errstr(message_.get())));
}

bool ConsumedMessage::is_partition_eof() const noexcept { return message_->err == RD_KAFKA_RESP_ERR__PARTITION_EOF; }

std::string_view ConsumedMessage::topic() const noexcept {
  if (message_->rkt == nullptr) return {};
  return rd_kafka_topic_name(message_->rkt);
}

std::optional<std::string_view> ConsumedMessage::key() const noexcept { return view_of(message_->key, message_->key_len); }

std::optional<std::string_view> ConsumedMessage::value() const noexcept {
  if (message_->err != RD_KAFKA_RESP_ERR_NO_ERROR) return std::nullopt;  // the payload is an error string
  return view_of(message_->payload, message_->len);
}

std::optional<std::int64_t> ConsumedMessage::timestamp_ms() const noexcept {
  rd_kafka_timestamp_type_t type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
  const std::int64_t timestamp = rd_kafka_message_timestamp(message_.get(), &type);
  if (type == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE) return std::nullopt;
  return timestamp;
}

TimestampType ConsumedMessage::timestamp_type() const noexcept {
  rd_kafka_timestamp_type_t type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
  rd_kafka_message_timestamp(message_.get(), &type);
  switch (type) {
    case RD_KAFKA_TIMESTAMP_CREATE_TIME:
      return TimestampType::kCreateTime;
    case RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME:
      return TimestampType::kLogAppendTime;
    case RD_KAFKA_TIMESTAMP_NOT_AVAILABLE:
      break;
  }
  return TimestampType::kNotAvailable;
}

rd_kafka_headers_t* ConsumedMessage::native_headers() const noexcept { return native_headers_of(*message_); }

HeadersHandle ConsumedMessage::detach_headers(std::size_t reserve) {
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_detach_headers(message_.get(), &headers) == RD_KAFKA_RESP_ERR_NO_ERROR && headers != nullptr) {
    return HeadersHandle(headers);
  }
  return HeadersHandle(rd_kafka_headers_new(reserve));
}

std::vector<HeaderView> ConsumedMessage::headers() const { return header_views(*message_); }

rd_kafka_headers_t* native_headers_of(const rd_kafka_message_t& message) noexcept {
  rd_kafka_headers_t* headers = nullptr;
  // The non-const message is librdkafka's signature: it parses the headers once and keeps them with it.
  if (rd_kafka_message_headers(const_cast<rd_kafka_message_t*>(&message), &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return nullptr;
  }
  return headers;
}

std::vector<HeaderView> header_views(const rd_kafka_headers_t* headers) {
  std::vector<HeaderView> result;
  for_each_header(headers, [&](const HeaderView& header) { result.push_back(header); });
  return result;
}

std::optional<std::optional<std::string_view>> ConsumedMessage::header(const char* name) const {
  rd_kafka_headers_t* headers = native_headers();
  if (headers == nullptr) return std::nullopt;
  const void* value = nullptr;
  std::size_t size = 0;
  if (rd_kafka_header_get_last(headers, name, &value, &size) != RD_KAFKA_RESP_ERR_NO_ERROR) return std::nullopt;
  return view_of(value, size);
}

}  // namespace bloomgate::connectors
