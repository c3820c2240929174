// File: schema_record_writer.h
//
// Flat JSON objects as Schema Registry framed records, for `bloomgate demo --format` and the service bench:
// each field of the schema's (first) record or message taken from the JSON member of the same name, the
// record written by avro-c or libprotobuf, then framed with the schema id (and, for Protobuf, the message
// indexes [0]). Fields may be strings, integers (long / int64), doubles and booleans.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "bloomgate/config/config.h"

namespace bloomgate::app {

class SchemaRecordWriter {
 public:
  // Throws SchemaError (compiled_schema.h) when the schema does not compile.
  SchemaRecordWriter(config::SchemaType type, const std::string& schema_text, std::uint32_t schema_id);
  ~SchemaRecordWriter();
  SchemaRecordWriter(const SchemaRecordWriter&) = delete;
  SchemaRecordWriter& operator=(const SchemaRecordWriter&) = delete;

  // The framed record of `json_object`. Throws std::invalid_argument when a field is missing or of another type.
  std::string framed(const std::string& json_object);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The Protobuf message of a framed record (message indexes [0]) parsed by libprotobuf into a DynamicMessage
// and one string field read by reflection: service_bench's comparison for the wire reader
// (docs/decisions/avro-field-reader.md).
class ReflectionFieldReader {
 public:
  ReflectionFieldReader(const std::string& schema_text, const std::string& field);
  ~ReflectionFieldReader();
  ReflectionFieldReader(const ReflectionFieldReader&) = delete;
  ReflectionFieldReader& operator=(const ReflectionFieldReader&) = delete;

  // The field, or "" when the record does not parse.
  const std::string& read(const std::string& framed_record);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A string field of a framed Avro record decoded as avro-c decodes: the whole datum read into a generic
// value (reused), the field got by name. The comparison for the Avro key reader
// (docs/decisions/avro-field-reader.md).
class AvroGenericFieldReader {
 public:
  AvroGenericFieldReader(const std::string& schema_text, const std::string& field);
  ~AvroGenericFieldReader();
  AvroGenericFieldReader(const AvroGenericFieldReader&) = delete;
  AvroGenericFieldReader& operator=(const AvroGenericFieldReader&) = delete;

  // The field, or "" when the record does not decode.
  std::string_view read(const std::string& framed_record);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace bloomgate::app
