// Test support for the time-limited filter's tests: its options in one call.
#pragma once

#include <cstdint>

#include "bloomgate/filters/options.h"

namespace bloomgate::filters::testing {

inline FilterOptions tlbf_options(double error_rate, Duration ttl, std::uint64_t expected, bool refresh = false) {
  FilterOptions o;
  o.type = FilterType::kTimeLimited;
  o.error_rate = error_rate;
  o.ttl = ttl;
  o.expected_per_ttl = expected;
  o.refresh_on_duplicate = refresh;
  return o;
}

}  // namespace bloomgate::filters::testing
