// File: key_extractor.cc
//
// The rules are in key_extractor.h. simdjson is used through its DOM API because it validates the whole
// document; the On-Demand API only checks what it visits, which would make "is this value malformed"
// depend on where the keyed field happens to sit.
#include "bloomgate/app/key_extractor.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <vector>

#include "bloomgate/app/schema_catalog.h"
#include "json_big_numbers.h"
#include "schema_field_readers.h"

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

bool is_ascii_whitespace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

std::string_view trim_ascii(std::string_view bytes) {
  while (!bytes.empty() && is_ascii_whitespace(bytes.front())) bytes.remove_prefix(1);
  while (!bytes.empty() && is_ascii_whitespace(bytes.back())) bytes.remove_suffix(1);
  return bytes;
}

bool has_ascii_upper(std::string_view bytes) {
  return std::any_of(bytes.begin(), bytes.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

// A-Z to a-z in the last `count` bytes of `text`; every other byte is left as it is.
void lowercase_last(std::string& text, std::size_t count) {
  for (std::size_t i = text.size() - count; i < text.size(); ++i) {
    if (text[i] >= 'A' && text[i] <= 'Z') text[i] = static_cast<char>(text[i] - 'A' + 'a');
  }
}

// "key part 2 of 3 (json /event_id): " before what went wrong, so the dead letter says which part it was.
Rejection about_part(Rejection rejection, std::size_t index, std::size_t count, const config::KeyPart& part) {
  rejection.message = "key part " + std::to_string(index + 1) + " of " + std::to_string(count) + " (" +
                      config::describe(part) + "): " + rejection.message;
  return rejection;
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
    case RejectionReason::kRecordTooLarge: return "record_too_large";
    case RejectionReason::kUnknownSchema: return "unknown_schema";
    case RejectionReason::kMalformedAvro: return "malformed_avro";
    case RejectionReason::kMalformedProtobuf: return "malformed_protobuf";
    case RejectionReason::kNotSchemaFramed: return "not_schema_framed";
  }
  return "unknown";
}

// The parser keeps its tape and string buffers between documents, and `padded_value` is the value copied
// with the SIMDJSON_PADDING bytes that simdjson may read past the end; both grow to the largest value seen
// and are then reused, so a steady stream of events costs no allocation for parsing. `document` is the
// current event's value once a JSON part has parsed it, so several JSON parts of one event share one parse.
// A document with numbers the DOM parser cannot hold is parsed with those neutralized (json_big_numbers.h),
// `big_numbers` set, and `padded_value` then holds the original again for number_key().
struct KeyExtractor::JsonParser {
  simdjson::dom::parser parser;
  std::vector<char> padded_value;
  simdjson::dom::element document;
  bool parsed = false;  // reset by every extract()
  std::string_view parsed_value;  // what `document` was parsed from: the value, or a json_schema payload
  bool big_numbers = false;
  std::unique_ptr<detail::JsonBigNumbers> big_number_parsers;  // made by the first document that needs them

  simdjson::error_code parse(std::string_view value);
};

simdjson::error_code KeyExtractor::JsonParser::parse(std::string_view value) {
  if (padded_value.size() < value.size() + simdjson::SIMDJSON_PADDING) {
    padded_value.resize(value.size() + simdjson::SIMDJSON_PADDING);
  }
  std::memcpy(padded_value.data(), value.data(), value.size());
  big_numbers = false;
  simdjson::error_code error = parser.parse(padded_value.data(), value.size(), false).get(document);
  if (error != simdjson::NUMBER_ERROR) return error;
  if (!big_number_parsers) big_number_parsers = std::make_unique<detail::JsonBigNumbers>();
  if (!big_number_parsers->neutralize_big_numbers(padded_value.data(), value.size())) return error;
  error = parser.parse(padded_value.data(), value.size(), false).get(document);
  std::memcpy(padded_value.data(), value.data(), value.size());  // the DOM copied what it keeps
  big_numbers = error == simdjson::SUCCESS;
  return error;
}

// What the schema parts keep between records: the catalog's answers and a reader per (part, schema id),
// dropped all at once when they reach kMaxSchemas (the catalog bounds its own cache likewise).
struct KeyExtractor::SchemaParts {
  static constexpr std::size_t kMaxSchemas = 256;
  struct Part {
    std::vector<std::string> path;  // the pointer's names
    std::map<std::uint32_t, std::unique_ptr<schema::AvroFieldReader>> avro;
    std::map<std::uint32_t, std::unique_ptr<schema::ProtobufFieldReader>> protobuf;
  };

  std::shared_ptr<SchemaCatalog> catalog;
  std::vector<Part> parts;  // by part index; empty paths for the other sources
  std::map<std::uint32_t, SchemaLookup> known;  // kReady and kUnknown answers
  schema::Frame frame;

  // The catalog's answer for `id`; kPending is asked again next time.
  const SchemaLookup& lookup(std::uint32_t id);
  // The first avro or protobuf part whose schema is still pending, or nothing.
  std::optional<std::uint32_t> pending(const std::vector<config::KeyPart>& key_parts, const EventView& event);
  void forget_all_over_limit();
};

const SchemaLookup& KeyExtractor::SchemaParts::lookup(std::uint32_t id) {
  if (const auto it = known.find(id); it != known.end()) return it->second;
  static const SchemaLookup kPending{};
  SchemaLookup answer = catalog->lookup(id);
  if (answer.status == SchemaStatus::kPending) return kPending;
  forget_all_over_limit();
  return known.emplace(id, std::move(answer)).first->second;
}

void KeyExtractor::SchemaParts::forget_all_over_limit() {
  if (known.size() < kMaxSchemas) return;
  known.clear();
  for (Part& part : parts) {
    part.avro.clear();
    part.protobuf.clear();
  }
}

std::optional<std::uint32_t> KeyExtractor::SchemaParts::pending(const std::vector<config::KeyPart>& key_parts,
                                                                const EventView& event) {
  for (const config::KeyPart& part : key_parts) {
    if (!config::needs_schema(part.from)) continue;
    if (schema::read_frame(event.value, event.headers, part.from == config::KeySource::kProtobuf, frame)) continue;
    if (lookup(frame.id).status == SchemaStatus::kPending) return frame.id;
  }
  return std::nullopt;
}

KeyExtractor::KeyExtractor(const config::KeySettings& settings, std::uint64_t max_key_bytes,
                           std::uint64_t max_value_bytes, std::shared_ptr<SchemaCatalog> schemas)
    : parts_(settings.parts),
      empty_is_error_(settings.empty_is_error),
      max_key_bytes_(max_key_bytes),
      max_value_bytes_(max_value_bytes) {
  if (parts_.empty()) throw std::invalid_argument("a key has at least one part");
  if (parts_.size() > config::kMaxKeyParts) {
    throw std::invalid_argument("a key has at most " + std::to_string(config::kMaxKeyParts) + " parts");
  }
  if (parts_.size() > 1 && max_key_bytes_ > std::numeric_limits<std::uint32_t>::max()) {
    throw std::invalid_argument("max_key_bytes must be at most 4294967295 for a key of parts");
  }
  for (const config::KeyPart& part : parts_) {
    if (part.from == config::KeySource::kJson && !is_json_pointer(part.pointer)) {
      throw std::invalid_argument("\"" + part.pointer +
                                  "\" is not an RFC 6901 JSON pointer: it starts with / and escapes ~ as ~0, / as ~1");
    }
    const bool reads_json = part.from == config::KeySource::kJson || part.from == config::KeySource::kJsonSchema;
    if (reads_json && !json_) json_ = std::make_unique<JsonParser>();
    if (part.from == config::KeySource::kHeader && part.header.empty()) {
      throw std::invalid_argument("a key taken from a header needs the header's name");
    }
    if (config::needs_schema(part.from) && (part.pointer.empty() || part.pointer.front() != '/')) {
      // A field path names at least one field (found by fuzz/key_extractor_fuzzer: an empty one read no field).
      throw std::invalid_argument("\"" + part.pointer + "\" names no field: a field path starts with /, like /order/id");
    }
    if (config::needs_schema(part.from) && !schemas) {
      throw std::invalid_argument("a key part read with a schema (" + config::describe(part) + ") needs a schema catalog");
    }
  }
  if (schemas) {
    schema_parts_ = std::make_unique<SchemaParts>();
    schema_parts_->catalog = std::move(schemas);
    for (const config::KeyPart& part : parts_) {
      schema_parts_->parts.push_back({config::needs_schema(part.from) ? schema::pointer_tokens(part.pointer) : std::vector<std::string>{}, {}, {}});
    }
  }
}

KeyExtractor::KeyExtractor(KeyExtractor&&) noexcept = default;
KeyExtractor& KeyExtractor::operator=(KeyExtractor&&) noexcept = default;
KeyExtractor::~KeyExtractor() = default;

ExtractionResult KeyExtractor::extract(const EventView& event) {
  if (event.value.size() > max_value_bytes_) {
    return Rejection{RejectionReason::kValueTooLarge, too_large_message("value", event.value.size(), max_value_bytes_)};
  }
  if (json_) json_->parsed = false;
  if (schema_parts_) {
    if (const std::optional<std::uint32_t> id = schema_parts_->pending(parts_, event)) return SchemaPending{*id};
  }
  return parts_.size() == 1 ? single_part_key(event) : encoded_parts_key(event);
}

// The part's bytes as they are, or normalised: trimming narrows the view; lowercasing copies into
// key_buffer_ only when there is an upper-case letter to change.
ExtractionResult KeyExtractor::single_part_key(const EventView& event) {
  const config::KeyPart& part = parts_.front();
  std::string_view bytes;
  if (std::optional<Rejection> rejection = read_part(0, event, bytes)) return std::move(*rejection);
  if (part.trim) bytes = trim_ascii(bytes);
  if (part.lowercase && has_ascii_upper(bytes)) {
    key_buffer_.assign(bytes);
    lowercase_last(key_buffer_, bytes.size());
    bytes = key_buffer_;
  }
  if (std::optional<Rejection> violation = key_size_violation(bytes.size())) return std::move(*violation);
  return ExtractedKey::viewing(bytes);
}

// Each part is appended to key_buffer_ and normalised there, so a part is copied once, into the key.
ExtractionResult KeyExtractor::encoded_parts_key(const EventView& event) {
  key_buffer_.clear();
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    const config::KeyPart& part = parts_[i];
    std::string_view bytes;
    if (std::optional<Rejection> rejection = read_part(i, event, bytes)) {
      return about_part(std::move(*rejection), i, parts_.size(), part);
    }
    if (part.trim) bytes = trim_ascii(bytes);
    if (bytes.empty() && empty_is_error_) {
      return about_part(Rejection{RejectionReason::kEmptyKey, "the part is empty, and empty keys are configured as errors"},
                        i, parts_.size(), part);
    }
    const std::uint64_t size = key_buffer_.size() + config::kKeyPartPrefixBytes + bytes.size();
    if (size > max_key_bytes_) {
      return about_part(Rejection{RejectionReason::kKeyTooLarge,
                                  "with this part the key is at least " + std::to_string(size) +
                                      " bytes (length prefixes included), over the limit of " + std::to_string(max_key_bytes_)},
                        i, parts_.size(), part);
    }
    append_key_part(key_buffer_, bytes);
    if (part.lowercase) lowercase_last(key_buffer_, bytes.size());
  }
  return ExtractedKey::viewing(key_buffer_);
}

