// Round trips through the embedded broker over TCP: every key, value, header, timestamp and partition
// arrives once; delivery reports carry offsets; admin queries answer.
#include "bloomgate/connectors/admin.h"
#include "kafka_test_support.h"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <set>
#include <string>

namespace bloomgate::connectors {
namespace {

using namespace std::chrono_literals;
using test_support::consumer_config;
using test_support::kWaitLimit;
using test_support::poll_until;
using test_support::producer_config;

constexpr int kMessages = 1000;
constexpr int kPartitions = 3;
constexpr std::int64_t kBaseTimestampMs = 1'700'000'000'000;

TEST(EmbeddedBroker, ListensOnLoopbackAndCreatesTopics) {
  EmbeddedBroker broker(3);
  EXPECT_EQ(broker.broker_count(), 3);
  EXPECT_EQ(broker.bootstrap_servers().rfind("127.0.0.1:", 0), 0U) << broker.bootstrap_servers();
  ASSERT_TRUE(broker.create_topic("events", 5, 3).ok());

  Admin admin(producer_config(broker));
  const KafkaResult<int> partitions = admin.partition_count("events", 5s);
  ASSERT_TRUE(partitions.ok()) << partitions.error().describe();
  EXPECT_EQ(partitions.value(), 5);

  // Not checked here: asking about a missing topic answers UNKNOWN_TOPIC_OR_PART from a real broker
  // (Admin sends allow.auto.create.topics=false), but the 2.0.2 mock cluster auto-creates it anyway.
}

TEST(Producer, DeliveryReportsCarryOffsetsAndFlushReturnsInTime) {
  EmbeddedBroker broker;
  ASSERT_TRUE(broker.create_topic("out", kPartitions).ok());
  std::map<int, DeliveryReport> reports;  // by opaque index
  std::map<std::int32_t, std::set<std::int64_t>> offsets_by_partition;
  ProducerOptions options;
  options.on_delivery = [&](const DeliveryReport& report) {
    const auto index = static_cast<int>(reinterpret_cast<std::intptr_t>(report.opaque));
    reports[index] = report;
    offsets_by_partition[report.partition].insert(report.offset);
    EXPECT_EQ(report.topic, "out");
  };
  Producer producer(producer_config(broker), std::move(options));

  constexpr int kCount = 200;
  for (int i = 0; i < kCount; ++i) {
    const std::string key = "key-" + std::to_string(i);
    OutgoingMessage message;
    message.key = key;
    message.value = "v";
    message.opaque = reinterpret_cast<void*>(static_cast<std::intptr_t>(i));  // NOLINT: an index as opaque
    ASSERT_TRUE(producer.produce("out", message).ok());
  }
  const KafkaError flushed = producer.flush(10s);
  ASSERT_TRUE(flushed.ok()) << flushed.describe();
  EXPECT_EQ(producer.outq_len(), 0);

  ASSERT_EQ(reports.size(), static_cast<std::size_t>(kCount));
  for (const auto& [index, report] : reports) {
    EXPECT_TRUE(report.error.ok()) << report.error.describe();
    EXPECT_GE(report.offset, 0);
    EXPECT_GE(report.partition, 0);
    EXPECT_LT(report.partition, kPartitions);
  }
  // Offsets within each partition are exactly 0..n-1: nothing lost, nothing written twice.
  Admin admin(producer_config(broker));
  std::size_t total = 0;
  for (const auto& [partition, offsets] : offsets_by_partition) {
    EXPECT_EQ(*offsets.begin(), 0);
    EXPECT_EQ(*offsets.rbegin(), static_cast<std::int64_t>(offsets.size()) - 1);
    const KafkaResult<Watermarks> marks = admin.watermarks("out", partition, 5s);
    ASSERT_TRUE(marks.ok()) << marks.error().describe();
    EXPECT_EQ(marks.value().high, static_cast<std::int64_t>(offsets.size()));
    total += offsets.size();
  }
  EXPECT_EQ(total, static_cast<std::size_t>(kCount));
}

TEST(Producer, FlushWithoutBrokerReturnsWithinItsTimeout) {
  EmbeddedBroker broker;
  ASSERT_TRUE(broker.create_topic("out", 1).ok());
  Producer producer(producer_config(broker), ProducerOptions{});
  ASSERT_TRUE(broker.set_broker_down(-1).ok());
  OutgoingMessage message;
  message.value = "stuck";
  ASSERT_TRUE(producer.produce("out", message).ok());
  const auto started = test_support::Clock::now();
  const KafkaError flushed = producer.flush(500ms);
  const auto took = test_support::Clock::now() - started;
  EXPECT_EQ(flushed.code(), RD_KAFKA_RESP_ERR__TIMED_OUT);
  EXPECT_TRUE(flushed.is_retriable());
  EXPECT_GE(producer.outq_len(), 1);
  EXPECT_LT(took, 2s);
}

struct Expected {
  std::string value;
  std::int32_t partition = 0;
  std::int64_t timestamp_ms = 0;
  std::string index_header;
};

TEST(ProduceConsume, ThousandMessagesArriveOnceWithKeysHeadersTimestampsAndPartitions) {
  EmbeddedBroker broker;
  ASSERT_TRUE(broker.create_topic("events", kPartitions).ok());

  std::map<std::string, Expected> expected;
  int delivered = 0;
  ProducerOptions producer_options;
  producer_options.on_delivery = [&](const DeliveryReport& report) {
    EXPECT_TRUE(report.error.ok()) << report.error.describe();
    ++delivered;
  };
  Producer producer(producer_config(broker), std::move(producer_options));
  for (int i = 0; i < kMessages; ++i) {
    Expected want;
    want.value = "value-" + std::to_string(i);
    want.partition = i % kPartitions;
    want.timestamp_ms = kBaseTimestampMs + i;
    want.index_header = std::to_string(i);
    const std::string key = "key-" + std::to_string(i);
    const std::array<HeaderView, 3> headers = {HeaderView{"index", want.index_header},
                                               HeaderView{"source", std::string_view("test")},
                                               HeaderView{"nothing", std::nullopt}};
    OutgoingMessage message;
    message.partition = want.partition;
    message.key = key;
    message.value = want.value;
    message.headers = headers;
    message.timestamp_ms = want.timestamp_ms;
    ASSERT_TRUE(producer.produce("events", message).ok());
    expected.emplace(key, std::move(want));
  }
  ASSERT_TRUE(producer.flush(10s).ok());
  EXPECT_EQ(delivered, kMessages);

  ConsumerOptions options;
  options.group_id = "round-trip";
  Consumer consumer(consumer_config(broker), std::move(options));
  ASSERT_TRUE(consumer.subscribe({"events"}).ok());

  std::map<std::string, int> seen;
  const bool all_arrived = poll_until(
      {&consumer}, [&] { return seen.size() == expected.size(); }, kWaitLimit,
      [&](ConsumedMessage& message) {
        ASSERT_TRUE(message.error().ok()) << message.error().describe();
        ASSERT_TRUE(message.key().has_value());
        const std::string key(*message.key());
        ++seen[key];
        const auto want = expected.find(key);
        ASSERT_NE(want, expected.end()) << key;
        EXPECT_EQ(message.topic(), "events");
        EXPECT_EQ(message.value(), want->second.value);
        EXPECT_EQ(message.partition(), want->second.partition);
        EXPECT_EQ(message.timestamp_ms(), want->second.timestamp_ms);
        EXPECT_EQ(message.timestamp_type(), TimestampType::kCreateTime);
        const std::vector<HeaderView> headers = message.headers();
        ASSERT_EQ(headers.size(), 3U);
        EXPECT_EQ(headers[0].name, "index");
        EXPECT_EQ(headers[0].value, want->second.index_header);
        EXPECT_EQ(headers[1].name, "source");
        EXPECT_EQ(headers[1].value, "test");
        EXPECT_EQ(headers[2].name, "nothing");
        EXPECT_FALSE(headers[2].value.has_value());
        EXPECT_EQ(message.header("source"), std::optional<std::string_view>("test"));
        EXPECT_FALSE(message.header("absent").has_value());
      });
  ASSERT_TRUE(all_arrived) << seen.size() << " of " << expected.size() << " arrived";
  // Nothing more comes (no replays): a short extra poll finds nothing new.
  poll_until({&consumer}, [] { return false; }, 300ms, [&](ConsumedMessage& message) {
    if (message.key()) ++seen[std::string(*message.key())];
  });
  for (const auto& [key, count] : seen) EXPECT_EQ(count, 1) << key;
  EXPECT_TRUE(consumer.close().ok());
}

TEST(Admin, LogLinesReachTheLogFunction) {
  EmbeddedBroker broker;
  test_support::LogCollector logs;
  KafkaConfig config = producer_config(broker);
  config.with("debug", "metadata");
  ClientHooks hooks;
  hooks.on_log = logs.function();
  Admin admin(config, hooks);
  ASSERT_TRUE(broker.create_topic("t", 1).ok());
  ASSERT_TRUE(admin.partition_count("t", 5s).ok());
  EXPECT_GT(logs.size(), 0U);
  EXPECT_TRUE(logs.contains("7 METADATA")) << "no debug line from the METADATA facility";
}

}  // namespace
}  // namespace bloomgate::connectors
