// Keys read from Schema Registry framed values: Avro written by avro-c, Protobuf written by libprotobuf,
// JSON Schema values, the framing (prefix and header), every dead-letter reason of the schema sources, a
// schema still pending, and the same value keying alike in JSON, Avro and Protobuf.
#include <gtest/gtest.h>

#include <google/protobuf/reflection.h>
#include <sys/resource.h>

#include "bloomgate/app/key_extractor.h"
#include "schema_test_support.h"

namespace bloomgate::app {
namespace {

using config::KeyPart;
using config::KeySource;
using config::SchemaType;
using test_support::avro_datum;
using test_support::avro_field;
using test_support::FakeSchemaCatalog;
using test_support::framed;
using test_support::protobuf_message;

constexpr std::uint64_t kMaxKeyBytes = 4096;
constexpr std::uint64_t kMaxValueBytes = 1 << 20;

const std::string kOrderAvro = R"({"type": "record", "name": "Order", "fields": [
  {"name": "id", "type": "string"},
  {"name": "count", "type": "int"},
  {"name": "total", "type": "long"},
  {"name": "price", "type": "double"},
  {"name": "ratio", "type": "float"},
  {"name": "paid", "type": "boolean"},
  {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "SHIPPED"]}},
  {"name": "token", "type": "bytes"},
  {"name": "tag", "type": {"type": "fixed", "name": "Tag", "size": 2}},
  {"name": "coupon", "type": ["null", "string"], "default": null},
  {"name": "lines", "type": {"type": "array", "items": "string"}},
  {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
    {"name": "id", "type": "long"}, {"name": "region", "type": ["null", "string"], "default": null}]}}
]})";

// One Order: id "o-1", count -7, total 18000000000, price 42.0, ratio 1.5, paid, SHIPPED, token "\x01\x02",
// tag "ab", coupon null unless given, one line, customer {99, region "eu"}.
std::string order_avro(std::optional<std::string> coupon = std::nullopt) {
  return avro_datum(kOrderAvro, [&](avro_value_t& r) {
    avro_value_t f = avro_field(r, "id");
    avro_value_set_string(&f, "o-1");
    f = avro_field(r, "count");
    avro_value_set_int(&f, -7);
    f = avro_field(r, "total");
    avro_value_set_long(&f, 18'000'000'000);
    f = avro_field(r, "price");
    avro_value_set_double(&f, 42.0);
    f = avro_field(r, "ratio");
    avro_value_set_float(&f, 1.5F);
    f = avro_field(r, "paid");
    avro_value_set_boolean(&f, 1);
    f = avro_field(r, "state");
    avro_value_set_enum(&f, 1);
    f = avro_field(r, "token");
    avro_value_set_bytes(&f, const_cast<char*>("\x01\x02"), 2);
    f = avro_field(r, "tag");
    avro_value_set_fixed(&f, const_cast<char*>("ab"), 2);
    avro_value_t branch;
    f = avro_field(r, "coupon");
    avro_value_set_branch(&f, coupon ? 1 : 0, &branch);
    if (coupon) avro_value_set_string(&branch, coupon->c_str());
    else avro_value_set_null(&branch);
    f = avro_field(r, "lines");
    avro_value_t line;
    avro_value_append(&f, &line, nullptr);
    avro_value_set_string(&line, "l1");
    avro_value_t customer = avro_field(r, "customer");
    f = avro_field(customer, "id");
    avro_value_set_long(&f, 99);
    f = avro_field(customer, "region");
    avro_value_set_branch(&f, 1, &branch);
    avro_value_set_string(&branch, "eu");
  });
}

const std::string kOrderProto = R"(syntax = "proto3";
package shop;
message Other { string unused = 1; }
message Order {
  enum State { NEW = 0; SHIPPED = 1; }
  message Customer { int64 id = 1; optional string region = 2; }
  string id = 1;
  int32 count = 2;
  int64 total = 3;
  double price = 4;
  float ratio = 5;
  bool paid = 6;
  State state = 7;
  bytes token = 8;
  sint64 delta = 9;
  fixed32 code = 10;
  sfixed64 offset = 11;
  uint64 big = 12;
  optional string coupon = 13;
  repeated string lines = 14;
  Customer customer = 15;
  map<string, string> labels = 16;
}
)";

