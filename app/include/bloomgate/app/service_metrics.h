// File: service_metrics.h
//
// The service's Prometheus metrics, filled from ServiceSnapshot at each scrape (MetricsServer's
// before_scrape), so the event loop pays nothing per event for them. Names follow Prometheus
// conventions: prefix bloomgate_, base units, _total for counters. Labels are low-cardinality only:
// pipeline, topic, partition, outcome, reason; never a key.
//
//   bloomgate_events_consumed_total{pipeline,topic,partition}
//   bloomgate_events_total{pipeline,topic,partition,outcome}   outcome: forwarded | duplicate | dead_letter
//   bloomgate_dead_letters_total{pipeline,topic,partition,reason}   reason: reason_name()
//   bloomgate_filter_slices / _cells / _memory_bytes / _elements / _cells_per_element (a cell is one bit:
//     promtool's lint rejects "bits" as a unit name; cells alone) / _memory_bytes_per_element (every byte the
//     filter holds, per key)
//   bloomgate_filter_estimated_fpr / _target_fpr                     ratios
//   bloomgate_filter_effective_window_seconds / bloomgate_pipeline_ttl_seconds
//   bloomgate_partition_assigned{pipeline,topic,partition}           1 while this member owns it
//   bloomgate_partition_next_offset{pipeline,topic,partition}, bloomgate_consumer_lag_records{...}
//   bloomgate_filter_fpr_probes_total / _fpr_probe_hits_total / bloomgate_filter_observed_fpr: the
//     measured false-positive rate (service.h, PartitionReport), to set against the estimate
//   durable state (docs/state.md), per partition: bloomgate_checkpoints_total, bloomgate_checkpoint_bytes_total,
//     bloomgate_checkpoint_duration_seconds (gauge: the last checkpoint), bloomgate_checkpoint_failures_total,
//     with state.topic bloomgate_state_topic_produced_bytes_total and bloomgate_state_topic_produce_failures_total,
//     bloomgate_restored_partitions (1 when the assignment started from a checkpoint),
//     bloomgate_reconciled_events_total, bloomgate_state_corruptions_total, bloomgate_restore_duration_seconds,
//     bloomgate_restores_behind_commit_total (a checkpoint older than the group's committed offset);
//     rebuilding from the input history: bloomgate_rebuilding (0/1), bloomgate_rebuild_progress_ratio,
//     bloomgate_rebuilds_total, bloomgate_rebuild_events_total, bloomgate_rebuild_duration_seconds;
//     bloomgate_restores_cancelled_total (a restore stopped by a revocation, a loss or a stop)
//   bloomgate_partitions_restoring: partitions assigned and paused while they restore (restore thread)
//   bloomgate_event_processing_seconds (histogram, one event in 64 timed)
//   bloomgate_duplicate_age_seconds{pipeline,topic,partition} (histogram): how long before a duplicate its key
//     had been seen, from the slice that matched; buckets DuplicateAgeHistogram::kTtlShares x the pipeline's TTL
//   bloomgate_producer_queue_records, bloomgate_offset_commits_total, bloomgate_running
//   bloomgate_transactions_total{result="committed"|"aborted"} (kafka.guarantee exactly_once; absent otherwise)
//
// Every series of an input partition exists, at zero, once the service's start-up checks have listed the
// input partitions; the process-wide ones from construction. Counters are cumulative over the process's life (a partition that
// is revoked and comes back continues where it was).
//
// Thread-safety: update() calls must not overlap (MetricsServer serialises before_scrape).
#pragma once

#include <prometheus/registry.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "bloomgate/app/service.h"
#include "bloomgate/app/service_workers.h"
#include "bloomgate/config/config.h"
#include "bloomgate/connectors/metrics_server.h"

namespace bloomgate::app {

class ServiceMetrics {
 public:
  ServiceMetrics(prometheus::Registry& registry, const config::Config& config);
  ~ServiceMetrics();
  ServiceMetrics(const ServiceMetrics&) = delete;
  ServiceMetrics& operator=(const ServiceMetrics&) = delete;

  void update(const ServiceSnapshot& snapshot);

 private:
  struct Families;
  struct PartitionSeries;

  PartitionSeries& series_for(const PartitionReport& partition);
  std::unique_ptr<Families> families_;
  std::map<std::pair<std::string, std::int32_t>, std::unique_ptr<PartitionSeries>> partitions_;
  std::map<std::string, double> ttl_seconds_;  // by pipeline name: the duplicate-age buckets scale with it
  LatencyHistogram published_latency_;
};

// The service's HTTP endpoint: /metrics (ServiceMetrics and bloomgate_build_info), /healthz, and /readyz
// (ready while the service is consuming). Listens from construction; must be destroyed before what
// `snapshot` reads (a Service, or ServiceWorkers with the merged snapshot of every worker).
class ServiceEndpoints {
 public:
  using SnapshotSource = std::function<ServiceSnapshot()>;  // called from the endpoint's threads
  // Throws std::runtime_error naming the address when it cannot listen there.
  ServiceEndpoints(SnapshotSource snapshot, const config::Config& config, const std::string& listen);
  ServiceEndpoints(const Service& service, const config::Config& config, const std::string& listen)
      : ServiceEndpoints([&service] { return service.snapshot(); }, config, listen) {}
  ServiceEndpoints(const ServiceWorkers& workers, const config::Config& config, const std::string& listen)
      : ServiceEndpoints([&workers] { return workers.snapshot(); }, config, listen) {}
  ~ServiceEndpoints();
  std::string address() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  ServiceMetrics metrics_;
  std::unique_ptr<connectors::MetricsServer> server_;
};

}  // namespace bloomgate::app
