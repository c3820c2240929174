// File: bench/schema_records.h
//
// The service bench's events in the Schema Registry's wire format: each JSON value's fields (order_id,
// customer, amount, seq, pad) as an Avro record (written by avro-c) or a Protobuf message (written by
// libprotobuf), framed with schema id kBenchSchemaId, so a key read from them costs what the same key read
// from the JSON costs, on records with the same fields.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "bloomgate/config/config.h"

namespace bloomgate::bench {

inline constexpr std::uint32_t kBenchSchemaId = 1;

// The schema's text for `type` (kAvro or kProtobuf).
const std::string& bench_schema_text(config::SchemaType type);

// Converts JSON values of the bench's shape; one per type, reused (not thread-safe).
class SchemaRecordWriter {
 public:
  explicit SchemaRecordWriter(config::SchemaType type);
  ~SchemaRecordWriter();
  SchemaRecordWriter(const SchemaRecordWriter&) = delete;
  SchemaRecordWriter& operator=(const SchemaRecordWriter&) = delete;

  // The framed record of `json_value`. Throws std::invalid_argument when a field is missing.
  std::string framed(const std::string& json_value);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The Protobuf key read as libprotobuf would: the whole message parsed into a DynamicMessage and the field
// read by reflection, for the comparison with the wire reader (docs/decisions/protobuf-field-reader.md).
class ReflectionKeyReader {
 public:
  ReflectionKeyReader();
  ~ReflectionKeyReader();
  ReflectionKeyReader(const ReflectionKeyReader&) = delete;
  ReflectionKeyReader& operator=(const ReflectionKeyReader&) = delete;

  // The order_id of a framed bench record (schema kBenchSchemaId, message index [0]), or "" when it does not
  // parse.
  const std::string& order_id(const std::string& framed_record);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace bloomgate::bench
