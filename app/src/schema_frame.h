// File: schema_frame.h
//
// The Schema Registry's wire format, as Confluent's serializers write it, and the canonical key bytes of a
// scalar read from a schema-encoded value.
//
// Framing. A value is either
//   - prefixed: byte 0 is the magic byte 0x00, bytes 1-4 the schema id (big-endian), then the payload; or
//   - unprefixed, with the id in a header: `__value_schema_id` holds the magic byte 0x00 and the 4-byte id
//     (the header form of Confluent Platform 8.1). A header whose magic byte is 0x01 carries a 16-byte
//     schema GUID instead, which this reader does not resolve: not_schema_framed, saying so.
//   The header wins when both could apply (a value whose first byte happens to be 0x00).
// A Protobuf payload (and, in the header form, the header after the id) first gives the message indexes:
// a zigzag varint count, then that many zigzag varint indexes; a count of 0 stands for [0], the first
// message of the schema. More than kMaxMessageIndexes indexes, or a varint running past the end, is
// malformed_protobuf.
//
// Canonical key bytes (docs/decisions/schema-key-canonical-form.md): a value keys as the JSON pointer's
// key of the same value in JSON, so moving a topic from JSON to Avro or Protobuf keeps its duplicates:
//   - strings as their UTF-8 bytes; bytes and fixed as their raw bytes (JSON has no bytes type);
//   - integers of every width and signedness in decimal ("42", "-7", "18446744073709551615");
//   - float and double as simdjson writes a JSON double (shortest round trip, with a fraction: "1.5",
//     "42.0"); a float is widened to double first, so a float 1.1 keys as "1.100000023841858";
//   - booleans as "true" and "false"; enums as their symbol (a Protobuf number without a symbol in
//     decimal);
//   - null (an Avro null branch, an absent Protobuf field with presence) is missing_field.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "bloomgate/app/key_extractor.h"

namespace bloomgate::app::schema {

inline constexpr std::string_view kValueSchemaIdHeader = "__value_schema_id";
inline constexpr std::size_t kMaxMessageIndexes = 16;

struct Frame {
  std::uint32_t id = 0;
  std::string_view payload;  // after the prefix and, for Protobuf, the message indexes
  std::array<std::int32_t, kMaxMessageIndexes> indexes{};  // Protobuf: the message path; [0] when not given
  std::size_t index_count = 1;
};

// The frame of `value`, as the rules above say; with `protobuf` the message indexes are read as well.
// A value neither prefixed nor with the header is not_schema_framed.
std::optional<Rejection> read_frame(std::string_view value, std::span<const EventHeader> headers, bool protobuf,
                                    Frame& out);

// A varint at `at` (advanced past it); false when it runs past the end or past 10 bytes.
bool read_varint(std::string_view bytes, std::size_t& at, std::uint64_t& out);

// The canonical text of a double, appended to `out`: as simdjson writes it in JSON.
void append_canonical_double(std::string& out, double value);
void append_decimal(std::string& out, std::int64_t value);
void append_decimal(std::string& out, std::uint64_t value);

// RFC 6901 reference tokens of a pointer ("/order/id" -> "order", "id"; ~1 is /, ~0 is ~).
std::vector<std::string> pointer_tokens(std::string_view pointer);

}  // namespace bloomgate::app::schema
