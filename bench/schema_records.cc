#include "schema_records.h"

#include <avro.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>
#include <simdjson.h>

#include <stdexcept>

#include "compiled_schema.h"

namespace bloomgate::bench {
namespace {

const std::string kAvroSchema = R"({"type": "record", "name": "Order", "fields": [
  {"name": "order_id", "type": "string"}, {"name": "customer", "type": "string"}, {"name": "amount", "type": "double"},
  {"name": "seq", "type": "long"}, {"name": "pad", "type": "string"}]})";

const std::string kProtobufSchema = R"(syntax = "proto3";
message Order { string order_id = 1; string customer = 2; double amount = 3; int64 seq = 4; string pad = 5; })";

std::string frame(const std::string& payload, bool protobuf) {
  std::string out(1, '\0');
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((kBenchSchemaId >> static_cast<unsigned>(shift)) & 0xFFU));
  if (protobuf) out.push_back('\0');  // message indexes [0]
  return out + payload;
}

struct Fields {
  std::string_view order_id;
  std::string_view customer;
  double amount = 0;
  std::int64_t seq = 0;
  std::string_view pad;
};

}  // namespace

const std::string& bench_schema_text(config::SchemaType type) {
  return type == config::SchemaType::kAvro ? kAvroSchema : kProtobufSchema;
}

struct SchemaRecordWriter::State {
  config::SchemaType type;
  std::shared_ptr<const app::CompiledSchema> schema;
  simdjson::dom::parser parser;
  avro_value_iface_t* iface = nullptr;
  avro_value_t record{};
  std::string buffer;
  google::protobuf::DynamicMessageFactory factory;
  std::unique_ptr<google::protobuf::Message> message;

  Fields read(const std::string& json) {
    simdjson::dom::element doc = parser.parse(json);
    Fields f;
    if (doc["order_id"].get(f.order_id) || doc["customer"].get(f.customer) || doc["amount"].get(f.amount) ||
        doc["seq"].get(f.seq) || doc["pad"].get(f.pad)) {
      throw std::invalid_argument("a bench value without the bench's fields");
    }
    return f;
  }

  std::string avro(const Fields& f) {
    avro_value_reset(&record);
    avro_value_t field;
    const auto set_string = [&](const char* name, std::string_view text) {
      avro_value_get_by_name(&record, name, &field, nullptr);
      avro_value_set_string_len(&field, std::string(text).c_str(), text.size() + 1);
    };
    set_string("order_id", f.order_id);
    set_string("customer", f.customer);
    avro_value_get_by_name(&record, "amount", &field, nullptr);
    avro_value_set_double(&field, f.amount);
    avro_value_get_by_name(&record, "seq", &field, nullptr);
    avro_value_set_long(&field, f.seq);
    set_string("pad", f.pad);
    buffer.resize(1 << 20);
    avro_writer_t writer = avro_writer_memory(buffer.data(), static_cast<int64_t>(buffer.size()));
    avro_value_write(writer, &record);
    buffer.resize(static_cast<std::size_t>(avro_writer_tell(writer)));
    avro_writer_free(writer);
    return frame(buffer, false);
  }

  std::string protobuf(const Fields& f) {
    const auto* d = message->GetDescriptor();
    const auto* r = message->GetReflection();
    r->SetString(message.get(), d->FindFieldByName("order_id"), std::string(f.order_id));
    r->SetString(message.get(), d->FindFieldByName("customer"), std::string(f.customer));
    r->SetDouble(message.get(), d->FindFieldByName("amount"), f.amount);
    r->SetInt64(message.get(), d->FindFieldByName("seq"), f.seq);
    r->SetString(message.get(), d->FindFieldByName("pad"), std::string(f.pad));
    return frame(message->SerializeAsString(), true);
  }
};

SchemaRecordWriter::SchemaRecordWriter(config::SchemaType type) : state_(std::make_unique<State>()) {
  state_->type = type;
  state_->schema = app::CompiledSchema::compile(type, bench_schema_text(type));
  if (type == config::SchemaType::kAvro) {
    state_->iface = avro_generic_class_from_schema(state_->schema->avro());
    avro_generic_value_new(state_->iface, &state_->record);
  } else {
    const auto* order = state_->schema->protobuf()->message_type(0);
    state_->message.reset(state_->factory.GetPrototype(order)->New());
  }
}

SchemaRecordWriter::~SchemaRecordWriter() {
  if (state_->iface != nullptr) {
    avro_value_decref(&state_->record);
    avro_value_iface_decref(state_->iface);
  }
}

std::string SchemaRecordWriter::framed(const std::string& json_value) {
  const Fields fields = state_->read(json_value);
  return state_->type == config::SchemaType::kAvro ? state_->avro(fields) : state_->protobuf(fields);
}

struct ReflectionKeyReader::State {
  std::shared_ptr<const app::CompiledSchema> schema =
      app::CompiledSchema::compile(config::SchemaType::kProtobuf, kProtobufSchema);
  google::protobuf::DynamicMessageFactory factory;
  std::unique_ptr<google::protobuf::Message> message;
  const google::protobuf::FieldDescriptor* order_id = nullptr;
  std::string scratch;
  std::string empty;
};

ReflectionKeyReader::ReflectionKeyReader() : state_(std::make_unique<State>()) {
  const auto* order = state_->schema->protobuf()->message_type(0);
  state_->message.reset(state_->factory.GetPrototype(order)->New());
  state_->order_id = order->FindFieldByName("order_id");
}

ReflectionKeyReader::~ReflectionKeyReader() = default;

const std::string& ReflectionKeyReader::order_id(const std::string& framed_record) {
  constexpr std::size_t kFrameBytes = 6;  // magic, id, message indexes [0]
  if (framed_record.size() < kFrameBytes ||
      !state_->message->ParseFromArray(framed_record.data() + kFrameBytes, static_cast<int>(framed_record.size() - kFrameBytes))) {
    return state_->empty;
  }
  return state_->message->GetReflection()->GetStringReference(*state_->message, state_->order_id, &state_->scratch);
}

}  // namespace bloomgate::bench
