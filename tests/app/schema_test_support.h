// Shared by the schema key tests: a SchemaCatalog whose answers the test sets, Avro records written by
// avro-c, Protobuf messages written by libprotobuf (DynamicMessage over the descriptors of the schema's
// own text), and the Schema Registry's framing.
#pragma once

#include <avro.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "bloomgate/app/schema_catalog.h"
#include "compiled_schema.h"

namespace bloomgate::app::test_support {

// Answers from a map the test fills; an id not in it is pending.
class FakeSchemaCatalog final : public SchemaCatalog {
 public:
  void add(std::uint32_t id, config::SchemaType type, const std::string& text) {
    std::lock_guard lock(mutex_);
    answers_[id] = {SchemaStatus::kReady, CompiledSchema::compile(type, text), {}};
  }
  void unknown(std::uint32_t id) {
    std::lock_guard lock(mutex_);
    answers_[id] = {SchemaStatus::kUnknown, nullptr, "schema " + std::to_string(id) + " is not registered"};
  }
  std::shared_ptr<const CompiledSchema> schema(std::uint32_t id) {
    std::lock_guard lock(mutex_);
    return answers_.at(id).schema;
  }

  SchemaLookup lookup(std::uint32_t id) override {
    std::lock_guard lock(mutex_);
    const auto it = answers_.find(id);
    return it == answers_.end() ? SchemaLookup{} : it->second;
  }
  bool registry_reachable() const override { return true; }
  std::uint64_t failed_requests() const override { return 0; }

 private:
  std::mutex mutex_;
  std::map<std::uint32_t, SchemaLookup> answers_;
};

// Magic byte 0, the id big-endian, then the payload.
inline std::string framed(std::uint32_t id, const std::string& payload) {
  std::string out(1, '\0');
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((id >> static_cast<unsigned>(shift)) & 0xFFU));
  return out + payload;
}

// One Avro datum of `schema_json`, its fields set by `fill` through avro-c's value API.
inline std::string avro_datum(const std::string& schema_json, const std::function<void(avro_value_t&)>& fill) {
  avro_schema_t schema = nullptr;
  if (avro_schema_from_json_length(schema_json.data(), schema_json.size(), &schema) != 0) {
    throw std::runtime_error(std::string("avro schema: ") + avro_strerror());
  }
  avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
  avro_value_t record;
  avro_generic_value_new(iface, &record);
  fill(record);
  std::string buffer(1 << 16, '\0');
  avro_writer_t writer = avro_writer_memory(buffer.data(), static_cast<int64_t>(buffer.size()));
  if (avro_value_write(writer, &record) != 0) throw std::runtime_error(std::string("avro write: ") + avro_strerror());
  buffer.resize(static_cast<std::size_t>(avro_writer_tell(writer)));
  avro_writer_free(writer);
  avro_value_decref(&record);
  avro_value_iface_decref(iface);
  avro_schema_decref(schema);
  return buffer;
}

inline avro_value_t avro_field(avro_value_t& record, const char* name) {
  avro_value_t field;
  if (avro_value_get_by_name(&record, name, &field, nullptr) != 0) throw std::runtime_error(std::string("no avro field ") + name);
  return field;
}

// A message of the schema's type `message_name`, its fields set by `fill` through reflection, serialized
// by libprotobuf.
inline std::string protobuf_message(const CompiledSchema& schema, const std::string& message_name,
                                    const std::function<void(google::protobuf::Message&)>& fill) {
  const google::protobuf::Descriptor* type = schema.protobuf()->pool()->FindMessageTypeByName(message_name);
  if (type == nullptr) throw std::runtime_error("no protobuf message " + message_name);
  google::protobuf::DynamicMessageFactory factory;
  std::unique_ptr<google::protobuf::Message> message(factory.GetPrototype(type)->New());
  fill(*message);
  return message->SerializeAsString();
}

}  // namespace bloomgate::app::test_support
