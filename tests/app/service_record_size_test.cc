// Records near the producer's and the broker's size limits (issue 40, item 1), end to end on the embedded
// broker: none of them may stop the service. A record too large to forward is a dead letter
// (record_too_large); a dead letter too large for its topic is written cut to fit, with its source,
// headers and reason and a header saying what was cut; the service commits past them and forwards what
// follows. The service's producer keeps librdkafka's default message.max.bytes (1,000,000); the test's
// own producer raises it, to write inputs of more than that.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <set>
#include <string>
#include <vector>

#include "bloomgate/app/service.h"
#include "bloomgate/connectors/record_size.h"
#include "service_test_support.h"

namespace bloomgate::app {
namespace {

using namespace test_support;

constexpr std::int16_t kProduce = 0;  // the Produce request's ApiKey

// Produces `events` with a producer that takes records of up to 4 MB.
void produce_large(const TestBroker& broker, const std::string& topic, const std::vector<Event>& events) {
  connectors::ProducerOptions options;
  int failed = 0;
  options.on_delivery = [&failed](const connectors::DeliveryReport& report) { failed += report.error.ok() ? 0 : 1; };
  connectors::Producer producer(client_config(broker).with("message.max.bytes", "4000000"), std::move(options));
  for (const Event& event : events) {
    const std::vector<connectors::HeaderView> headers{{"origin", std::string_view("test")}};
    connectors::OutgoingMessage message;
    message.partition = 0;
    if (event.key) message.key = *event.key;
    message.value = *event.value;
    message.headers = headers;
    ASSERT_TRUE(producer.produce(topic, message).ok()) << topic;
  }
  ASSERT_TRUE(producer.flush(kWaitLimit).ok());
  ASSERT_EQ(failed, 0);
}

// A JSON event keyed by /id, `size` bytes long.
std::string json_event(const std::string& id, std::size_t size) {
  const std::string head = R"({"id":")" + id + R"(","pad":")";
  return head + std::string(size - head.size() - 2, 'x') + R"("})";
}

std::size_t wire_size(const Record& record) {
  std::vector<connectors::HeaderView> headers;
  for (const auto& [name, value] : record.headers) headers.push_back({name, value});
  return connectors::record_wire_size(record.key ? record.key->size() : 0, record.value ? record.value->size() : 0,
                                      connectors::headers_wire_size(headers));
}

