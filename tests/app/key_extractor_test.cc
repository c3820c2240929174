// KeyExtractor: every key source, the JSON rules documented in key_extractor.h, and the size limits.
#include "bloomgate/app/key_extractor.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace bloomgate::app {
namespace {

constexpr std::uint64_t kMaxKeyBytes = 4096;
constexpr std::uint64_t kMaxValueBytes = 1 << 20;

config::KeySettings key_from(config::KeySource source, bool empty_is_error = true) {
  config::KeySettings settings;
  settings.parts.front().from = source;
  settings.empty_is_error = empty_is_error;
  return settings;
}

config::KeySettings json_at(std::string pointer, bool empty_is_error = true) {
  config::KeySettings settings = key_from(config::KeySource::kJson, empty_is_error);
  settings.parts.front().pointer = std::move(pointer);
  return settings;
}

config::KeySettings header_named(std::string name) {
  config::KeySettings settings = key_from(config::KeySource::kHeader);
  settings.parts.front().header = std::move(name);
  return settings;
}

// "key:<bytes>" or "rejected:<reason>", so one EXPECT_EQ shows both what happened and what was expected.
std::string outcome(const ExtractionResult& result) {
  if (result.has_key()) return "key:" + std::string(result.key().bytes());
  return "rejected:" + std::string(reason_name(result.rejection().reason));
}

EventView with_value(std::string_view value) { return EventView{std::nullopt, value, {}}; }

std::string json_key(std::string pointer, std::string_view value) {
  KeyExtractor extractor(json_at(std::move(pointer)), kMaxKeyBytes, kMaxValueBytes);
  return outcome(extractor.extract(with_value(value)));
}

// --- message key --------------------------------------------------------------------------------------

TEST(KeyExtractorMessageKey, IsTheRecordKeyViewedInPlace) {
  KeyExtractor extractor(key_from(config::KeySource::kMessageKey), kMaxKeyBytes, kMaxValueBytes);
  const std::string record_key = "order-17";
  const ExtractionResult result = extractor.extract(EventView{record_key, "{}", {}});
  ASSERT_TRUE(result.has_key());
  EXPECT_EQ(result.key().bytes(), "order-17");
  EXPECT_FALSE(result.key().owns_bytes());
  EXPECT_EQ(result.key().bytes().data(), record_key.data());
}

TEST(KeyExtractorMessageKey, NullKeyIsMissingMessageKey) {
  KeyExtractor extractor(key_from(config::KeySource::kMessageKey), kMaxKeyBytes, kMaxValueBytes);
  EXPECT_EQ(outcome(extractor.extract(with_value("v"))), "rejected:missing_message_key");
}

TEST(KeyExtractorMessageKey, EmptyKeyIsAnErrorWhenConfigured) {
  KeyExtractor extractor(key_from(config::KeySource::kMessageKey, true), kMaxKeyBytes, kMaxValueBytes);
  EXPECT_EQ(outcome(extractor.extract(EventView{"", "v", {}})), "rejected:empty_key");
}

TEST(KeyExtractorMessageKey, EmptyKeyIsAKeyWhenAllowed) {
  KeyExtractor extractor(key_from(config::KeySource::kMessageKey, false), kMaxKeyBytes, kMaxValueBytes);
  EXPECT_EQ(outcome(extractor.extract(EventView{"", "v", {}})), "key:");
}

// --- whole value --------------------------------------------------------------------------------------

TEST(KeyExtractorValue, IsTheWholeValueViewedInPlace) {
  KeyExtractor extractor(key_from(config::KeySource::kValue), kMaxKeyBytes, kMaxValueBytes);
  const std::string value = "not json, any bytes \x01\xff";
  const ExtractionResult result = extractor.extract(with_value(value));
  ASSERT_TRUE(result.has_key());
  EXPECT_EQ(result.key().bytes(), value);
  EXPECT_EQ(result.key().bytes().data(), value.data());
}

TEST(KeyExtractorValue, EmptyValueFollowsEmptyIsError) {
  KeyExtractor strict(key_from(config::KeySource::kValue, true), kMaxKeyBytes, kMaxValueBytes);
  KeyExtractor lenient(key_from(config::KeySource::kValue, false), kMaxKeyBytes, kMaxValueBytes);
  EXPECT_EQ(outcome(strict.extract(with_value(""))), "rejected:empty_key");
  EXPECT_EQ(outcome(lenient.extract(with_value(""))), "key:");
}

// --- header -------------------------------------------------------------------------------------------

TEST(KeyExtractorHeader, IsTheNamedHeadersValue) {
  KeyExtractor extractor(header_named("idempotency-key"), kMaxKeyBytes, kMaxValueBytes);
  const std::vector<EventHeader> headers{{"trace", "t-1"}, {"idempotency-key", "abc-123"}};
  EXPECT_EQ(outcome(extractor.extract(EventView{"k", "v", headers})), "key:abc-123");
}

TEST(KeyExtractorHeader, LastOfRepeatedHeadersWins) {
  KeyExtractor extractor(header_named("id"), kMaxKeyBytes, kMaxValueBytes);
  const std::vector<EventHeader> headers{{"id", "first"}, {"other", "x"}, {"id", "last"}};
  EXPECT_EQ(outcome(extractor.extract(EventView{"k", "v", headers})), "key:last");
}

TEST(KeyExtractorHeader, AbsentHeaderIsMissingHeader) {
  KeyExtractor extractor(header_named("id"), kMaxKeyBytes, kMaxValueBytes);
  const std::vector<EventHeader> headers{{"ID", "case differs"}, {"idx", "longer name"}};
  EXPECT_EQ(outcome(extractor.extract(EventView{"k", "v", headers})), "rejected:missing_header");
  EXPECT_EQ(outcome(extractor.extract(EventView{"k", "v", {}})), "rejected:missing_header");
}

TEST(KeyExtractorHeader, NullHeaderValueIsMissingHeader) {
  KeyExtractor extractor(header_named("id"), kMaxKeyBytes, kMaxValueBytes);
  const std::vector<EventHeader> headers{{"id", std::nullopt}};
  const ExtractionResult result = extractor.extract(EventView{"k", "v", headers});
  EXPECT_EQ(outcome(result), "rejected:missing_header");
  EXPECT_NE(result.rejection().message.find("null"), std::string::npos) << result.rejection().message;
}

TEST(KeyExtractorHeader, EmptyHeaderValueFollowsEmptyIsError) {
  config::KeySettings lenient_settings = header_named("id");
  lenient_settings.empty_is_error = false;
  KeyExtractor strict(header_named("id"), kMaxKeyBytes, kMaxValueBytes);
  KeyExtractor lenient(lenient_settings, kMaxKeyBytes, kMaxValueBytes);
  const std::vector<EventHeader> headers{{"id", ""}};
  EXPECT_EQ(outcome(strict.extract(EventView{"k", "v", headers})), "rejected:empty_key");
  EXPECT_EQ(outcome(lenient.extract(EventView{"k", "v", headers})), "key:");
}

// --- JSON: pointers -----------------------------------------------------------------------------------

TEST(KeyExtractorJson, TopLevelField) { EXPECT_EQ(json_key("/order_id", R"({"order_id":"o-1","n":2})"), "key:o-1"); }

TEST(KeyExtractorJson, NestedPointerThroughObjectsAndArrays) {
  const std::string value = R"({"order":{"lines":[{"sku":"a"},{"sku":"b","ids":[7,8,9]}]}})";
  EXPECT_EQ(json_key("/order/lines/1/sku", value), "key:b");
  EXPECT_EQ(json_key("/order/lines/1/ids/2", value), "key:9");
}

TEST(KeyExtractorJson, Rfc6901Escapes) {
  const std::string value = R"({"a/b":{"m~n":"escaped"},"~1":"literal tilde-one","":{"":"empty names"}})";
  EXPECT_EQ(json_key("/a~1b/m~0n", value), "key:escaped");
  // ~01 is "~1" (a tilde, then "1"), not "/": ~0 is unescaped after ~1, so the two never combine.
  EXPECT_EQ(json_key("/~01", value), "key:literal tilde-one");
  EXPECT_EQ(json_key("//", value), "key:empty names");
}

TEST(KeyExtractorJson, EmptyPointerIsTheWholeDocument) { EXPECT_EQ(json_key("", R"("just a string")"), "key:just a string"); }

TEST(KeyExtractorJson, MissingFieldIsRejected) {
  const std::string value = R"({"order":{"id":1},"list":[1,2],"flag":true})";
  EXPECT_EQ(json_key("/order_id", value), "rejected:missing_field");
  EXPECT_EQ(json_key("/order/customer", value), "rejected:missing_field");
  EXPECT_EQ(json_key("/list/2", value), "rejected:missing_field");     // index out of range
  EXPECT_EQ(json_key("/list/first", value), "rejected:missing_field"); // member name used on an array
  EXPECT_EQ(json_key("/flag/x", value), "rejected:missing_field");     // walks through a scalar
  EXPECT_EQ(json_key("/id", R"([1,2,3])"), "rejected:missing_field");
  EXPECT_EQ(json_key("/id", R"("a string document")"), "rejected:missing_field");
}

TEST(KeyExtractorJson, MissingFieldMessageNamesThePointer) {
  KeyExtractor extractor(json_at("/order/id"), kMaxKeyBytes, kMaxValueBytes);
  const ExtractionResult result = extractor.extract(with_value(R"({"order":{}})"));
  ASSERT_FALSE(result.has_key());
  EXPECT_NE(result.rejection().message.find("/order/id"), std::string::npos) << result.rejection().message;
}

// --- JSON: malformed ----------------------------------------------------------------------------------

TEST(KeyExtractorJson, MalformedValuesAreRejected) {
  EXPECT_EQ(json_key("/id", R"({"id":"abc")"), "rejected:malformed_json");             // truncated after the key
  EXPECT_EQ(json_key("/id", R"({"id":"ab)"), "rejected:malformed_json");               // truncated inside it
  EXPECT_EQ(json_key("/id", R"({"other":1,"id")"), "rejected:malformed_json");         // truncated before it
  EXPECT_EQ(json_key("/id", "id=42&name=x"), "rejected:malformed_json");               // not JSON at all
  EXPECT_EQ(json_key("/id", ""), "rejected:malformed_json");                           // empty value
  EXPECT_EQ(json_key("/id", "   \n"), "rejected:malformed_json");                      // only whitespace
  EXPECT_EQ(json_key("/id", R"({"id":1} {"id":2})"), "rejected:malformed_json");       // trailing content
  EXPECT_EQ(json_key("/id", R"({"id":1,"x":tru})"), "rejected:malformed_json");        // fault away from the key
  EXPECT_EQ(json_key("/id", "{\"id\":\"\xff\xfe\"}"), "rejected:malformed_json");      // invalid UTF-8
  EXPECT_EQ(json_key("/id", R"({"id":"\x41"})"), "rejected:malformed_json");           // invalid escape
}

TEST(KeyExtractorJson, MalformedMessageSaysWhy) {
  KeyExtractor extractor(json_at("/id"), kMaxKeyBytes, kMaxValueBytes);
  const ExtractionResult result = extractor.extract(with_value("{"));
  ASSERT_FALSE(result.has_key());
  EXPECT_NE(result.rejection().message.find("not valid JSON"), std::string::npos) << result.rejection().message;
}

// --- JSON: what a field keys as -----------------------------------------------------------------------

TEST(KeyExtractorJson, StringKeysAsItsUnescapedContent) {
  EXPECT_EQ(json_key("/id", R"({"id":"say \"hi\"\n\\ \/"})"), "key:say \"hi\"\n\\ /");
  EXPECT_EQ(json_key("/id", R"({"id":"h\u00e9llo"})"), "key:h\xc3\xa9llo");
  EXPECT_EQ(json_key("/id", "{\"id\":\"h\xc3\xa9llo\"}"), "key:h\xc3\xa9llo");  // same key, written raw
  EXPECT_EQ(json_key("/id", R"({"id":"\ud83d\ude00"})"), "key:\xf0\x9f\x98\x80");  // surrogate pair
  EXPECT_EQ(json_key("/id", "{\"id\":\"\xe6\x97\xa5\xe6\x9c\xac\"}"), "key:\xe6\x97\xa5\xe6\x9c\xac");
}

// A JSON string key is a view into the parser (no allocation per event), valid until the next extract();
// each extraction sees its own bytes, escaped or not.
TEST(KeyExtractorJson, StringKeyIsAViewIntoTheParserUntilTheNextEvent) {
  KeyExtractor extractor(json_at("/id"), kMaxKeyBytes, kMaxValueBytes);
  const ExtractionResult first = extractor.extract(with_value(R"({"id":"first-key-longer-than-sso"})"));
  ASSERT_TRUE(first.has_key());
  EXPECT_FALSE(first.key().owns_bytes());
  EXPECT_EQ(first.key().bytes(), "first-key-longer-than-sso");
  const ExtractionResult second = extractor.extract(with_value(R"({"pad":"xxxxxxxx","id":"s\u00e9cond"})"));
  EXPECT_EQ(outcome(second), "key:s\xc3\xa9" "cond");
}

TEST(KeyExtractorJson, NumberKeysAsItsCanonicalText) {
  EXPECT_EQ(json_key("/id", R"({"id":42})"), "key:42");
  EXPECT_EQ(json_key("/id", R"({"id":-7})"), "key:-7");
  EXPECT_EQ(json_key("/id", R"({"id":-0})"), "key:0");
  EXPECT_EQ(json_key("/id", R"({"id":18446744073709551615})"), "key:18446744073709551615");
  EXPECT_EQ(json_key("/id", R"({"id":-9223372036854775808})"), "key:-9223372036854775808");
  EXPECT_EQ(json_key("/id", R"({"id":1.5})"), "key:1.5");
  EXPECT_EQ(json_key("/id", R"({"id":42.0})"), "key:42.0");
  EXPECT_EQ(json_key("/id", R"({"id":4.2e1})"), "key:42.0");
  EXPECT_EQ(json_key("/id", R"({"id":1e3})"), "key:1000.0");
  EXPECT_EQ(json_key("/id", R"({"id":  42   })"), "key:42");  // spacing is not part of the key
}

TEST(KeyExtractorJson, NumberAndItsStringFormAreTheSameKey) {
  EXPECT_EQ(json_key("/id", R"({"id":42})"), json_key("/id", R"({"id":"42"})"));
  EXPECT_NE(json_key("/id", R"({"id":42})"), json_key("/id", R"({"id":42.0})"));
}

// simdjson's DOM parser holds 64-bit integers and doubles; JSON numbers have no such limit, and one in a
// field nobody keys on must not make the event a dead letter.
TEST(KeyExtractorJson, NumbersBeyondSixtyFourBitsAreValidAnywhere) {
  EXPECT_EQ(json_key("/id", R"({"id":1,"big":123456789012345678901234567890})"), "key:1");
  EXPECT_EQ(json_key("/id", R"({"huge":1e400,"id":"a","neg":-123456789012345678901234567890})"), "key:a");
  EXPECT_EQ(json_key("/id", R"({"a":[1e400,{"b":-1E+999}],"id":4.2e1})"), "key:42.0") << "canonical as without them";
  EXPECT_EQ(json_key("/id", R"({"id":true,"x":18446744073709551616})"), "key:true");
}

TEST(KeyExtractorJson, ANumberBeyondSixtyFourBitsKeysAsWritten) {
  EXPECT_EQ(json_key("/id", R"({"id":123456789012345678901234567890})"), "key:123456789012345678901234567890");
  EXPECT_EQ(json_key("/id", R"({"id": 1e400 })"), "key:1e400");
  EXPECT_EQ(json_key("/id", R"({"id":1e400})"), json_key("/id", R"({"id":"1e400"})"));
  EXPECT_NE(json_key("/id", R"({"id":1e400})"), json_key("/id", R"({"id":1E400})")) << "no canonical form";
  EXPECT_EQ(json_key("", "123456789012345678901234567890"), "key:123456789012345678901234567890");
}

TEST(KeyExtractorJson, BigNumbersDoNotHideFaultsElsewhere) {
  EXPECT_EQ(json_key("/id", R"({"id":1,"big":123456789012345678901234567890,"x":tru})"), "rejected:malformed_json");
  EXPECT_EQ(json_key("/id", R"({"id":1e400,"x":01})"), "rejected:malformed_json");
  EXPECT_EQ(json_key("/id", R"({"id":1e400} {"id":2})"), "rejected:malformed_json");
  EXPECT_EQ(json_key("/id", R"({"id":"1e400\q","n":1e400})"), "rejected:malformed_json");
  EXPECT_EQ(json_key("/id", R"({"id":"a \"1e400\" b","n":1e400})"), "key:a \"1e400\" b") << "digits inside a string";
}

