// File: key_extractor.cc
//
// The rules are in key_extractor.h. simdjson is used through its DOM API because it validates the whole
// document; the On-Demand API only checks what it visits, which would make "is this value malformed"
// depend on where the keyed field happens to sit.
#include "bloomgate/app/key_extractor.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace bloomgate::app {
namespace {

// RFC 6901: "" (the whole document) or a sequence of "/" reference-token, where "~" is only ever
// followed by "0" (for "~") or "1" (for "/").
bool is_json_pointer(std::string_view pointer) {
  if (pointer.empty()) return true;
  if (pointer.front() != '/') return false;
  for (std::size_t i = 0; i < pointer.size(); ++i) {
    if (pointer[i] != '~') continue;
    if (i + 1 == pointer.size() || (pointer[i + 1] != '0' && pointer[i + 1] != '1')) return false;
  }
  return true;
}

std::string too_large_message(std::string_view what, std::size_t size, std::uint64_t limit) {
  return "the " + std::string(what) + " is " + std::to_string(size) + " bytes, over the limit of " +
         std::to_string(limit);
}

std::string missing_field_message(std::string_view pointer, simdjson::error_code error) {
  switch (error) {
    case simdjson::NO_SUCH_FIELD: return "no field at JSON pointer " + std::string(pointer);
    case simdjson::INDEX_OUT_OF_BOUNDS: return "array index out of range at JSON pointer " + std::string(pointer);
    default:
      // INCORRECT_TYPE, INVALID_JSON_POINTER: the pointer walks through a scalar, or uses a member name
      // as an array index. The pointer's syntax was checked when the extractor was built.
      return "JSON pointer " + std::string(pointer) + " does not fit the structure of this value";
  }
}

}  // namespace

std::string_view reason_name(RejectionReason reason) noexcept {
  switch (reason) {
    case RejectionReason::kMissingField: return "missing_field";
    case RejectionReason::kMalformedJson: return "malformed_json";
    case RejectionReason::kNotAScalar: return "not_a_scalar";
    case RejectionReason::kEmptyKey: return "empty_key";
    case RejectionReason::kKeyTooLarge: return "key_too_large";
    case RejectionReason::kValueTooLarge: return "value_too_large";
    case RejectionReason::kMissingHeader: return "missing_header";
    case RejectionReason::kMissingMessageKey: return "missing_message_key";
  }
  return "unknown";
}

// The parser keeps its tape and string buffers between documents, and `padded_value` is the value copied
// with the SIMDJSON_PADDING bytes that simdjson may read past the end; both grow to the largest value seen
// and are then reused, so a steady stream of events costs no allocation for parsing.
struct KeyExtractor::JsonParser {
  simdjson::dom::parser parser;
  std::vector<char> padded_value;
};

KeyExtractor::KeyExtractor(const config::KeySettings& settings, std::uint64_t max_key_bytes,
                           std::uint64_t max_value_bytes)
    : settings_(settings), max_key_bytes_(max_key_bytes), max_value_bytes_(max_value_bytes) {
  if (settings_.from == config::KeySource::kJson) {
    if (!is_json_pointer(settings_.pointer)) {
      throw std::invalid_argument("\"" + settings_.pointer +
                                  "\" is not an RFC 6901 JSON pointer: it starts with / and escapes ~ as ~0, / as ~1");
    }
    json_ = std::make_unique<JsonParser>();
  }
  if (settings_.from == config::KeySource::kHeader && settings_.header.empty()) {
    throw std::invalid_argument("a key taken from a header needs the header's name");
  }
}

KeyExtractor::KeyExtractor(KeyExtractor&&) noexcept = default;
KeyExtractor& KeyExtractor::operator=(KeyExtractor&&) noexcept = default;
KeyExtractor::~KeyExtractor() = default;

ExtractionResult KeyExtractor::extract(const EventView& event) {
  if (event.value.size() > max_value_bytes_) {
    return Rejection{RejectionReason::kValueTooLarge, too_large_message("value", event.value.size(), max_value_bytes_)};
  }
  ExtractionResult result = key_from_source(event);
  if (result.has_key()) {
    if (std::optional<Rejection> violation = key_size_violation(result.key().bytes().size())) return std::move(*violation);
  }
  return result;
}

