// One partition's verdicts: forward, duplicate or dead-letter, with event time and processing time.
#include "bloomgate/app/partition_deduplicator.h"

#include <gtest/gtest.h>

namespace bloomgate::app {
namespace {

using namespace std::chrono_literals;

const std::int64_t kT0 = 1'700'000'000'000;  // ms since the epoch

config::PipelineSettings json_pipeline() {
  config::PipelineSettings p;
  p.name = "orders";
  p.inputs = {"orders"};
  p.output = "orders-unique";
  p.key = config::KeySettings(config::KeySource::kJson, "/order_id", "", true);
  p.ttl = 10min;
  p.filter.expected_per_ttl = 10'000;
  return p;
}

struct Fixture {
  explicit Fixture(config::PipelineSettings p = json_pipeline())
      : dedup(p, [this] { return processing_now; }) {}
  // Processing time follows the stream (a live consumer reads records moments after they are written),
  // unless a test holds it.
  Outcome decide(std::string_view value, std::int64_t ts_ms) {
    if (follow_stream) processing_now = std::max(processing_now, filters::from_epoch_millis(ts_ms));
    return dedup.decide(EventView{std::nullopt, value, {}}, ts_ms).outcome;
  }
  bool follow_stream = true;
  filters::TimePoint processing_now = filters::from_epoch_millis(kT0);
  PartitionDeduplicator dedup;
};

TEST(PartitionDeduplicator, ForwardsNewKeysAndDropsRepeatsWithinTheTtl) {
  Fixture f;
  EXPECT_EQ(f.decide(R"({"order_id": "a"})", kT0), Outcome::kForward);
  EXPECT_EQ(f.decide(R"({"order_id": "b"})", kT0 + 1), Outcome::kForward);
  EXPECT_EQ(f.decide(R"({"order_id": "a", "retry": 1})", kT0 + 9 * 60'000), Outcome::kDuplicate);
  // Past the TTL: new again. (A key lives until its generation's last insertion plus the TTL, here "b"
  // at kT0 + 1 ms: the time-limited filter's documented slack.)
  EXPECT_EQ(f.decide(R"({"order_id": "a"})", kT0 + 10 * 60'000 + 2), Outcome::kForward);
  EXPECT_EQ(f.dedup.counters().forwarded, 3U);
  EXPECT_EQ(f.dedup.counters().duplicates, 1U);
}

// An event too large to forward (output_router.h) is a dead letter before the filter is asked: a repeat
// of its key that can be forwarded is new. An event that cannot be keyed keeps its own reason.
TEST(PartitionDeduplicator, AnUnforwardableEventIsADeadLetterWhoseKeyIsNotRemembered) {
  Fixture f;
  const Rejection too_large{RejectionReason::kRecordTooLarge, "over the limit"};
  const Verdict rejected = f.dedup.decide(EventView{std::nullopt, R"({"order_id": "a"})", {}}, kT0, &too_large);
  EXPECT_EQ(rejected.outcome, Outcome::kDeadLetter);
  ASSERT_TRUE(rejected.rejection);
  EXPECT_EQ(reason_name(rejected.rejection->reason), "record_too_large");
  EXPECT_EQ(f.decide(R"({"order_id": "a"})", kT0 + 1), Outcome::kForward) << "its key was not remembered";
  const Verdict unkeyable = f.dedup.decide(EventView{std::nullopt, R"({"id": 1})", {}}, kT0 + 2, &too_large);
  EXPECT_EQ(reason_name(unkeyable.rejection->reason), "missing_field");
}

TEST(PartitionDeduplicator, UnkeyableEventsGoToTheDeadLetterTopicWithTheirReason) {
  Fixture f;
  const Verdict missing = f.dedup.decide(EventView{std::nullopt, R"({"id": 1})", {}}, kT0);
  EXPECT_EQ(missing.outcome, Outcome::kDeadLetter);
  ASSERT_TRUE(missing.rejection);
  EXPECT_EQ(reason_name(missing.rejection->reason), "missing_field");
  const Verdict malformed = f.dedup.decide(EventView{std::nullopt, R"({"order_id": "a")", {}}, kT0);
  EXPECT_EQ(reason_name(malformed.rejection->reason), "malformed_json");
  EXPECT_EQ(f.dedup.counters().dead_lettered, 2U);
  EXPECT_EQ(f.dedup.counters().forwarded, 0U) << "a rejected event never reaches the filter";
}

TEST(PartitionDeduplicator, RefreshKeepsARepeatingKeyAlive) {
  config::PipelineSettings p = json_pipeline();
  p.refresh_on_duplicate = true;
  Fixture f(p);
  EXPECT_EQ(f.decide(R"({"order_id": "a"})", kT0), Outcome::kForward);
  EXPECT_EQ(f.decide(R"({"order_id": "a"})", kT0 + 9 * 60'000), Outcome::kDuplicate);
  EXPECT_EQ(f.decide(R"({"order_id": "a"})", kT0 + 18 * 60'000), Outcome::kDuplicate)
      << "nine minutes after the last sighting";
}

TEST(PartitionDeduplicator, ProcessingTimeIgnoresRecordTimestamps) {
  config::PipelineSettings p = json_pipeline();
  p.time = config::TimeSource::kProcessing;
  Fixture f(p);
  f.follow_stream = false;
  EXPECT_EQ(f.decide(R"({"order_id": "a"})", kT0 + 3'600'000), Outcome::kForward);
  f.processing_now += 11min;
  EXPECT_EQ(f.decide(R"({"order_id": "a"})", kT0), Outcome::kForward) << "eleven processing minutes later";
}

TEST(PartitionDeduplicator, AFarFutureTimestampCannotExpireTheFilter) {
  Fixture f;
  f.follow_stream = false;
  EXPECT_EQ(f.decide(R"({"order_id": "a"})", kT0), Outcome::kForward);
  // A record stamped a day ahead is capped near processing time, so "a" is still remembered.
  EXPECT_EQ(f.decide(R"({"order_id": "z"})", kT0 + 86'400'000), Outcome::kForward);
  EXPECT_EQ(f.decide(R"({"order_id": "a"})", kT0 + 1), Outcome::kDuplicate);
  EXPECT_EQ(f.dedup.clock_counters().clamped_future, 1U);
}

TEST(PartitionDeduplicator, FilterOptionsFollowThePipeline) {
  config::PipelineSettings p = json_pipeline();
  p.filter.type = "age_partitioned";
  p.filter.error_rate = 0.01;
  p.filter.window = 5000;
  const filters::FilterOptions o = filter_options_for(p);
  EXPECT_EQ(o.type, filters::FilterType::kAgePartitioned);
  EXPECT_EQ(o.error_rate, 0.01);
  EXPECT_EQ(o.window, 5000U);
  EXPECT_EQ(o.ttl, 10min);
  p.filter.type = "cuckoo";
  EXPECT_THROW(filter_options_for(p), std::invalid_argument);
}

// A checkpoint's filter and time, restored: the keys are still there, and time does not run backwards.
TEST(PartitionDeduplicator, RestoredFromACheckpointKeepsItsKeysAndItsTime) {
  Fixture before;
  EXPECT_EQ(before.decide(R"({"order_id": "a"})", kT0), Outcome::kForward);
  EXPECT_EQ(before.decide(R"({"order_id": "b"})", kT0 + 60'000), Outcome::kForward);
  const filters::FilterImage image = before.dedup.filter().image(filters::ImageScope::kFull);
  const auto lookup = [&image](std::uint64_t id) -> std::optional<std::string> {
    for (const auto& slice : image.slices) {
      if (slice.id == id) return slice.record;
    }
    return std::nullopt;
  };
  const filters::TimePoint checkpoint_time = before.dedup.filter_time(filters::TimePoint{});
  EXPECT_EQ(checkpoint_time, filters::from_epoch_millis(kT0 + 60'000));

  filters::TimePoint processing_now = filters::from_epoch_millis(kT0);
  PartitionDeduplicator after(json_pipeline(), [&] { return processing_now; }, filters::restore(image.meta, lookup),
                              checkpoint_time);
  EXPECT_TRUE(PartitionDeduplicator::matches_settings(after.filter(), json_pipeline()));
  EXPECT_EQ(after.filter_time(filters::TimePoint{}), checkpoint_time) << "the clock starts at the checkpoint";
  // An event stamped before the checkpoint is judged at the checkpoint's time, not earlier.
  const Verdict repeat = after.decide(EventView{std::nullopt, R"({"order_id": "a"})", {}}, kT0 - 1'000);
  EXPECT_EQ(repeat.outcome, Outcome::kDuplicate);
  EXPECT_EQ(repeat.time, checkpoint_time);
  EXPECT_EQ(after.decide(EventView{std::nullopt, R"({"order_id": "c"})", {}}, kT0 + 61'000).outcome, Outcome::kForward);

  config::PipelineSettings other = json_pipeline();
  other.filter.error_rate = 1e-5;
  EXPECT_FALSE(PartitionDeduplicator::matches_settings(after.filter(), other)) << "other filter settings";
  EXPECT_THROW(PartitionDeduplicator(json_pipeline(), [] { return filters::TimePoint{}; }, nullptr, checkpoint_time),
               std::invalid_argument);
}

// What the filters refuse is a configuration error with file, line, column and key (config::PipelineCheck),
// exit 2 at `validate` and at `run`, not a bare std::bad_alloc or an unlocated message once running.
std::string load_error(const std::string& filter_line) {
  const std::string yaml =
      "kafka: {brokers: k:9092}\n"
      "pipelines:\n"
      "  - name: a\n"
      "    input: [x]\n"
      "    output: y\n"
      "    key: {from: value}\n"
      "    ttl: 1m\n" + filter_line;
  try {
    config::parse_config(yaml, "bloomgate.yaml", config::SecretSources{}, filter_problem);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(FilterProblem, WhatTheFiltersRefuseNamesTheKeyLineAndColumn) {
  EXPECT_EQ(load_error("    filter: {error_rate: 1e-300}\n"),
            "bloomgate.yaml:8:26: pipelines[0].filter.error_rate: below 1e-12 is not supported, got 1e-300");
  EXPECT_EQ(load_error("    filter: {expected_per_ttl: 18000000000000000000}\n"),
            "bloomgate.yaml:8:32: pipelines[0].filter.expected_per_ttl: 18000000000000000000 keys need 89 GiB of "
            "filter memory (time_limited, error_rate 0.001, level 5: 89 slices), more than the 16 GiB a filter may take");
  EXPECT_EQ(load_error("    filter: {type: age_partitioned, window: 100000000000}\n"),
            "bloomgate.yaml:8:45: pipelines[0].filter.window: 100000000000 keys need 303 GiB of filter memory "
            "(age_partitioned, error_rate 0.001, level 5: 89 slices), more than the 16 GiB a filter may take");
  EXPECT_EQ(load_error("    filter: {expected_per_ttl: 2000000000}\n"), "no error") << "6.06 GiB: under the cap";
}

}  // namespace
}  // namespace bloomgate::app
