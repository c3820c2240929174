// File: key_extractor.h
//
// Derives the deduplication key of one event, as configured by `key`: one source (the message key, a field
// of a JSON value picked by an RFC 6901 pointer, a header, or the whole value) or `parts`, several of them.
// An event that cannot be keyed is not an error of the service but of the event: extract() returns a
// Rejection whose reason goes into the dead-letter record's `bloomgate.reason` header, and the pipeline
// carries on with the next event.
//
// Rules, in the order they are applied:
//   1. value_too_large: the value is longer than max_value_bytes (checked first, for every key source,
//      so an oversized event is never parsed and never forwarded, whatever the key comes from).
//   2. each part is taken from its source, in order; an absent source is missing_message_key (null Kafka
//      key), missing_header (no such header, or a header with a null value) or, for JSON, missing_field.
//   3. the part is normalised as configured: `trim` drops leading and trailing ASCII whitespace (space,
//      \t, \n, \v, \f, \r), `lowercase` maps A-Z to a-z. Both are ASCII-only: every other byte, UTF-8
//      sequences included, is kept as it is, so "ÄBC" lowercases to "Äbc" (the Debian libraries the
//      project builds on offer no Unicode case mapping that does not depend on the process locale).
//   4. empty_key: the (normalised) part is zero bytes long and `empty_is_error` is set.
//   5. key_too_large: the key (for several parts: as encoded below) is longer than max_key_bytes.
// With several parts the first failing part decides, and the rejection's message starts with the part
// it is about: "key part 2 of 3 (json /event_id): no field at JSON pointer /event_id".
//
// Encoding. A key of ONE part (the one-source form, or `parts` with one entry) is that part's bytes as
// they are: the key bytes of an existing pipeline do not change, so its filter state stays valid. A key
// of two or more parts is, for each part in order, its length as 4 bytes (unsigned, little-endian) then
// its bytes:
//     parts ("ab", "", "c")  ->  02 00 00 00 'a' 'b'  00 00 00 00  01 00 00 00 'c'
// Different tuples therefore never give the same bytes, whatever the parts contain ("a,b" + "c" and
// "a" + "b,c" differ, where joining with "," would make them equal). The prefixes count towards
// max_key_bytes; the config loader checks that max_key_bytes leaves room for them and fits in 4 bytes.
//
// JSON (simdjson DOM parser, one reusable parser and padded buffer per extractor; the value is parsed at
// most once per event, however many parts read it):
//   - The whole value must be one valid JSON document (UTF-8, no trailing content); anything else,
//     including an empty value, is malformed_json wherever the fault is. Validating everything keeps the
//     outcome independent of where the keyed field sits. Numbers of any size are valid JSON: integers
//     outside the 64-bit range (123456789012345678901234567890) and numbers beyond a double (1e400),
//     which simdjson's DOM parser cannot hold, are accepted in any field (app/src/json_big_numbers.h).
//   - A string keys as its unescaped content (UTF-8 bytes, no quotes).
//   - A number keys as its canonical text as simdjson writes it: integers exactly ("42", "-7",
//     "18446744073709551615", and -0 as "0"), other numbers in shortest round-trip form with a fraction
//     ("1.5", "42.0"; 1e3 is "1000.0"). So 42 and 42.0 are different keys, 42.0 and 4.2e1 the same.
//     A number simdjson cannot hold keys as its text as written, without canonical form:
//     123456789012345678901234567890 as "123456789012345678901234567890", 1e400 as "1e400" (so 1e400
//     and 1E400 are two keys), the same key as the string "1e400".
//   - true and false key as "true" and "false".
//   - So {"id": 42} and {"id": "42"} have the SAME key "42". The filter stores bytes, not typed values,
//     the message-key and header sources have no types either, and an identifier that one producer
//     writes as a number and another (or a later version) as a string, as JavaScript producers do with
//     64-bit ids, still names one entity. A collision needs one field to carry two different entities
//     told apart only by JSON type, which no real schema does.
//   - null is missing_field: serializers differ only by a setting in whether an absent optional field is
//     omitted or written as null, so both are treated alike.
//   - An object or array is not_a_scalar: its text depends on key order and spacing, which producers do
//     not keep stable, so keying on it would silently stop deduplicating. Point at a scalar instead.
//
// Schema Registry values (avro, protobuf, json_schema; app/src/schema_frame.h has the framing and the
// canonical bytes, app/src/schema_field_readers.h the readers):
//   - A value that is not framed (no magic byte and id, no __value_schema_id header) is not_schema_framed.
//   - avro and protobuf need the schema of the frame's id from the SchemaCatalog. While the catalog is
//     still fetching it, extract() returns no key and no rejection but is_pending() with the id: the
//     caller holds the record back and asks again later (the service pauses the partition). An id the
//     catalog does not know, or a schema of another type than the part reads, is unknown_schema.
//   - The field keys as the JSON pointer's key of the same value would, so a topic moved from JSON to Avro
//     or Protobuf keeps its duplicates; bytes that do not decode are malformed_avro or malformed_protobuf.
//   - json_schema strips the frame and reads the rest as the json source does (malformed_json, ...).
//
// Not thread-safe: each extractor owns a parser and buffers. Use one per partition worker. A key returned
// by extract() views the event's bytes or the extractor's own (the parser, the rendering of a number, the
// encoding of several parts), so it is valid until the extractor's next extract() and while the event's
// bytes are: use it at once (decide() hashes it before returning) or copy it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "bloomgate/config/config.h"
#include "bloomgate/connectors/header_view.h"

