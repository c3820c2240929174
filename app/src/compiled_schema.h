// File: compiled_schema.h
//
// A schema as the key readers use it, compiled once from the registry's (or a file's) text and shared,
// read-only, by every partition worker: Avro through avro-c (the writer's schema, which decodes the
// record), Protobuf through libprotobuf's descriptors (the .proto text parsed by libprotoc, its
// references built first), JSON Schema kept as text (a JSON value carries its own field names).
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bloomgate/config/config.h"

struct avro_obj_t;

namespace google::protobuf {
class DescriptorPool;
class FileDescriptor;
}  // namespace google::protobuf

namespace bloomgate::app {

// Text that does not compile as a schema of its type, with the library's message.
class SchemaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A schema a Protobuf schema imports: the name it imports it by ("common/money.proto") and its text.
struct SchemaReference {
  std::string name;
  std::string text;
};

class CompiledSchema {
 public:
  // Throws SchemaError. `references` come in dependency order (a reference before whatever imports it).
  static std::shared_ptr<const CompiledSchema> compile(config::SchemaType type, const std::string& text,
                                                       const std::vector<SchemaReference>& references = {});
  ~CompiledSchema();
  CompiledSchema(const CompiledSchema&) = delete;
  CompiledSchema& operator=(const CompiledSchema&) = delete;

  config::SchemaType type() const noexcept { return type_; }
  avro_obj_t* avro() const noexcept { return avro_; }                                // kAvro
  const google::protobuf::FileDescriptor* protobuf() const noexcept { return file_; }  // kProtobuf

 private:
  explicit CompiledSchema(config::SchemaType type);

  config::SchemaType type_;
  avro_obj_t* avro_ = nullptr;
  std::unique_ptr<google::protobuf::DescriptorPool> pool_;
  const google::protobuf::FileDescriptor* file_ = nullptr;
};

// "AVRO", "PROTOBUF", "JSON" (the registry's schemaType, AVRO when absent) as a type; nothing for others.
std::optional<config::SchemaType> schema_type_named(std::string_view registry_name);

}  // namespace bloomgate::app