// The same Order as order_avro(), with delta -3, code 7, offset -9, big 2^64-1.
std::string order_proto(const CompiledSchema& schema) {
  return protobuf_message(schema, "shop.Order", [](google::protobuf::Message& m) {
    const auto* d = m.GetDescriptor();
    const auto* r = m.GetReflection();
    r->SetString(&m, d->FindFieldByName("id"), "o-1");
    r->SetInt32(&m, d->FindFieldByName("count"), -7);
    r->SetInt64(&m, d->FindFieldByName("total"), 18'000'000'000);
    r->SetDouble(&m, d->FindFieldByName("price"), 42.0);
    r->SetFloat(&m, d->FindFieldByName("ratio"), 1.5F);
    r->SetBool(&m, d->FindFieldByName("paid"), true);
    r->SetEnumValue(&m, d->FindFieldByName("state"), 1);
    r->SetString(&m, d->FindFieldByName("token"), std::string("\x01\x02"));
    r->SetInt64(&m, d->FindFieldByName("delta"), -3);
    r->SetUInt32(&m, d->FindFieldByName("code"), 7);
    r->SetInt64(&m, d->FindFieldByName("offset"), -9);
    r->SetUInt64(&m, d->FindFieldByName("big"), 18446744073709551615ULL);
    r->AddString(&m, d->FindFieldByName("lines"), "l1");
    google::protobuf::Message* customer = r->MutableMessage(&m, d->FindFieldByName("customer"));
    customer->GetReflection()->SetInt64(customer, customer->GetDescriptor()->FindFieldByName("id"), 99);
    customer->GetReflection()->SetString(customer, customer->GetDescriptor()->FindFieldByName("region"), "eu");
  });
}

// Protobuf message indexes: [1] (the second message, Order) as count 1 then index 1, zigzag.
const std::string kSecondMessage = std::string("\x02\x02", 2);

config::KeySettings key_of(std::initializer_list<KeyPart> parts) {
  config::KeySettings settings;
  settings.parts = parts;
  return settings;
}

KeyPart part(KeySource from, std::string pointer) { return KeyPart{from, std::move(pointer), "", false, false}; }

std::string outcome(const ExtractionResult& result) {
  if (result.is_pending()) return "pending:" + std::to_string(result.pending_schema());
  if (result.has_key()) return std::string(result.key().bytes());
  return "rejected:" + std::string(reason_name(result.rejection().reason));
}

class SchemaKeys : public ::testing::Test {
 protected:
  SchemaKeys() {
    catalog->add(1, SchemaType::kAvro, kOrderAvro);
    catalog->add(2, SchemaType::kProtobuf, kOrderProto);
    catalog->unknown(404);
  }

  std::string key(KeySource from, const std::string& pointer, const std::string& value,
                  std::span<const EventHeader> headers = {}) {
    KeyExtractor extractor(key_of({part(from, pointer)}), kMaxKeyBytes, kMaxValueBytes, catalog);
    return outcome(extractor.extract({std::nullopt, value, headers}));
  }
  std::string avro(const std::string& pointer, const std::string& value) { return key(KeySource::kAvro, pointer, value); }
  std::string proto(const std::string& pointer, const std::string& value) { return key(KeySource::kProtobuf, pointer, value); }
  std::string proto_order() { return framed(2, kSecondMessage + order_proto(*catalog->schema(2))); }

  std::shared_ptr<FakeSchemaCatalog> catalog = std::make_shared<FakeSchemaCatalog>();
};

TEST_F(SchemaKeys, AvroScalarsKeyInTheirCanonicalForm) {
  const std::string value = framed(1, order_avro());
  EXPECT_EQ(avro("/id", value), "o-1");
  EXPECT_EQ(avro("/count", value), "-7");
  EXPECT_EQ(avro("/total", value), "18000000000");
  EXPECT_EQ(avro("/price", value), "42.0");
  EXPECT_EQ(avro("/ratio", value), "1.5");
  EXPECT_EQ(avro("/paid", value), "true");
  EXPECT_EQ(avro("/state", value), "SHIPPED");
  EXPECT_EQ(avro("/token", value), "\x01\x02");
  EXPECT_EQ(avro("/tag", value), "ab");
  EXPECT_EQ(avro("/customer/id", value), "99");
  EXPECT_EQ(avro("/customer/region", value), "eu");
  EXPECT_EQ(avro("/coupon", framed(1, order_avro("SAVE5"))), "SAVE5");
}

TEST_F(SchemaKeys, AvroFieldsThatCannotKeyAreDeadLetters) {
  const std::string value = framed(1, order_avro());
  EXPECT_EQ(avro("/coupon", value), "rejected:missing_field");  // the null branch of ["null", "string"]
  EXPECT_EQ(avro("/nope", value), "rejected:missing_field");
  EXPECT_EQ(avro("/id/deeper", value), "rejected:missing_field");
  EXPECT_EQ(avro("/lines", value), "rejected:not_a_scalar");
  EXPECT_EQ(avro("/customer", value), "rejected:not_a_scalar");
  EXPECT_EQ(avro("/id", value.substr(0, value.size() - 3)), "rejected:malformed_avro");
  EXPECT_EQ(avro("/id", value + "x"), "rejected:malformed_avro");
  EXPECT_EQ(avro("/id", framed(404, order_avro())), "rejected:unknown_schema");
  EXPECT_EQ(avro("/id", framed(2, order_avro())), "rejected:unknown_schema");  // a Protobuf schema
  EXPECT_EQ(avro("/id", R"({"id": "o-1"})"), "rejected:not_schema_framed");
  EXPECT_EQ(avro("/id", ""), "rejected:not_schema_framed");
}

TEST_F(SchemaKeys, ProtobufScalarsKeyInTheirCanonicalForm) {
  const std::string value = proto_order();
  EXPECT_EQ(proto("/id", value), "o-1");
  EXPECT_EQ(proto("/count", value), "-7");
  EXPECT_EQ(proto("/total", value), "18000000000");
  EXPECT_EQ(proto("/price", value), "42.0");
  EXPECT_EQ(proto("/ratio", value), "1.5");
  EXPECT_EQ(proto("/paid", value), "true");
  EXPECT_EQ(proto("/state", value), "SHIPPED");
  EXPECT_EQ(proto("/token", value), "\x01\x02");
  EXPECT_EQ(proto("/delta", value), "-3");
  EXPECT_EQ(proto("/code", value), "7");
  EXPECT_EQ(proto("/offset", value), "-9");
  EXPECT_EQ(proto("/big", value), "18446744073709551615");
  EXPECT_EQ(proto("/customer/id", value), "99");
  EXPECT_EQ(proto("/customer/region", value), "eu");
}

TEST_F(SchemaKeys, ProtobufFieldsThatCannotKeyAreDeadLetters) {
  const std::string value = proto_order();
  EXPECT_EQ(proto("/coupon", value), "rejected:missing_field");  // optional: has presence
  EXPECT_EQ(proto("/nope", value), "rejected:missing_field");
  EXPECT_EQ(proto("/lines", value), "rejected:not_a_scalar");
  EXPECT_EQ(proto("/labels", value), "rejected:not_a_scalar");
  EXPECT_EQ(proto("/customer", value), "rejected:not_a_scalar");
  EXPECT_EQ(proto("/lines", value.substr(0, value.size() - 1)), "rejected:not_a_scalar");  // decided by the schema
  EXPECT_EQ(proto("/id", value.substr(0, value.size() - 1)), "rejected:malformed_protobuf");
  EXPECT_EQ(proto("/id", framed(2, std::string("\x02\x08", 2))), "rejected:malformed_protobuf");  // index 4 of 2 messages
  EXPECT_EQ(proto("/id", framed(2, std::string("\x02", 1))), "rejected:malformed_protobuf");  // indexes cut short
  EXPECT_EQ(proto("/id", framed(1, kSecondMessage)), "rejected:unknown_schema");  // an Avro schema
  EXPECT_EQ(proto("/id", framed(404, kSecondMessage)), "rejected:unknown_schema");
  EXPECT_EQ(proto("/id", "plain"), "rejected:not_schema_framed");
}

TEST_F(SchemaKeys, AnAbsentProto3ScalarKeysAsItsDefaultAndTheFirstMessageIsIndexZero) {
  // Order with nothing set: proto3 scalars without presence read as their defaults, as libprotobuf reads them.
  const std::string empty = framed(2, kSecondMessage);
  EXPECT_EQ(proto("/count", empty), "0");
  EXPECT_EQ(proto("/state", empty), "NEW");
  EXPECT_EQ(proto("/customer/id", empty), "rejected:missing_field");  // the message is absent
  // The single 0 byte is [0]: the first message, Other.
  const std::string other = protobuf_message(*catalog->schema(2), "shop.Other", [](google::protobuf::Message& m) {
    m.GetReflection()->SetString(&m, m.GetDescriptor()->FindFieldByName("unused"), "first");
  });
  EXPECT_EQ(proto("/unused", framed(2, std::string(1, '\0') + other)), "first");
}

TEST_F(SchemaKeys, TheLastOccurrenceOfAFieldWinsAsInAParsedMessage) {
  // Two Order messages concatenated: what libprotobuf's parse gives, a merge where later scalars win.
  const std::string first = order_proto(*catalog->schema(2));
  const std::string second = protobuf_message(*catalog->schema(2), "shop.Order", [](google::protobuf::Message& m) {
    m.GetReflection()->SetString(&m, m.GetDescriptor()->FindFieldByName("id"), "o-2");
  });
  EXPECT_EQ(proto("/id", framed(2, kSecondMessage + first + second)), "o-2");
  EXPECT_EQ(proto("/count", framed(2, kSecondMessage + first + second)), "-7");
}

TEST_F(SchemaKeys, TheSchemaIdMayComeInTheValueSchemaIdHeader) {
  const std::string id_header = framed(1, "");
  const std::vector<EventHeader> headers{{"__value_schema_id", id_header}};
  EXPECT_EQ(key(KeySource::kAvro, "/id", order_avro(), headers), "o-1");
  const std::string proto_header = framed(2, kSecondMessage);
  const std::vector<EventHeader> proto_headers{{"__value_schema_id", proto_header}};
  EXPECT_EQ(key(KeySource::kProtobuf, "/id", order_proto(*catalog->schema(2)), proto_headers), "o-1");
  const std::string guid = "\x01" + std::string(16, 'g');
  const std::vector<EventHeader> guid_headers{{"__value_schema_id", guid}};
  EXPECT_EQ(key(KeySource::kAvro, "/id", order_avro(), guid_headers), "rejected:not_schema_framed");
}

TEST_F(SchemaKeys, JsonSchemaValuesKeyAsTheJsonPointerDoes) {
  EXPECT_EQ(key(KeySource::kJsonSchema, "/order/id", framed(7, R"({"order": {"id": 42}})")), "42");
  EXPECT_EQ(key(KeySource::kJsonSchema, "/order/id", framed(7, R"({"order": {}})")), "rejected:missing_field");
  EXPECT_EQ(key(KeySource::kJsonSchema, "/order/id", framed(7, R"({"order": )")), "rejected:malformed_json");
  EXPECT_EQ(key(KeySource::kJsonSchema, "/order/id", R"({"order": {"id": 42}})"), "rejected:not_schema_framed");
}

TEST_F(SchemaKeys, AnIdStillFetchedIsPendingNotADeadLetter) {
  KeyExtractor extractor(key_of({part(KeySource::kAvro, "/id")}), kMaxKeyBytes, kMaxValueBytes, catalog);
  const std::string value = framed(5, order_avro());
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, value, {}})), "pending:5");
  catalog->add(5, SchemaType::kAvro, kOrderAvro);
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, value, {}})), "o-1");
}

