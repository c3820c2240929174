// File: partition_deduplicator.h
//
// What happens to one consumed event of one input partition, without any Kafka: its key is extracted
// (KeyExtractor), its time is decided (EventClock), and the partition's filter says whether the key was
// seen within the TTL. The Kafka loop turns each Verdict into a produce: forward to the output topic,
// write to the duplicates topic or drop, or send to the dead-letter topic with the reason.
//
// One instance per input (topic, partition): it owns that partition's filter, which is also what a
// checkpoint persists (filter()); after a restart it is built around the filter restored from that
// checkpoint. Thread-safety: none; one partition worker owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "bloomgate/app/event_clock.h"
#include "bloomgate/app/key_extractor.h"
#include "bloomgate/config/config.h"
#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"

namespace bloomgate::app {

// kWaitForSchema: the key needs a schema the catalog is still fetching; nothing was decided, the filter was
// not asked, and the event must be decided again later (schema_catalog.h).
enum class Outcome { kForward, kDuplicate, kDeadLetter, kWaitForSchema };

struct Verdict {
  Outcome outcome = Outcome::kForward;
  std::optional<Rejection> rejection;  // set exactly when outcome is kDeadLetter
  filters::TimePoint time{};           // the time the filter was asked with
  std::optional<filters::Duration> duplicate_age;  // a duplicate's: how long before `time` its key was seen
  std::uint32_t pending_schema = 0;                // kWaitForSchema: the schema id waited for
};

struct PartitionCounters {
  std::uint64_t forwarded = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t dead_lettered = 0;
};

// The filter a pipeline's settings describe. Throws std::invalid_argument on settings the filters reject.
filters::FilterOptions filter_options_for(const config::PipelineSettings& pipeline);

// What the filters reject in a pipeline's settings (an error rate below their floor, a filter larger than
// their cap), as the key under the pipeline and the problem: the config::PipelineCheck that `validate`
// and `run` load the configuration with, so the error names the file, line, column and key.
std::optional<config::PipelineProblem> filter_problem(const config::PipelineSettings& pipeline);

// A new filter for one of the pipeline's partitions. Throws std::runtime_error naming the pipeline, the
// memory asked and filter.expected_per_ttl when the allocation fails.
std::unique_ptr<filters::Filter> make_partition_filter(const config::PipelineSettings& pipeline);

class PartitionDeduplicator {
 public:
  // `schemas` serves keys read with a schema (avro, protobuf); null when the pipeline has none.
  PartitionDeduplicator(const config::PipelineSettings& pipeline, EventClock::Now now,
                        std::shared_ptr<SchemaCatalog> schemas = nullptr);

  // Around a filter restored from a checkpoint (filters::restore), whose present was `filter_time`: the
  // event clock starts there, so time never runs backwards across a restart (the epoch itself, a
  // checkpoint taken before any event, sets nothing). The caller checks that the
  // restored filter matches the pipeline's settings (matches_settings()). Throws std::invalid_argument on
  // a null filter.
  PartitionDeduplicator(const config::PipelineSettings& pipeline, EventClock::Now now,
                        std::unique_ptr<filters::Filter> restored, filters::TimePoint filter_time,
                        std::shared_ptr<SchemaCatalog> schemas = nullptr);

  // Whether `filter` has the type, probes per key, aged slices and target rate that the pipeline's
  // settings give a new filter: a checkpoint written under other filter settings does not. (Sizes are
  // not compared: a scalable filter grows.)
  static bool matches_settings(const filters::Filter& filter, const config::PipelineSettings& pipeline);

  // record_timestamp_ms: the record's timestamp in ms since the epoch, or -1 when it has none.
  // `unforwardable`: why the event could not be forwarded (a record too large for the output), or null.
  // It makes a keyable event a dead letter before the filter is asked, so its key is not remembered; an
  // event that cannot be keyed keeps its own reason.
  Verdict decide(const EventView& event, std::int64_t record_timestamp_ms, const Rejection* unforwardable = nullptr);

  const filters::Filter& filter() const noexcept { return *filter_; }
  filters::Filter& filter() noexcept { return *filter_; }
  const PartitionCounters& counters() const noexcept { return counters_; }
  // The filter's present: the time of the latest event decided (event time runs on the events' own
  // clock, which may be far from the wall clock), or `fallback` before the first event.
  filters::TimePoint filter_time(filters::TimePoint fallback) const { return clock_.latest().value_or(fallback); }
  const EventClockCounters& clock_counters() const noexcept { return clock_.counters(); }

 private:
  Verdict reject(Rejection rejection, std::int64_t record_timestamp_ms);

  KeyExtractor extractor_;
  EventClock clock_;
  std::unique_ptr<filters::Filter> filter_;
  PartitionCounters counters_;
};

}  // namespace bloomgate::app
