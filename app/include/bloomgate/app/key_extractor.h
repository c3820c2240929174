// File: key_extractor.h
//
// Derives the deduplication key of one event, as configured by `key.from`: the message key, a field of a
// JSON value picked by an RFC 6901 pointer, a header, or the whole value. An event that cannot be keyed
// is not an error of the service but of the event: extract() returns a Rejection whose reason goes into
// the dead-letter record's `bloomgate.reason` header, and the pipeline carries on with the next event.
//
// Rules, in the order they are applied:
//   1. value_too_large: the value is longer than max_value_bytes (checked first, for every key source,
//      so an oversized event is never parsed and never forwarded, whatever the key comes from).
//   2. the key is taken from its source; an absent source is missing_message_key (null Kafka key),
//      missing_header (no such header, or a header with a null value) or, for JSON, missing_field.
//   3. empty_key: the key is zero bytes long and `empty_is_error` is set (otherwise "" is a key).
//   4. key_too_large: the key is longer than max_key_bytes.
//
// JSON (simdjson DOM parser, one reusable parser and padded buffer per extractor):
//   - The whole value must be one valid JSON document (UTF-8, no trailing content); anything else,
//     including an empty value, is malformed_json wherever the fault is. Validating everything keeps the
//     outcome independent of where the keyed field sits. Known limit: simdjson rejects integer literals
//     outside the 64-bit range (e.g. 123456789012345678901234567890) as malformed, in any field.
//   - A string keys as its unescaped content (UTF-8 bytes, no quotes).
//   - A number keys as its canonical text as simdjson writes it: integers exactly ("42", "-7",
//     "18446744073709551615", and -0 as "0"), other numbers in shortest round-trip form with a fraction
//     ("1.5", "42.0"; 1e3 is "1000.0"). So 42 and 42.0 are different keys, 42.0 and 4.2e1 the same.
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
// Not thread-safe: each extractor owns a parser. Use one per partition worker. A key returned by
// extract() may view the event's bytes; it is valid as long as those bytes are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

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
};
inline constexpr std::size_t kRejectionReasonCount = 8;  // for per-reason counters, indexed by the enum

// Stable snake_case name for the dead-letter header `bloomgate.reason` and for metric labels. These
// strings are an interface: never rename one.
std::string_view reason_name(RejectionReason reason) noexcept;

struct Rejection {
  RejectionReason reason;
  std::string message;  // for humans: what was wrong and the limit or pointer involved; never the key
};

// Key bytes: a view when they exist somewhere already (verbatim in the event, or a JSON string as
// simdjson unescaped it into the extractor's parser), owned bytes when they had to be rendered (JSON
// numbers and booleans). A view into the parser is valid until that extractor's next extract(): use the
// key at once (decide() hashes it before returning) or copy it. Copies and moves keep bytes() valid.
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

// Either a key or the reason there is none.
class ExtractionResult {
 public:
  // Implicit on purpose: `return key;` and `return Rejection{...};` read naturally at every exit.
  ExtractionResult(ExtractedKey key) : outcome_(std::move(key)) {}
  ExtractionResult(Rejection rejection) : outcome_(std::move(rejection)) {}

  bool has_key() const noexcept { return std::holds_alternative<ExtractedKey>(outcome_); }
  const ExtractedKey& key() const { return std::get<ExtractedKey>(outcome_); }  // requires has_key()
  const Rejection& rejection() const { return std::get<Rejection>(outcome_); }  // requires !has_key()

 private:
  std::variant<ExtractedKey, Rejection> outcome_;
};

class KeyExtractor {
 public:
  // Throws std::invalid_argument for a key setting that cannot work at all (a JSON pointer that is not
  // RFC 6901 syntax, an empty header name); the config loader already rejects most of these.
  KeyExtractor(const config::KeySettings& settings, std::uint64_t max_key_bytes, std::uint64_t max_value_bytes);
  // Movable, so a partition worker can own one; a moved-from extractor may only be assigned or destroyed.
  KeyExtractor(KeyExtractor&&) noexcept;
  KeyExtractor& operator=(KeyExtractor&&) noexcept;
  KeyExtractor(const KeyExtractor&) = delete;
  KeyExtractor& operator=(const KeyExtractor&) = delete;
  ~KeyExtractor();

  ExtractionResult extract(const EventView& event);

 private:
  ExtractionResult key_from_source(const EventView& event);
  ExtractionResult json_key(std::string_view value);
  std::optional<Rejection> key_size_violation(std::size_t key_size) const;

  struct JsonParser;  // simdjson stays out of this header

  config::KeySettings settings_;
  std::uint64_t max_key_bytes_;
  std::uint64_t max_value_bytes_;
  std::unique_ptr<JsonParser> json_;  // only for KeySource::kJson
};

}  // namespace bloomgate::app
