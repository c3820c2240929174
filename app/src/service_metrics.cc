#include "bloomgate/app/service_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <vector>

#include "bloomgate/app/build_info.h"

namespace bloomgate::app {
namespace {

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Labels;

// Counters only go up: add what the snapshot has beyond what was published before.
void advance(Counter& counter, double value) {
  const double delta = value - counter.Value();
  if (delta > 0) counter.Increment(delta);
}

void advance(Counter& counter, std::uint64_t value) { advance(counter, static_cast<double>(value)); }

// A histogram only goes up too: observe what `latest` counted beyond `published`, then remember it.
template <std::size_t Bounds>
void publish_increments(prometheus::Histogram& histogram, const BucketCounts<Bounds>& latest,
                        BucketCounts<Bounds>& published) {
  std::vector<double> increments(latest.counts.size());
  bool any = false;
  for (std::size_t i = 0; i < latest.counts.size(); ++i) {
    increments[i] = static_cast<double>(latest.counts[i] - published.counts[i]);
    any = any || increments[i] > 0;
  }
  if (any) histogram.ObserveMultiple(increments, latest.sum - published.sum);
  published = latest;
}

// The family `builder` (prometheus::BuildCounter() and the like) registers in `registry` under `name`.
template <typename Builder>
auto& family(Builder builder, prometheus::Registry& registry, const char* name, const char* help) {
  return builder.Name(name).Help(help).Register(registry);
}

// The per-partition series, one row each: the counters (service.h's BLOOMGATE_PARTITION_COUNTERS) and the
// gauges (below). The events by outcome, the dead letters by reason and the duplicates' ages have labels or
// buckets of their own (PartitionSeries).
struct PartitionCounter {
  const char* name;
  const char* help;
  std::uint64_t PartitionReport::*field;
};

const PartitionCounter kPartitionCounters[] = {
#define BLOOMGATE_COUNTER_ROW(field, name, help) {name, help, &PartitionReport::field},
    BLOOMGATE_PARTITION_COUNTERS(BLOOMGATE_COUNTER_ROW)
#undef BLOOMGATE_COUNTER_ROW
};

// A gauge per partition: a new one is one row here.
struct PartitionGauge {
  const char* name;
  const char* help;
  double (*value)(const PartitionReport&);
};

double lag_of(const PartitionReport& p) {
  const bool known = p.high_watermark >= 0 && p.next_offset >= 0;
  return known ? static_cast<double>(std::max<std::int64_t>(p.high_watermark - p.next_offset, 0)) : 0;
}

using Report = const PartitionReport&;
const PartitionGauge kPartitionGauges[] = {
    {"bloomgate_filter_slices", "Slices in the partition's filter",
     [](Report p) { return static_cast<double>(p.filter.slices); }},
    {"bloomgate_filter_cells", "Cells (bits) of the partition's filter; promtool's lint forbids the unit name bits",
     [](Report p) { return static_cast<double>(p.filter.bits); }},
    {"bloomgate_filter_memory_bytes", "Every byte the partition's filter holds: cells, padding, bookkeeping",
     [](Report p) { return static_cast<double>(p.filter.memory_bytes); }},
    {"bloomgate_filter_elements", "Distinct keys the partition's filter holds within its window",
     [](Report p) { return static_cast<double>(p.filter.elements); }},
    {"bloomgate_filter_cells_per_element", "Filter cells (bits) alone per key in the window, no padding",
     [](Report p) { return p.filter.cell_bits_per_element; }},
    {"bloomgate_filter_memory_bytes_per_element", "The filter's whole memory per key in the window",
     [](Report p) { return p.filter.bits_per_element / 8; }},
    {"bloomgate_filter_estimated_fpr", "False-positive rate estimated from the live slices' fill",
     [](Report p) { return p.filter.estimated_fpr; }},
    {"bloomgate_filter_target_fpr", "The configured false-positive rate", [](Report p) { return p.filter.target_fpr; }},
    {"bloomgate_filter_effective_window_seconds",
     "Age of the oldest slice still valid (compare with bloomgate_pipeline_ttl_seconds)",
     [](Report p) {
       const auto& window = p.filter.effective_window;
       return window ? std::chrono::duration<double>(*window).count() : 0.0;
     }},
    {"bloomgate_partition_assigned", "1 while this member owns the input partition",
     [](Report p) { return p.assigned ? 1.0 : 0.0; }},
    {"bloomgate_partition_next_offset", "The next input offset to process",
     [](Report p) { return static_cast<double>(p.next_offset); }},
    {"bloomgate_filter_observed_fpr", "False positives among the probe keys of the last 100 samples",
     [](Report p) { return p.observed_fpr; }},
    {"bloomgate_consumer_lag_records", "High watermark minus the next offset to process", lag_of},
    {"bloomgate_checkpoint_duration_seconds", "How long the partition's last checkpoint took to write and sync",
     [](Report p) { return p.last_checkpoint_seconds; }},
    {"bloomgate_restored_partitions", "1 when the partition's current (or last) assignment started from its checkpoint",
     [](Report p) { return p.restored ? 1.0 : 0.0; }},
    {"bloomgate_restore_duration_seconds",
     "How long the partition's last restore (checkpoint read, filter built) took",
     [](Report p) { return p.last_restore_seconds; }},
    {"bloomgate_rebuilding", "1 while the partition's filter is being rebuilt from the input history",
     [](Report p) { return p.rebuilding ? 1.0 : 0.0; }},
    {"bloomgate_rebuild_progress_ratio",
     "Share of the input records to read that the current (or last) rebuild has read",
     [](Report p) { return p.rebuild_progress; }},
    {"bloomgate_rebuild_duration_seconds", "How long the partition's last rebuild took",
     [](Report p) { return p.last_rebuild_seconds; }},
};

}  // namespace

struct ServiceMetrics::Families {
  explicit Families(prometheus::Registry& r)
      : events(family(prometheus::BuildCounter(), r, "bloomgate_events_total",
            "Events by outcome: forwarded, duplicate (dropped or written to the duplicates topic), dead_letter")),
        dead_letters(family(prometheus::BuildCounter(), r, "bloomgate_dead_letters_total",
            "Events sent to the dead-letter topic, by reason")),
        ttl(family(prometheus::BuildGauge(), r, "bloomgate_pipeline_ttl_seconds", "The pipeline's configured TTL")),
        duplicate_age(family(prometheus::BuildHistogram(), r, "bloomgate_duplicate_age_seconds",
            "How long before a duplicate its key had been seen, from the filter slice that matched (time-limited "
            "filter only; buckets are shares of the pipeline's TTL)")),
        processing(family(prometheus::BuildHistogram(), r, "bloomgate_event_processing_seconds",
            "Time to decide one event and hand it to the producer (1 event in 64 is timed)")
                       .Add({}, prometheus::Histogram::BucketBoundaries(LatencyHistogram::kBoundsSeconds.begin(),
                                                                        LatencyHistogram::kBoundsSeconds.end()))),
        producer_queue(family(prometheus::BuildGauge(), r, "bloomgate_producer_queue_records",
            "Records produced and not yet acknowledged").Add({})),
        commits(family(prometheus::BuildCounter(), r, "bloomgate_offset_commits_total",
            "Offset commits (each after a producer flush)").Add({})),
        transactions(family(prometheus::BuildCounter(), r, "bloomgate_transactions_total",
            "exactly_once: transactions ended, by result (committed, aborted)")),
        running(family(prometheus::BuildGauge(), r, "bloomgate_running",
            "1 while the service consumes (start-up checks passed, not stopping)").Add({})),
        waiting_for_schema(family(prometheus::BuildGauge(), r, "bloomgate_partitions_waiting_for_schema",
            "Input partitions paused at a record whose schema is being fetched from the schema registry").Add({})),
        restoring(family(prometheus::BuildGauge(), r, "bloomgate_partitions_restoring",
            "Input partitions assigned here and paused while their state is restored (checkpoint, rebuild, "
            "reconciliation) on the restore thread").Add({})),
        registry_failures(family(prometheus::BuildCounter(), r, "bloomgate_schema_registry_failed_requests_total",
            "Schema registry requests that got no answer (refused, timed out, 5xx); retried with backoff").Add({})),
        registry_up(family(prometheus::BuildGauge(), r, "bloomgate_schema_registry_up",
            "0 from a failed schema registry request until one succeeds").Add({})),
        restores(family(prometheus::BuildCounter(), r, "bloomgate_restores_total",
            "Restores of the partition's filter when it was assigned, by where its state came from: local, "
            "state_topic, rebuild")),
        state_topic_read_seconds(family(prometheus::BuildCounter(), r, "bloomgate_state_topic_read_seconds_total",
            "Seconds spent reading the state topic to restore the partition")) {
    for (const PartitionCounter& c : kPartitionCounters) {
      counters.push_back(&family(prometheus::BuildCounter(), r, c.name, c.help));
    }
    for (const PartitionGauge& g : kPartitionGauges) gauges.push_back(&family(prometheus::BuildGauge(), r, g.name, g.help));
  }