TEST(KeyExtractorJson, BooleansKeyAsTheirLiteral) {
  EXPECT_EQ(json_key("/ok", R"({"ok":true})"), "key:true");
  EXPECT_EQ(json_key("/ok", R"({"ok":false})"), "key:false");
}

TEST(KeyExtractorJson, NullIsAMissingField) {
  KeyExtractor extractor(json_at("/id"), kMaxKeyBytes, kMaxValueBytes);
  const ExtractionResult result = extractor.extract(with_value(R"({"id":null})"));
  EXPECT_EQ(outcome(result), "rejected:missing_field");
  EXPECT_NE(result.rejection().message.find("null"), std::string::npos) << result.rejection().message;
}

TEST(KeyExtractorJson, ObjectsAndArraysAreNotScalars) {
  EXPECT_EQ(json_key("/id", R"({"id":{"tenant":1,"order":2}})"), "rejected:not_a_scalar");
  EXPECT_EQ(json_key("/id", R"({"id":[1,2]})"), "rejected:not_a_scalar");
  EXPECT_EQ(json_key("/id", R"({"id":{}})"), "rejected:not_a_scalar");
  EXPECT_EQ(json_key("", R"({"id":1})"), "rejected:not_a_scalar");
}

TEST(KeyExtractorJson, EmptyStringFollowsEmptyIsError) {
  KeyExtractor strict(json_at("/id", true), kMaxKeyBytes, kMaxValueBytes);
  KeyExtractor lenient(json_at("/id", false), kMaxKeyBytes, kMaxValueBytes);
  EXPECT_EQ(outcome(strict.extract(with_value(R"({"id":""})"))), "rejected:empty_key");
  EXPECT_EQ(outcome(lenient.extract(with_value(R"({"id":""})"))), "key:");
}

