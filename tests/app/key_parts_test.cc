// KeyExtractor with a key of parts: the encoding (pinned bytes, no collisions where joining would collide),
// the one-part keys that must keep today's bytes, each missing-part case, normalisation and the limits.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bloomgate/app/key_extractor.h"

namespace bloomgate::app {
namespace {

using config::KeyPart;
using config::KeySource;

constexpr std::uint64_t kMaxKeyBytes = 4096;
constexpr std::uint64_t kMaxValueBytes = 1 << 20;

KeyPart json(std::string pointer, bool trim = false, bool lowercase = false) {
  return KeyPart{KeySource::kJson, std::move(pointer), "", trim, lowercase};
}
KeyPart header(std::string name, bool trim = false, bool lowercase = false) {
  return KeyPart{KeySource::kHeader, "", std::move(name), trim, lowercase};
}
KeyPart message_key() { return KeyPart{KeySource::kMessageKey, "", "", false, false}; }
KeyPart whole_value() { return KeyPart{KeySource::kValue, "", "", false, false}; }

config::KeySettings parts(std::vector<KeyPart> list, bool empty_is_error = true) {
  config::KeySettings settings;
  settings.parts = std::move(list);
  settings.empty_is_error = empty_is_error;
  return settings;
}

config::KeySettings one_source(const KeyPart& part) {
  config::KeySettings settings;
  settings.parts = {part};
  return settings;
}

// The key's bytes, or "rejected:<reason>: <message>".
std::string outcome(const ExtractionResult& result) {
  if (result.has_key()) return std::string(result.key().bytes());
  return "rejected:" + std::string(reason_name(result.rejection().reason)) + ": " + result.rejection().message;
}

std::string encoded(std::initializer_list<std::string_view> list) {
  std::string key;
  for (std::string_view part : list) append_key_part(key, part);
  return key;
}

// --- encoding -----------------------------------------------------------------------------------------

TEST(KeyParts, EncodingIsFourByteLittleEndianLengthThenBytesForEachPart) {
  using namespace std::string_literals;
  EXPECT_EQ(encoded({"ab", "", "c"}), "\x02\x00\x00\x00" "ab" "\x00\x00\x00\x00" "\x01\x00\x00\x00" "c"s);
  EXPECT_EQ(encoded({std::string(0x0102, 'x')}), "\x02\x01\x00\x00"s + std::string(0x0102, 'x'));

  KeyExtractor extractor(parts({message_key(), header("h"), json("/c")}, false), kMaxKeyBytes, kMaxValueBytes);
  const std::vector<EventHeader> headers{{"h", ""}};
  EXPECT_EQ(outcome(extractor.extract({"ab", R"({"c":"c"})", headers})),
            "\x02\x00\x00\x00" "ab" "\x00\x00\x00\x00" "\x01\x00\x00\x00" "c"s);
}

TEST(KeyParts, TuplesThatCollideWhenJoinedGiveDifferentKeys) {
  KeyExtractor extractor(parts({json("/a"), json("/b")}), kMaxKeyBytes, kMaxValueBytes);
  const std::string first = outcome(extractor.extract({std::nullopt, R"({"a":"a,b","b":"c"})", {}}));
  const std::string second = outcome(extractor.extract({std::nullopt, R"({"a":"a","b":"b,c"})", {}}));
  EXPECT_NE(first, second);
  EXPECT_EQ(first, encoded({"a,b", "c"}));
  EXPECT_EQ(second, encoded({"a", "b,c"}));
}

// Every tuple of up to three parts over a small alphabet that includes the bytes of a length prefix, each
// part 0 to 3 bytes (with empty parts allowed): no two tuples of the same part count share an encoding.
TEST(KeyParts, NoTwoTuplesOfTheSameArityShareAnEncodingExhaustively) {
  const std::string alphabet{'\0', '\x01', 'a', ','};
  std::vector<std::string> strings{""};
  for (std::size_t length = 1; length <= 3; ++length) {
    const std::size_t before = strings.size();
    for (std::size_t i = 0; i < before; ++i) {
      if (strings[i].size() != length - 1) continue;
      for (char c : alphabet) strings.push_back(strings[i] + c);
    }
  }
  ASSERT_EQ(strings.size(), 1U + 4U + 16U + 64U);
  std::map<std::string, std::vector<std::string>> seen;
  for (const std::string& a : strings) {
    for (const std::string& b : strings) {
      const auto [it, inserted] = seen.emplace(encoded({a, b}), std::vector<std::string>{a, b});
      ASSERT_TRUE(inserted) << "(" << a << ", " << b << ") encodes like (" << it->second[0] << ", " << it->second[1] << ")";
    }
  }
  EXPECT_EQ(seen.size(), strings.size() * strings.size());
}

// --- one part: today's bytes ---------------------------------------------------------------------------

// A pipeline's keys must not change when this feature ships, or its filter state would stop matching. The
// one-source form and a one-entry `parts` list both give the source's bytes, unencoded.
TEST(KeyParts, OnePartIsTheSourcesBytesAsToday) {
  const std::vector<EventHeader> headers{{"id", "h-1"}};
  const EventView event{"k-1", R"({"id":"j-1","n":42})", headers};
  const std::vector<std::pair<KeyPart, std::string>> cases{
      {message_key(), "k-1"}, {whole_value(), R"({"id":"j-1","n":42})"}, {header("id"), "h-1"},
      {json("/id"), "j-1"},   {json("/n"), "42"}};
  for (const auto& [part, expected] : cases) {
    KeyExtractor single(one_source(part), kMaxKeyBytes, kMaxValueBytes);
    KeyExtractor listed(parts({part}), kMaxKeyBytes, kMaxValueBytes);
    EXPECT_EQ(outcome(single.extract(event)), expected) << config::describe(part);
    EXPECT_EQ(outcome(listed.extract(event)), expected) << config::describe(part);
  }
}

// --- a missing or unusable part ------------------------------------------------------------------------

struct MissingPart {
  const char* name;
  EventView event;
  std::string expected;
};

class KeyPartsMissing : public ::testing::TestWithParam<MissingPart> {};

const std::vector<EventHeader> kRegion{{"region", "eu"}};
const std::vector<EventHeader> kNullRegion{{"region", std::nullopt}};
const std::vector<EventHeader> kEmptyRegion{{"region", ""}};

// (json /tenant, json /event_id, header region, message_key): each case breaks exactly one part.
TEST_P(KeyPartsMissing, IsRejectedWithTheReasonAndThePart) {
  KeyExtractor extractor(parts({json("/tenant"), json("/event_id"), header("region"), message_key()}), kMaxKeyBytes,
                         kMaxValueBytes);
  EXPECT_EQ(outcome(extractor.extract(GetParam().event)), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    KeyParts, KeyPartsMissing,
    ::testing::Values(
        MissingPart{"json_field_absent", {"k", R"({"tenant":"t"})", kRegion},
                    "rejected:missing_field: key part 2 of 4 (json /event_id): no field at JSON pointer /event_id"},
        MissingPart{"json_field_null", {"k", R"({"tenant":null,"event_id":1})", kRegion},
                    "rejected:missing_field: key part 1 of 4 (json /tenant): the field at JSON pointer /tenant is null"},
        MissingPart{"json_field_not_a_scalar", {"k", R"({"tenant":"t","event_id":[1]})", kRegion},
                    "rejected:not_a_scalar: key part 2 of 4 (json /event_id): JSON pointer /event_id names an object "
                    "or an array; a key must be a string, number or boolean"},
        MissingPart{"value_not_json", {"k", R"({"tenant":"t",)", kRegion},
                    "rejected:malformed_json: key part 1 of 4 (json /tenant): the value is not valid JSON: The JSON "
                    "document has an improper structure: missing or superfluous commas, braces, missing keys, etc."},
        MissingPart{"value_empty", {"k", "", kRegion},
                    "rejected:malformed_json: key part 1 of 4 (json /tenant): the value is empty, which is not JSON"},
        MissingPart{"header_absent", {"k", R"({"tenant":"t","event_id":1})", {}},
                    "rejected:missing_header: key part 3 of 4 (header region): no header named \"region\""},
        MissingPart{"header_null", {"k", R"({"tenant":"t","event_id":1})", kNullRegion},
                    "rejected:missing_header: key part 3 of 4 (header region): the header \"region\" is null"},
        MissingPart{"header_empty", {"k", R"({"tenant":"t","event_id":1})", kEmptyRegion},
                    "rejected:empty_key: key part 3 of 4 (header region): the part is empty, and empty keys are "
                    "configured as errors"},
        MissingPart{"message_key_null", {std::nullopt, R"({"tenant":"t","event_id":1})", kRegion},
                    "rejected:missing_message_key: key part 4 of 4 (message_key): the record's key is null"},
        MissingPart{"json_string_empty", {"k", R"({"tenant":"","event_id":1})", kRegion},
                    "rejected:empty_key: key part 1 of 4 (json /tenant): the part is empty, and empty keys are "
                    "configured as errors"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(KeyParts, AllPartsPresentGiveTheEncodedTuple) {
  KeyExtractor extractor(parts({json("/tenant"), json("/event_id"), header("region"), message_key()}), kMaxKeyBytes,
                         kMaxValueBytes);
  EXPECT_EQ(outcome(extractor.extract({"k", R"({"tenant":"t","event_id":17})", kRegion})), encoded({"t", "17", "eu", "k"}));
}

TEST(KeyParts, EmptyPartsAreKeysWhenAllowed) {
  KeyExtractor extractor(parts({message_key(), header("region")}, false), kMaxKeyBytes, kMaxValueBytes);
  EXPECT_EQ(outcome(extractor.extract({"", "", kEmptyRegion})), encoded({"", ""}));
}

// --- normalisation ---------------------------------------------------------------------------------------

TEST(KeyParts, TrimAndLowercaseMakeSpellingsOfOneKeyEqual) {
  KeyExtractor extractor(parts({json("/tenant", true, true), header("region", true, false)}), kMaxKeyBytes, kMaxValueBytes);
  const std::vector<EventHeader> padded{{"region", " \t eu\r\n"}};
  const std::string expected = encoded({"abc", "eu"});
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, R"({"tenant":"ABC "})", padded})), expected);
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, R"({"tenant":"abc"})", kRegion})), expected);
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, R"({"tenant":"\tAbC\u000b"})", kRegion})), expected);
  // Only what is asked for: the header part keeps its case.
  const std::vector<EventHeader> upper{{"region", "EU"}};
  EXPECT_NE(outcome(extractor.extract({std::nullopt, R"({"tenant":"abc"})", upper})), expected);
}

