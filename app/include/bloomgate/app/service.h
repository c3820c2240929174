// File: service.h
//
// The deduplication service: `bloomgate run`. One group consumer reads the input topics of every
// pipeline, one PartitionDeduplicator per assigned input (topic, partition) decides each event, and one
// idempotent producer writes what the verdict says:
//   forward     to the pipeline's output topic with key, value, headers and timestamp preserved, plus
//               the source header below; partition = the input partition (output_partitioning:
//               same_as_input, the default, so recovery can reconcile per partition) or the
//               partitioner's choice by message key (by_key).
//   duplicate   dropped, or written to the duplicates topic (with the source header) when configured.
//   dead letter written to the dead-letter topic with the source header and the reason headers; with no
//               dead-letter topic the service flushes and commits the events before it, then stops
//               (exit 1) without committing that event: it is never lost, and the operator fixes the
//               configuration or the producer.
//
// Source header (an interface: never rename it; source_header.h):
//   bloomgate.source = "<topic>/<partition>/<offset>"   (decimal text, e.g. "orders/3/1042")
// Dead-letter headers, in addition:
//   bloomgate.pipeline, bloomgate.reason (reason_name(): missing_field, malformed_json, ...,
//   record_too_large), bloomgate.error (for humans; never contains the key)
// Record sizes (app/src/output_router.h): an event whose forwarded form is larger than the output takes
// (the producer's message.max.bytes, the topic's max.message.bytes where the broker says it) is a dead
// letter, record_too_large; a dead letter (or duplicate) too large for its topic is written cut to fit:
// its headers (bloomgate.headers_dropped counts those left out), its key (bloomgate.key_dropped: the size
// of one left out) and a prefix of its value (bloomgate.value_truncated: the whole value's size). A
// record the broker refuses as too large all the same is dead-lettered cut to fit. No record stops the
// service for its size, unless its pipeline has no dead-letter topic.
//
// Offsets and durable state (flush, checkpoint, then commit; docs/state.md): every
// state.checkpoint_interval, on revocation and at shutdown the producer is flushed; then, for each
// partition with events since its last checkpoint, one synced RocksDB WriteBatch (StateStore in
// state.dir) stores the filter's changed slices, the next input offset and the output offset below which
// everything forwarded from the partition was acknowledged; only then is the input offset committed, with
// that output offset as commit metadata. A committed offset never runs ahead of an undelivered output
// record or of the filter state. A failed delivery stops the service without committing (exit 1); a
// checkpoint the store refuses (full disk) is logged at error level and counted, and that partition's
// offset is not committed until a later checkpoint succeeds.
// On assignment each partition is restored from its checkpoint (filter, event-clock time, next offset),
// or starts at its committed offset with a filter rebuilt from the input's last TTL before it (the events
// are decided again without producing) and writes a first checkpoint there. Then the
// output partition is read from the checkpoint's output offset to its high watermark (reconciliation):
// the input offsets its source header names are decided again when replayed, so their keys go into the
// filter, but are not produced again. So after kill -9 nothing is lost and nothing is forwarded twice.
// Limits: with output_partitioning by_key the output offset is not tracked (-1) and a crash gives
// at-least-once; records written to the duplicates and dead-letter topics are at-least-once after a
// crash; corrupt state is set aside (counted) and the partition is rebuilt from the input. A second
// process on the same state.dir fails at start (exit 1).
//
// kafka.guarantee exactly_once (docs/state.md, "Transactional mode"): the producer is transactional
// (transactional.id <group_id>.<instance_name>); each checkpoint interval is one transaction holding the
// records and the input offsets (send_offsets_to_transaction with the consumer's group metadata), and each
// partition's state is written after the commit. An abortable error aborts the transaction and rewinds every
// partition to its last commit (consumer position and filter, restored from the store); a fatal one stops
// the service. Revocation commits the open transaction; a lost partition aborts it.
//
// Start-up checks, before any event is consumed: every input, output, duplicates and dead-letter topic
// exists, and with same_as_input the output has at least as many partitions as each input.
//
// Shutdown: when `stop` becomes true the service stops consuming, flushes, commits and leaves the
// group, within shutdown.grace_period; exit 0. If the flush does not finish in time, nothing further is
// committed and the exit code is 1.
//
// Thread-safety: run() on one thread; snapshot() from any thread (it returns the copy the service
// thread published last, at most snapshot_interval old).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bloomgate/app/exit_codes.h"
#include "bloomgate/app/key_extractor.h"
#include "bloomgate/app/partition_deduplicator.h"
#include "bloomgate/config/config.h"
#include "bloomgate/connectors/client_hooks.h"
#include "bloomgate/filters/filter.h"

