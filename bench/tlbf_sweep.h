// File: bench/tlbf_sweep.h
//
// filter_bench's time-limited sweep (`--levels`, `--keys-per-ttl`): for every error rate x level x window
// (keys per TTL), the time-limited filter against the plain implementation (plain_tlbf.h) at the same
// (k, l), in the same run on the same key stream: ns per test_and_insert of both, their ratio, bits per
// element of both against the space-optimal model, measured FPR of both, and, where the filter is larger
// than the L2 cache, the k-line floor (k_line_bloom.h) at the filter's memory. See bench/README.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bloomgate::bench {

struct SweepConfig {
  bool quick = false;  // shorter warm-up, smaller blocks, fewer FPR probes: the smoke test's setting
  std::vector<double> rates;
  std::vector<std::uint32_t> levels;
  std::vector<std::uint64_t> windows;  // keys per TTL
  int repetitions = 5;
  std::uint64_t seed = 0;
  // Time ours through test_and_insert_with_age, the service's call (a present key's age is found too),
  // instead of test_and_insert.
  bool with_age = false;
  // Each timed call of every side waits for the previous one to finish (an lfence after it), as calls do
  // that other work separates: the latency of one call, where the default times back-to-back calls, whose
  // loads overlap the previous call's. x86 only.
  bool one_at_a_time = false;
  std::string json;  // also write every figure here when not empty
};

// Prints the sweep (and writes its JSON); returns 0, or 1 when a figure is missing or not a number.
int run_sweep(const SweepConfig& config);

}  // namespace bloomgate::bench
