// Test support: a filter's options in one call, for the tests of every filter type.
#pragma once

#include <chrono>
#include <cstdint>

#include "bloomgate/filters/options.h"

namespace bloomgate::filters::testing {

// `expected` is expected_per_ttl: keys per TTL for the time-based types, in total for the others (and the
// window of the age-partitioned filter, whose window option is left at 0).
inline FilterOptions options_for(FilterType type, double error_rate, std::uint64_t expected,
                                 Duration ttl = std::chrono::seconds(10), bool refresh = false) {
  FilterOptions o;
  o.type = type;
  o.error_rate = error_rate;
  o.ttl = ttl;
  o.expected_per_ttl = expected;
  o.refresh_on_duplicate = refresh;
  return o;
}

inline FilterOptions tlbf_options(double error_rate, Duration ttl, std::uint64_t expected, bool refresh = false) {
  return options_for(FilterType::kTimeLimited, error_rate, expected, ttl, refresh);
}

}  // namespace bloomgate::filters::testing
