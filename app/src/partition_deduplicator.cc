#include "bloomgate/app/partition_deduplicator.h"

#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace bloomgate::app {

filters::FilterOptions filter_options_for(const config::PipelineSettings& pipeline) {
  const auto type = filters::parse_filter_type(pipeline.filter.type);
  if (!type) throw std::invalid_argument("unknown filter type " + pipeline.filter.type);
  filters::FilterOptions options;
  options.type = *type;
  options.error_rate = pipeline.filter.error_rate;
  options.ttl = pipeline.ttl;
  options.expected_per_ttl = pipeline.filter.expected_per_ttl;
  options.window = pipeline.filter.window;
  options.level = pipeline.filter.level;
  options.refresh_on_duplicate = pipeline.refresh_on_duplicate;
  filters::validate(options);
  return options;
}

std::optional<config::PipelineProblem> filter_problem(const config::PipelineSettings& pipeline) {
  try {
    filter_options_for(pipeline);
  } catch (const filters::OptionError& e) {
    const std::string& option = e.option();
    const std::string key = option == "ttl" ? option : "filter." + option;
    return config::PipelineProblem{key, e.problem()};
  }
  return std::nullopt;
}

std::unique_ptr<filters::Filter> make_partition_filter(const config::PipelineSettings& pipeline) {
  const filters::FilterOptions options = filter_options_for(pipeline);
  try {
    return filters::make_filter(options);
  } catch (const std::bad_alloc&) {
    const double bits = filters::sliced_creation_bits(options);
    throw std::runtime_error("pipeline " + pipeline.name + ": cannot allocate a partition's filter" +
                             (bits > 0 ? " of " + filters::format_bytes(bits / 8) : std::string()) +
                             " for filter.expected_per_ttl " + std::to_string(pipeline.filter.expected_per_ttl) +
                             ": lower it, or give the process more memory");
  }
}

PartitionDeduplicator::PartitionDeduplicator(const config::PipelineSettings& pipeline, EventClock::Now now,
                                             std::shared_ptr<SchemaCatalog> schemas)
    : extractor_(pipeline.key, pipeline.max_key_bytes, pipeline.max_value_bytes, std::move(schemas)),
      clock_(pipeline.time, std::move(now)),
      filter_(make_partition_filter(pipeline)) {}

PartitionDeduplicator::PartitionDeduplicator(const config::PipelineSettings& pipeline, EventClock::Now now,
                                             std::unique_ptr<filters::Filter> restored, filters::TimePoint filter_time,
                                             std::shared_ptr<SchemaCatalog> schemas)
    : extractor_(pipeline.key, pipeline.max_key_bytes, pipeline.max_value_bytes, std::move(schemas)),
      clock_(pipeline.time, std::move(now)),
      filter_(std::move(restored)) {
  if (!filter_) throw std::invalid_argument("PartitionDeduplicator: the restored filter is null");
  if (filter_time > filters::TimePoint{}) clock_.advance_to(filter_time);
}

bool PartitionDeduplicator::matches_settings(const filters::Filter& filter, const config::PipelineSettings& pipeline) {
  const auto fresh = make_partition_filter(pipeline);
  const filters::FilterStats want = fresh->stats(filters::TimePoint{});
  const filters::FilterStats have = filter.stats(filters::TimePoint{});
  return have.type == want.type && have.k == want.k && have.l == want.l && have.target_fpr == want.target_fpr;
}

Verdict PartitionDeduplicator::reject(Rejection rejection, std::int64_t record_timestamp_ms) {
  Verdict verdict;
  verdict.time = clock_.time_of(record_timestamp_ms);
  verdict.outcome = Outcome::kDeadLetter;
  verdict.rejection = std::move(rejection);
  ++counters_.dead_lettered;
  return verdict;
}

Verdict PartitionDeduplicator::decide(const EventView& event, std::int64_t record_timestamp_ms,
                                      const Rejection* unforwardable) {
  ExtractionResult extracted = extractor_.extract(event);
  if (extracted.is_pending()) {
    Verdict waiting;
    waiting.outcome = Outcome::kWaitForSchema;
    waiting.pending_schema = extracted.pending_schema();
    return waiting;
  }
  if (!extracted.has_key()) return reject(extracted.rejection(), record_timestamp_ms);
  if (unforwardable != nullptr) return reject(*unforwardable, record_timestamp_ms);
  Verdict verdict;
  verdict.time = clock_.time_of(record_timestamp_ms);
  const filters::Sighting sighting = filter_->test_and_insert_with_age(extracted.key().bytes(), verdict.time);
  if (sighting.present) {
    verdict.outcome = Outcome::kDuplicate;
    verdict.duplicate_age = sighting.age;
    ++counters_.duplicates;
  } else {
    ++counters_.forwarded;
  }
  return verdict;
}

}  // namespace bloomgate::app
