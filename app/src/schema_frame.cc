#include "schema_frame.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>

namespace bloomgate::app::schema {
namespace {

constexpr std::size_t kPrefixBytes = 5;
constexpr std::size_t kGuidHeaderBytes = 17;

std::uint32_t big_endian_id(std::string_view bytes) {
  std::uint32_t id = 0;
  for (std::size_t i = 1; i < kPrefixBytes; ++i) id = (id << 8U) | static_cast<unsigned char>(bytes[i]);
  return id;
}

std::int32_t zigzag(std::uint64_t n) { return static_cast<std::int32_t>((n >> 1U) ^ (~(n & 1U) + 1U)); }

Rejection malformed_indexes(std::string message) {
  return Rejection{RejectionReason::kMalformedProtobuf, "the Protobuf message indexes " + std::move(message)};
}

// The message indexes at the start of `bytes`; `bytes` is advanced past them.
std::optional<Rejection> read_message_indexes(std::string_view& bytes, Frame& out) {
  std::size_t at = 0;
  std::uint64_t count = 0;
  if (!read_varint(bytes, at, count)) return malformed_indexes("run past the end of the value");
  const std::int32_t signed_count = zigzag(count);
  out.indexes = {};
  out.index_count = 1;
  if (signed_count != 0) {
    if (signed_count < 0 || static_cast<std::size_t>(signed_count) > kMaxMessageIndexes) {
      return malformed_indexes("count " + std::to_string(signed_count) + " is not from 0 to " +
                               std::to_string(kMaxMessageIndexes));
    }
    out.index_count = static_cast<std::size_t>(signed_count);
    for (std::size_t i = 0; i < out.index_count; ++i) {
      std::uint64_t index = 0;
      if (!read_varint(bytes, at, index)) return malformed_indexes("run past the end of the value");
      out.indexes[i] = zigzag(index);
      if (out.indexes[i] < 0) return malformed_indexes("hold a negative index");
    }
  }
  bytes.remove_prefix(at);
  return std::nullopt;
}

const EventHeader* last_header(std::span<const EventHeader> headers, std::string_view name) {
  const auto last = std::find_if(headers.rbegin(), headers.rend(), [&](const EventHeader& h) { return h.name == name; });
  return last == headers.rend() ? nullptr : &*last;
}

std::optional<Rejection> read_header_frame(std::string_view header, std::string_view value, bool protobuf, Frame& out) {
  if (header.size() == kGuidHeaderBytes && header[0] == '\x01') {
    return Rejection{RejectionReason::kNotSchemaFramed,
                     "the __value_schema_id header carries a schema GUID, which bloomgate does not resolve; "
                     "configure the serializer to write schema ids"};
  }
  if (header.size() < kPrefixBytes || header[0] != '\0') {
    return Rejection{RejectionReason::kNotSchemaFramed,
                     "the __value_schema_id header is not the magic byte 0 and a 4-byte schema id"};
  }
  out.id = big_endian_id(header);
  out.payload = value;
  if (!protobuf) return std::nullopt;
  std::string_view indexes = header.substr(kPrefixBytes);
  if (!indexes.empty()) return read_message_indexes(indexes, out);
  return read_message_indexes(out.payload, out);
}

}  // namespace

bool read_varint(std::string_view bytes, std::size_t& at, std::uint64_t& out) {
  out = 0;
  for (unsigned shift = 0; shift < 70 && at < bytes.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(bytes[at++]);
    out |= static_cast<std::uint64_t>(byte & 0x7FU) << shift;
    if ((byte & 0x80U) == 0) return true;
  }
  return false;
}

std::optional<Rejection> read_frame(std::string_view value, std::span<const EventHeader> headers, bool protobuf,
                                    Frame& out) {
  if (const EventHeader* header = last_header(headers, kValueSchemaIdHeader); header && header->value) {
    return read_header_frame(*header->value, value, protobuf, out);
  }
  if (value.size() < kPrefixBytes || value[0] != '\0') {
    return Rejection{RejectionReason::kNotSchemaFramed,
                     value.empty() ? std::string("the value is empty: no magic byte and schema id")
                                   : "the value does not start with the magic byte 0 and a 4-byte schema id, and has no "
                                     "__value_schema_id header"};
  }
  out.id = big_endian_id(value);
  out.payload = value.substr(kPrefixBytes);
  if (!protobuf) return std::nullopt;
  return read_message_indexes(out.payload, out);
}

void append_canonical_double(std::string& out, double value) {
  char buffer[32];
  const char* end = simdjson::internal::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, static_cast<std::size_t>(end - buffer));
}

void append_decimal(std::string& out, std::int64_t value) {
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, static_cast<std::size_t>(result.ptr - buffer));
}

void append_decimal(std::string& out, std::uint64_t value) {
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, static_cast<std::size_t>(result.ptr - buffer));
}

std::vector<std::string> pointer_tokens(std::string_view pointer) {
  std::vector<std::string> out;
  std::size_t start = 1;
  while (start <= pointer.size() && !pointer.empty()) {
    const std::size_t slash = std::min(pointer.find('/', start), pointer.size());
    std::string token;
    for (std::size_t i = start; i < slash; ++i) {
      if (pointer[i] == '~' && i + 1 < slash) {
        token.push_back(pointer[i + 1] == '1' ? '/' : '~');
        ++i;
      } else {
        token.push_back(pointer[i]);
      }
    }
    out.push_back(std::move(token));
    start = slash + 1;
  }
  return out;
}

}  // namespace bloomgate::app::schema