TEST(RecordSizes, RecordsNearOneMegabyteAreDeadLetteredCutToFitAndTheServiceGoesOn) {
  TestBroker broker;
  create_topics(broker, {"orders", "orders-unique", "orders-dlq", "blobs", "blobs-unique", "blobs-dlq"}, 1);
  config::PipelineSettings orders = pipeline("orders", "orders", "orders-unique", std::chrono::hours(1));
  orders.key = {config::KeySource::kJson, "/id", "", true};
  orders.dead_letter = "orders-dlq";
  config::PipelineSettings blobs = pipeline("blobs", "blobs", "blobs-unique", std::chrono::hours(1));
  blobs.key = {config::KeySource::kValue, "", "", true};
  blobs.dead_letter = "blobs-dlq";
  const config::Config config = service_config(broker, "record-sizes", {orders, blobs});

  const std::string forwardable_only_cut = json_event("big", 1'000'100);  // under max_value_bytes (1 MiB)
  const std::string over_max_value = json_event("huge", 1'100'000);       // value_too_large
  const std::string key_of_a_value(999'000, 'k');                         // key_too_large, 999,000 bytes
  produce_large(broker, "orders", {keyed("o-0", forwardable_only_cut), keyed("o-1", over_max_value),
                                   keyed("o-2", json_event("small-1", 100))});
  produce_large(broker, "blobs", {keyed(key_of_a_value, key_of_a_value), keyed("b-1", "small-2")});

  ServiceThread service(config, broker);
  ASSERT_TRUE(service.wait_until_consumed(5)) << "consumed " << service.snapshot().consumed << " of 5";
  EXPECT_TRUE(poll_until([&] { return committed_offsets(broker, "record-sizes", "orders").at(0) == 3; }, kWaitLimit))
      << "not committed past the large records of orders";
  EXPECT_TRUE(poll_until([&] { return committed_offsets(broker, "record-sizes", "blobs").at(0) == 2; }, kWaitLimit))
      << "not committed past the large record of blobs";
  // Still running: what comes after is forwarded.
  produce_large(broker, "orders", {keyed("o-3", json_event("small-3", 100))});
  EXPECT_TRUE(service.wait_until_consumed(6));
  const std::optional<RunResult> result = service.stop();
  ASSERT_TRUE(result && result->exit_code == 0) << describe(result);

  const std::vector<Record> forwarded = read_topic(broker, "orders-unique");
  ASSERT_EQ(forwarded.size(), 2U);
  EXPECT_EQ(source_of(forwarded[0]).offset, 2);
  EXPECT_EQ(source_of(forwarded[1]).offset, 3);
  const std::vector<Record> blobs_forwarded = read_topic(broker, "blobs-unique");
  ASSERT_EQ(blobs_forwarded.size(), 1U);
  EXPECT_EQ(blobs_forwarded[0].value, "small-2");

  const std::vector<Record> dead = read_topic(broker, "orders-dlq");
  ASSERT_EQ(dead.size(), 2U);
  const std::vector<std::pair<std::string, const std::string*>> expected{{"record_too_large", &forwardable_only_cut},
                                                                          {"value_too_large", &over_max_value}};
  for (std::size_t i = 0; i < dead.size(); ++i) {
    const Record& letter = dead[i];
    SCOPED_TRACE("dead letter " + std::to_string(i));
    EXPECT_EQ(source_of(letter), (Source{"orders", 0, static_cast<std::int64_t>(i)}));
    EXPECT_EQ(letter.header(headers::kReason), expected[i].first);
    EXPECT_EQ(letter.header(headers::kPipeline), "orders");
    EXPECT_EQ(letter.header("origin"), "test") << "the record's own headers are kept";
    EXPECT_EQ(letter.key, "o-" + std::to_string(i));
    EXPECT_EQ(letter.header(headers::kValueTruncated), std::to_string(expected[i].second->size()));
    ASSERT_TRUE(letter.value.has_value());
    EXPECT_LT(letter.value->size(), expected[i].second->size());
    EXPECT_EQ(*letter.value, expected[i].second->substr(0, letter.value->size())) << "a prefix of the value";
    EXPECT_LE(wire_size(letter), 1'000'000U);
    EXPECT_GT(letter.value->size(), 990'000U) << "cut only as far as the limit needs";
  }

  const std::vector<Record> blobs_dead = read_topic(broker, "blobs-dlq");
  ASSERT_EQ(blobs_dead.size(), 1U);
  EXPECT_EQ(blobs_dead[0].header(headers::kReason), "key_too_large");
  EXPECT_EQ(source_of(blobs_dead[0]), (Source{"blobs", 0, 0}));
  EXPECT_LE(wire_size(blobs_dead[0]), 1'000'000U);
  EXPECT_EQ(blobs_dead[0].header("origin"), "test");
  // The message key and the value, 999,000 bytes each, do not both fit: the key is kept, the value cut.
  EXPECT_EQ(blobs_dead[0].key, key_of_a_value);
  EXPECT_EQ(blobs_dead[0].header(headers::kKeyDropped), std::nullopt);
  EXPECT_EQ(blobs_dead[0].header(headers::kValueTruncated), "999000");
  ASSERT_TRUE(blobs_dead[0].value.has_value());
  EXPECT_EQ(*blobs_dead[0].value, key_of_a_value.substr(0, blobs_dead[0].value->size()));
}

// The broker may take less than the service knows (here the embedded broker answers the next Produce
// requests with MSG_SIZE_TOO_LARGE, as a broker with a lower max.message.bytes would): the refused records
// become dead letters, record_too_large, and the service goes on. With several refusals the dead letters
// themselves are refused too and cut harder each time (to 64 KiB, then to the service's headers only).
// Every input record is then in the output or in the dead-letter topic, exactly once.
class BrokerRefusals : public ::testing::TestWithParam<int> {};

TEST_P(BrokerRefusals, RecordsTheBrokerRefusesAsTooLargeAreDeadLetteredAndTheServiceGoesOn) {
  TestBroker broker;
  create_topics(broker, {"orders", "orders-unique", "orders-dlq"}, 1);
  config::PipelineSettings orders = pipeline("orders", "orders", "orders-unique", std::chrono::hours(1));
  orders.dead_letter = "orders-dlq";
  std::vector<Event> events;
  for (int i = 0; i < 20; ++i) events.push_back(keyed("o-" + std::to_string(i), "value " + std::to_string(i)));
  produce_large(broker, "orders", events);
  for (int i = 0; i < GetParam(); ++i) {
    rd_kafka_mock_push_request_errors(broker.native_cluster(), kProduce, 1, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
  }

  ServiceThread service(service_config(broker, "refused-sizes", {orders}), broker);
  ASSERT_TRUE(service.wait_until_consumed(20));
  EXPECT_TRUE(poll_until([&] { return committed_offsets(broker, "refused-sizes", "orders").at(0) == 20; }, kWaitLimit))
      << "not committed past the refused records";
  const std::optional<RunResult> result = service.stop();
  ASSERT_TRUE(result && result->exit_code == 0) << describe(result);

  const std::vector<Record> dead = read_topic(broker, "orders-dlq");
  EXPECT_FALSE(dead.empty()) << "no record was refused: the injected error did not reach the service";
  std::multiset<std::int64_t> written;
  for (const Record& record : read_topic(broker, "orders-unique")) written.insert(source_of(record).offset);
  for (const Record& letter : dead) {
    const std::int64_t offset = source_of(letter).offset;
    SCOPED_TRACE("dead letter of input offset " + std::to_string(offset));
    written.insert(offset);
    EXPECT_EQ(letter.header(headers::kReason), "record_too_large");
    EXPECT_EQ(letter.header(headers::kPipeline), "orders");
    EXPECT_NE(letter.header(headers::kError).value_or("").find("MSG_SIZE_TOO_LARGE"), std::string::npos);
    const std::string value = "value " + std::to_string(offset);
    ASSERT_TRUE(letter.value.has_value());
    EXPECT_EQ(*letter.value, value.substr(0, letter.value->size())) << "the value or a prefix of it";
    if (letter.value->size() < value.size()) {
      EXPECT_EQ(letter.header(headers::kValueTruncated), std::to_string(value.size()));  // the last cut: own headers
    } else {
      EXPECT_EQ(letter.header("origin"), "test");
    }
  }
  std::multiset<std::int64_t> every;
  for (std::int64_t offset = 0; offset < 20; ++offset) every.insert(offset);
  EXPECT_EQ(written, every);
}

INSTANTIATE_TEST_SUITE_P(RecordSizes, BrokerRefusals, ::testing::Values(1, 3),
                         [](const ::testing::TestParamInfo<int>& refusals) {
                           return std::to_string(refusals.param) + "Refusals";
                         });

// exactly_once: a refusal dooms the transaction, which is aborted and its input consumed again; the
// refused record is then a dead letter (record_too_large) in the next transaction. The embedded broker
// shows aborted records to every reader, so only the dead letters are checked: each refused record once.
TEST(RecordSizes, WithExactlyOnceARefusedRecordIsADeadLetterOfTheNextTransaction) {
  TestBroker broker;
  create_topics(broker, {"orders", "orders-unique", "orders-dlq"}, 1);
  config::PipelineSettings orders = pipeline("orders", "orders", "orders-unique", std::chrono::hours(1));
  orders.dead_letter = "orders-dlq";
  config::Config config = service_config(broker, "refused-txn", {orders});
  config.kafka.instance_name = "refused-txn-member";
  config.kafka.guarantee = config::Guarantee::kExactlyOnce;
  std::vector<Event> events;
  for (int i = 0; i < 20; ++i) events.push_back(keyed("o-" + std::to_string(i), "value " + std::to_string(i)));
  produce_large(broker, "orders", events);
  rd_kafka_mock_push_request_errors(broker.native_cluster(), kProduce, 1, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);

  ServiceThread service(config, broker);
  EXPECT_TRUE(service.wait_until([](const ServiceSnapshot& snapshot) {
    return !snapshot.partitions.empty() && snapshot.partitions.front().committed_offset == 20;
  })) << "not committed to the end of the input";
  const std::optional<RunResult> result = service.stop();
  ASSERT_TRUE(result && result->exit_code == 0) << describe(result);
  EXPECT_GE(service.snapshot().transactions_aborted, 1U);

  const std::vector<Record> dead = read_topic(broker, "orders-dlq");
  EXPECT_FALSE(dead.empty()) << "no record was refused: the injected error did not reach the service";
  std::set<std::int64_t> letters;
  for (const Record& letter : dead) {
    EXPECT_EQ(letter.header(headers::kReason), "record_too_large");
    EXPECT_TRUE(letters.insert(source_of(letter).offset).second) << "a dead letter written twice";
  }
}

}  // namespace
}  // namespace bloomgate::app
