#include "compiled_schema.h"

#include <avro.h>
#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <optional>

namespace bloomgate::app {
namespace {

// Collects the parser's and the pool's messages into one text for SchemaError.
class ErrorText : public google::protobuf::io::ErrorCollector, public google::protobuf::DescriptorPool::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    append(std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message);
  }
  void AddError(const std::string& filename, const std::string& element, const google::protobuf::Message*,
                ErrorLocation, const std::string& message) override {
    append(filename + " " + element + ": " + message);
  }
  const std::string& text() const { return text_; }

 private:
  void append(const std::string& line) { text_ += (text_.empty() ? "" : "; ") + line; }
  std::string text_;
};

google::protobuf::FileDescriptorProto parse_proto(const std::string& name, const std::string& text) {
  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  ErrorText errors;
  google::protobuf::io::Tokenizer tokenizer(&input, &errors);
  google::protobuf::compiler::Parser parser;
  parser.RecordErrorsTo(&errors);
  google::protobuf::FileDescriptorProto proto;
  if (!parser.Parse(&tokenizer, &proto)) throw SchemaError("the Protobuf schema " + name + " does not parse: " + errors.text());
  proto.set_name(name);
  return proto;
}

// The well-known types (google/protobuf/timestamp.proto, ...) that a registry's schema may import without
// listing them as references: taken from the ones compiled into libprotobuf.
void add_well_known_imports(google::protobuf::DescriptorPool& pool, const google::protobuf::FileDescriptorProto& proto) {
  for (const std::string& dependency : proto.dependency()) {
    if (pool.FindFileByName(dependency) != nullptr) continue;
    const google::protobuf::FileDescriptor* known =
        google::protobuf::DescriptorPool::generated_pool()->FindFileByName(dependency);
    if (known == nullptr) continue;
    google::protobuf::FileDescriptorProto copy;
    known->CopyTo(&copy);
    add_well_known_imports(pool, copy);
    pool.BuildFile(copy);
  }
}

const google::protobuf::FileDescriptor* build(google::protobuf::DescriptorPool& pool, const std::string& name,
                                              const std::string& text) {
  const google::protobuf::FileDescriptorProto proto = parse_proto(name, text);
  add_well_known_imports(pool, proto);
  ErrorText errors;
  const google::protobuf::FileDescriptor* file = pool.BuildFileCollectingErrors(proto, &errors);
  if (file == nullptr) throw SchemaError("the Protobuf schema " + name + " does not build: " + errors.text());
  return file;
}

}  // namespace

CompiledSchema::CompiledSchema(config::SchemaType type) : type_(type) {}

CompiledSchema::~CompiledSchema() {
  if (avro_ != nullptr) avro_schema_decref(avro_);
}

std::shared_ptr<const CompiledSchema> CompiledSchema::compile(config::SchemaType type, const std::string& text,
                                                              const std::vector<SchemaReference>& references) {
  std::shared_ptr<CompiledSchema> out(new CompiledSchema(type));
  if (type == config::SchemaType::kAvro) {
    if (avro_schema_from_json_length(text.data(), text.size(), &out->avro_) != 0) {
      out->avro_ = nullptr;
      throw SchemaError(std::string("the Avro schema does not parse: ") + avro_strerror());
    }
  } else if (type == config::SchemaType::kProtobuf) {
    out->pool_ = std::make_unique<google::protobuf::DescriptorPool>();
    for (const SchemaReference& reference : references) build(*out->pool_, reference.name, reference.text);
    out->file_ = build(*out->pool_, "bloomgate-schema.proto", text);
    if (out->file_->message_type_count() == 0) throw SchemaError("the Protobuf schema defines no message");
  }
  return out;
}

std::optional<config::SchemaType> schema_type_named(std::string_view registry_name) {
  if (registry_name.empty() || registry_name == "AVRO") return config::SchemaType::kAvro;
  if (registry_name == "PROTOBUF") return config::SchemaType::kProtobuf;
  if (registry_name == "JSON") return config::SchemaType::kJson;
  return std::nullopt;
}

}  // namespace bloomgate::app