TEST(KeyExtractorJson, ParserIsReusedAcrossLargeSmallAndBadValues) {
  KeyExtractor extractor(json_at("/id"), kMaxKeyBytes, kMaxValueBytes);
  const std::string large = R"({"pad":")" + std::string(100'000, 'x') + R"(","id":"large"})";
  EXPECT_EQ(outcome(extractor.extract(with_value(large))), "key:large");
  EXPECT_EQ(outcome(extractor.extract(with_value(R"({"id":"small"})"))), "key:small");
  EXPECT_EQ(outcome(extractor.extract(with_value(R"({"id":)"))), "rejected:malformed_json");
  EXPECT_EQ(outcome(extractor.extract(with_value(R"({"id":3})"))), "key:3");
}

TEST(KeyExtractorJson, ValueNeedNotBePaddedOrTerminated) {
  // The value is a view into a larger buffer: parsing must stop at its end, not at the next bytes.
  const std::string buffer = R"({"id":"inside"}{"id":"outside"})";
  KeyExtractor extractor(json_at("/id"), kMaxKeyBytes, kMaxValueBytes);
  EXPECT_EQ(outcome(extractor.extract(with_value(std::string_view(buffer).substr(0, 15)))), "key:inside");
}

// --- size limits --------------------------------------------------------------------------------------

