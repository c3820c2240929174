// The switch of the time-limited filter's AVX-512 query (vector_query.h): the settings it accepts, the
// error that names what it refuses, and segments that follow it. ctest runs this file twice, once with
// BLOOMGATE_FILTER_VECTOR_QUERY=off (tests/filters/CMakeLists.txt).
#include "bloomgate/filters/vector_query.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "column_segment.h"

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
// CPU has it; under BLOOMGATE_FILTER_VECTOR_QUERY=off, never. Of those, the rings of at most 64 columns
// and two slots or more search the ring word: levels 0 to 4 at 1e-3 (C = 20 and 56 here), k up to 32, and
// not a ring of one slot (k = 64) nor level 5's 90 columns.
TEST(VectorQuery, SegmentsFollowTheSwitch) {
  const char* setting = std::getenv(kVectorQueryVariable);
  const bool off = setting != nullptr && std::string_view(setting) == "off";
  const detail::ColumnSegment segment(1000, 20, 5);
  EXPECT_EQ(segment.vector_query(), !off && cpu_has_vector_query());
  struct Shape {
    std::uint32_t slices;
    std::uint32_t k;
    bool ring_word;  // where the vector query runs
  };
  for (const Shape shape : {Shape{16, 10, true}, Shape{54, 14, true}, Shape{63, 32, true}, Shape{1, 64, false},
                            Shape{89, 15, false}}) {
    const detail::ColumnSegment shaped(1000, shape.slices, shape.k);
    EXPECT_EQ(shaped.vector_query(), !off && cpu_has_vector_query()) << "k " << shape.k;
    EXPECT_EQ(shaped.ring_word_query(), shaped.vector_query() && shape.ring_word) << "k " << shape.k;
  }
  EXPECT_EQ(vector_query_in_use(), !off && cpu_has_vector_query());
  if (off) {
    EXPECT_EQ(describe_vector_query(),
              cpu_has_vector_query() ? "the time-limited filter queries with scalar code (BLOOMGATE_FILTER_VECTOR_QUERY=off)"
                                     : "the time-limited filter queries with scalar code (the CPU has no AVX-512 F and DQ, or no BMI2)");
  }
}

}  // namespace
}  // namespace bloomgate::filters
