#include "service_reporting.h"

#include "bloomgate/app/schema_catalog.h"

namespace bloomgate::app {

void ServiceReporter::sample_partition(PartitionWorker& worker, filters::TimePoint now) {
  PartitionState::refresh_filter_stats(worker, now);
  PartitionReport& report = *worker.report;
  report.fpr_probe_hits += worker.fpr_probe.probe(worker.deduplicator.filter(), worker.deduplicator.filter_time(now));
  report.fpr_probes += kFprProbesPerSnapshot;
  report.observed_fpr = worker.fpr_probe.observed();
  if (!context_.consumer) return;
  if (const auto high = context_.consumer->cached_high_watermark(report.topic, report.partition)) {
    report.high_watermark = *high;
  }
}

void ServiceReporter::publish() {
  ServiceSnapshot snapshot;
  const auto now = wall_clock_now();
  for (const auto& [key, report] : state_.reports()) {
    if (PartitionWorker* worker = state_.find(key)) sample_partition(*worker, now);
    PartitionReport copy = report;
    snapshot.consumed += copy.consumed;
    snapshot.forwarded += copy.counters.forwarded;
    snapshot.duplicates += copy.counters.duplicates;
    snapshot.dead_lettered += copy.counters.dead_lettered;
    snapshot.partitions.push_back(std::move(copy));
  }
  snapshot.commits = context_.counters.commits;
  snapshot.transactions_committed = context_.counters.transactions_committed;
  snapshot.transactions_aborted = context_.counters.transactions_aborted;
  snapshot.processing_latency = processing_latency_;
  snapshot.producer_queue = context_.producer ? context_.producer->outq_len() : 0;
  snapshot.running = running_ && joined_ && !assigning_ && restoring_ == 0;
  snapshot.partitions_restoring = restoring_;
  snapshot.partitions_waiting_for_schema = context_.partitions_waiting_for_schema;
  if (context_.options.schemas) {
    snapshot.schema_registry_failures = context_.options.schemas->failed_requests();
    snapshot.schema_registry_reachable = context_.options.schemas->registry_reachable();
  }
  {
    std::lock_guard lock(mutex_);
    published_ = snapshot;
  }
  if (context_.options.on_snapshot) context_.options.on_snapshot(snapshot);
}

ServiceSnapshot ServiceReporter::snapshot() const {
  std::lock_guard lock(mutex_);
  return published_;
}

}  // namespace bloomgate::app
