// File: record_size.h
//
// A record's size as librdkafka and the brokers count it, so the service can tell before producing
// whether a record will be accepted (librdkafka 2.0.2, rdkafka_msg.h and rdkafka_header.c):
//   - librdkafka refuses a record at produce() (MSG_SIZE_TOO_LARGE) when its largest v2 wire size is over
//     the producer's message.max.bytes: kRecordFramingBytes (the record's length, attributes, timestamp and
//     offset deltas, key and value lengths and header count, each as a varint of its largest size) + key +
//     value + the serialized headers (per header: name and value lengths as zigzag varints, name, value);
//   - a broker refuses a record batch over the topic's max.message.bytes; a batch adds
//     kRecordBatchFramingBytes of its own to its records (one large record is a batch of its own).
// Thread-safety: pure functions.
#pragma once

#include "bloomgate/connectors/header_view.h"

#include <librdkafka/rdkafka.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace bloomgate::connectors {

inline constexpr std::size_t kRecordFramingBytes = 36;       // RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD
inline constexpr std::size_t kRecordBatchFramingBytes = 61;  // a v2 RecordBatch's header
inline constexpr std::int64_t kDefaultMessageMaxBytes = 1'000'000;  // librdkafka's message.max.bytes

// Bytes of `n` as a zigzag varint (Kafka's record format), as librdkafka counts a header's lengths.
std::size_t zigzag_varint_size(std::int64_t n) noexcept;

// One header as librdkafka serializes it; a null value counts as an empty one.
std::size_t header_wire_size(std::string_view name, std::optional<std::string_view> value) noexcept;
std::size_t headers_wire_size(std::span<const HeaderView> headers) noexcept;
// The headers of a consumed or produced message, read in place (no copy, no allocation).
std::size_t headers_wire_size(const rd_kafka_message_t& message) noexcept;

// What librdkafka compares with message.max.bytes.
constexpr std::size_t record_wire_size(std::size_t key_bytes, std::size_t value_bytes,
                                       std::size_t headers_bytes) noexcept {
  return kRecordFramingBytes + key_bytes + value_bytes + headers_bytes;
}

// The largest record_wire_size() a topic takes: under the producer's message.max.bytes and, where the
// broker said it, the topic's max.message.bytes less a batch's framing. Never negative.
std::size_t largest_record(std::int64_t producer_message_max_bytes,
                           std::optional<std::int64_t> topic_max_message_bytes) noexcept;

}  // namespace bloomgate::connectors