std::optional<Rejection> KeyExtractor::read_part(std::size_t index, const EventView& event, std::string_view& bytes) {
  const config::KeyPart& part = parts_[index];
  switch (part.from) {
    case config::KeySource::kMessageKey:
      if (!event.key) return Rejection{RejectionReason::kMissingMessageKey, "the record's key is null"};
      bytes = *event.key;
      return std::nullopt;
    case config::KeySource::kValue: bytes = event.value; return std::nullopt;
    case config::KeySource::kHeader: {
      // Kafka allows a name to repeat; the last one wins, as in librdkafka's rd_kafka_header_get_last().
      const auto last = std::find_if(event.headers.rbegin(), event.headers.rend(),
                                     [&](const EventHeader& h) { return h.name == part.header; });
      if (last == event.headers.rend()) {
        return Rejection{RejectionReason::kMissingHeader, "no header named \"" + part.header + "\""};
      }
      if (!last->value) return Rejection{RejectionReason::kMissingHeader, "the header \"" + part.header + "\" is null"};
      bytes = *last->value;
      return std::nullopt;
    }
    case config::KeySource::kJson: return read_json_field(part, event.value, bytes);
    case config::KeySource::kJsonSchema: {
      schema::Frame frame;
      if (std::optional<Rejection> unframed = schema::read_frame(event.value, event.headers, false, frame)) return unframed;
      return read_json_field(part, frame.payload, bytes);
    }
    case config::KeySource::kAvro:
    case config::KeySource::kProtobuf: return read_schema_field(index, event, bytes);
  }
  throw std::logic_error("unknown key source");
}