  std::vector<prometheus::Family<Counter>*> counters;  // kPartitionCounters' families, in its order
  std::vector<prometheus::Family<Gauge>*> gauges;      // kPartitionGauges'
  prometheus::Family<Counter>& events;
  prometheus::Family<Counter>& dead_letters;
  prometheus::Family<Gauge>& ttl;
  prometheus::Family<prometheus::Histogram>& duplicate_age;
  prometheus::Histogram& processing;
  Gauge& producer_queue;
  Counter& commits;
  prometheus::Family<Counter>& transactions;
  Gauge& running;
  Gauge& waiting_for_schema;
  Gauge& restoring;
  Counter& registry_failures;
  Gauge& registry_up;
  prometheus::Family<Counter>& restores;
  prometheus::Family<Counter>& state_topic_read_seconds;
};

struct ServiceMetrics::PartitionSeries {
  PartitionSeries(Families& f, const Labels& labels, double ttl_seconds)
      : forwarded(f.events.Add(with(labels, "outcome", "forwarded"))),
        duplicates(f.events.Add(with(labels, "outcome", "duplicate"))),
        dead_lettered(f.events.Add(with(labels, "outcome", "dead_letter"))),
        duplicate_age(f.duplicate_age.Add(labels, age_bounds(ttl_seconds))),
        state_topic_read_seconds(f.state_topic_read_seconds.Add(labels)) {
    for (prometheus::Family<Counter>* family : f.counters) counters.push_back(&family->Add(labels));
    for (prometheus::Family<Gauge>* family : f.gauges) gauges.push_back(&family->Add(labels));
    for (std::size_t i = 0; i < kRejectionReasonCount; ++i) {
      const auto reason = reason_name(static_cast<RejectionReason>(i));
      by_reason[i] = &f.dead_letters.Add(with(labels, "reason", std::string(reason)));
    }
    for (std::size_t i = 0; i < kRestoreSourceCount; ++i) {
      const auto source = restore_source_name(static_cast<RestoreSource>(i));
      restores[i] = &f.restores.Add(with(labels, "source", std::string(source)));
    }
  }

