// libFuzzer target: KeyExtractor over any settings the config loader could produce (1 to 4 parts of every
// kind, with or without trim and lowercase, any limits) and any event (any bytes as record key, headers
// and value). The Schema Registry sources read with a fixed catalog: schema 1 is Avro, 2 Protobuf, 3
// unknown, any other id pending; so a framed value (0x00, then the id) reaches the avro-c and Protobuf
// readers with fuzzed payloads. Besides "no crash, no sanitizer report", it checks what every key must satisfy: within
// max_key_bytes, and for several parts an encoding that splits back into exactly that many parts, each
// normalised as asked.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bloomgate/app/key_extractor.h"
#include "bloomgate/app/schema_catalog.h"
#include "compiled_schema.h"

namespace {

using bloomgate::app::EventHeader;
using bloomgate::app::EventView;
using bloomgate::app::ExtractionResult;
using bloomgate::app::KeyExtractor;
using bloomgate::config::KeyPart;
using bloomgate::config::KeySettings;
using bloomgate::config::KeySource;

constexpr const char* kPointers[] = {"", "/a", "/b", "/a/0", "/a/b", "/~0", "/~1", "/0", "/a/-", "/id", "/n", "/u", "/arr",
                                     "/sub/x", "/e", "/f", "/d"};

const char* const kAvroSchema = R"({"type": "record", "name": "R", "fields": [
  {"name": "id", "type": "string"}, {"name": "n", "type": "long"}, {"name": "u", "type": ["null", "string"]},
  {"name": "arr", "type": {"type": "array", "items": "int"}}, {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
  {"name": "f", "type": {"type": "fixed", "name": "F", "size": 3}}, {"name": "d", "type": "double"},
  {"name": "sub", "type": {"type": "record", "name": "S", "fields": [{"name": "x", "type": ["null", "int"]}]}}]})";

const char* const kProtobufSchema = R"(syntax = "proto3";
message R { string id = 1; sint64 n = 2; optional string u = 3; repeated int32 arr = 4; enum E { A = 0; B = 1; }
  E e = 5; fixed32 f = 6; double d = 7; message S { optional int32 x = 1; } S sub = 8; }
message Second { R r = 1; }
)";

class FixedCatalog final : public bloomgate::app::SchemaCatalog {
 public:
  FixedCatalog()
      : avro_(bloomgate::app::CompiledSchema::compile(bloomgate::config::SchemaType::kAvro, kAvroSchema)),
        protobuf_(bloomgate::app::CompiledSchema::compile(bloomgate::config::SchemaType::kProtobuf, kProtobufSchema)) {}
  bloomgate::app::SchemaLookup lookup(std::uint32_t id) override {
    using bloomgate::app::SchemaStatus;
    if (id == 1) return {SchemaStatus::kReady, avro_, {}};
    if (id == 2) return {SchemaStatus::kReady, protobuf_, {}};
    if (id == 3) return {SchemaStatus::kUnknown, nullptr, "unknown"};
    return {};
  }
  bool registry_reachable() const override { return true; }
  std::uint64_t failed_requests() const override { return 0; }

 private:
  std::shared_ptr<const bloomgate::app::CompiledSchema> avro_;
  std::shared_ptr<const bloomgate::app::CompiledSchema> protobuf_;
};
constexpr const char* kHeaderNames[] = {"h", "region", "a", "H"};

void require(bool condition) {
  if (!condition) std::abort();
}

KeyPart fuzzed_part(FuzzedDataProvider& data) {
  KeyPart part;
  part.from = static_cast<KeySource>(data.ConsumeIntegralInRange<int>(0, 6));
  if (data.ConsumeBool()) {
    part.pointer = data.PickValueInArray(kPointers);
  } else {
    part.pointer = data.ConsumeRandomLengthString(16);  // may be no pointer at all: the constructor refuses it
  }
  part.header = data.PickValueInArray(kHeaderNames);
  part.trim = data.ConsumeBool();
  part.lowercase = data.ConsumeBool();
  return part;
}

bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// The encoding of several parts splits back into `parts.size()` parts, each normalised as configured.
void check_encoding(std::string_view key, const std::vector<KeyPart>& parts) {
  for (const KeyPart& part : parts) {
    require(key.size() >= 4);
    const std::uint32_t length = static_cast<std::uint32_t>(static_cast<unsigned char>(key[0])) |
                                 static_cast<std::uint32_t>(static_cast<unsigned char>(key[1])) << 8U |
                                 static_cast<std::uint32_t>(static_cast<unsigned char>(key[2])) << 16U |
                                 static_cast<std::uint32_t>(static_cast<unsigned char>(key[3])) << 24U;
    key.remove_prefix(4);
    require(key.size() >= length);
    const std::string_view bytes = key.substr(0, length);
    if (part.trim && !bytes.empty()) require(!is_space(bytes.front()) && !is_space(bytes.back()));
    if (part.lowercase) for (char c : bytes) require(c < 'A' || c > 'Z');
    key.remove_prefix(length);
  }
  require(key.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  FuzzedDataProvider data(bytes, size);
  KeySettings settings;
  const int part_count = data.ConsumeIntegralInRange<int>(1, 4);
  settings.parts.clear();
  for (int i = 0; i < part_count; ++i) settings.parts.push_back(fuzzed_part(data));
  settings.empty_is_error = data.ConsumeBool();
  const std::uint64_t max_key_bytes = data.ConsumeIntegralInRange<std::uint64_t>(0, 256);
  const std::uint64_t max_value_bytes = data.ConsumeIntegralInRange<std::uint64_t>(0, 1 << 16);

  std::optional<KeyExtractor> extractor;
  try {
    static const auto catalog = std::make_shared<FixedCatalog>();
    extractor.emplace(settings, max_key_bytes, max_value_bytes, catalog);
  } catch (const std::invalid_argument&) {
    return 0;  // settings the config loader refuses too
  }

  std::vector<std::string> header_values;
  std::vector<bool> header_null;
  std::vector<std::string> header_names;
  const int header_count = data.ConsumeIntegralInRange<int>(0, 4);
  for (int i = 0; i < header_count; ++i) {
    header_names.emplace_back(data.PickValueInArray(kHeaderNames));
    header_null.push_back(data.ConsumeBool());
    header_values.push_back(data.ConsumeRandomLengthString(64));
  }
  std::vector<EventHeader> headers;
  for (std::size_t i = 0; i < header_values.size(); ++i) {
    headers.push_back({header_names[i], header_null[i] ? std::nullopt : std::optional<std::string_view>(header_values[i])});
  }
  const bool null_key = data.ConsumeBool();
  const std::string record_key = data.ConsumeRandomLengthString(64);
  const std::string value = data.ConsumeRemainingBytesAsString();
  const EventView event{null_key ? std::nullopt : std::optional<std::string_view>(record_key), value, headers};

  const std::vector<KeyPart>& parts = settings.parts;
  for (int round = 0; round < 2; ++round) {  // twice: the second reuses the parser and buffers
    const ExtractionResult result = extractor->extract(event);
    if (result.is_pending()) {
      const std::uint32_t id = result.pending_schema();
      require(id != 1 && id != 2 && id != 3);  // the fixed catalog answers for these
      continue;
    }
    if (!result.has_key()) {
      require(!result.rejection().message.empty());
      continue;
    }
    const std::string_view key = result.key().bytes();
    require(key.size() <= max_key_bytes);
    require(!key.empty() || !settings.empty_is_error);
    if (parts.size() > 1) check_encoding(key, parts);
  }
  return 0;
}
