// File: record_size.cc
#include "bloomgate/connectors/record_size.h"

#include "bloomgate/connectors/message.h"

#include <algorithm>

namespace bloomgate::connectors {

std::size_t zigzag_varint_size(std::int64_t n) noexcept {
  auto zigzag = (static_cast<std::uint64_t>(n) << 1) ^ static_cast<std::uint64_t>(n >> 63);
  std::size_t bytes = 1;
  while (zigzag >= 0x80) {
    zigzag >>= 7;
    ++bytes;
  }
  return bytes;
}

std::size_t header_wire_size(std::string_view name, std::optional<std::string_view> value) noexcept {
  const std::size_t value_size = value ? value->size() : 0;
  return zigzag_varint_size(static_cast<std::int64_t>(name.size())) + name.size() +
         zigzag_varint_size(static_cast<std::int64_t>(value_size)) + value_size;
}

std::size_t headers_wire_size(std::span<const HeaderView> headers) noexcept {
  std::size_t total = 0;
  for (const HeaderView& header : headers) total += header_wire_size(header.name, header.value);
  return total;
}

std::size_t headers_wire_size(const rd_kafka_message_t& message) noexcept {
  std::size_t total = 0;
  for_each_header(native_headers_of(message), [&](const HeaderView& header) { total += header_wire_size(header.name, header.value); });
  return total;
}

std::size_t largest_record(std::int64_t producer_message_max_bytes,
                           std::optional<std::int64_t> topic_max_message_bytes) noexcept {
  std::int64_t largest = producer_message_max_bytes;
  if (topic_max_message_bytes) {
    largest = std::min(largest, *topic_max_message_bytes - static_cast<std::int64_t>(kRecordBatchFramingBytes));
  }
  return static_cast<std::size_t>(std::max<std::int64_t>(largest, 0));
}

}  // namespace bloomgate::connectors