  static prometheus::Histogram::BucketBoundaries age_bounds(double ttl_seconds) {
    prometheus::Histogram::BucketBoundaries bounds;
    for (const double share : DuplicateAgeHistogram::kTtlShares) bounds.push_back(share * ttl_seconds);
    return bounds;
  }

  static Labels with(Labels labels, const std::string& name, const std::string& value) {
    labels.emplace(name, value);
    return labels;
  }

  void update(const PartitionReport& p) {
    for (std::size_t i = 0; i < counters.size(); ++i) advance(*counters[i], p.*kPartitionCounters[i].field);
    for (std::size_t i = 0; i < gauges.size(); ++i) gauges[i]->Set(kPartitionGauges[i].value(p));
    advance(forwarded, p.counters.forwarded);
    advance(duplicates, p.counters.duplicates);
    advance(dead_lettered, p.counters.dead_lettered);
    for (std::size_t i = 0; i < kRejectionReasonCount; ++i) advance(*by_reason[i], p.dead_letters_by_reason[i]);
    publish_increments(duplicate_age, p.duplicate_ages, published_ages);
    for (std::size_t i = 0; i < kRestoreSourceCount; ++i) advance(*restores[i], p.restores_by_source[i]);
    advance(state_topic_read_seconds, p.state_topic_read_seconds);
  }

