// A record cut to fit its topic (app/src/bounded_record.h), and the largest record a topic takes
// (app/src/record_limits.h). The randomized case uses a fixed seed (kCutSeed).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "bloomgate/app/service.h"
#include "bloomgate/app/source_header.h"
#include "bloomgate/connectors/record_size.h"
#include "bounded_record.h"
#include "record_limits.h"

namespace bloomgate::app {
namespace {

using connectors::HeaderView;

constexpr std::uint64_t kCutSeed = 40;

std::optional<std::string_view> header(const BoundedRecord& record, std::string_view name) {
  std::optional<std::string_view> found;
  for (const HeaderView& h : record.headers()) {
    if (h.name == name) found = h.value;
  }
  return found;
}

const std::vector<HeaderView> kOwn{{headers::kSource, std::string_view("orders/0/7")},
                                   {headers::kReason, std::string_view("value_too_large")}};

TEST(BoundedRecord, ARecordThatFitsIsKeptWholeWithoutMarkers) {
  const std::string value(1'000, 'v');
  const RecordParts parts{std::string_view("k"), value, {{"origin", std::string_view("test")}}};
  const BoundedRecord record(parts, kOwn, 10'000);
  ASSERT_TRUE(record.fits());
  EXPECT_EQ(record.message().value, value);
  EXPECT_EQ(record.message().key, "k");
  EXPECT_EQ(record.headers().size(), 3U);
  EXPECT_EQ(header(record, headers::kValueTruncated), std::nullopt);
}

TEST(BoundedRecord, AValueTooLargeIsCutToAPrefixAndSaysItsSize) {
  const std::string value(50'000, 'v');
  const RecordParts parts{std::string_view("k"), value, {{"origin", std::string_view("test")}}};
  const BoundedRecord record(parts, kOwn, 10'000);
  ASSERT_TRUE(record.fits());
  EXPECT_LE(record.wire_size(), 10'000U);
  EXPECT_GT(record.wire_size(), 10'000U - 150U) << "only as much cut as needed, but for the markers' room (< 150 bytes)";
  EXPECT_EQ(header(record, headers::kValueTruncated), "50000");
  EXPECT_EQ(header(record, "origin"), "test");
  EXPECT_EQ(record.message().key, "k");
}

TEST(BoundedRecord, HeadersThatDoNotFitAreDroppedAndCountedThenTheKey) {
  const std::string big(20'000, 'h');
  const RecordParts parts{std::string_view(big), std::string_view("v"),
                          {{"huge", std::string_view(big)}, {"small", std::string_view("s")}}};
  const BoundedRecord record(parts, kOwn, 10'000);
  ASSERT_TRUE(record.fits());
  EXPECT_EQ(header(record, "huge"), std::nullopt);
  EXPECT_EQ(header(record, "small"), "s") << "a later header that fits is kept";
  EXPECT_EQ(header(record, headers::kHeadersDropped), "1");
  EXPECT_EQ(record.message().key, std::nullopt);
  EXPECT_EQ(header(record, headers::kKeyDropped), "20000");
  EXPECT_EQ(record.message().value, "v");
  EXPECT_EQ(header(record, headers::kSource), "orders/0/7") << "the service's own headers always stay";
}

TEST(BoundedRecord, NothingFitsBelowTheServicesOwnHeaders) {
  const RecordParts parts{std::nullopt, std::string_view("v"), {}};
  EXPECT_FALSE(BoundedRecord(parts, kOwn, BoundedRecord::least_size(kOwn) - 1).fits());
  const BoundedRecord least(parts, kOwn, BoundedRecord::least_size(kOwn));
  ASSERT_TRUE(least.fits());
  EXPECT_EQ(least.message().value, "") << "no room for the value: an empty prefix";
  EXPECT_EQ(header(least, headers::kValueTruncated), "1");
}

TEST(BoundedRecord, NeverLargerThanTheLimitWhateverItCuts) {
  std::mt19937_64 random(kCutSeed);
  std::uniform_int_distribution<std::size_t> size(0, 30'000);
  for (int round = 0; round < 300; ++round) {
    const std::string key(size(random), 'k');
    const std::string value(size(random), 'v');
    const std::string h1(size(random), 'a');
    const std::string h2(size(random) / 10, 'b');
    const RecordParts parts{std::string_view(key), std::string_view(value), {{"a", h1}, {"b", h2}}};
    const std::size_t largest = BoundedRecord::least_size(kOwn) + size(random);
    const BoundedRecord record(parts, kOwn, largest);
    ASSERT_TRUE(record.fits());
    ASSERT_LE(record.wire_size(), largest) << "round " << round;
  }
}

TEST(RecordLimits, TheProducersLimitUntilTheBrokerSaysTheTopicsThenTheSmaller) {
  RecordLimits limits;
  EXPECT_EQ(limits.largest_record("out"), 1'000'000U) << "librdkafka's default message.max.bytes";
  limits.set_producer_limit(2'000'000);
  EXPECT_EQ(limits.largest_record("out"), 2'000'000U);
  limits.set_topic_limit("out", 1'048'588);
  EXPECT_EQ(limits.largest_record("out"), 1'048'588U - connectors::kRecordBatchFramingBytes);
  EXPECT_EQ(limits.largest_record("other"), 2'000'000U);
}

}  // namespace
}  // namespace bloomgate::app
