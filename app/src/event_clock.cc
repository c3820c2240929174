// File: event_clock.cc
#include "bloomgate/app/event_clock.h"

#include <limits>
#include <stdexcept>
#include <utility>

namespace bloomgate::app {
namespace {

constexpr std::int64_t kNanosPerMilli = 1'000'000;

// a + b for b >= 0, stopping at the largest TimePoint rather than wrapping around.
filters::TimePoint saturating_add(filters::TimePoint a, filters::Duration b) {
  const std::int64_t limit = std::numeric_limits<std::int64_t>::max();
  const std::int64_t a_ns = filters::to_epoch_nanos(a);
  if (a_ns > limit - b.count()) return filters::from_epoch_nanos(limit);
  return a + b;
}

// The largest whole millisecond not after `t`, so "timestamp_ms > floor_millis(t)" is exactly
// "timestamp_ms * 1e6 > t" without multiplying a producer's timestamp, which could overflow.
std::int64_t floor_millis(filters::TimePoint t) {
  const std::int64_t ns = filters::to_epoch_nanos(t);
  std::int64_t ms = ns / kNanosPerMilli;
  if (ns % kNanosPerMilli < 0) --ms;
  return ms;
}

}  // namespace

EventClock::EventClock(config::TimeSource source, Now now, filters::Duration max_future_skew)
    : source_(source), now_(std::move(now)), max_future_skew_(max_future_skew) {
  if (!now_) throw std::invalid_argument("EventClock needs a processing-time source");
  if (max_future_skew_ < filters::Duration::zero()) {
    throw std::invalid_argument("EventClock's max_future_skew must not be negative");
  }
}

filters::TimePoint EventClock::time_of(std::int64_t record_timestamp_ms) {
  const filters::TimePoint processing_now = now_();
  filters::TimePoint t =
      source_ == config::TimeSource::kEvent ? event_time(record_timestamp_ms, processing_now) : processing_now;
  if (latest_ && t < *latest_) {
    t = *latest_;
    ++counters_.clamped_backwards;
  }
  latest_ = t;
  return t;
}

filters::TimePoint EventClock::event_time(std::int64_t record_timestamp_ms, filters::TimePoint processing_now) {
  if (record_timestamp_ms < 0) {
    ++counters_.missing_timestamp;
    return processing_now;
  }
  const filters::TimePoint cap = saturating_add(processing_now, max_future_skew_);
  if (record_timestamp_ms > floor_millis(cap)) {
    ++counters_.clamped_future;
    return cap;
  }
  return filters::from_epoch_millis(record_timestamp_ms);
}

void EventClock::advance_to(filters::TimePoint floor) {
  if (!latest_ || *latest_ < floor) latest_ = floor;
}

}  // namespace bloomgate::app
