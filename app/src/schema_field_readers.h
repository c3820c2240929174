// File: schema_field_readers.h
//
// One key part's field read from a schema-encoded payload (after schema_frame.h's frame), as canonical key
// bytes (schema_frame.h says which). Each reader belongs to one KeyExtractor, so to one partition worker:
// not thread-safe; the CompiledSchema it reads with is shared and read-only.
//
// Avro: the writer's schema, as avro-c parsed it, is walked over the datum: every field read or skipped by
// its type, so the whole datum is checked, and the pointer's names followed through nested records and
// ["null", T] unions (the null branch is missing_field); nothing is allocated per record
// (docs/decisions/avro-field-reader.md says why not avro-c's generic decoder). A field
// that is an array or map (or a record) is not_a_scalar. Bytes that do not decode, or that remain after
// the datum, are malformed_avro.
//
// Protobuf: libprotobuf's descriptors turn the pointer's names into field numbers and wire types once per
// (schema, message); each record is then scanned on the wire for those numbers, without building a
// message (docs/decisions/avro-field-reader.md says why). The last occurrence of a
// field wins, as in a parsed message. A repeated or map field, or a message, is not_a_scalar; an absent field
// with presence (a message, `optional`, proto2) is missing_field, an absent proto3 scalar without presence
// keys as its default (0, "", false, the first enum symbol), as libprotobuf reads it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bloomgate/app/key_extractor.h"
#include "compiled_schema.h"
#include "schema_frame.h"

namespace bloomgate::app::schema {

class AvroFieldReader {
 public:
  AvroFieldReader(std::shared_ptr<const CompiledSchema> schema, const std::vector<std::string>& path);
  ~AvroFieldReader();
  AvroFieldReader(const AvroFieldReader&) = delete;
  AvroFieldReader& operator=(const AvroFieldReader&) = delete;

  // The field's canonical bytes replace `out`'s content.
  std::optional<Rejection> read(std::string_view payload, std::string& out);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

class ProtobufFieldReader {
 public:
  ProtobufFieldReader(std::shared_ptr<const CompiledSchema> schema, const std::vector<std::string>& path);
  ~ProtobufFieldReader();
  ProtobufFieldReader(const ProtobufFieldReader&) = delete;
  ProtobufFieldReader& operator=(const ProtobufFieldReader&) = delete;

  std::optional<Rejection> read(const Frame& frame, std::string& out);

 private:
  struct Path;
  const Path& path_for(const Frame& frame);

  std::shared_ptr<const CompiledSchema> schema_;
  std::vector<std::string> names_;
  std::unique_ptr<Path> last_;  // the path of the last message read: records of one topic mostly share it
};

}  // namespace bloomgate::app::schema
