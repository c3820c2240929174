// File: time.h
//
// Time as the filters see it: an absolute instant with nanosecond resolution, always passed in by the
// caller. No filter reads a clock of its own, so replays are deterministic and tests drive time directly.
#pragma once

#include <chrono>
#include <cstdint>

namespace bloomgate::filters {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::time_point<std::chrono::system_clock, Duration>;

// Nanoseconds since the Unix epoch: the representation written to disk.
inline std::int64_t to_epoch_nanos(TimePoint t) { return t.time_since_epoch().count(); }
inline TimePoint from_epoch_nanos(std::int64_t ns) { return TimePoint{Duration{ns}}; }
inline TimePoint from_epoch_millis(std::int64_t ms) {
  return TimePoint{std::chrono::duration_cast<Duration>(std::chrono::milliseconds{ms})};
}

}  // namespace bloomgate::filters