std::optional<Rejection> KeyExtractor::read_json_field(const config::KeyPart& part, std::string_view value,
                                                       std::string_view& bytes) {
  if (value.empty()) return Rejection{RejectionReason::kMalformedJson, "the value is empty, which is not JSON"};
  if (!json_->parsed || json_->parsed_value.data() != value.data() || json_->parsed_value.size() != value.size()) {
    json_->parsed_value = value;
    if (const auto error = json_->parse(value)) {
      return Rejection{RejectionReason::kMalformedJson,
                       std::string("the value is not valid JSON: ") + simdjson::error_message(error)};
    }
    json_->parsed = true;
  }
  simdjson::dom::element field;
  if (const auto error = json_->document.at_pointer(part.pointer).get(field)) {
    return Rejection{RejectionReason::kMissingField, missing_field_message(part.pointer, error)};
  }
  switch (field.type()) {
    case simdjson::dom::element_type::STRING:
      // The unescaped bytes live in the parser until the next extract(): a view, not a copy per event.
      if (const auto error = field.get_string().get(bytes)) {  // cannot fail for a STRING element
        return Rejection{RejectionReason::kMalformedJson, simdjson::error_message(error)};
      }
      return std::nullopt;
    case simdjson::dom::element_type::INT64:
    case simdjson::dom::element_type::UINT64:
    case simdjson::dom::element_type::DOUBLE:
      // With big numbers neutralized, this one may be one of them: its text comes from the original.
      if (json_->big_numbers) {
        if (!json_->big_number_parsers->number_key(json_->padded_value.data(), value.size(), part.pointer, rendered_)) {
          return Rejection{RejectionReason::kMalformedJson, "the number at JSON pointer " + part.pointer + " cannot be read"};
        }
        bytes = rendered_;
        return std::nullopt;
      }
      [[fallthrough]];
    case simdjson::dom::element_type::BOOL:
      rendered_ = simdjson::to_string(field);
      bytes = rendered_;
      return std::nullopt;
    case simdjson::dom::element_type::NULL_VALUE:
      return Rejection{RejectionReason::kMissingField, "the field at JSON pointer " + part.pointer + " is null"};
    case simdjson::dom::element_type::ARRAY:
    case simdjson::dom::element_type::OBJECT:
      return Rejection{RejectionReason::kNotAScalar, "JSON pointer " + part.pointer +
                                                         " names an object or an array; a key must be a "
                                                         "string, number or boolean"};
  }
  throw std::logic_error("unknown JSON element type");
}

