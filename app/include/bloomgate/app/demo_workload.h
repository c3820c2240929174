// File: demo_workload.h
//
// The demo's event stream and its exact answer. The stream is deterministic for a seed: keys with
// Zipf-distributed popularity, a configurable share of repeats within the TTL, some repeats of keys last
// seen beyond the TTL, and event timestamps at a steady rate. The exact answer is computed per event with
// an exact TTL map under the same rule as the filters (a key is recorded when it is new, or on every
// sighting with refresh), so a run can be compared event by event with what bloomgate forwarded.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace bloomgate::app {

struct WorkloadOptions {
  std::uint64_t events = 1'000'000;
  double events_per_second = 20'000;       // event-time rate
  double repeat_share = 0.30;               // events that repeat a key seen within the TTL
  double beyond_ttl_share = 0.05;           // events that repeat a key last seen beyond the TTL
  std::chrono::milliseconds ttl{10'000};        // 1M events at 20,000/s span five TTLs
  double zipf_exponent = 1.1;               // popularity skew among recent keys
  std::int64_t start_ms = 1'700'000'000'000;
  std::uint64_t seed = 42;
};

struct WorkloadEvent {
  std::string key;
  std::int64_t timestamp_ms = 0;
  std::string value;  // a ~100-byte JSON document whose "order_id" is the key
};

class Workload {
 public:
  explicit Workload(WorkloadOptions options);
  // The next event; call at most options.events times.
  WorkloadEvent next();
  std::uint64_t produced() const noexcept { return produced_; }

 private:
  std::uint64_t pick_recent_key();
  std::uint64_t pick_stale_key();

  WorkloadOptions options_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  std::vector<double> zipf_cdf_;                 // over recency ranks of the recent keys
  std::vector<std::uint64_t> recent_keys_;       // new keys of the last TTL, oldest first
  std::uint64_t recent_begin_ = 0;               // first index of recent_keys_ still within the TTL
  std::vector<std::int64_t> recent_times_;
  std::uint64_t next_key_ = 1;
  std::uint64_t produced_ = 0;
};

// The exact answer for a stream, event by event.
class ExactAnswer {
 public:
  ExactAnswer(std::chrono::milliseconds ttl, bool refresh_on_duplicate);
  // True when the event is new within the TTL (bloomgate should forward it).
  bool observe(const std::string& key, std::int64_t timestamp_ms);
  // For a new event: whether the key was last recorded between TTL and TTL + `slack` ago (a repeat the
  // time-limited filter may still report during its fade-out). Valid right after observe() returned true.
  bool last_new_was_late(std::chrono::milliseconds slack) const;
  // For a new event: how long after its previous recording it came, in ms; -1 for a key never recorded.
  std::int64_t last_gap_ms() const noexcept { return last_gap_ms_; }

 private:
  std::int64_t ttl_ms_;
  bool refresh_;
  std::int64_t last_gap_ms_ = -1;  // for the last new event: time since its previous recording, -1 if none
  std::unordered_map<std::string, std::int64_t> recorded_ms_;
};

}  // namespace bloomgate::app
