// Faults: a broker that goes down and comes back loses nothing, and the idempotent producer's retries
// write nothing twice.
#include "bloomgate/connectors/admin.h"
#include "kafka_test_support.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>

namespace bloomgate::connectors {
namespace {

using namespace std::chrono_literals;
using namespace test_support;

TEST(BrokerFault, MessagesProducedWhileTheBrokerIsDownAreDeliveredOnceWhenItReturns) {
  EmbeddedBroker broker;
  ASSERT_TRUE(broker.create_topic("durable", 2).ok());
  int delivered = 0;
  int failed = 0;
  ProducerOptions options;
  options.on_delivery = [&](const DeliveryReport& report) { report.error.ok() ? ++delivered : ++failed; };
  Producer producer(producer_config(broker), std::move(options));

  constexpr int kBeforeOutage = 200;
  constexpr int kDuringOutage = 200;
  const auto produce_range = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      const std::string key = "key-" + std::to_string(i);
      OutgoingMessage message;
      message.key = key;
      message.value = key;
      ASSERT_TRUE(producer.produce("durable", message).ok());
    }
  };
  // Some of these are in flight when the broker drops the connections: their retries must not duplicate.
  produce_range(0, kBeforeOutage);
  producer.poll(0ms);
  ASSERT_TRUE(broker.set_broker_down(1).ok());
  produce_range(kBeforeOutage, kBeforeOutage + kDuringOutage);
  const auto outage_end = test_support::Clock::now() + 1500ms;
  while (test_support::Clock::now() < outage_end) producer.poll(50ms);
  EXPECT_GT(producer.outq_len(), 0) << "everything was delivered while the broker was down?";
  ASSERT_TRUE(broker.set_broker_up(1).ok());

  const KafkaError flushed = producer.flush(10s);
  ASSERT_TRUE(flushed.ok()) << flushed.describe() << ", still in flight: " << producer.outq_len();
  EXPECT_EQ(delivered, kBeforeOutage + kDuringOutage);
  EXPECT_EQ(failed, 0);

  // The topic holds each message exactly once.
  Admin admin(producer_config(broker));
  std::int64_t stored = 0;
  for (std::int32_t partition = 0; partition < 2; ++partition) {
    const KafkaResult<Watermarks> marks = admin.watermarks("durable", partition, 5s);
    ASSERT_TRUE(marks.ok()) << marks.error().describe();
    stored += marks.value().high - marks.value().low;
  }
  EXPECT_EQ(stored, kBeforeOutage + kDuringOutage);

  ConsumerOptions consumer_options;
  consumer_options.group_id = "fault-check";
  Consumer consumer(consumer_config(broker), std::move(consumer_options));
  ASSERT_TRUE(consumer.subscribe({"durable"}).ok());
  std::map<std::string, int> seen;
  ASSERT_TRUE(poll_until({&consumer}, [&] { return seen.size() == kBeforeOutage + kDuringOutage; },
                         test_support::kWaitLimit, [&](ConsumedMessage& message) {
                           if (message.error().ok()) ++seen[std::string(*message.key())];
                         }));
  for (const auto& [key, count] : seen) EXPECT_EQ(count, 1) << key;
}

}  // namespace
}  // namespace bloomgate::connectors
