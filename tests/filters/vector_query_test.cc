// The switch of the time-limited filter's AVX-512 query (vector_query.h): the settings it accepts, the
// error that names what it refuses, and segments that follow it. ctest runs this file twice, once with
// BLOOMGATE_FILTER_VECTOR_QUERY=off (tests/filters/CMakeLists.txt).
#include "bloomgate/filters/vector_query.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "bloomgate/filters/column_segment.h"

namespace bloomgate::filters {
namespace {

TEST(VectorQuery, AutoEmptyAndUnsetAllowItAndOffDoesNot) {
  EXPECT_TRUE(vector_query_allowed(nullptr));
  EXPECT_TRUE(vector_query_allowed(""));
  EXPECT_TRUE(vector_query_allowed("auto"));
  EXPECT_FALSE(vector_query_allowed("off"));
}

TEST(VectorQuery, AnyOtherValueIsRefusedNamingTheVariableAndTheValue) {
  for (const char* value : {"OFF", "0", "false", "avx512", " off"}) {
    try {
      vector_query_allowed(value);
      ADD_FAILURE() << "accepted \"" << value << "\"";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "BLOOMGATE_FILTER_VECTOR_QUERY=\"" + std::string(value) + "\": expected auto or off");
    }
  }
}

// A segment of narrow cells and few rows takes the vector query exactly when the switch allows it and the
// CPU has it; under BLOOMGATE_FILTER_VECTOR_QUERY=off, never.
TEST(VectorQuery, SegmentsFollowTheSwitch) {
  const char* setting = std::getenv(kVectorQueryVariable);
  const bool off = setting != nullptr && std::string_view(setting) == "off";
  const detail::ColumnSegment segment(1000, 20, 5);
  EXPECT_EQ(segment.vector_query(), !off && cpu_has_vector_query());
  EXPECT_EQ(vector_query_in_use(), !off && cpu_has_vector_query());
  if (off) {
    EXPECT_EQ(describe_vector_query(),
              cpu_has_vector_query() ? "the time-limited filter queries with scalar code (BLOOMGATE_FILTER_VECTOR_QUERY=off)"
                                     : "the time-limited filter queries with scalar code (the CPU has no AVX-512 F and DQ, or no BMI2)");
  }
}

}  // namespace
}  // namespace bloomgate::filters
