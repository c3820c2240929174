// File: bench/key_stream.h
//
// The benchmarks' key stream and block timer (filter_bench and its time-limited sweep, tlbf_sweep.cc).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "bench_support.h"
#include "bloomgate/filters/hash.h"
#include "bloomgate/filters/time.h"

namespace bloomgate::bench {

// The key stream. Keys are 64-bit KeyHash values made directly (no string hashing), so hashing costs the
// same (nothing) for every filter. New key number i is splitmix64's finalizer of (i + seed): a bijection,
// so new keys never repeat by accident and the probe keys of the FPR measurement (numbers with the top bit
// set) are guaranteed never inserted. The choice between a new key and a repeat, and which key is
// repeated, come from a std::mt19937_64 with a fixed seed, so every filter sees exactly the same events.
//
// Events are evenly spaced (1 us of simulated time apart); 70% are new keys and 30% repeat a key drawn
// uniformly from the last 90% of a TTL's new keys (always still within the TTL). The TTL is chosen so it
// holds `keys_per_ttl` new keys: events_per_ttl = keys_per_ttl / 0.7.

inline constexpr double kNewFraction = 0.7;
inline constexpr double kRepeatReach = 0.9;  // repeats reach back this fraction of a TTL's new keys
inline constexpr std::int64_t kEventSpacingNs = 1000;
inline constexpr std::int64_t kStartNs = 1'700'000'000'000'000'000;  // late 2023, as nanoseconds since the epoch

struct Event {
  std::uint64_t key;
  std::int64_t now_ns;
  bool is_new;
};

class KeyStream {
 public:
  static std::uint64_t events_per_ttl_for(std::uint64_t keys_per_ttl) {
    return std::max<std::uint64_t>(
        16, static_cast<std::uint64_t>(std::llround(static_cast<double>(keys_per_ttl) / kNewFraction)));
  }

  KeyStream(std::uint64_t keys_per_ttl, std::uint64_t seed)
      : seed_(seed),
        rng_(seed),
        events_per_ttl_(events_per_ttl_for(keys_per_ttl)),
        repeat_reach_(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(kRepeatReach * static_cast<double>(keys_per_ttl)))),
        repeat_threshold_(static_cast<std::uint64_t>((1.0 - kNewFraction) * 18446744073709551616.0)),
        window_bits_((events_per_ttl_ + 63) / 64, 0) {}

  Event next() {
    const std::int64_t now = kStartNs + static_cast<std::int64_t>(event_) * kEventSpacingNs;
    const bool is_new = new_keys_ == 0 || rng_() >= repeat_threshold_;
    std::uint64_t index;
    if (is_new) {
      index = new_keys_++;
    } else {
      const std::uint64_t reach = std::min(new_keys_, repeat_reach_);
      index = new_keys_ - 1 - filters::fast_range(rng_(), reach);
    }
    // The distinct keys of the window are the new keys among its last events_per_ttl events.
    const std::uint64_t slot = event_ % events_per_ttl_;
    std::uint64_t& word = window_bits_[slot / 64];
    const std::uint64_t bit = std::uint64_t{1} << (slot % 64);
    if ((word & bit) != 0) --window_new_;
    word &= ~bit;
    if (is_new) {
      word |= bit;
      ++window_new_;
    }
    ++event_;
    last_ns_ = now;
    return {key_of(index), now, is_new};
  }

  // A key no event of any stream with this seed ever carries.
  std::uint64_t probe_key(std::uint64_t i) const noexcept { return key_of(i | (std::uint64_t{1} << 63)); }

  std::uint64_t events_per_ttl() const noexcept { return events_per_ttl_; }
  std::int64_t ttl_ns() const noexcept { return static_cast<std::int64_t>(events_per_ttl_) * kEventSpacingNs; }
  // Distinct keys inserted within the last TTL, i.e. at times in (now - TTL, now].
  std::uint64_t distinct_in_window() const noexcept { return window_new_; }
  std::uint64_t events() const noexcept { return event_; }
  filters::TimePoint now() const noexcept { return filters::from_epoch_nanos(last_ns_); }

 private:
  std::uint64_t key_of(std::uint64_t index) const noexcept { return mix64(index + seed_ * 0x9e3779b97f4a7c15ULL); }

  std::uint64_t seed_;
  std::mt19937_64 rng_;
  std::uint64_t events_per_ttl_;
  std::uint64_t repeat_reach_;
  std::uint64_t repeat_threshold_;
  std::uint64_t event_ = 0;
  std::uint64_t new_keys_ = 0;
  std::uint64_t window_new_ = 0;
  std::int64_t last_ns_ = kStartNs;
  std::vector<std::uint64_t> window_bits_;
};

struct Timing {
  double median_ns = kNaN;
  double min_ns = kNaN;
  double max_ns = kNaN;
  std::uint64_t present = 0;  // test_and_insert answered "duplicate"
  std::uint64_t operations = 0;

  double present_fraction() const noexcept {
    return operations == 0 ? kNaN : static_cast<double>(present) / static_cast<double>(operations);
  }
};

// The figures of timed blocks: `per_op` ns per operation of each block, `present` answers "duplicate" of
// `operations` in all.
inline Timing summarize(const std::vector<double>& per_op, std::uint64_t present, std::uint64_t operations) {
  Timing t;
  t.median_ns = median(per_op);
  t.min_ns = *std::min_element(per_op.begin(), per_op.end());
  t.max_ns = *std::max_element(per_op.begin(), per_op.end());
  t.operations = operations;
  t.present = present;
  return t;
}

// Times `repetitions` consecutive blocks of the stream. Each block is generated into arrays first, so the
// timed loop does nothing but call `op`; the filter stays at steady state across blocks.
template <typename Op>
Timing time_blocks(KeyStream& stream, std::uint64_t block_events, int repetitions, Op&& op) {
  std::vector<std::uint64_t> keys(block_events);
  std::vector<std::int64_t> times(block_events);
  std::vector<double> per_op;
  std::uint64_t present = 0;
  for (int r = 0; r < repetitions; ++r) {
    for (std::uint64_t i = 0; i < block_events; ++i) {
      const Event e = stream.next();
      keys[i] = e.key;
      times[i] = e.now_ns;
    }
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < block_events; ++i) present += op(keys[i], times[i]) ? 1U : 0U;
    const auto stop = std::chrono::steady_clock::now();
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(stop - start).count();
    per_op.push_back(static_cast<double>(ns) / static_cast<double>(block_events));
  }
  return summarize(per_op, present, block_events * static_cast<std::uint64_t>(repetitions));
}

}  // namespace bloomgate::bench