namespace bloomgate::app {

// One Kafka header, as the consumer hands it out: a value may be null, which Kafka tells apart from empty.
using EventHeader = connectors::HeaderView;

// The parts of a consumed record that keying needs; views into the record, owned by the caller.
struct EventView {
  std::optional<std::string_view> key;  // nullopt: the record has a null key
  std::string_view value;
  std::span<const EventHeader> headers;  // in record order; a name may repeat, the last one counts
};

enum class RejectionReason {
  kMissingField,       // the JSON pointer names nothing in this value, or names null
  kMalformedJson,      // the value is not one valid JSON document
  kNotAScalar,         // the JSON pointer names an object or an array
  kEmptyKey,           // the key is empty and empty keys are configured as errors
  kKeyTooLarge,        // the key is over max_key_bytes
  kValueTooLarge,      // the value is over max_value_bytes
  kMissingHeader,      // no header of the configured name, or it has a null value
  kMissingMessageKey,  // the record's key is null
  kRecordTooLarge,     // the forwarded record would be larger than the output takes (output_router.h)
  kUnknownSchema,      // the schema id is not in the registry (or schemas), or its schema is of another type
  kMalformedAvro,      // the payload does not decode with its Avro schema
  kMalformedProtobuf,  // the payload (or its message indexes) is not Protobuf of its schema
  kNotSchemaFramed,    // the value has no Schema Registry framing: magic byte 0 and schema id, or the header
};
inline constexpr std::size_t kRejectionReasonCount = 13;  // for per-reason counters, indexed by the enum

// Stable snake_case name for the dead-letter header `bloomgate.reason` and for metric labels. These
// strings are an interface: never rename one.
std::string_view reason_name(RejectionReason reason) noexcept;

struct Rejection {
  RejectionReason reason;
  std::string message;  // for humans: what was wrong and the limit or pointer involved; never the key
};

// Key bytes: KeyExtractor::extract() returns views (see the lifetime rule at the top of this file); owned
// bytes are for callers that keep a key. Copies and moves keep bytes() valid.
class ExtractedKey {
 public:
  static ExtractedKey viewing(std::string_view bytes) { return ExtractedKey(bytes); }
  static ExtractedKey owning(std::string bytes) { return ExtractedKey(std::move(bytes)); }

  std::string_view bytes() const noexcept {
    if (const auto* view = std::get_if<std::string_view>(&storage_)) return *view;
    return std::get<std::string>(storage_);
  }
  bool owns_bytes() const noexcept { return std::holds_alternative<std::string>(storage_); }

