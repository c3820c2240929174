#include "schema_record_writer.h"

#include <avro.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>
#include <simdjson.h>

#include <stdexcept>

#include "compiled_schema.h"

namespace bloomgate::app {
namespace {

using google::protobuf::FieldDescriptor;

std::string frame(std::uint32_t id, const std::string& payload, bool protobuf) {
  std::string out(1, '\0');
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((id >> static_cast<unsigned>(shift)) & 0xFFU));
  if (protobuf) out.push_back('\0');  // message indexes [0]
  return out + payload;
}

[[noreturn]] void wrong_field(const std::string& name) {
  throw std::invalid_argument("the JSON object has no field " + name + " of the schema's type");
}

void set_avro_field(avro_value_t& field, const std::string& name, simdjson::dom::element value) {
  bool ok = false;
  switch (avro_value_get_type(&field)) {
    case AVRO_STRING: {
      std::string_view text;
      ok = !value.get(text);
      if (ok) avro_value_set_string_len(&field, std::string(text).c_str(), text.size() + 1);
      break;
    }
    case AVRO_INT64: {
      std::int64_t n = 0;
      ok = !value.get(n);
      if (ok) avro_value_set_long(&field, n);
      break;
    }
    case AVRO_DOUBLE: {
      double d = 0;
      ok = !value.get(d);
      if (ok) avro_value_set_double(&field, d);
      break;
    }
    case AVRO_BOOLEAN: {
      bool b = false;
      ok = !value.get(b);
      if (ok) avro_value_set_boolean(&field, b ? 1 : 0);
      break;
    }
    default: break;
  }
  if (!ok) wrong_field(name);
}

void set_protobuf_field(google::protobuf::Message& message, const FieldDescriptor& field, simdjson::dom::element value) {
  const auto* reflection = message.GetReflection();
  bool ok = false;
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string_view text;
      ok = !value.get(text);
      if (ok) reflection->SetString(&message, &field, std::string(text));
      break;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      std::int64_t n = 0;
      ok = !value.get(n);
      if (ok) reflection->SetInt64(&message, &field, n);
      break;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      double d = 0;
      ok = !value.get(d);
      if (ok) reflection->SetDouble(&message, &field, d);
      break;
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      bool b = false;
      ok = !value.get(b);
      if (ok) reflection->SetBool(&message, &field, b);
      break;
    }
    default: break;
  }
  if (!ok) wrong_field(field.name());
}

}  // namespace

struct SchemaRecordWriter::State {
  config::SchemaType type;
  std::uint32_t id;
  std::shared_ptr<const CompiledSchema> schema;
  simdjson::dom::parser parser;
  avro_value_iface_t* iface = nullptr;
  avro_value_t record{};
  std::string buffer;
  google::protobuf::DynamicMessageFactory factory;
  std::unique_ptr<google::protobuf::Message> message;

  std::string avro(simdjson::dom::object object) {
    avro_value_reset(&record);
    std::size_t count = 0;
    avro_value_get_size(&record, &count);
    for (std::size_t i = 0; i < count; ++i) {
      avro_value_t field;
      const char* name = nullptr;
      avro_value_get_by_index(&record, i, &field, &name);
      simdjson::dom::element value;
      if (object[name].get(value)) wrong_field(name);
      set_avro_field(field, name, value);
    }
    buffer.resize(1 << 20);
    avro_writer_t writer = avro_writer_memory(buffer.data(), static_cast<int64_t>(buffer.size()));
    const int failed = avro_value_write(writer, &record);
    buffer.resize(static_cast<std::size_t>(avro_writer_tell(writer)));
    avro_writer_free(writer);
    if (failed != 0) throw std::invalid_argument(std::string("avro-c cannot write the record: ") + avro_strerror());
    return frame(id, buffer, false);
  }

  std::string protobuf(simdjson::dom::object object) {
    message->Clear();
    const auto* descriptor = message->GetDescriptor();
    for (int i = 0; i < descriptor->field_count(); ++i) {
      const FieldDescriptor& field = *descriptor->field(i);
      simdjson::dom::element value;
      if (object[field.name()].get(value)) wrong_field(field.name());
      set_protobuf_field(*message, field, value);
    }
    return frame(id, message->SerializeAsString(), true);
  }
};

