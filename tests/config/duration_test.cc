#include "bloomgate/config/duration.h"

#include <gtest/gtest.h>

namespace bloomgate::config {
namespace {

using namespace std::chrono_literals;

TEST(Duration, ReadsEveryUnit) {
  EXPECT_EQ(parse_duration("500ms").value, 500ms);
  EXPECT_EQ(parse_duration("90s").value, 90s);
  EXPECT_EQ(parse_duration("10m").value, 10min);
  EXPECT_EQ(parse_duration("24h").value, 24h);
  EXPECT_EQ(parse_duration("7d").value, 168h);
  EXPECT_EQ(parse_duration("250us").value, 250us);
  EXPECT_EQ(parse_duration("3ns").value, 3ns);
  EXPECT_EQ(parse_duration("0s").value, 0s);
}

TEST(Duration, RejectsWithAReason) {
  EXPECT_EQ(parse_duration("10").error, "\"10\" has no unit: write ms, s, m, h or d, like 10s");
  EXPECT_EQ(parse_duration("0").error, "\"0\" has no unit: write ms, s, m, h or d, like 90s") << "0s is no TTL";
  EXPECT_EQ(parse_duration("1.5h").error, "\"1.5h\" has an unknown unit \".5h\": use ns, us, ms, s, m, h or d");
  EXPECT_EQ(parse_duration("-5s").error, "\"-5s\" is not a duration: expected a whole number and a unit, like 90s");
  EXPECT_EQ(parse_duration("").error, "\"\" is not a duration: expected a whole number and a unit, like 90s");
  EXPECT_EQ(parse_duration("10 s").error, "\"10 s\" has an unknown unit \" s\": use ns, us, ms, s, m, h or d");
  EXPECT_EQ(parse_duration("99999999999999999d").error, "\"99999999999999999d\" is too long a duration");
  EXPECT_FALSE(parse_duration("5sec").value);
}

TEST(Duration, FormatsTheShortestExactSpelling) {
  EXPECT_EQ(format_duration(10min), "10m");
  EXPECT_EQ(format_duration(90s), "90s");
  EXPECT_EQ(format_duration(1500ms), "1500ms");
  EXPECT_EQ(format_duration(24h), "1d");
  EXPECT_EQ(format_duration(0s), "0s");
}

}  // namespace
}  // namespace bloomgate::config