 private:
  explicit ExtractedKey(std::string_view bytes) : storage_(bytes) {}
  explicit ExtractedKey(std::string bytes) : storage_(std::move(bytes)) {}

  std::variant<std::string_view, std::string> storage_;
};

// A record whose schema the catalog is still fetching: neither keyed nor rejected yet.
struct SchemaPending {
  std::uint32_t id;
};

// A key, the reason there is none, or a schema to wait for.
class ExtractionResult {
 public:
  // Implicit on purpose: `return key;` and `return Rejection{...};` read naturally at every exit.
  ExtractionResult(ExtractedKey key) : outcome_(std::move(key)) {}
  ExtractionResult(Rejection rejection) : outcome_(std::move(rejection)) {}
  ExtractionResult(SchemaPending pending) : outcome_(pending) {}

  bool has_key() const noexcept { return std::holds_alternative<ExtractedKey>(outcome_); }
  bool is_pending() const noexcept { return std::holds_alternative<SchemaPending>(outcome_); }
  const ExtractedKey& key() const { return std::get<ExtractedKey>(outcome_); }  // requires has_key()
  const Rejection& rejection() const { return std::get<Rejection>(outcome_); }  // requires neither of them
  std::uint32_t pending_schema() const { return std::get<SchemaPending>(outcome_).id; }  // requires is_pending()

 private:
  std::variant<ExtractedKey, Rejection, SchemaPending> outcome_;
};

class SchemaCatalog;

class KeyExtractor {
 public:
  // Throws std::invalid_argument for a key setting that cannot work at all (a JSON pointer that is not
  // RFC 6901 syntax, an empty header name, more than config::kMaxKeyParts parts, several parts with a
  // max_key_bytes over 4294967295, an avro or protobuf part without a catalog); the config loader already
  // rejects these with the key's position. `schemas` serves the avro and protobuf parts.
  KeyExtractor(const config::KeySettings& settings, std::uint64_t max_key_bytes, std::uint64_t max_value_bytes,
               std::shared_ptr<SchemaCatalog> schemas = nullptr);
  // Movable, so a partition worker can own one; a moved-from extractor may only be assigned or destroyed.
  KeyExtractor(KeyExtractor&&) noexcept;
  KeyExtractor& operator=(KeyExtractor&&) noexcept;
  KeyExtractor(const KeyExtractor&) = delete;
  KeyExtractor& operator=(const KeyExtractor&) = delete;
  ~KeyExtractor();

  ExtractionResult extract(const EventView& event);

 private:
  ExtractionResult single_part_key(const EventView& event);
  ExtractionResult encoded_parts_key(const EventView& event);
  // One part's bytes before normalisation, into `bytes`; or why it has none.
  std::optional<Rejection> read_part(std::size_t index, const EventView& event, std::string_view& bytes);
  std::optional<Rejection> read_json_field(const config::KeyPart& part, std::string_view value, std::string_view& bytes);
  std::optional<Rejection> read_schema_field(std::size_t part_index, const EventView& event, std::string_view& bytes);
  std::optional<Rejection> key_size_violation(std::size_t key_size) const;

  struct JsonParser;   // simdjson stays out of this header
  struct SchemaParts;  // so do avro-c and libprotobuf

  std::vector<config::KeyPart> parts_;
  bool empty_is_error_;
  std::uint64_t max_key_bytes_;
  std::uint64_t max_value_bytes_;
  std::unique_ptr<JsonParser> json_;  // only when a part is JSON
  std::unique_ptr<SchemaParts> schema_parts_;  // only when a part is avro, protobuf or json_schema
  std::string rendered_;    // a JSON number or boolean as text, until the next part is read
  std::string key_buffer_;  // the encoding of several parts, or one part lowercased; reused
};

// Appends one part to a key of several parts: the part's length as 4 bytes, unsigned little-endian, then
// its bytes. The caller keeps the part under 4 GiB (max_key_bytes is checked against that).
void append_key_part(std::string& key, std::string_view part);

// Whether the key reads the record's headers (a part taken from a header): only then does the pipeline
// hand them to extract().
bool key_reads_headers(const config::KeySettings& settings);

}  // namespace bloomgate::app
