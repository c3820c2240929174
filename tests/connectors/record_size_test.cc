// A record's size as librdkafka counts it (record_size.h): the figures the service sizes records with
// must be librdkafka's own, or a record sized to fit would still be refused with MSG_SIZE_TOO_LARGE.
// The producer here is never connected (bootstrap 127.0.0.1:1): produce() only enqueues, and librdkafka
// checks the size there.
#include "bloomgate/connectors/record_size.h"

#include "bloomgate/connectors/producer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace bloomgate::connectors {
namespace {

TEST(RecordSize, ZigzagVarintsGrowEverySevenBits) {
  EXPECT_EQ(zigzag_varint_size(0), 1U);
  EXPECT_EQ(zigzag_varint_size(63), 1U);  // zigzag doubles: 126 is the largest one-byte value
  EXPECT_EQ(zigzag_varint_size(64), 2U);
  EXPECT_EQ(zigzag_varint_size(8191), 2U);
  EXPECT_EQ(zigzag_varint_size(8192), 3U);
  EXPECT_EQ(zigzag_varint_size(1'000'000), 3U);
}

TEST(RecordSize, AHeaderIsItsLengthsItsNameAndItsValue) {
  EXPECT_EQ(header_wire_size("bloomgate.source", std::string_view("orders/3/1042")), 1U + 16U + 1U + 13U);
  EXPECT_EQ(header_wire_size("n", std::nullopt), 1U + 1U + 1U);  // a null value counts as an empty one
  EXPECT_EQ(header_wire_size("n", std::string(100, 'v')), 1U + 1U + 2U + 100U);
}

TEST(RecordSize, TheLargestRecordIsTheSmallerOfTheProducersAndTheTopicsLimit) {
  EXPECT_EQ(largest_record(kDefaultMessageMaxBytes, std::nullopt), 1'000'000U) << "the broker has not said";
  EXPECT_EQ(largest_record(1'000'000, 1'048'588), 1'000'000U) << "Kafka's default max.message.bytes is larger";
  EXPECT_EQ(largest_record(1'000'000, 500'000), 500'000U - kRecordBatchFramingBytes);
  EXPECT_EQ(largest_record(1'000'000, 10), 0U);
}

// The boundary, with a key and headers: a record of exactly message.max.bytes is taken, one byte more is
// refused at produce().
TEST(RecordSize, LibrdkafkaTakesARecordOfExactlyMessageMaxBytesAndRefusesOneByteMore) {
  constexpr std::size_t kLimit = 5'000;
  KafkaConfig config;
  config.with("bootstrap.servers", "127.0.0.1:1").with("message.max.bytes", std::to_string(kLimit));
  Producer producer(config, ProducerOptions{});
  EXPECT_EQ(producer.message_max_bytes(), static_cast<std::int64_t>(kLimit));
  const std::string key(300, 'k');
  const std::string trace(200, 't');
  const std::vector<HeaderView> headers{{"origin", std::string_view("test")}, {"trace", std::string_view(trace)}};
  const std::size_t value_size = kLimit - record_wire_size(key.size(), 0, headers_wire_size(headers));
  for (const std::size_t size : {value_size, value_size + 1}) {
    const std::string value(size, 'v');
    OutgoingMessage message;
    message.key = key;
    message.value = value;
    message.headers = headers;
    const KafkaError error = producer.produce("sizes", message);
    SCOPED_TRACE("record_wire_size " + std::to_string(record_wire_size(key.size(), size, headers_wire_size(headers))));
    if (size == value_size) {
      EXPECT_TRUE(error.ok()) << error.describe();
    } else {
      EXPECT_EQ(error.code(), RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) << error.describe();
    }
  }
}

TEST(RecordSize, TheProducersLimitDefaultsToLibrdkafkasOwn) {
  KafkaConfig config;
  config.with("bootstrap.servers", "127.0.0.1:1");
  EXPECT_EQ(Producer(config, ProducerOptions{}).message_max_bytes(), kDefaultMessageMaxBytes);
}

}  // namespace
}  // namespace bloomgate::connectors