namespace {

std::optional<Rejection> schema_problem(const SchemaLookup& lookup, config::SchemaType wanted, std::uint32_t id) {
  if (lookup.status == SchemaStatus::kUnknown) return Rejection{RejectionReason::kUnknownSchema, lookup.problem};
  if (lookup.schema->type() != wanted) {
    return Rejection{RejectionReason::kUnknownSchema,
                     "schema " + std::to_string(id) + " is not an " +
                         std::string(wanted == config::SchemaType::kAvro ? "Avro" : "Protobuf") + " schema"};
  }
  return std::nullopt;
}

// The reader of `id` in `readers`, made on first use.
template <class Reader>
Reader& reader_for(std::map<std::uint32_t, std::unique_ptr<Reader>>& readers, std::uint32_t id,
                   const SchemaLookup& lookup, const std::vector<std::string>& path) {
  std::unique_ptr<Reader>& reader = readers[id];
  if (!reader) reader = std::make_unique<Reader>(lookup.schema, path);
  return *reader;
}

}  // namespace

// The frame, its schema (known: pending ones were waited for in extract()), and the field.
std::optional<Rejection> KeyExtractor::read_schema_field(std::size_t index, const EventView& event, std::string_view& bytes) {
  SchemaParts& schemas = *schema_parts_;
  const bool protobuf = parts_[index].from == config::KeySource::kProtobuf;
  schema::Frame& frame = schemas.frame;
  if (std::optional<Rejection> unframed = schema::read_frame(event.value, event.headers, protobuf, frame)) return unframed;
  const SchemaLookup& lookup = schemas.lookup(frame.id);
  if (lookup.status == SchemaStatus::kPending) {  // only if the catalog dropped it since extract() asked
    return Rejection{RejectionReason::kUnknownSchema, "schema " + std::to_string(frame.id) + " is not available"};
  }
  const auto wanted = protobuf ? config::SchemaType::kProtobuf : config::SchemaType::kAvro;
  if (std::optional<Rejection> problem = schema_problem(lookup, wanted, frame.id)) return problem;
  SchemaParts::Part& part = schemas.parts[index];
  std::optional<Rejection> rejection;
  try {
    rejection = protobuf ? reader_for(part.protobuf, frame.id, lookup, part.path).read(frame, rendered_)
                         : reader_for(part.avro, frame.id, lookup, part.path).read(frame.payload, rendered_);
  } catch (const SchemaError& e) {
    return Rejection{RejectionReason::kUnknownSchema, e.what()};
  }
  if (rejection) return rejection;
  bytes = rendered_;
  return std::nullopt;
}

