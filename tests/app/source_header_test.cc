// The bloomgate.source header is an interface: reconciliation after a restart and people reading the
// dead-letter topic rely on its exact text.
#include "bloomgate/app/source_header.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace bloomgate::app {
namespace {

TEST(SourceHeader, IsTopicPartitionAndOffsetInDecimal) {
  EXPECT_EQ(SourceText("orders", 3, 1042).view(), "orders/3/1042");
  EXPECT_EQ(SourceText("eu.orders_v2-raw", 0, 0).view(), "eu.orders_v2-raw/0/0");
}

TEST(SourceHeader, ParsesWhatItWrites) {
  const std::string longest_topic(249, 't');
  const std::int64_t largest_offset = std::numeric_limits<std::int64_t>::max();
  const SourceText text(longest_topic, std::numeric_limits<std::int32_t>::max(), largest_offset);
  const auto parsed = parse_source(text.view());
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->topic, longest_topic);
  EXPECT_EQ(parsed->partition, std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(parsed->offset, largest_offset);
}

TEST(SourceHeader, RefusesValuesThatNameNoPosition) {
  for (const char* bad : {"", "orders", "orders/3", "/3/1042", "orders//1042", "orders/3/", "orders/x/1042",
                          "orders/3/10x42", "orders/3/1042 ", "orders/99999999999/1"}) {
    EXPECT_FALSE(parse_source(bad)) << '"' << bad << '"';
  }
}

}  // namespace
}  // namespace bloomgate::app