TEST_F(SchemaKeys, AnEvolvedSchemaWithTheKeyInPlaceKeysAlike) {
  // Schema 3 is Order with a field added before the key's: a new id, the key at the same path.
  const std::string evolved = R"({"type": "record", "name": "Order", "fields": [
    {"name": "note", "type": "string"}, {"name": "id", "type": "string"}]})";
  catalog->add(3, SchemaType::kAvro, evolved);
  const std::string value = avro_datum(evolved, [](avro_value_t& r) {
    avro_value_t f = avro_field(r, "note");
    avro_value_set_string(&f, "hello");
    f = avro_field(r, "id");
    avro_value_set_string(&f, "o-1");
  });
  KeyExtractor extractor(key_of({part(KeySource::kAvro, "/id")}), kMaxKeyBytes, kMaxValueBytes, catalog);
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, framed(1, order_avro()), {}})), "o-1");
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, framed(3, value), {}})), "o-1");
}

// The promise of the canonical form: the same order keys to the same bytes in JSON, Avro and Protobuf, for
// a key of several parts of several types, so a topic moved between them keeps its duplicates.
TEST_F(SchemaKeys, TheSameValueKeysAlikeInJsonAvroAndProtobuf) {
  const std::vector<std::string> pointers = {"/id", "/count", "/total", "/price", "/ratio", "/paid", "/customer/id"};
  const auto key_from = [&](KeySource from, const std::string& value) {
    config::KeySettings settings;
    settings.parts.clear();
    for (const std::string& pointer : pointers) settings.parts.push_back(part(from, pointer));
    KeyExtractor extractor(settings, kMaxKeyBytes, kMaxValueBytes, catalog);
    return outcome(extractor.extract({std::nullopt, value, {}}));
  };
  const std::string json = R"({"id": "o-1", "count": -7, "total": 18000000000, "price": 42.0, "ratio": 1.5,
                               "paid": true, "customer": {"id": 99}})";
  const std::string from_json = key_from(KeySource::kJson, json);
  ASSERT_EQ(from_json.rfind("rejected", 0), std::string::npos) << from_json;
  EXPECT_EQ(key_from(KeySource::kAvro, framed(1, order_avro())), from_json);
  EXPECT_EQ(key_from(KeySource::kProtobuf, proto_order()), from_json);
  EXPECT_EQ(key_from(KeySource::kJsonSchema, framed(9, json)), from_json);
}