TEST(KeyExtractorLimits, ValueExactlyAtTheLimitPassesOneOverIsRejected) {
  KeyExtractor extractor(key_from(config::KeySource::kMessageKey), kMaxKeyBytes, 10);
  EXPECT_EQ(outcome(extractor.extract(EventView{"k", std::string(10, 'v'), {}})), "key:k");
  const ExtractionResult over = extractor.extract(EventView{"k", std::string(11, 'v'), {}});
  EXPECT_EQ(outcome(over), "rejected:value_too_large");
  EXPECT_NE(over.rejection().message.find("11"), std::string::npos) << over.rejection().message;
  EXPECT_NE(over.rejection().message.find("10"), std::string::npos) << over.rejection().message;
}

TEST(KeyExtractorLimits, ValueSizeIsCheckedBeforeAnythingElse) {
  KeyExtractor message_key(key_from(config::KeySource::kMessageKey), kMaxKeyBytes, 4);
  KeyExtractor json(json_at("/id"), kMaxKeyBytes, 4);
  EXPECT_EQ(outcome(message_key.extract(with_value("12345"))), "rejected:value_too_large");  // null key too
  EXPECT_EQ(outcome(json.extract(with_value("{{{{{"))), "rejected:value_too_large");       // never parsed
}

TEST(KeyExtractorLimits, KeyExactlyAtTheLimitPassesOneOverIsRejected) {
  KeyExtractor extractor(key_from(config::KeySource::kMessageKey), 8, kMaxValueBytes);
  EXPECT_EQ(outcome(extractor.extract(EventView{"12345678", "v", {}})), "key:12345678");
  EXPECT_EQ(outcome(extractor.extract(EventView{"123456789", "v", {}})), "rejected:key_too_large");
}

