// File: bench/tlbf_ramp.h
//
// filter_bench's service-shaped case (`--ramp`): many small time-limited filters, one per partition, fed in
// turn, each created for `hint` keys per TTL and then given `growth` times that rate, with a TTL longer than
// the data (as service_bench runs the service). The rate estimate ramps up slide after slide, each new slice
// size opens a segment and nothing expires, so every filter holds several segments for the whole run: the
// case where a query combines the segments' phase tables. Ours (test_and_insert, and
// test_and_insert_with_age as the service calls it) against the plain implementation (plain_tlbf.h) at the
// same (k, l), on the same events.
#pragma once

#include <cstdint>
#include <vector>

namespace bloomgate::bench {

struct RampConfig {
  std::vector<std::uint32_t> levels;
  double rate = 1e-3;
  std::uint64_t hint = 14'000;    // expected_per_ttl each filter is created with
  std::uint64_t growth = 8;       // the stream's keys per TTL are growth x hint
  std::uint32_t partitions = 32;  // filters fed round-robin
  std::uint64_t events = 20'000;  // per partition; the TTL holds growth x hint / 0.7 events, so more than this
  int repetitions = 3;            // fresh filters each time; the median is reported
  std::uint64_t seed = 0;
};

// Prints one row per level; returns 0.
int run_ramp(const RampConfig& config);

}  // namespace bloomgate::bench