TEST_F(SchemaKeys, NormalisationsApplyToSchemaKeys) {
  KeyPart lowered = part(KeySource::kAvro, "/state");
  lowered.lowercase = true;
  KeyExtractor extractor(key_of({lowered}), kMaxKeyBytes, kMaxValueBytes, catalog);
  EXPECT_EQ(outcome(extractor.extract({std::nullopt, framed(1, order_avro()), {}})), "shipped");
}

// The largest resident set this process has had, in KiB.
long max_resident_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// A few bytes claiming an array of 2^26 nulls (zero bytes each): avro-c's generic decoder appends 2^26
// values, about 260 MB, and keys the record; the reader bounds the items a datum may hold by its size
// (avro_field_reader.cc), and the record is a dead letter.
TEST_F(SchemaKeys, AnAvroRecordClaimingAHugeArrayIsMalformedWithoutAllocatingIt) {
  const std::string schema = R"({"type": "record", "name": "N", "fields": [
    {"name": "id", "type": "string"}, {"name": "nulls", "type": {"type": "array", "items": "null"}}]})";
  catalog->add(6, SchemaType::kAvro, schema);
  // "a", then a block of 2^26 elements (zigzag 2^27 as a varint), then the end of the array.
  const std::string payload = std::string("\x02" "a" "\x80\x80\x80\x40" "\x00", 7);
  const long before = max_resident_kib();
  EXPECT_EQ(avro("/id", framed(6, payload)), "rejected:malformed_avro");
  EXPECT_LT(max_resident_kib() - before, 64 * 1024) << "KiB of resident memory grown by one 12-byte record";
}

// Found by fuzz/key_extractor_fuzzer: an empty Protobuf path indexed its first field out of bounds.
TEST(SchemaKeysSetup, AFieldPathWithoutAFieldIsRefused) {
  const auto catalog = std::make_shared<FakeSchemaCatalog>();
  for (const KeySource from : {KeySource::kAvro, KeySource::kProtobuf}) {
    EXPECT_THROW(KeyExtractor(config::KeySettings(from, "", "", true), kMaxKeyBytes, kMaxValueBytes, catalog),
                 std::invalid_argument);
    EXPECT_THROW(KeyExtractor(config::KeySettings(from, "id", "", true), kMaxKeyBytes, kMaxValueBytes, catalog),
                 std::invalid_argument);
  }
}

TEST(SchemaKeysSetup, AnAvroPartWithoutACatalogIsRefused) {
  config::KeySettings settings(KeySource::kAvro, "/id", "", true);
  EXPECT_THROW(KeyExtractor(settings, kMaxKeyBytes, kMaxValueBytes), std::invalid_argument);
}

}  // namespace
}  // namespace bloomgate::app
