// The property builder: errors name the property, never the value; clients keep their invariants.
#include "bloomgate/connectors/kafka_config.h"
#include "bloomgate/connectors/producer.h"

#include <gtest/gtest.h>

#include <string>

namespace bloomgate::connectors {
namespace {

TEST(KafkaConfig, UnknownPropertyErrorNamesIt) {
  KafkaConfig config;
  const KafkaError error = config.set("no.such.property", "1");
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.code(), RD_KAFKA_RESP_ERR__INVALID_ARG);
  EXPECT_NE(error.message().find("librdkafka property \"no.such.property\""), std::string::npos) << error.message();
}

TEST(KafkaConfig, BadValueErrorNamesThePropertyNotTheSecret) {
  KafkaConfig config;
  const KafkaError error = config.set("session.timeout.ms", "hunter2");
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.message().find("\"session.timeout.ms\""), std::string::npos) << error.message();
}

TEST(KafkaConfig, SetAllStopsAtTheFirstBadProperty) {
  KafkaConfig config;
  const KafkaError error = config.set_all({{"client.id", "a"}, {"linger.ms", "7"}, {"zz.bad", "1"}});
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.message().find("zz.bad"), std::string::npos);
  EXPECT_EQ(config.get("linger.ms"), "7");
  EXPECT_EQ(config.get("client.id"), "a");
}

TEST(KafkaConfig, WithThrowsForStartUpCode) {
  KafkaConfig config;
  EXPECT_THROW(config.with("linger.ms", "not-a-number"), KafkaException);
  try {
    config.with("bogus.name", "x");
    FAIL() << "expected KafkaException";
  } catch (const KafkaException& e) {
    EXPECT_NE(std::string(e.what()).find("bogus.name"), std::string::npos) << e.what();
  }
}

TEST(KafkaConfig, CopiesAreIndependent) {
  KafkaConfig original;
  original.with("client.id", "one");
  KafkaConfig copy = original;
  copy.with("client.id", "two");
  EXPECT_EQ(original.get("client.id"), "one");
  EXPECT_EQ(copy.get("client.id"), "two");
  EXPECT_FALSE(original.get("not.a.property").has_value());
}

TEST(KafkaConfig, ProducerRefusesSettingsThatBreakIdempotence) {
  // Creating a client connects to nothing until it is used, so this needs no broker.
  KafkaConfig config;
  config.with("bootstrap.servers", "127.0.0.1:1").with("acks", "1");
  try {
    Producer producer(config, ProducerOptions{});
    FAIL() << "expected KafkaException";
  } catch (const KafkaException& e) {
    EXPECT_NE(std::string(e.what()).find("acks"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace bloomgate::connectors