TEST(KeyParts, NormalisationIsAsciiOnly) {
  KeyExtractor extractor(one_source(header("h", true, true)), kMaxKeyBytes, kMaxValueBytes);
  // U+00C4 and U+00A0 (no-break space) are not ASCII: kept byte for byte; only A-Z and ASCII spaces change.
  const std::vector<EventHeader> headers{{"h", " \xC3\x84" "BC\xC2\xA0 "}};
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, "", headers})), "\xC3\x84" "bc\xC2\xA0");
}

TEST(KeyParts, OneSourceCanBeNormalisedAndStaysUnencoded) {
  KeyExtractor extractor(one_source(message_key()), kMaxKeyBytes, kMaxValueBytes);
  config::KeySettings normalised = one_source(message_key());
  normalised.parts.front().trim = true;
  normalised.parts.front().lowercase = true;
  KeyExtractor normalising(normalised, kMaxKeyBytes, kMaxValueBytes);
  EXPECT_EQ(outcome(extractor.extract({"  Order-1 ", "", {}})), "  Order-1 ");
  EXPECT_EQ(outcome(normalising.extract({"  Order-1 ", "", {}})), "order-1");
  EXPECT_EQ(outcome(normalising.extract({" \t ", "", {}})),
            "rejected:empty_key: the key is empty, and empty keys are configured as errors");
}

