// File: event_clock.h
//
// The time a partition's filter is asked with, for each event. By default it is the record's own
// timestamp, so that replaying a partition (after a crash, or to rebuild state) asks the filter exactly
// the same questions as the first run did. Record timestamps are written by producers, though, so two
// guards keep a bad one from harming the filter:
//   - time never runs backwards: a timestamp earlier than the latest time handed out is raised to it
//     (a late event is judged at the partition's current time, never rewinds the filter's slices);
//   - a far-future timestamp is capped at processing time + max_future_skew. Without the cap one event
//     stamped next year would move the filter's time a year ahead and expire every key in it at once;
//     with it, the worst a bad clock can do is age the filter by max_future_skew. The default is one
//     minute: wider than normal clock drift between producers and this service, narrow against a TTL.
// A record without a timestamp (librdkafka reports -1; any negative value is treated alike) is stamped
// with processing time. With TimeSource::kProcessing every event gets processing time; it is still kept
// monotonic, because the wall clock can step backwards (NTP).
//
// Processing time comes only from the injected `now` function, never from a clock read here, so tests
// drive time directly. Not thread-safe: one clock per partition worker, next to that partition's filter.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "bloomgate/config/config.h"
#include "bloomgate/filters/time.h"

namespace bloomgate::app {

// Cumulative counts since construction, for metrics.
struct EventClockCounters {
  std::uint64_t clamped_backwards = 0;  // time raised to the latest time already handed out
  std::uint64_t clamped_future = 0;     // record timestamp beyond processing time + max_future_skew
  std::uint64_t missing_timestamp = 0;  // no record timestamp: processing time used (kEvent only)
};

class EventClock {
 public:
  using Now = std::function<filters::TimePoint()>;

  static constexpr filters::Duration kDefaultMaxFutureSkew = std::chrono::minutes(1);
  static constexpr std::int64_t kNoTimestamp = -1;  // librdkafka's value for "no timestamp"

  // Throws std::invalid_argument when `now` is empty or max_future_skew is negative.
  EventClock(config::TimeSource source, Now now, filters::Duration max_future_skew = kDefaultMaxFutureSkew);

  // The filter time for a record with this timestamp (milliseconds since the Unix epoch, as Kafka has it).
  // kProcessing ignores the timestamp. Never earlier than any time returned before.
  filters::TimePoint time_of(std::int64_t record_timestamp_ms);

  // Never hand out a time earlier than `floor`: after restoring a partition's filter, pass its latest
  // time so that a restart does not run time backwards either. An earlier floor changes nothing.
  void advance_to(filters::TimePoint floor);

  // The latest time handed out (or floor set); nullopt before the first.
  std::optional<filters::TimePoint> latest() const { return latest_; }
  const EventClockCounters& counters() const { return counters_; }
  filters::Duration max_future_skew() const { return max_future_skew_; }

 private:
  filters::TimePoint event_time(std::int64_t record_timestamp_ms, filters::TimePoint processing_now);

  config::TimeSource source_;
  Now now_;
  filters::Duration max_future_skew_;
  std::optional<filters::TimePoint> latest_;
  EventClockCounters counters_;
};

}  // namespace bloomgate::app