std::optional<Rejection> KeyExtractor::key_size_violation(std::size_t key_size) const {
  if (key_size == 0 && empty_is_error_) {
    return Rejection{RejectionReason::kEmptyKey, "the key is empty, and empty keys are configured as errors"};
  }
  if (key_size > max_key_bytes_) {
    return Rejection{RejectionReason::kKeyTooLarge, too_large_message("key", key_size, max_key_bytes_)};
  }
  return std::nullopt;
}

void append_key_part(std::string& key, std::string_view part) {
  std::uint32_t length = static_cast<std::uint32_t>(part.size());
  for (std::size_t i = 0; i < config::kKeyPartPrefixBytes; ++i, length >>= 8U) key.push_back(static_cast<char>(length & 0xFFU));
  key.append(part);
}

bool key_reads_headers(const config::KeySettings& settings) {
  // A schema-framed value may carry its schema id in the __value_schema_id header.
  const auto from_header = [](const config::KeyPart& part) {
    return part.from == config::KeySource::kHeader || part.from == config::KeySource::kAvro ||
           part.from == config::KeySource::kProtobuf || part.from == config::KeySource::kJsonSchema;
  };
  return std::any_of(settings.parts.begin(), settings.parts.end(), from_header);
}

}  // namespace bloomgate::app
