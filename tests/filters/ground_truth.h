// Test support: an exact TTL set (the ground truth every time-based filter is checked against), a
// deterministic stream of key sightings whose rate follows a profile, and seeded keys with the
// false-positive rate measured over them.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bloomgate/filters/filter.h"

namespace bloomgate::filters::testing {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Exact answer to "was this key recorded within the last ttl?", with the same recording rule as the
// filters: a sighting is recorded when the key is new, or on every sighting with refresh.
class ExactTtlSet {
 public:
  ExactTtlSet(Duration ttl, bool refresh) : ttl_(ttl), refresh_(refresh) {}

  bool present(std::uint64_t key, TimePoint now) const {
    const auto it = recorded_.find(key);
    return it != recorded_.end() && now - it->second <= ttl_;
  }

  bool observe(std::uint64_t key, TimePoint now) {
    const bool was_present = present(key, now);
    if (!was_present || refresh_) recorded_[key] = now;
    return was_present;
  }

 private:
  Duration ttl_;
  bool refresh_;
  std::unordered_map<std::uint64_t, TimePoint> recorded_;
};

template <typename Integer>
std::string key_name(Integer key) {
  return "key-" + std::to_string(key);
}

// A key that no stream ever produces: the probes of the false-positive measurements.
inline std::string absent_key_name(std::uint64_t probe) { return "absent-" + std::to_string(probe); }

// Key `i` of the family `kind` under a test file's fixed seed: "<kind>/<seed>/<i>".
inline std::string seeded_key(std::string_view kind, std::uint64_t seed, std::uint64_t i) {
  return std::string(kind) + "/" + std::to_string(seed) + "/" + std::to_string(i);
}

// The share of the keys seeded_key(kind, seed, 0 .. queries - 1) that the filter reports present at `now`:
// its false-positive rate when none of them was inserted.
inline double measured_fpr(const Filter& filter, std::string_view kind, std::uint64_t seed, std::uint64_t queries,
                           TimePoint now) {
  std::uint64_t hits = 0;
  for (std::uint64_t i = 0; i < queries; ++i) {
    if (filter.contains(seeded_key(kind, seed, i), now)) ++hits;
  }
  return static_cast<double>(hits) / static_cast<double>(queries);
}

struct Phase {
  Duration length;
  double events_per_second;
};

// Calls visit(key, time) for each event of a stream whose rate follows `phases`. Each event repeats a
// recent key with probability `repeat_share` (keys drawn from the last `recent_keys` new ones), else
// brings a new key. Inter-arrival times are exponential when `poisson`, otherwise constant.
template <typename Visit>
void run_stream(const std::vector<Phase>& phases, double repeat_share, std::uint64_t recent_keys, bool poisson,
                std::uint64_t seed, TimePoint start, Visit visit) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uint64_t next_key = 1;
  TimePoint now = start;
  for (const Phase& phase : phases) {
    const TimePoint end = now + phase.length;
    const double mean_gap_ns = 1e9 / phase.events_per_second;
    while (true) {
      const double gap = poisson ? -std::log(1.0 - unit(rng)) * mean_gap_ns : mean_gap_ns;
      now += Duration{static_cast<std::int64_t>(gap) + 1};
      if (now >= end) break;
      std::uint64_t key;
      if (next_key > 1 && unit(rng) < repeat_share) {
        const std::uint64_t window = std::min<std::uint64_t>(recent_keys, next_key - 1);
        key = next_key - 1 - static_cast<std::uint64_t>(unit(rng) * static_cast<double>(window));
      } else {
        key = next_key++;
      }
      visit(key, now);
    }
    now = end;
  }
}

struct StreamOutcome {
  std::uint64_t events = 0;
  std::uint64_t false_negatives = 0;
};

// Feeds a stream to a time-based filter and checks every answer against what the filter itself recorded:
// a key it inserted within the TTL must be reported present. (A false positive makes the filter skip a
// key's insertion, so the raw stream is not the reference here; end-to-end counts against the raw stream
// are the demo's job.)
inline StreamOutcome replay(Filter& filter, Duration ttl, TimePoint start, const std::vector<Phase>& phases,
                            double repeat_share, std::uint64_t recent_keys, bool poisson, std::uint64_t seed,
                            bool refresh) {
  ExactTtlSet recorded(ttl, /*refresh=*/true);
  StreamOutcome out;
  run_stream(phases, repeat_share, recent_keys, poisson, seed, start, [&](std::uint64_t key, TimePoint now) {
    const bool expected = recorded.present(key, now);
    const bool reported = filter.test_and_insert(key_name(key), now);
    if (!reported || refresh) recorded.observe(key, now);
    ++out.events;
    if (expected && !reported) ++out.false_negatives;
  });
  return out;
}

}  // namespace bloomgate::filters::testing
