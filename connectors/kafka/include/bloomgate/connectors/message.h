// File: message.h
//
// A consumed message. It owns the rd_kafka_message_t (MessageHandle) and gives zero-copy views into it,
// so every string_view it returns lives as long as the ConsumedMessage. A ConsumedMessage must be
// destroyed before the Consumer that returned it (librdkafka's rule: messages hold references into the
// client instance).
//
// A message may carry an error instead of data (a consumer error, or partition EOF if
// enable.partition.eof is set): check `error().ok()` first.
//
// Thread-safety: none; a message belongs to the thread that polled it (it may be handed over).
#pragma once

#include "bloomgate/connectors/handles.h"
#include "bloomgate/connectors/header_view.h"
#include "bloomgate/connectors/kafka_error.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace bloomgate::connectors {

enum class TimestampType { kNotAvailable, kCreateTime, kLogAppendTime };

class ConsumedMessage {
 public:
  explicit ConsumedMessage(MessageHandle message);

  [[nodiscard]] KafkaError error() const;
  [[nodiscard]] bool is_partition_eof() const noexcept;

  [[nodiscard]] std::string_view topic() const noexcept;
  [[nodiscard]] std::int32_t partition() const noexcept { return message_->partition; }
  [[nodiscard]] std::int64_t offset() const noexcept { return message_->offset; }
  // Null key / null value (tombstone) are distinct from empty ones.
  [[nodiscard]] std::optional<std::string_view> key() const noexcept;
  [[nodiscard]] std::optional<std::string_view> value() const noexcept;
  // Milliseconds since the epoch; nothing when the broker did not provide one.
  [[nodiscard]] std::optional<std::int64_t> timestamp_ms() const noexcept;
  [[nodiscard]] TimestampType timestamp_type() const noexcept;

  // All headers in order (Kafka allows repeated names).
  [[nodiscard]] std::vector<HeaderView> headers() const;
  // The last header called `name`: nothing if absent; a null value is an engaged optional<optional>.
  [[nodiscard]] std::optional<std::optional<std::string_view>> header(const char* name) const;

  // Takes this record's headers out of it, to be extended and produced without copying each one
  // (Producer::produce with a HeadersHandle). Returns `reserve`-sized empty headers when the record has
  // none. Afterwards headers() and header() see none: call it last.
  [[nodiscard]] HeadersHandle detach_headers(std::size_t reserve);

  [[nodiscard]] const rd_kafka_message_t* native() const noexcept { return message_.get(); }

 private:
  [[nodiscard]] rd_kafka_headers_t* native_headers() const noexcept;

  MessageHandle message_;
};

// The headers of any native message (consumed, or produced and in its delivery report); null when it has
// none. librdkafka parses them once and keeps them with the message.
[[nodiscard]] rd_kafka_headers_t* native_headers_of(const rd_kafka_message_t& message) noexcept;

// Calls use(HeaderView) for each header, in order, without copying; the views are valid while the
// headers are.
template <typename Use>
void for_each_header(const rd_kafka_headers_t* headers, Use&& use) {
  if (headers == nullptr) return;
  const char* name = nullptr;
  const void* value = nullptr;
  std::size_t size = 0;
  for (std::size_t i = 0; rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i) {
    use(HeaderView{name, view_of(value, size)});
  }
}

// The headers (of a native message, or built ones), in order, as views valid while they are.
[[nodiscard]] std::vector<HeaderView> header_views(const rd_kafka_headers_t* headers);
[[nodiscard]] inline std::vector<HeaderView> header_views(const rd_kafka_message_t& message) {
  return header_views(native_headers_of(message));
}

}  // namespace bloomgate::connectors