TEST(KeyExtractorLimits, WholeValueKeyIsHeldToTheKeyLimit) {
  KeyExtractor extractor(key_from(config::KeySource::kValue), 3, kMaxValueBytes);
  EXPECT_EQ(outcome(extractor.extract(with_value("abc"))), "key:abc");
  EXPECT_EQ(outcome(extractor.extract(with_value("abcd"))), "rejected:key_too_large");
}

TEST(KeyExtractorLimits, JsonKeyLimitCountsUnescapedBytes) {
  // "\u00e9" is six bytes in the value but two in the key.
  KeyExtractor extractor(json_at("/id"), 4, kMaxValueBytes);
  EXPECT_EQ(outcome(extractor.extract(with_value(R"({"id":"\u00e9\u00e9"})"))), "key:\xc3\xa9\xc3\xa9");
  EXPECT_EQ(outcome(extractor.extract(with_value(R"({"id":"\u00e9\u00e9x"})"))), "rejected:key_too_large");
  EXPECT_EQ(outcome(extractor.extract(with_value(R"({"id":12345})"))), "rejected:key_too_large");
}

TEST(KeyExtractorLimits, JsonValueExactlyAtTheLimitIsParsed) {
  const std::string value = R"({"id":"a"})";
  KeyExtractor at_limit(json_at("/id"), kMaxKeyBytes, value.size());
  KeyExtractor one_under(json_at("/id"), kMaxKeyBytes, value.size() - 1);
  EXPECT_EQ(outcome(at_limit.extract(with_value(value))), "key:a");
  EXPECT_EQ(outcome(one_under.extract(with_value(value))), "rejected:value_too_large");
}

