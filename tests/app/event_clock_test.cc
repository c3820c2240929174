// EventClock: record time, its two clamps, the missing-timestamp fallback, and processing-time mode, all
// against an injected clock.
#include "bloomgate/app/event_clock.h"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

namespace bloomgate::app {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr std::int64_t kT0Millis = 1'700'000'000'000;
const filters::TimePoint kT0 = filters::from_epoch_millis(kT0Millis);

// A processing clock the test moves by hand.
struct ManualClock {
  filters::TimePoint now = kT0;
  EventClock::Now as_function() {
    return [this] { return now; };
  }
};

std::int64_t millis_of(filters::TimePoint t) {
  return std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count();
}

TEST(EventClock, EventModeUsesTheRecordTimestamp) {
  ManualClock processing;
  EventClock clock(config::TimeSource::kEvent, processing.as_function());
  EXPECT_EQ(clock.time_of(kT0Millis - 5'000), kT0 - seconds(5));  // an old but in-order record
  EXPECT_EQ(clock.time_of(kT0Millis - 4'000), kT0 - seconds(4));
  EXPECT_EQ(clock.time_of(kT0Millis + 30'000), kT0 + seconds(30));  // ahead, within the skew
  EXPECT_EQ(clock.counters().clamped_backwards, 0u);
  EXPECT_EQ(clock.counters().clamped_future, 0u);
  EXPECT_EQ(clock.latest(), kT0 + seconds(30));
}

TEST(EventClock, ReplayGivesTheSameTimesWhateverTheProcessingTime) {
  ManualClock first_run;
  ManualClock replay{kT0 + std::chrono::hours(5)};
  EventClock a(config::TimeSource::kEvent, first_run.as_function());
  EventClock b(config::TimeSource::kEvent, replay.as_function());
  for (const std::int64_t ts : {kT0Millis - 3, kT0Millis - 2, kT0Millis + 1}) EXPECT_EQ(a.time_of(ts), b.time_of(ts));
}

TEST(EventClock, TimeNeverRunsBackwards) {
  ManualClock processing;
  EventClock clock(config::TimeSource::kEvent, processing.as_function());
  EXPECT_EQ(clock.time_of(kT0Millis), kT0);
  EXPECT_EQ(clock.time_of(kT0Millis - 10'000), kT0);  // late record: judged at the current time
  EXPECT_EQ(clock.time_of(kT0Millis), kT0);           // equal is not a clamp
  EXPECT_EQ(clock.time_of(kT0Millis + 1), kT0 + milliseconds(1));
  EXPECT_EQ(clock.time_of(0), kT0 + milliseconds(1));
  EXPECT_EQ(clock.counters().clamped_backwards, 2u);
  EXPECT_EQ(clock.counters().clamped_future, 0u);
}

TEST(EventClock, FarFutureIsCappedAtProcessingTimePlusSkew) {
  ManualClock processing;
  EventClock clock(config::TimeSource::kEvent, processing.as_function(), seconds(10));
  const std::int64_t next_year = kT0Millis + 365LL * 24 * 3600 * 1000;
  EXPECT_EQ(clock.time_of(next_year), kT0 + seconds(10));
  EXPECT_EQ(clock.counters().clamped_future, 1u);
  // The cap follows processing time, and the capped time still counts as the latest one.
  processing.now += seconds(1);
  EXPECT_EQ(clock.time_of(kT0Millis + 5'000), kT0 + seconds(10));
  EXPECT_EQ(clock.counters().clamped_backwards, 1u);
  EXPECT_EQ(clock.time_of(next_year), kT0 + seconds(11));
  EXPECT_EQ(clock.counters().clamped_future, 2u);
}

TEST(EventClock, TimestampExactlyAtTheCapIsNotClamped) {
  ManualClock processing;
  EventClock clock(config::TimeSource::kEvent, processing.as_function(), seconds(10));
  EXPECT_EQ(clock.time_of(kT0Millis + 10'000), kT0 + seconds(10));
  EXPECT_EQ(clock.counters().clamped_future, 0u);
  EXPECT_EQ(clock.time_of(kT0Millis + 10'001), kT0 + seconds(10));
  EXPECT_EQ(clock.counters().clamped_future, 1u);
}

TEST(EventClock, CapIsExactForSubMillisecondProcessingTime) {
  ManualClock processing{kT0 + std::chrono::microseconds(500)};
  EventClock clock(config::TimeSource::kEvent, processing.as_function(), filters::Duration::zero());
  EXPECT_EQ(clock.time_of(kT0Millis), kT0);  // 0.5 ms before the cap
  EXPECT_EQ(clock.time_of(kT0Millis + 1), kT0 + std::chrono::microseconds(500));  // 0.5 ms after it
  EXPECT_EQ(clock.counters().clamped_future, 1u);
}

TEST(EventClock, LargestTimestampDoesNotOverflow) {
  ManualClock processing;
  EventClock clock(config::TimeSource::kEvent, processing.as_function());
  EXPECT_EQ(clock.time_of(std::numeric_limits<std::int64_t>::max()), kT0 + EventClock::kDefaultMaxFutureSkew);
  EXPECT_EQ(clock.counters().clamped_future, 1u);
}

TEST(EventClock, HugeSkewSaturatesInsteadOfWrapping) {
  ManualClock processing;
  EventClock clock(config::TimeSource::kEvent, processing.as_function(), filters::Duration::max());
  EXPECT_EQ(clock.time_of(kT0Millis + 1), kT0 + milliseconds(1));
  EXPECT_EQ(clock.counters().clamped_future, 0u);
}

TEST(EventClock, MissingTimestampFallsBackToProcessingTime) {
  ManualClock processing;
  EventClock clock(config::TimeSource::kEvent, processing.as_function());
  EXPECT_EQ(clock.time_of(EventClock::kNoTimestamp), kT0);
  processing.now += seconds(3);
  EXPECT_EQ(clock.time_of(-42), kT0 + seconds(3));  // any negative value is "none"
  EXPECT_EQ(clock.counters().missing_timestamp, 2u);
  EXPECT_EQ(clock.counters().clamped_backwards, 0u);
}

TEST(EventClock, MissingTimestampFallbackIsStillMonotonic) {
  ManualClock processing;
  EventClock clock(config::TimeSource::kEvent, processing.as_function());
  EXPECT_EQ(clock.time_of(kT0Millis + 20'000), kT0 + seconds(20));  // a producer slightly ahead
  EXPECT_EQ(clock.time_of(EventClock::kNoTimestamp), kT0 + seconds(20));
  EXPECT_EQ(clock.counters().missing_timestamp, 1u);
  EXPECT_EQ(clock.counters().clamped_backwards, 1u);
}

TEST(EventClock, ProcessingModeUsesTheInjectedClockAndIgnoresTimestamps) {
  ManualClock processing;
  EventClock clock(config::TimeSource::kProcessing, processing.as_function());
  EXPECT_EQ(clock.time_of(kT0Millis - 999'999), kT0);
  processing.now += milliseconds(250);
  EXPECT_EQ(clock.time_of(std::numeric_limits<std::int64_t>::max()), kT0 + milliseconds(250));
  EXPECT_EQ(clock.time_of(EventClock::kNoTimestamp), kT0 + milliseconds(250));
  EXPECT_EQ(clock.counters().clamped_future, 0u);
  EXPECT_EQ(clock.counters().missing_timestamp, 0u);
}

TEST(EventClock, ProcessingModeSurvivesTheWallClockSteppingBack) {
  ManualClock processing;
  EventClock clock(config::TimeSource::kProcessing, processing.as_function());
  EXPECT_EQ(clock.time_of(0), kT0);
  processing.now -= seconds(2);  // NTP step
  EXPECT_EQ(clock.time_of(0), kT0);
  EXPECT_EQ(clock.counters().clamped_backwards, 1u);
  processing.now += seconds(3);
  EXPECT_EQ(clock.time_of(0), kT0 + seconds(1));
}

TEST(EventClock, AdvanceToSetsAFloorAfterRestore) {
  ManualClock processing;
  EventClock clock(config::TimeSource::kEvent, processing.as_function());
  EXPECT_EQ(clock.latest(), std::nullopt);
  clock.advance_to(kT0 - seconds(1));  // the restored filter's latest time
  EXPECT_EQ(clock.time_of(kT0Millis - 2'000), kT0 - seconds(1));
  clock.advance_to(kT0 - seconds(5));  // an earlier floor changes nothing
  EXPECT_EQ(clock.latest(), kT0 - seconds(1));
  EXPECT_EQ(millis_of(clock.time_of(kT0Millis)), kT0Millis);
}

TEST(EventClock, SkewDefaultsToOneMinute) {
  ManualClock processing;
  EventClock clock(config::TimeSource::kEvent, processing.as_function());
  EXPECT_EQ(clock.max_future_skew(), minutes(1));
  EXPECT_EQ(clock.time_of(kT0Millis + 60'000), kT0 + minutes(1));
  EXPECT_EQ(clock.counters().clamped_future, 0u);
  EXPECT_EQ(clock.time_of(kT0Millis + 60'001), kT0 + minutes(1));
  EXPECT_EQ(clock.counters().clamped_future, 1u);
}

TEST(EventClock, RejectsAMissingClockAndANegativeSkew) {
  ManualClock processing;
  EXPECT_THROW(EventClock(config::TimeSource::kEvent, EventClock::Now{}), std::invalid_argument);
  EXPECT_THROW(EventClock(config::TimeSource::kEvent, processing.as_function(), -seconds(1)), std::invalid_argument);
  EXPECT_NO_THROW(EventClock(config::TimeSource::kEvent, processing.as_function(), filters::Duration::zero()));
}

}  // namespace
}  // namespace bloomgate::app