SchemaRecordWriter::SchemaRecordWriter(config::SchemaType type, const std::string& schema_text, std::uint32_t schema_id)
    : state_(std::make_unique<State>()) {
  state_->type = type;
  state_->id = schema_id;
  state_->schema = CompiledSchema::compile(type, schema_text);
  if (type == config::SchemaType::kAvro) {
    state_->iface = avro_generic_class_from_schema(state_->schema->avro());
    avro_generic_value_new(state_->iface, &state_->record);
  } else {
    state_->message.reset(state_->factory.GetPrototype(state_->schema->protobuf()->message_type(0))->New());
  }
}

SchemaRecordWriter::~SchemaRecordWriter() {
  if (state_->iface != nullptr) {
    avro_value_decref(&state_->record);
    avro_value_iface_decref(state_->iface);
  }
}

std::string SchemaRecordWriter::framed(const std::string& json_object) {
  simdjson::dom::object object;
  if (state_->parser.parse(json_object).get(object)) throw std::invalid_argument("not a JSON object: " + json_object);
  return state_->type == config::SchemaType::kAvro ? state_->avro(object) : state_->protobuf(object);
}

struct ReflectionFieldReader::State {
  std::shared_ptr<const CompiledSchema> schema;
  google::protobuf::DynamicMessageFactory factory;
  std::unique_ptr<google::protobuf::Message> message;
  const FieldDescriptor* field = nullptr;
  std::string scratch;
  std::string empty;
};

ReflectionFieldReader::ReflectionFieldReader(const std::string& schema_text, const std::string& field)
    : state_(std::make_unique<State>()) {
  state_->schema = CompiledSchema::compile(config::SchemaType::kProtobuf, schema_text);
  const auto* message = state_->schema->protobuf()->message_type(0);
  state_->message.reset(state_->factory.GetPrototype(message)->New());
  state_->field = message->FindFieldByName(field);
  if (state_->field == nullptr) throw std::invalid_argument("no field " + field);
}

ReflectionFieldReader::~ReflectionFieldReader() = default;

const std::string& ReflectionFieldReader::read(const std::string& framed_record) {
  constexpr std::size_t kFrameBytes = 6;  // magic, id, message indexes [0]
  if (framed_record.size() < kFrameBytes ||
      !state_->message->ParseFromArray(framed_record.data() + kFrameBytes, static_cast<int>(framed_record.size() - kFrameBytes))) {
    return state_->empty;
  }
  return state_->message->GetReflection()->GetStringReference(*state_->message, state_->field, &state_->scratch);
}

struct AvroGenericFieldReader::State {
  std::shared_ptr<const CompiledSchema> schema;
  std::string field;
  avro_value_iface_t* iface = nullptr;
  avro_value_t datum{};
  avro_reader_t reader = nullptr;
};

AvroGenericFieldReader::AvroGenericFieldReader(const std::string& schema_text, const std::string& field)
    : state_(std::make_unique<State>()) {
  state_->schema = CompiledSchema::compile(config::SchemaType::kAvro, schema_text);
  state_->field = field;
  state_->iface = avro_generic_class_from_schema(state_->schema->avro());
  avro_generic_value_new(state_->iface, &state_->datum);
  state_->reader = avro_reader_memory(nullptr, 0);
}

AvroGenericFieldReader::~AvroGenericFieldReader() {
  avro_reader_free(state_->reader);
  avro_value_decref(&state_->datum);
  avro_value_iface_decref(state_->iface);
}

std::string_view AvroGenericFieldReader::read(const std::string& framed_record) {
  constexpr std::size_t kFrameBytes = 5;  // magic, id
  if (framed_record.size() < kFrameBytes) return {};
  avro_reader_memory_set_source(state_->reader, framed_record.data() + kFrameBytes,
                                static_cast<int64_t>(framed_record.size() - kFrameBytes));
  avro_value_reset(&state_->datum);
  avro_value_t field;
  const char* text = nullptr;
  std::size_t size = 0;
  if (avro_value_read(state_->reader, &state_->datum) != 0 ||
      avro_value_get_by_name(&state_->datum, state_->field.c_str(), &field, nullptr) != 0 ||
      avro_value_get_string(&field, &text, &size) != 0 || size == 0) {
    return {};
  }
  return {text, size - 1};
}

}  // namespace bloomgate::app