// --- construction and names ---------------------------------------------------------------------------

TEST(KeyExtractorSettings, RejectsPointersThatAreNotRfc6901) {
  EXPECT_THROW(KeyExtractor(json_at("order_id"), kMaxKeyBytes, kMaxValueBytes), std::invalid_argument);
  EXPECT_THROW(KeyExtractor(json_at("/a~2b"), kMaxKeyBytes, kMaxValueBytes), std::invalid_argument);
  EXPECT_THROW(KeyExtractor(json_at("/a~"), kMaxKeyBytes, kMaxValueBytes), std::invalid_argument);
  EXPECT_NO_THROW(KeyExtractor(json_at("/a~0~1"), kMaxKeyBytes, kMaxValueBytes));
}

TEST(KeyExtractorSettings, RejectsAnEmptyHeaderName) {
  EXPECT_THROW(KeyExtractor(header_named(""), kMaxKeyBytes, kMaxValueBytes), std::invalid_argument);
}

TEST(KeyExtractorSettings, IsMovable) {
  KeyExtractor original(json_at("/id"), kMaxKeyBytes, kMaxValueBytes);
  KeyExtractor moved = std::move(original);
  EXPECT_EQ(outcome(moved.extract(with_value(R"({"id":"x"})"))), "key:x");
}

TEST(RejectionReasonNames, AreStableSnakeCase) {
  EXPECT_EQ(reason_name(RejectionReason::kMissingField), "missing_field");
  EXPECT_EQ(reason_name(RejectionReason::kMalformedJson), "malformed_json");
  EXPECT_EQ(reason_name(RejectionReason::kNotAScalar), "not_a_scalar");
  EXPECT_EQ(reason_name(RejectionReason::kEmptyKey), "empty_key");
  EXPECT_EQ(reason_name(RejectionReason::kKeyTooLarge), "key_too_large");
  EXPECT_EQ(reason_name(RejectionReason::kValueTooLarge), "value_too_large");
  EXPECT_EQ(reason_name(RejectionReason::kMissingHeader), "missing_header");
  EXPECT_EQ(reason_name(RejectionReason::kMissingMessageKey), "missing_message_key");
  EXPECT_EQ(reason_name(RejectionReason::kRecordTooLarge), "record_too_large");
}

}  // namespace
}  // namespace bloomgate::app