namespace bloomgate::connectors {
class StateEnvironment;  // connectors/state: state_environment.h
}  // namespace bloomgate::connectors

namespace bloomgate::app {

class StateDirectory;  // app/src/state_directory.h

namespace headers {
inline constexpr const char* kPipeline = "bloomgate.pipeline";
inline constexpr const char* kReason = "bloomgate.reason";
inline constexpr const char* kError = "bloomgate.error";
// A record cut to fit its topic (a dead letter, or a duplicate): what was left out.
inline constexpr const char* kValueTruncated = "bloomgate.value_truncated";  // the whole value's size
inline constexpr const char* kKeyDropped = "bloomgate.key_dropped";          // the dropped key's size
inline constexpr const char* kHeadersDropped = "bloomgate.headers_dropped";  // how many headers were left out
}  // namespace headers

// Observations per bucket, as Prometheus histograms want them (it accumulates the counts): counts[i] holds
// the values in (bounds[i-1], bounds[i]], the last one those above every bound. A plain value, cheap to copy
// into a snapshot; ServiceMetrics publishes the increments since the last scrape.
template <std::size_t Bounds>
struct BucketCounts {
  std::array<std::uint64_t, Bounds + 1> counts{};
  double sum = 0;  // of the values observed, in the metric's unit

  // `bucketed` is compared with `bounds`; `value` is what the sum adds (they differ when the bounds scale).
  void observe(double bucketed, const std::array<double, Bounds>& bounds, double value) {
    std::size_t bucket = 0;
    while (bucket < Bounds && bucketed > bounds[bucket]) ++bucket;
    ++counts[bucket];
    sum += value;
  }
};

// Time to process one event (decide and hand to the producer), sampled on one event in 64 so the clock
// is not read on every event.
struct LatencyHistogram : BucketCounts<10> {
  static constexpr std::array<double, 10> kBoundsSeconds{1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5,
                                                         5e-5, 1e-4, 2.5e-4, 1e-3, 1e-2};
  void observe(double seconds) { BucketCounts::observe(seconds, kBoundsSeconds, seconds); }
};

// How long before a duplicate its key had been seen (Filter::test_and_insert_with_age; only the
// time-limited filter tells), bucketed by shares of the pipeline's TTL so one set of buckets serves every
// TTL: the metric's bounds are these shares times the TTL. Ages past the TTL are keys fading out after it
// (time_limited_filter.h), at most a few generations.
struct DuplicateAgeHistogram : BucketCounts<9> {
  static constexpr std::array<double, 9> kTtlShares{0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.25};
  void observe(double age_seconds, double ttl_seconds) {
    BucketCounts::observe(age_seconds / ttl_seconds, kTtlShares, age_seconds);
  }
};

// One input partition as the service has seen it since start (counters survive a revocation, so
// Prometheus counters never go backwards when a partition comes back).
// The per-partition counters that only grow, as (PartitionReport field, Prometheus name, help). A new one is
// one line here: the report's field, the merge of the workers' reports (service_workers.cc) and its series
// on /metrics (service_metrics.cc) follow from this list.
#define BLOOMGATE_PARTITION_COUNTERS(COUNTER)                                                                  \
  COUNTER(consumed, "bloomgate_events_consumed_total", "Events consumed from an input partition")              \
  COUNTER(fpr_probes, "bloomgate_filter_fpr_probes_total",                                                     \
          "Random never-inserted keys asked of the filter to measure its false-positive rate")                 \
  COUNTER(fpr_probe_hits, "bloomgate_filter_fpr_probe_hits_total",                                             \
          "Probe keys the filter reported present: false positives")                                           \
  COUNTER(checkpoints, "bloomgate_checkpoints_total",                                                          \
          "Checkpoints of the partition's filter and offsets written to the state store")                      \
  COUNTER(checkpoint_bytes, "bloomgate_checkpoint_bytes_total",                                                \
          "Bytes of the checkpoints written (RocksDB WriteBatch sizes)")                                       \
  COUNTER(checkpoint_failures, "bloomgate_checkpoint_failures_total",                                          \
          "Checkpoints the state store refused (full disk, I/O error); the offset was not committed")          \
  COUNTER(state_topic_produced_bytes, "bloomgate_state_topic_produced_bytes_total",                            \
          "Bytes of checkpoint records (keys and values) produced to the state topic (state.topic)")           \
  COUNTER(state_topic_produce_failures, "bloomgate_state_topic_produce_failures_total",                         \
          "Checkpoints the state topic did not acknowledge; the offset was not committed")                     \
  COUNTER(reconciled, "bloomgate_reconciled_events_total",                                                     \
          "Replayed events not produced again: the output already held them (restore)")                        \
  COUNTER(state_corruptions, "bloomgate_state_corruptions_total",                                              \
          "Times the partition's stored state was found corrupt and dropped")                                  \
  COUNTER(restores_behind_commit, "bloomgate_restores_behind_commit_total",                                    \
          "Restores from a checkpoint older than the group's committed offset (replayed and reconciled)")      \
  COUNTER(rebuilds, "bloomgate_rebuilds_total", "Rebuilds of the partition's filter from the input history, finished") \
  COUNTER(rebuild_events, "bloomgate_rebuild_events_total",                                                    \
          "Input records inserted into the filter by rebuilds (nothing was produced)")                         \
  COUNTER(restores_cancelled, "bloomgate_restores_cancelled_total",                                            \
          "Restores stopped before they finished: the partition was revoked or lost, or the service stopped") \
  COUNTER(state_topic_read_bytes, "bloomgate_state_topic_read_bytes_total",                                    \
          "Bytes (keys and values) read from the state topic to restore the partition")

// Where a partition's state came from when it was assigned (docs/state.md, "Where a partition's state comes
// from"): its local checkpoint, the state topic's checkpoint, or a rebuild from the input history.
enum class RestoreSource : std::uint8_t { kLocal, kStateTopic, kRebuild };
inline constexpr std::size_t kRestoreSourceCount = 3;

// "local", "state_topic", "rebuild": the `source` label of bloomgate_restores_total and the logs' word.
constexpr std::string_view restore_source_name(RestoreSource source) noexcept {
  switch (source) {
    case RestoreSource::kLocal: return "local";
    case RestoreSource::kStateTopic: return "state_topic";
    case RestoreSource::kRebuild: return "rebuild";
  }
  return "unknown";
}

struct PartitionReport {
  std::string pipeline;
  std::string topic;
  std::int32_t partition = 0;
  bool assigned = false;
  // consumed, fpr_probes and fpr_probe_hits, checkpoints, checkpoint_bytes, checkpoint_failures,
  // state_topic_produced_bytes, state_topic_produce_failures, reconciled,
  // state_corruptions, restores_behind_commit, rebuilds, rebuild_events, state_topic_read_bytes: their help
  // above.
#define BLOOMGATE_REPORT_FIELD(field, name, help) std::uint64_t field = 0;
  BLOOMGATE_PARTITION_COUNTERS(BLOOMGATE_REPORT_FIELD)
#undef BLOOMGATE_REPORT_FIELD
  PartitionCounters counters;
  std::array<std::uint64_t, kRejectionReasonCount> dead_letters_by_reason{};
  std::int64_t next_offset = -1;     // the next input offset to process; -1 before the first event
  // The next offset of this member's last commit: exactly_once, of the last committed transaction;
  // at_least_once, of the last commit sent (an asynchronous one may still be refused). -1 before one.
  std::int64_t committed_offset = -1;
  std::int64_t high_watermark = -1;  // as last fetched; -1 when unknown. Lag = high_watermark - next_offset
  filters::FilterStats filter;       // as of the last snapshot or revocation; slice_stats left empty
  // The observed false-positive rate: random keys that were never inserted are asked at every snapshot
  // (kFprProbesPerSnapshot of them, counted in fpr_probes); fpr_probe_hits are the ones the filter reported
  // present.
  double observed_fpr = 0;  // hits / probes over the last kFprWindowSnapshots snapshots
  // Durable state (docs/state.md).
  double last_checkpoint_seconds = 0;     // how long the last checkpoint took to write (synced)
  bool restored = false;                  // the current (or last) assignment started from a checkpoint
  // restores_behind_commit: the store lost synced writes (a write-ahead log cut short) or another member
  // processed the partition since its checkpoint.
  double last_restore_seconds = 0;        // the last assignment's restore: checkpoint read and filter built
  // Rebuilding the filter from the input history (no usable state, a committed offset): docs/state.md.
  bool rebuilding = false;
  double rebuild_progress = 0;            // share of the input records to read that were read, 0..1
  double last_rebuild_seconds = 0;
  // Restores by where the state came from (indexed by RestoreSource), and the seconds spent reading the
  // state topic (its bytes are state_topic_read_bytes above). Counters, merged over workers.
  std::array<std::uint64_t, kRestoreSourceCount> restores_by_source{};
  double state_topic_read_seconds = 0;
  // Where the current (or last) assignment took the state from; nothing for a partition that started
  // empty (no checkpoint and no committed offset: nothing to restore).
  std::optional<RestoreSource> last_restore_source;
  DuplicateAgeHistogram duplicate_ages;   // the duplicates whose filter tells their age
};

inline constexpr std::uint64_t kFprProbesPerSnapshot = 1000;
inline constexpr std::size_t kFprWindowSnapshots = 100;

struct ServiceSnapshot {
  std::vector<PartitionReport> partitions;  // ordered by (topic, partition)
  std::uint64_t consumed = 0;
  std::uint64_t forwarded = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t dead_lettered = 0;
  std::uint64_t commits = 0;
  // kafka.guarantee exactly_once: transactions committed, and aborted (their events were consumed and
  // decided again; the per-partition counters above count them once per attempt).
  std::uint64_t transactions_committed = 0;
  std::uint64_t transactions_aborted = 0;
  int producer_queue = 0;  // records produced but not yet acknowledged
  // Schema Registry keys (schema_catalog.h): partitions paused at a record whose schema is being fetched,
  // the registry's requests that failed (the process's, not summed over workers), and whether it answers.
  std::uint64_t partitions_waiting_for_schema = 0;
  // Partitions assigned here whose restore (checkpoint, rebuild, reconciliation) has not finished: paused
  // meanwhile, while the others are consumed. /readyz answers 503 while there is any.
  std::uint64_t partitions_restoring = 0;
  std::uint64_t schema_registry_failures = 0;
  bool schema_registry_reachable = true;
  LatencyHistogram processing_latency;
  bool running = false;    // consuming: start-up checks passed, the group assigned this member its
                           // partitions (possibly none) and they are restored, and not stopping. /readyz
                           // answers from this.
};

struct ServiceOptions {
  std::string bootstrap_servers;                  // the brokers to use (the embedded broker's, when embedded)
  const std::atomic<bool>* stop = nullptr;        // becomes true to request a graceful stop
  connectors::ClientHooks hooks;                  // librdkafka's logs and client errors
  std::chrono::milliseconds snapshot_interval{1000};
  std::function<void(const ServiceSnapshot&)> on_snapshot;  // on the service thread, after each publish
  // On the service thread when an assignment starts, after the not-ready snapshot is published and before
  // any partition is restored (tests look at /readyz from here).
  std::function<void()> on_restore;
  // On the restore thread, after each record a rebuild put into a partition's filter (tests slow rebuilds
  // down with it).
  std::function<void(const std::string& topic, std::int32_t partition)> on_rebuild_record;
  // The file system of the state store; nullptr is the local one. Tests inject faults with it.
  const connectors::StateEnvironment* state_environment = nullptr;
  // The state directory, opened and shared by the workers of the process (service_workers.h); nullptr: the
  // service opens config.state.dir itself, and closes it when run() returns.
  StateDirectory* state_directory = nullptr;
  // Where avro and protobuf keys find their schemas, shared by the workers of the process; nullptr: the
  // service makes one from the configuration's schema_registry and schemas when it has them.
  std::shared_ptr<SchemaCatalog> schemas;
};

struct RunResult {
  int exit_code = 0;  // kExitOk, kExitServiceFailed, or kExitUsage (a start-up check the configuration fails)
  std::string error;  // why it failed; empty on success
};

class Service {
 public:
  // Validates what can be checked without Kafka (filter settings); throws std::invalid_argument.
  Service(config::Config config, ServiceOptions options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Runs until a stop is requested or a fatal error; never throws.
  RunResult run();

  ServiceSnapshot snapshot() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bloomgate::app
