#include "bloomgate/app/service_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include <array>
#include <vector>

#include "bloomgate/app/build_info.h"

namespace bloomgate::app {
namespace {

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Labels;

// Counters only go up: add what the snapshot has beyond what was published before.
void advance(Counter& counter, std::uint64_t value) {
  const double delta = static_cast<double>(value) - counter.Value();
  if (delta > 0) counter.Increment(delta);
}

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

}  // namespace

struct ServiceMetrics::Families {
  explicit Families(prometheus::Registry& r)
      : consumed(family(prometheus::BuildCounter(), r, "bloomgate_events_consumed_total",
            "Events consumed from an input partition")),
        events(family(prometheus::BuildCounter(), r, "bloomgate_events_total",
            "Events by outcome: forwarded, duplicate (dropped or written to the duplicates topic), dead_letter")),
        dead_letters(family(prometheus::BuildCounter(), r, "bloomgate_dead_letters_total",
            "Events sent to the dead-letter topic, by reason")),
        slices(family(prometheus::BuildGauge(), r, "bloomgate_filter_slices", "Slices in the partition's filter")),
        bits(family(prometheus::BuildGauge(), r, "bloomgate_filter_cells",
            "Cells (bits) of the partition's filter; promtool's lint forbids the unit name bits")),
        memory(family(prometheus::BuildGauge(), r, "bloomgate_filter_memory_bytes",
            "Memory of the partition's filter cells")),
        elements(family(prometheus::BuildGauge(), r, "bloomgate_filter_elements",
            "Distinct keys the partition's filter holds within its window")),
        bits_per_element(family(prometheus::BuildGauge(), r, "bloomgate_filter_cells_per_element",
            "Filter cells (bits) per key in the window")),
        estimated_fpr(family(prometheus::BuildGauge(), r, "bloomgate_filter_estimated_fpr",
            "False-positive rate estimated from the live slices' fill")),
        target_fpr(family(prometheus::BuildGauge(), r, "bloomgate_filter_target_fpr",
            "The configured false-positive rate")),
        effective_window(family(prometheus::BuildGauge(), r, "bloomgate_filter_effective_window_seconds",
            "Age of the oldest slice still valid (compare with bloomgate_pipeline_ttl_seconds)")),
        ttl(family(prometheus::BuildGauge(), r, "bloomgate_pipeline_ttl_seconds", "The pipeline's configured TTL")),
        assigned(family(prometheus::BuildGauge(), r, "bloomgate_partition_assigned",
            "1 while this member owns the input partition")),
        next_offset(family(prometheus::BuildGauge(), r, "bloomgate_partition_next_offset",
            "The next input offset to process")),
        fpr_probes(family(prometheus::BuildCounter(), r, "bloomgate_filter_fpr_probes_total",
            "Random never-inserted keys asked of the filter to measure its false-positive rate")),
        fpr_probe_hits(family(prometheus::BuildCounter(), r, "bloomgate_filter_fpr_probe_hits_total",
            "Probe keys the filter reported present: false positives")),
        observed_fpr(family(prometheus::BuildGauge(), r, "bloomgate_filter_observed_fpr",
            "False positives among the probe keys of the last 100 samples")),
        lag(family(prometheus::BuildGauge(), r, "bloomgate_consumer_lag_records",
            "High watermark minus the next offset to process")),
        checkpoints(family(prometheus::BuildCounter(), r, "bloomgate_checkpoints_total",
            "Checkpoints of the partition's filter and offsets written to the state store")),
        checkpoint_bytes(family(prometheus::BuildCounter(), r, "bloomgate_checkpoint_bytes_total",
            "Bytes of the checkpoints written (RocksDB WriteBatch sizes)")),
        checkpoint_duration(family(prometheus::BuildGauge(), r, "bloomgate_checkpoint_duration_seconds",
            "How long the partition's last checkpoint took to write and sync")),
        checkpoint_failures(family(prometheus::BuildCounter(), r, "bloomgate_checkpoint_failures_total",
            "Checkpoints the state store refused (full disk, I/O error); the offset was not committed")),
        restored(family(prometheus::BuildGauge(), r, "bloomgate_restored_partitions",
            "1 when the partition's current (or last) assignment started from its checkpoint")),
        reconciled(family(prometheus::BuildCounter(), r, "bloomgate_reconciled_events_total",
            "Replayed events not produced again: the output already held them (restore)")),
        state_corruptions(family(prometheus::BuildCounter(), r, "bloomgate_state_corruptions_total",
            "Times the partition's stored state was found corrupt and dropped")),
        restores_behind_commit(family(prometheus::BuildCounter(), r, "bloomgate_restores_behind_commit_total",
            "Restores from a checkpoint older than the group's committed offset (replayed and reconciled)")),
        restore_duration(family(prometheus::BuildGauge(), r, "bloomgate_restore_duration_seconds",
            "How long the partition's last restore (checkpoint read, filter built) took")),
        rebuilding(family(prometheus::BuildGauge(), r, "bloomgate_rebuilding",
            "1 while the partition's filter is being rebuilt from the input history")),
        rebuild_progress(family(prometheus::BuildGauge(), r, "bloomgate_rebuild_progress_ratio",
            "Share of the input records to read that the current (or last) rebuild has read")),
        rebuilds(family(prometheus::BuildCounter(), r, "bloomgate_rebuilds_total",
            "Rebuilds of the partition's filter from the input history, finished")),
        rebuild_events(family(prometheus::BuildCounter(), r, "bloomgate_rebuild_events_total",
            "Input records inserted into the filter by rebuilds (nothing was produced)")),
        rebuild_duration(family(prometheus::BuildGauge(), r, "bloomgate_rebuild_duration_seconds",
            "How long the partition's last rebuild took")),
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
        registry_failures(family(prometheus::BuildCounter(), r, "bloomgate_schema_registry_failed_requests_total",
            "Schema registry requests that got no answer (refused, timed out, 5xx); retried with backoff").Add({})),
        registry_up(family(prometheus::BuildGauge(), r, "bloomgate_schema_registry_up",
            "0 from a failed schema registry request until one succeeds").Add({})) {}