  std::vector<Counter*> counters;  // in kPartitionCounters' order
  std::vector<Gauge*> gauges;      // in kPartitionGauges' order
  Counter& forwarded;
  Counter& duplicates;
  Counter& dead_lettered;
  std::array<Counter*, kRejectionReasonCount> by_reason{};
  prometheus::Histogram& duplicate_age;
  DuplicateAgeHistogram published_ages;
  std::array<Counter*, kRestoreSourceCount> restores{};
  Counter& state_topic_read_seconds;
};

ServiceMetrics::ServiceMetrics(prometheus::Registry& registry, const config::Config& config)
    : families_(std::make_unique<Families>(registry)) {
  for (const auto& pipeline : config.pipelines) {
    const double seconds = std::chrono::duration<double>(pipeline.ttl).count();
    families_->ttl.Add({{"pipeline", pipeline.name}}).Set(seconds);
    ttl_seconds_[pipeline.name] = seconds;
  }
}

ServiceMetrics::~ServiceMetrics() = default;

ServiceMetrics::PartitionSeries& ServiceMetrics::series_for(const PartitionReport& partition) {
  auto& slot = partitions_[{partition.topic, partition.partition}];
  if (!slot) {
    const Labels labels{{"pipeline", partition.pipeline},
                        {"topic", partition.topic},
                        {"partition", std::to_string(partition.partition)}};
    slot = std::make_unique<PartitionSeries>(*families_, labels, ttl_seconds_.at(partition.pipeline));
  }
  return *slot;
}

void ServiceMetrics::update(const ServiceSnapshot& snapshot) {
  for (const auto& partition : snapshot.partitions) series_for(partition).update(partition);
  publish_increments(families_->processing, snapshot.processing_latency, published_latency_);
  families_->producer_queue.Set(snapshot.producer_queue);
  advance(families_->commits, snapshot.commits);
  if (snapshot.transactions_committed + snapshot.transactions_aborted != 0) {  // exactly_once only
    advance(families_->transactions.Add({{"result", "committed"}}), snapshot.transactions_committed);
    advance(families_->transactions.Add({{"result", "aborted"}}), snapshot.transactions_aborted);
  }
  families_->running.Set(snapshot.running ? 1 : 0);
  families_->waiting_for_schema.Set(static_cast<double>(snapshot.partitions_waiting_for_schema));
  families_->restoring.Set(static_cast<double>(snapshot.partitions_restoring));
  advance(families_->registry_failures, snapshot.schema_registry_failures);
  families_->registry_up.Set(snapshot.schema_registry_reachable ? 1 : 0);
}

ServiceEndpoints::ServiceEndpoints(SnapshotSource snapshot, const config::Config& config, const std::string& listen)
    : registry_(std::make_shared<prometheus::Registry>()), metrics_(*registry_, config) {
  connectors::register_build_info(*registry_, version(), allocator_name());
  connectors::MetricsServerOptions options;
  options.listen = listen;
  options.ready = [snapshot] { return snapshot().running; };
  options.before_scrape = [this, snapshot] { metrics_.update(snapshot()); };
  server_ = std::make_unique<connectors::MetricsServer>(registry_, std::move(options));
}

ServiceEndpoints::~ServiceEndpoints() = default;

std::string ServiceEndpoints::address() const { return server_->address(); }

}  // namespace bloomgate::app
