// `key:` in the configuration: the one-source form, `parts:`, normalisation, the limits, and the exact
// message for each kind of bad key.
#include <gtest/gtest.h>

#include <string>

#include "bloomgate/config/config.h"
#include "config_test_support.h"

namespace bloomgate::config {
namespace {

using namespace test_support;

// One pipeline whose `key:` is `key` (written after "    key: ", on line 7 unless `extra` adds lines before it).
std::string pipeline_with_key(const std::string& key, const std::string& extra = "") {
  return "kafka: {brokers: k:9092}\n"
         "pipelines:\n"
         "  - name: orders\n"
         "    input: orders\n"
         "    output: unique\n"
         "    ttl: 10m\n" +
         extra + "    key: " + key + "\n";
}

const std::string kThreeParts =
    "\n"
    "      parts:\n"
    "        - { from: json, pointer: /tenant, lowercase: true }\n"
    "        - { from: json, pointer: /event_id, trim: true }\n"
    "        - { from: header, name: region }\n"
    "        - { from: message_key }\n"
    "        - { from: value }\n"
    "      empty_is_error: false";

TEST(KeyConfig, PartsAreReadInOrderWithTheirNormalisation) {
  const KeySettings key = parse(pipeline_with_key(kThreeParts)).pipelines[0].key;
  ASSERT_EQ(key.parts.size(), 5U);
  EXPECT_EQ(key.parts[0].from, KeySource::kJson);
  EXPECT_EQ(key.parts[0].pointer, "/tenant");
  EXPECT_TRUE(key.parts[0].lowercase);
  EXPECT_FALSE(key.parts[0].trim);
  EXPECT_EQ(key.parts[1].pointer, "/event_id");
  EXPECT_TRUE(key.parts[1].trim);
  EXPECT_FALSE(key.parts[1].lowercase);
  EXPECT_EQ(key.parts[2].from, KeySource::kHeader);
  EXPECT_EQ(key.parts[2].header, "region");
  EXPECT_EQ(key.parts[3].from, KeySource::kMessageKey);
  EXPECT_EQ(key.parts[4].from, KeySource::kValue);
  EXPECT_FALSE(key.empty_is_error);
  EXPECT_EQ(describe(key.parts[0]), "json /tenant");
  EXPECT_EQ(describe(key.parts[2]), "header region");
  EXPECT_EQ(describe(key.parts[3]), "message_key");
  EXPECT_EQ(describe(key.parts[4]), "value");
}

// issue 41: `parts` is the only form a key has after the loader.
TEST(KeyConfig, TheOneSourceFormLoadsAsOnePart) {
  const KeySettings plain = parse(pipeline_with_key("{ from: json, pointer: /id }")).pipelines[0].key;
  ASSERT_EQ(plain.parts.size(), 1U);
  EXPECT_EQ(plain.parts[0].from, KeySource::kJson);
  EXPECT_EQ(plain.parts[0].pointer, "/id");
  EXPECT_FALSE(plain.parts[0].trim);
  const KeySettings normalised =
      parse(pipeline_with_key("{ from: header, name: id, trim: true, lowercase: true }")).pipelines[0].key;
  ASSERT_EQ(normalised.parts.size(), 1U);
  EXPECT_EQ(normalised.parts[0].header, "id");
  EXPECT_TRUE(normalised.parts[0].trim);
  EXPECT_TRUE(normalised.parts[0].lowercase);
  const KeySettings listed = parse(pipeline_with_key("{ parts: [{from: header, name: id, trim: true, lowercase: true}] }")).pipelines[0].key;
  EXPECT_EQ(listed.parts.size(), 1U);
  EXPECT_EQ(render_effective(parse(pipeline_with_key("{ parts: [{from: json, pointer: /id}] }"))),
            render_effective(parse(pipeline_with_key("{ from: json, pointer: /id }"))));
}

TEST(KeyConfig, SixteenPartsAreAccepted) {
  std::string parts = "{ parts: [";
  for (int i = 0; i < 16; ++i) parts += std::string(i == 0 ? "" : ", ") + "{from: json, pointer: /f" + std::to_string(i) + "}";
  EXPECT_EQ(parse(pipeline_with_key(parts + "] }")).pipelines[0].key.parts.size(), 16U);
}

// `bloomgate validate` prints this: every part, in order, and the normalisations that are on.
TEST(KeyConfig, TheEffectiveConfigurationListsThePartsAndReadsBackTheSame) {
  const Config config = parse(pipeline_with_key(kThreeParts));
  const std::string rendered = render_effective(config);
  EXPECT_NE(rendered.find("    key:\n"
                          "      parts:\n"
                          "        - {from: json, pointer: /tenant, lowercase: true}\n"
                          "        - {from: json, pointer: /event_id, trim: true}\n"
                          "        - {from: header, name: region}\n"
                          "        - {from: message_key}\n"
                          "        - {from: value}\n"
                          "      empty_is_error: false\n"),
            std::string::npos)
      << rendered;
  EXPECT_EQ(render_effective(parse(rendered)), rendered);
  const std::string one = render_effective(parse(pipeline_with_key("{ from: json, pointer: /id, lowercase: true }")));
  EXPECT_NE(one.find("key: {from: json, pointer: /id, lowercase: true, empty_is_error: true}"), std::string::npos) << one;
}

class MalformedKey : public ::testing::TestWithParam<BadConfig> {};

TEST_P(MalformedKey, StopsWithAMessageNamingKeyLineAndColumn) { EXPECT_EQ(error_of(GetParam().yaml), GetParam().message); }

std::string seventeen_parts() {
  std::string parts = "{ parts: [";
  for (int i = 0; i < 17; ++i) parts += std::string(i == 0 ? "" : ", ") + "{from: value}";
  return parts + "] }";
}

INSTANTIATE_TEST_SUITE_P(
    KeyConfig, MalformedKey,
    ::testing::Values(
        BadConfig{"from_and_parts", pipeline_with_key("{ from: value, parts: [{from: value}] }"),
               "bloomgate.yaml:7:18: pipelines[0].key.from: a key has either from or parts, not both"},
        BadConfig{"parts_not_a_list", pipeline_with_key("{ parts: {from: value} }"),
               "bloomgate.yaml:7:19: pipelines[0].key.parts: expected a list of at least one part, like "
               "[{from: json, pointer: /id}]"},
        BadConfig{"no_parts", pipeline_with_key("{ parts: [] }"),
               "bloomgate.yaml:7:19: pipelines[0].key.parts: expected a list of at least one part, like "
               "[{from: json, pointer: /id}]"},
        BadConfig{"too_many_parts", pipeline_with_key(seventeen_parts()),
               "bloomgate.yaml:7:19: pipelines[0].key.parts: 17 parts, over the limit of 16"},
        BadConfig{"part_not_a_mapping", pipeline_with_key("{ parts: [value] }"),
               "bloomgate.yaml:7:20: pipelines[0].key.parts[0]: expected a mapping of keys to values"},
        BadConfig{"part_without_from", pipeline_with_key("{ parts: [{from: value}, {pointer: /id}] }"),
               "bloomgate.yaml:7:35: pipelines[0].key.parts[1].from: is required"},
        BadConfig{"unknown_source", pipeline_with_key("{ parts: [{from: body}] }"),
               "bloomgate.yaml:7:27: pipelines[0].key.parts[0].from: \"body\" is not one of: message_key, json, "
               "header, value, avro, protobuf, json_schema"},
        BadConfig{"json_part_without_pointer", pipeline_with_key("{ parts: [{from: value}, {from: json}] }"),
               "bloomgate.yaml:7:35: pipelines[0].key.parts[1].pointer: is required"},
        BadConfig{"json_part_bad_pointer", pipeline_with_key("{ parts: [{from: json, pointer: tenant}] }"),
               "bloomgate.yaml:7:42: pipelines[0].key.parts[0].pointer: a JSON pointer starts with /, like /order_id"},
        BadConfig{"header_part_without_name", pipeline_with_key("{ parts: [{from: header}] }"),
               "bloomgate.yaml:7:20: pipelines[0].key.parts[0].name: is required"},
        BadConfig{"header_part_empty_name", pipeline_with_key("{ parts: [{from: header, name: \"\"}] }"),
               "bloomgate.yaml:7:41: pipelines[0].key.parts[0].name: a header name must not be empty"},
        BadConfig{"pointer_on_a_header_part", pipeline_with_key("{ parts: [{from: header, name: r, pointer: /r}] }"),
               "bloomgate.yaml:7:44: pipelines[0].key.parts[0].pointer: unknown key; expected one of: from, "
               "lowercase, name, trim"},
        BadConfig{"trim_not_a_bool", pipeline_with_key("{ parts: [{from: value, trim: yes}] }"),
               "bloomgate.yaml:7:40: pipelines[0].key.parts[0].trim: expected true or false, found \"yes\""},
        BadConfig{"lowercase_not_a_bool", pipeline_with_key("{ from: value, lowercase: 1 }"),
               "bloomgate.yaml:7:36: pipelines[0].key.lowercase: expected true or false, found \"1\""},
        BadConfig{"pointer_beside_parts", pipeline_with_key("{ parts: [{from: value}], pointer: /id }"),
               "bloomgate.yaml:7:36: pipelines[0].key.pointer: unknown key; expected one of: empty_is_error, from, "
               "parts"},
        BadConfig{"max_key_bytes_below_the_prefixes",
               pipeline_with_key("{ parts: [{from: value}, {from: message_key}, {from: value}] }", "    max_key_bytes: 12\n"),
               "bloomgate.yaml:7:20: pipelines[0].max_key_bytes: 12 cannot hold a key of 3 parts, whose encoding "
               "spends 4 bytes of length per part: must be at least 13"},
        BadConfig{"max_key_bytes_beyond_the_prefix",
               pipeline_with_key("{ parts: [{from: value}, {from: message_key}] }", "    max_key_bytes: 4294967296\n"),
               "bloomgate.yaml:7:20: pipelines[0].max_key_bytes: must be at most 4294967295 for a key of parts, "
               "whose lengths are written in 4 bytes"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(KeyConfig, OnePartNeedsNoRoomForPrefixes) {
  EXPECT_EQ(parse(pipeline_with_key("{ parts: [{from: value}] }", "    max_key_bytes: 1\n")).pipelines[0].max_key_bytes, 1U);
}

}  // namespace
}  // namespace bloomgate::config