  prometheus::Family<Counter>& consumed;
  prometheus::Family<Counter>& events;
  prometheus::Family<Counter>& dead_letters;
  prometheus::Family<Gauge>& slices;
  prometheus::Family<Gauge>& bits;
  prometheus::Family<Gauge>& memory;
  prometheus::Family<Gauge>& elements;
  prometheus::Family<Gauge>& bits_per_element;
  prometheus::Family<Gauge>& estimated_fpr;
  prometheus::Family<Gauge>& target_fpr;
  prometheus::Family<Gauge>& effective_window;
  prometheus::Family<Gauge>& ttl;
  prometheus::Family<Gauge>& assigned;
  prometheus::Family<Gauge>& next_offset;
  prometheus::Family<Counter>& fpr_probes;
  prometheus::Family<Counter>& fpr_probe_hits;
  prometheus::Family<Gauge>& observed_fpr;
  prometheus::Family<Gauge>& lag;
  prometheus::Family<Counter>& checkpoints;
  prometheus::Family<Counter>& checkpoint_bytes;
  prometheus::Family<Gauge>& checkpoint_duration;
  prometheus::Family<Counter>& checkpoint_failures;
  prometheus::Family<Gauge>& restored;
  prometheus::Family<Counter>& reconciled;
  prometheus::Family<Counter>& state_corruptions;
  prometheus::Family<Counter>& restores_behind_commit;
  prometheus::Family<Gauge>& restore_duration;
  prometheus::Family<Gauge>& rebuilding;
  prometheus::Family<Gauge>& rebuild_progress;
  prometheus::Family<Counter>& rebuilds;
  prometheus::Family<Counter>& rebuild_events;
  prometheus::Family<Gauge>& rebuild_duration;
  prometheus::Family<prometheus::Histogram>& duplicate_age;
  prometheus::Histogram& processing;
  Gauge& producer_queue;
  Counter& commits;
  prometheus::Family<Counter>& transactions;
  Gauge& running;
  Gauge& waiting_for_schema;
  Counter& registry_failures;
  Gauge& registry_up;
};

struct ServiceMetrics::PartitionSeries {
  PartitionSeries(Families& f, const Labels& labels, double ttl_seconds)
      : consumed(f.consumed.Add(labels)),
        forwarded(f.events.Add(with(labels, "outcome", "forwarded"))),
        duplicates(f.events.Add(with(labels, "outcome", "duplicate"))),
        dead_lettered(f.events.Add(with(labels, "outcome", "dead_letter"))),
        slices(f.slices.Add(labels)),
        bits(f.bits.Add(labels)),
        memory(f.memory.Add(labels)),
        elements(f.elements.Add(labels)),
        bits_per_element(f.bits_per_element.Add(labels)),
        estimated_fpr(f.estimated_fpr.Add(labels)),
        target_fpr(f.target_fpr.Add(labels)),
        effective_window(f.effective_window.Add(labels)),
        assigned(f.assigned.Add(labels)),
        next_offset(f.next_offset.Add(labels)),
        fpr_probes(f.fpr_probes.Add(labels)),
        fpr_probe_hits(f.fpr_probe_hits.Add(labels)),
        observed_fpr(f.observed_fpr.Add(labels)),
        lag(f.lag.Add(labels)),
        checkpoints(f.checkpoints.Add(labels)),
        checkpoint_bytes(f.checkpoint_bytes.Add(labels)),
        checkpoint_duration(f.checkpoint_duration.Add(labels)),
        checkpoint_failures(f.checkpoint_failures.Add(labels)),
        restored(f.restored.Add(labels)),
        reconciled(f.reconciled.Add(labels)),
        state_corruptions(f.state_corruptions.Add(labels)),
        restores_behind_commit(f.restores_behind_commit.Add(labels)),
        restore_duration(f.restore_duration.Add(labels)),
        rebuilding(f.rebuilding.Add(labels)),
        rebuild_progress(f.rebuild_progress.Add(labels)),
        rebuilds(f.rebuilds.Add(labels)),
        rebuild_events(f.rebuild_events.Add(labels)),
        rebuild_duration(f.rebuild_duration.Add(labels)),
        duplicate_age(f.duplicate_age.Add(labels, age_bounds(ttl_seconds))) {
    for (std::size_t i = 0; i < kRejectionReasonCount; ++i) {
      const auto reason = reason_name(static_cast<RejectionReason>(i));
      by_reason[i] = &f.dead_letters.Add(with(labels, "reason", std::string(reason)));
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
    advance(consumed, p.consumed);
    advance(forwarded, p.counters.forwarded);
    advance(duplicates, p.counters.duplicates);
    advance(dead_lettered, p.counters.dead_lettered);
    for (std::size_t i = 0; i < kRejectionReasonCount; ++i) advance(*by_reason[i], p.dead_letters_by_reason[i]);
    slices.Set(static_cast<double>(p.filter.slices));
    bits.Set(static_cast<double>(p.filter.bits));
    memory.Set(static_cast<double>(p.filter.bits + p.filter.padding_bits) / 8);  // line padding is memory too
    elements.Set(static_cast<double>(p.filter.elements));
    bits_per_element.Set(p.filter.bits_per_element);
    estimated_fpr.Set(p.filter.estimated_fpr);
    target_fpr.Set(p.filter.target_fpr);
    effective_window.Set(p.filter.effective_window ? std::chrono::duration<double>(*p.filter.effective_window).count() : 0);
    assigned.Set(p.assigned ? 1 : 0);
    next_offset.Set(static_cast<double>(p.next_offset));
    advance(fpr_probes, p.fpr_probes);
    advance(fpr_probe_hits, p.fpr_probe_hits);
    observed_fpr.Set(p.observed_fpr);
    const bool lag_known = p.high_watermark >= 0 && p.next_offset >= 0;
    lag.Set(lag_known ? static_cast<double>(std::max<std::int64_t>(p.high_watermark - p.next_offset, 0)) : 0);
    advance(checkpoints, p.checkpoints);
    advance(checkpoint_bytes, p.checkpoint_bytes);
    checkpoint_duration.Set(p.last_checkpoint_seconds);
    advance(checkpoint_failures, p.checkpoint_failures);
    restored.Set(p.restored ? 1 : 0);
    advance(reconciled, p.reconciled);
    advance(state_corruptions, p.state_corruptions);
    advance(restores_behind_commit, p.restores_behind_commit);
    restore_duration.Set(p.last_restore_seconds);
    rebuilding.Set(p.rebuilding ? 1 : 0);
    rebuild_progress.Set(p.rebuild_progress);
    advance(rebuilds, p.rebuilds);
    advance(rebuild_events, p.rebuild_events);
    rebuild_duration.Set(p.last_rebuild_seconds);
    publish_increments(duplicate_age, p.duplicate_ages, published_ages);
  }

  Counter& consumed;
  Counter& forwarded;
  Counter& duplicates;
  Counter& dead_lettered;
  std::array<Counter*, kRejectionReasonCount> by_reason{};
  Gauge& slices;
  Gauge& bits;
  Gauge& memory;
  Gauge& elements;
  Gauge& bits_per_element;
  Gauge& estimated_fpr;
  Gauge& target_fpr;
  Gauge& effective_window;
  Gauge& assigned;
  Gauge& next_offset;
  Counter& fpr_probes;
  Counter& fpr_probe_hits;
  Gauge& observed_fpr;
  Gauge& lag;
  Counter& checkpoints;
  Counter& checkpoint_bytes;
  Gauge& checkpoint_duration;
  Counter& checkpoint_failures;
  Gauge& restored;
  Counter& reconciled;
  Counter& state_corruptions;
  Counter& restores_behind_commit;
  Gauge& restore_duration;
  Gauge& rebuilding;
  Gauge& rebuild_progress;
  Counter& rebuilds;
  Counter& rebuild_events;
  Gauge& rebuild_duration;
  prometheus::Histogram& duplicate_age;
  DuplicateAgeHistogram published_ages;
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
