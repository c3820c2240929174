// The schema sources of keys (avro, protobuf, json_schema) and where their schemas come from:
// `schema_registry:` (url, basic_auth from a secret reference, tls) and `schemas:` files by id.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "bloomgate/config/config.h"
#include "config_test_support.h"

namespace bloomgate::config {
namespace {

using namespace test_support;

const std::string kRegistry = "schema_registry: {url: \"http://registry:8081/\"}\n";

// One pipeline keyed by `key`, on line 8 after `top` (one line of top-level sections unless it has more).
std::string with_key(const std::string& key, const std::string& top = kRegistry) {
  return "kafka: {brokers: k:9092}\n" + top +
         "pipelines:\n"
         "  - name: orders\n"
         "    input: orders\n"
         "    output: unique\n"
         "    ttl: 10m\n"
         "    key: " + key + "\n";
}

TEST(SchemaConfig, SchemaSourcesTakeAPointerOfFieldNamesInBothForms) {
  const Config one = parse(with_key("{ from: avro, pointer: /order/id }"));
  ASSERT_EQ(one.pipelines[0].key.parts.size(), 1U);
  EXPECT_EQ(one.pipelines[0].key.parts[0].from, KeySource::kAvro);
  EXPECT_EQ(one.pipelines[0].key.parts[0].pointer, "/order/id");
  const Config parts = parse(with_key(
      "{ parts: [{from: protobuf, pointer: /tenant, lowercase: true}, {from: json_schema, pointer: /id}] }"));
  const std::vector<KeyPart>& read = parts.pipelines[0].key.parts;
  ASSERT_EQ(read.size(), 2U);
  EXPECT_EQ(read[0].from, KeySource::kProtobuf);
  EXPECT_TRUE(read[0].lowercase);
  EXPECT_EQ(read[1].from, KeySource::kJsonSchema);
  EXPECT_EQ(describe(read[0]), "protobuf /tenant");
  EXPECT_EQ(describe(read[1]), "json_schema /id");
  EXPECT_EQ(one.schema_registry.url, "http://registry:8081");  // the trailing slash dropped
}

TEST(SchemaConfig, TheRegistryBlockReadsCredentialsFromASecretReference) {
  const Config config = parse(with_key("{ from: avro, pointer: /id }",
                                       "schema_registry:\n"
                                       "  url: https://registry:8081\n"
                                       "  basic_auth: {username: svc, password: \"${env:KAFKA_PASSWORD}\"}\n"
                                       "  tls: {ca_file: /etc/ca.pem, cert_file: /etc/c.pem, key_file: /etc/k.pem}\n"
                                       "  cache_size: 50\n"
                                       "  timeout: 2s\n"));
  const SchemaRegistrySettings& r = config.schema_registry;
  EXPECT_EQ(r.url, "https://registry:8081");
  EXPECT_EQ(r.username, "svc");
  EXPECT_EQ(r.password, "hunter2");
  EXPECT_EQ(r.tls_ca_file, "/etc/ca.pem");
  EXPECT_EQ(r.tls_cert_file, "/etc/c.pem");
  EXPECT_EQ(r.cache_size, 50U);
  EXPECT_EQ(r.timeout, std::chrono::seconds(2));
  const std::string rendered = render_effective(config);
  EXPECT_EQ(rendered.find("hunter2"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("${env:KAFKA_PASSWORD}"), std::string::npos) << rendered;
  EXPECT_EQ(render_effective(parse(rendered)), rendered);
}

TEST(SchemaConfig, SchemaFilesAreReadByIdAtLoad) {
  const std::filesystem::path file = std::filesystem::path(::testing::TempDir()) / "bloomgate-order.avsc";
  std::ofstream(file) << R"({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]})";
  const Config config = parse(with_key("{ from: avro, pointer: /id }",
                                       "schemas:\n  - {id: 7, type: avro, file: " + file.string() + "}\n"));
  ASSERT_EQ(config.schemas.size(), 1U);
  EXPECT_EQ(config.schemas[0].id, 7U);
  EXPECT_EQ(config.schemas[0].type, SchemaType::kAvro);
  EXPECT_NE(config.schemas[0].text.find("Order"), std::string::npos);
  const std::string rendered = render_effective(config);
  EXPECT_EQ(render_effective(parse(rendered)), rendered);
}

class MalformedSchemaConfig : public ::testing::TestWithParam<BadConfig> {};

TEST_P(MalformedSchemaConfig, StopsWithAMessageNamingKeyLineAndColumn) {
  EXPECT_EQ(error_of(GetParam().yaml), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    SchemaConfig, MalformedSchemaConfig,
    ::testing::Values(
        BadConfig{"avro_without_schemas", with_key("{ from: avro, pointer: /id }", ""),
                  "bloomgate.yaml:7:18: pipelines[0].key.from: avro /id needs the schemas of its records: add a "
                  "schema_registry (url) or schemas (files by id)"},
        BadConfig{"protobuf_part_without_schemas", with_key("{ parts: [{from: value}, {from: protobuf, pointer: /id}] }", ""),
                  "bloomgate.yaml:7:42: pipelines[0].key.parts[1].from: protobuf /id needs the schemas of its records: "
                  "add a schema_registry (url) or schemas (files by id)"},
        BadConfig{"avro_without_pointer", with_key("{ from: avro }"),
                  "bloomgate.yaml:8:10: pipelines[0].key.pointer: is required"},
        BadConfig{"avro_pointer_without_slash", with_key("{ from: avro, pointer: order.id }"),
                  "bloomgate.yaml:8:33: pipelines[0].key.pointer: a field path is spelled as a JSON pointer: it starts "
                  "with /, like /order/id"},
        BadConfig{"url_not_http", with_key("{ from: avro, pointer: /id }", "schema_registry: {url: registry:8081}\n"),
                  "bloomgate.yaml:2:24: schema_registry.url: \"registry:8081\" is not an http:// or https:// URL with "
                  "a host"},
        BadConfig{"password_inline",
                  with_key("{ from: avro, pointer: /id }",
                           "schema_registry: {url: \"http://r\", basic_auth: {username: u, password: pw}}\n"),
                  "bloomgate.yaml:2:72: schema_registry.basic_auth.password: is a secret and must not be written "
                  "inline: use ${env:NAME} or ${file:/path}"},
        BadConfig{"tls_cert_without_key",
                  with_key("{ from: avro, pointer: /id }", "schema_registry: {url: \"http://r\", tls: {cert_file: /c}}\n"),
                  "bloomgate.yaml:2:41: schema_registry.tls: a client certificate needs both cert_file and key_file"},
        BadConfig{"unknown_registry_key",
                  with_key("{ from: avro, pointer: /id }", "schema_registry: {url: \"http://r\", user: u}\n"),
                  "bloomgate.yaml:2:36: schema_registry.user: unknown key; expected one of: basic_auth, cache_size, "
                  "timeout, tls, url"},
        BadConfig{"schema_file_unreadable",
                  with_key("{ from: avro, pointer: /id }", "schemas: [{id: 1, type: avro, file: /nonexistent.avsc}]\n"),
                  "bloomgate.yaml:2:37: schemas[0].file: cannot read the schema file /nonexistent.avsc"},
        BadConfig{"schema_type_unknown",
                  with_key("{ from: avro, pointer: /id }", "schemas: [{id: 1, type: thrift, file: /x}]\n"),
                  "bloomgate.yaml:2:25: schemas[0].type: \"thrift\" is not one of: avro, protobuf, json"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace bloomgate::config
