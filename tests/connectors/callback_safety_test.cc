// Exceptions thrown by user functions never unwind into librdkafka: they are caught, counted and
// reported, and the client keeps working.
#include "kafka_test_support.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace bloomgate::connectors {
namespace {

using namespace std::chrono_literals;
using namespace test_support;

TEST(CallbackSafety, ThrowingDeliveryFunctionIsCaughtAndReported) {
  EmbeddedBroker broker;
  ASSERT_TRUE(broker.create_topic("out", 1).ok());
  test_support::LogCollector logs;
  int calls = 0;
  ProducerOptions options;
  options.hooks.on_log = logs.function();
  options.on_delivery = [&](const DeliveryReport&) {
    ++calls;
    throw std::runtime_error("delivery handler failed");
  };
  Producer producer(producer_config(broker), std::move(options));
  constexpr int kCount = 20;
  for (int i = 0; i < kCount; ++i) {
    OutgoingMessage message;
    message.value = "x";
    ASSERT_TRUE(producer.produce("out", message).ok());
  }
  ASSERT_TRUE(producer.flush(10s).ok());
  EXPECT_EQ(calls, kCount);
  EXPECT_EQ(producer.callback_exceptions(), static_cast<std::uint64_t>(kCount));
  EXPECT_TRUE(logs.contains("exception in the delivery report callback, caught before it reached librdkafka: "
                            "delivery handler failed"));
}

TEST(CallbackSafety, ThrowingAssignedFunctionStillAssignsAndConsumes) {
  EmbeddedBroker broker;
  ASSERT_TRUE(broker.create_topic("in", 2).ok());
  {
    Producer producer(producer_config(broker), ProducerOptions{});
    for (int i = 0; i < 10; ++i) {
      OutgoingMessage message;
      message.value = "m";
      ASSERT_TRUE(producer.produce("in", message).ok());
    }
    ASSERT_TRUE(producer.flush(10s).ok());
  }
  test_support::LogCollector logs;
  ConsumerOptions options;
  options.group_id = "throwing";
  options.hooks.on_log = logs.function();
  options.on_assigned = [](TopicPartitions&) { throw std::logic_error("cannot open state"); };
  options.on_revoked = [](TopicPartitions&) { throw std::logic_error("cannot checkpoint"); };
  Consumer consumer(consumer_config(broker), std::move(options));
  ASSERT_TRUE(consumer.subscribe({"in"}).ok());
  int received = 0;
  ASSERT_TRUE(poll_until({&consumer}, [&] { return received == 10; }, test_support::kWaitLimit,
                         [&](ConsumedMessage& message) { received += message.error().ok() ? 1 : 0; }));
  EXPECT_GE(consumer.callback_exceptions(), 1U);
  EXPECT_TRUE(logs.contains("exception in the assigned partitions callback"));
  EXPECT_TRUE(consumer.close().ok());
  EXPECT_TRUE(logs.contains("exception in the revoked partitions callback: cannot checkpoint") ||
              logs.contains("revoked partitions callback, caught before it reached librdkafka: cannot checkpoint"));
}

TEST(CallbackSafety, ThrowingLogFunctionDoesNotEscape) {
  EmbeddedBroker broker;
  KafkaConfig config = producer_config(broker);
  config.with("debug", "generic");
  ProducerOptions options;
  options.hooks.on_log = [](int, std::string_view, std::string_view) { throw std::runtime_error("log sink down"); };
  ::testing::internal::CaptureStderr();
  {
    Producer producer(config, std::move(options));
    EXPECT_TRUE(producer.flush(100ms).ok());
    EXPECT_GT(producer.callback_exceptions(), 0U);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("log sink down"), std::string::npos);
}

}  // namespace
}  // namespace bloomgate::connectors
