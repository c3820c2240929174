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

}  // namespace

struct ServiceMetrics::Families {
  explicit Families(prometheus::Registry& r)
      : consumed(prometheus::BuildCounter().Name("bloomgate_events_consumed_total")
                     .Help("Events consumed from an input partition").Register(r)),
        events(prometheus::BuildCounter().Name("bloomgate_events_total")
                   .Help("Events by outcome: forwarded, duplicate (dropped or written to the duplicates topic), dead_letter")
                   .Register(r)),
        dead_letters(prometheus::BuildCounter().Name("bloomgate_dead_letters_total")
                         .Help("Events sent to the dead-letter topic, by reason").Register(r)),
        slices(prometheus::BuildGauge().Name("bloomgate_filter_slices").Help("Slices in the partition's filter").Register(r)),
        bits(prometheus::BuildGauge().Name("bloomgate_filter_cells")
                  .Help("Cells (bits) of the partition's filter; promtool's lint forbids the unit name bits").Register(r)),
        memory(prometheus::BuildGauge().Name("bloomgate_filter_memory_bytes")
                   .Help("Memory of the partition's filter cells").Register(r)),
        elements(prometheus::BuildGauge().Name("bloomgate_filter_elements")
                     .Help("Distinct keys the partition's filter holds within its window").Register(r)),
        bits_per_element(prometheus::BuildGauge().Name("bloomgate_filter_cells_per_element")
                             .Help("Filter cells (bits) per key in the window").Register(r)),
        estimated_fpr(prometheus::BuildGauge().Name("bloomgate_filter_estimated_fpr")
                          .Help("False-positive rate estimated from the live slices' fill").Register(r)),
        target_fpr(prometheus::BuildGauge().Name("bloomgate_filter_target_fpr")
                       .Help("The configured false-positive rate").Register(r)),
        effective_window(prometheus::BuildGauge().Name("bloomgate_filter_effective_window_seconds")
                             .Help("Age of the oldest slice still valid (compare with bloomgate_pipeline_ttl_seconds)")
                             .Register(r)),
        ttl(prometheus::BuildGauge().Name("bloomgate_pipeline_ttl_seconds").Help("The pipeline's configured TTL").Register(r)),
        assigned(prometheus::BuildGauge().Name("bloomgate_partition_assigned")
                     .Help("1 while this member owns the input partition").Register(r)),
        next_offset(prometheus::BuildGauge().Name("bloomgate_partition_next_offset")
                        .Help("The next input offset to process").Register(r)),
        fpr_probes(prometheus::BuildCounter().Name("bloomgate_filter_fpr_probes_total")
                       .Help("Random never-inserted keys asked of the filter to measure its false-positive rate")
                       .Register(r)),
        fpr_probe_hits(prometheus::BuildCounter().Name("bloomgate_filter_fpr_probe_hits_total")
                           .Help("Probe keys the filter reported present: false positives").Register(r)),
        observed_fpr(prometheus::BuildGauge().Name("bloomgate_filter_observed_fpr")
                         .Help("False positives among the probe keys of the last 100 samples").Register(r)),
        lag(prometheus::BuildGauge().Name("bloomgate_consumer_lag_records")
                .Help("High watermark minus the next offset to process").Register(r)),
        checkpoints(prometheus::BuildCounter().Name("bloomgate_checkpoints_total")
                        .Help("Checkpoints of the partition's filter and offsets written to the state store").Register(r)),
        checkpoint_bytes(prometheus::BuildCounter().Name("bloomgate_checkpoint_bytes_total")
                             .Help("Bytes of the checkpoints written (RocksDB WriteBatch sizes)").Register(r)),
        checkpoint_duration(prometheus::BuildGauge().Name("bloomgate_checkpoint_duration_seconds")
                                .Help("How long the partition's last checkpoint took to write and sync").Register(r)),
        checkpoint_failures(prometheus::BuildCounter().Name("bloomgate_checkpoint_failures_total")
                                .Help("Checkpoints the state store refused (full disk, I/O error); the offset was not committed")
                                .Register(r)),
        restored(prometheus::BuildGauge().Name("bloomgate_restored_partitions")
                     .Help("1 when the partition's current (or last) assignment started from its checkpoint").Register(r)),
        reconciled(prometheus::BuildCounter().Name("bloomgate_reconciled_events_total")
                       .Help("Replayed events not produced again: the output already held them (restore)").Register(r)),
        state_corruptions(prometheus::BuildCounter().Name("bloomgate_state_corruptions_total")
                              .Help("Times the partition's stored state was found corrupt and dropped").Register(r)),
        restores_behind_commit(prometheus::BuildCounter().Name("bloomgate_restores_behind_commit_total")
                                   .Help("Restores from a checkpoint older than the group's committed offset (replayed "
                                         "and reconciled)").Register(r)),
        restore_duration(prometheus::BuildGauge().Name("bloomgate_restore_duration_seconds")
                             .Help("How long the partition's last restore (checkpoint read, filter built) took").Register(r)),
        rebuilding(prometheus::BuildGauge().Name("bloomgate_rebuilding")
                       .Help("1 while the partition's filter is being rebuilt from the input history").Register(r)),
        rebuild_progress(prometheus::BuildGauge().Name("bloomgate_rebuild_progress_ratio")
                             .Help("Share of the input records to read that the current (or last) rebuild has read")
                             .Register(r)),
        rebuilds(prometheus::BuildCounter().Name("bloomgate_rebuilds_total")
                     .Help("Rebuilds of the partition's filter from the input history, finished").Register(r)),
        rebuild_events(prometheus::BuildCounter().Name("bloomgate_rebuild_events_total")
                           .Help("Input records inserted into the filter by rebuilds (nothing was produced)").Register(r)),
        rebuild_duration(prometheus::BuildGauge().Name("bloomgate_rebuild_duration_seconds")
                             .Help("How long the partition's last rebuild took").Register(r)),
        duplicate_age(prometheus::BuildHistogram().Name("bloomgate_duplicate_age_seconds")
                          .Help("How long before a duplicate its key had been seen, from the filter slice that matched "
                                "(time-limited filter only; buckets are shares of the pipeline's TTL)")
                          .Register(r)),
        processing(prometheus::BuildHistogram().Name("bloomgate_event_processing_seconds")
                       .Help("Time to decide one event and hand it to the producer (1 event in 64 is timed)")
                       .Register(r)
                       .Add({}, prometheus::Histogram::BucketBoundaries(LatencyHistogram::kBoundsSeconds.begin(),
                                                                        LatencyHistogram::kBoundsSeconds.end()))),
        producer_queue(prometheus::BuildGauge().Name("bloomgate_producer_queue_records")
                           .Help("Records produced and not yet acknowledged").Register(r)
                           .Add({})),
        commits(prometheus::BuildCounter().Name("bloomgate_offset_commits_total")
                    .Help("Offset commits (each after a producer flush)").Register(r).Add({})),
        transactions(prometheus::BuildCounter().Name("bloomgate_transactions_total")
                         .Help("exactly_once: transactions ended, by result (committed, aborted)").Register(r)),
        running(prometheus::BuildGauge().Name("bloomgate_running")
                    .Help("1 while the service consumes (start-up checks passed, not stopping)").Register(r).Add({})) {}

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