TEST(KeyParts, NormalisingWithNothingToChangeViewsTheEvent) {
  config::KeySettings settings = one_source(message_key());
  settings.parts.front().trim = true;
  settings.parts.front().lowercase = true;
  KeyExtractor extractor(settings, kMaxKeyBytes, kMaxValueBytes);
  const std::string record_key = " order-1 ";
  const ExtractionResult result = extractor.extract({record_key, "", {}});
  ASSERT_TRUE(result.has_key());
  EXPECT_EQ(result.key().bytes().data(), record_key.data() + 1);
}

TEST(KeyParts, TrimmingToNothingIsAnEmptyPart) {
  KeyExtractor extractor(parts({json("/a", true), json("/b")}), kMaxKeyBytes, kMaxValueBytes);
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, R"({"a":"  ","b":"x"})", {}})),
            "rejected:empty_key: key part 1 of 2 (json /a): the part is empty, and empty keys are configured as errors");
}

// --- limits and settings ---------------------------------------------------------------------------------

TEST(KeyParts, TheKeyLimitCountsTheLengthPrefixes) {
  // ("abc", "de") encodes to 4 + 3 + 4 + 2 = 13 bytes.
  KeyExtractor at_limit(parts({message_key(), header("h")}), 13, kMaxValueBytes);
  KeyExtractor one_under(parts({message_key(), header("h")}), 12, kMaxValueBytes);
  const std::vector<EventHeader> headers{{"h", "de"}};
  EXPECT_EQ(outcome(at_limit.extract({"abc", "", headers})), encoded({"abc", "de"}));
  EXPECT_EQ(outcome(one_under.extract({"abc", "", headers})),
            "rejected:key_too_large: key part 2 of 2 (header h): with this part the key is at least 13 bytes (length "
            "prefixes included), over the limit of 12");
}