ExtractionResult KeyExtractor::key_from_source(const EventView& event) {
  switch (settings_.from) {
    case config::KeySource::kMessageKey:
      if (!event.key) return Rejection{RejectionReason::kMissingMessageKey, "the record's key is null"};
      return ExtractedKey::viewing(*event.key);
    case config::KeySource::kValue: return ExtractedKey::viewing(event.value);
    case config::KeySource::kHeader: {
      // Kafka allows a name to repeat; the last one wins, as in librdkafka's rd_kafka_header_get_last().
      const auto last = std::find_if(event.headers.rbegin(), event.headers.rend(),
                                     [&](const EventHeader& h) { return h.name == settings_.header; });
      if (last == event.headers.rend()) {
        return Rejection{RejectionReason::kMissingHeader, "no header named \"" + settings_.header + "\""};
      }
      if (!last->value) {
        return Rejection{RejectionReason::kMissingHeader, "the header \"" + settings_.header + "\" is null"};
      }
      return ExtractedKey::viewing(*last->value);
    }
    case config::KeySource::kJson: return json_key(event.value);
  }
  throw std::logic_error("unknown key source");
}

ExtractionResult KeyExtractor::json_key(std::string_view value) {
  if (value.empty()) return Rejection{RejectionReason::kMalformedJson, "the value is empty, which is not JSON"};

  std::vector<char>& buffer = json_->padded_value;
  if (buffer.size() < value.size() + simdjson::SIMDJSON_PADDING) buffer.resize(value.size() + simdjson::SIMDJSON_PADDING);
  std::memcpy(buffer.data(), value.data(), value.size());

  simdjson::dom::element document;
  if (const auto error = json_->parser.parse(buffer.data(), value.size(), false).get(document)) {
    return Rejection{RejectionReason::kMalformedJson,
                     std::string("the value is not valid JSON: ") + simdjson::error_message(error)};
  }
  simdjson::dom::element field;
  if (const auto error = document.at_pointer(settings_.pointer).get(field)) {
    return Rejection{RejectionReason::kMissingField, missing_field_message(settings_.pointer, error)};
  }
  switch (field.type()) {
    case simdjson::dom::element_type::STRING: {
      // The unescaped bytes live in the parser until the next extract(): a view, not a copy per event.
      std::string_view text;
      if (const auto error = field.get_string().get(text)) {  // cannot fail for a STRING element
        return Rejection{RejectionReason::kMalformedJson, simdjson::error_message(error)};
      }
      return ExtractedKey::viewing(text);
    }
    case simdjson::dom::element_type::INT64:
    case simdjson::dom::element_type::UINT64:
    case simdjson::dom::element_type::DOUBLE:
    case simdjson::dom::element_type::BOOL: return ExtractedKey::owning(simdjson::to_string(field));
    case simdjson::dom::element_type::NULL_VALUE:
      return Rejection{RejectionReason::kMissingField, "the field at JSON pointer " + settings_.pointer + " is null"};
    case simdjson::dom::element_type::ARRAY:
    case simdjson::dom::element_type::OBJECT:
      return Rejection{RejectionReason::kNotAScalar, "JSON pointer " + settings_.pointer +
                                                         " names an object or an array; a key must be a "
                                                         "string, number or boolean"};
  }
  throw std::logic_error("unknown JSON element type");
}

std::optional<Rejection> KeyExtractor::key_size_violation(std::size_t key_size) const {
  if (key_size == 0 && settings_.empty_is_error) {
    return Rejection{RejectionReason::kEmptyKey, "the key is empty, and empty keys are configured as errors"};
  }
  if (key_size > max_key_bytes_) {
    return Rejection{RejectionReason::kKeyTooLarge, too_large_message("key", key_size, max_key_bytes_)};
  }
  return std::nullopt;
}

}  // namespace bloomgate::app