TEST(KeyParts, ValueSizeIsCheckedBeforeAnyPart) {
  KeyExtractor extractor(parts({message_key(), whole_value()}), kMaxKeyBytes, 3);
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, "four", {}})),
            "rejected:value_too_large: the value is 4 bytes, over the limit of 3");
}

TEST(KeyParts, TheBufferIsReusedAcrossEvents) {
  KeyExtractor extractor(parts({json("/a", false, true), json("/b")}), kMaxKeyBytes, kMaxValueBytes);
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, R"({"a":"LONG-TENANT-NAME","b":1.5})", {}})),
            encoded({"long-tenant-name", "1.5"}));
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, R"({"a":"X","b":true})", {}})), encoded({"x", "true"}));
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, R"({"a":"X"})", {}})).substr(0, 22), "rejected:missing_field");
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, R"({"a":"Y","b":"z"})", {}})), encoded({"y", "z"}));
}

TEST(KeyParts, SettingsThatCannotWorkAreRefused) {
  EXPECT_THROW(KeyExtractor(parts({message_key(), json("id")}), kMaxKeyBytes, kMaxValueBytes), std::invalid_argument);
  EXPECT_THROW(KeyExtractor(parts({message_key(), header("")}), kMaxKeyBytes, kMaxValueBytes), std::invalid_argument);
  EXPECT_THROW(KeyExtractor(parts(std::vector<KeyPart>(17, message_key())), kMaxKeyBytes, kMaxValueBytes),
               std::invalid_argument);
  EXPECT_NO_THROW(KeyExtractor(parts(std::vector<KeyPart>(16, message_key())), kMaxKeyBytes, kMaxValueBytes));
  EXPECT_THROW(KeyExtractor(parts({message_key(), whole_value()}), 1ULL << 32, kMaxValueBytes), std::invalid_argument);
  EXPECT_NO_THROW(KeyExtractor(one_source(message_key()), 1ULL << 32, kMaxValueBytes));
}

TEST(KeyParts, HeadersAreReadOnlyWhenAPartComesFromOne) {
  EXPECT_TRUE(key_reads_headers(one_source(header("h"))));
  EXPECT_FALSE(key_reads_headers(one_source(json("/h"))));
  EXPECT_TRUE(key_reads_headers(parts({json("/a"), header("h")})));
  EXPECT_FALSE(key_reads_headers(parts({json("/a"), message_key(), whole_value()})));
}

}  // namespace
}  // namespace bloomgate::app
