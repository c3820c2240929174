// File: partition_state.h
//
// The durable side of the service's partitions (docs/state.md):
// - StateDirectory: the state store in state.dir, opened before anything touches Kafka, moved aside and
//   opened empty when it is corrupt. One per process: the workers that share it (service_workers.h) are
//   handed it, and a quarantine by any of them moves every one of them to the new database at once.
// - PartitionState: one loop's partitions over it: the report of every input partition, the worker of
//   each assigned one, and what writes them to the store (group-committed checkpoints, a clean stop's
//   snapshots, dropping and quarantining what is damaged).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bloomgate/connectors/state_store.h"
#include "partition_worker.h"
#include "service_context.h"
#include "startup_checks.h"

namespace bloomgate::app {

class OutputRouter;

// A group commit holds its partitions' images in memory at once, and full images (partitions restored from
// nothing, a quarantined store) can be large: above this many bytes the next partitions go into another batch.
inline constexpr std::uint64_t kGroupCommitBytes = std::uint64_t{64} << 20;

// A StateStoreError's message, starting with "state store: " once (most of them already do).
std::string store_message(const std::exception& error);

class StateDirectory {
 public:
  StateDirectory(const config::Config& config, const connectors::StateEnvironment* environment);

  // Before anything else: a second process on the same directory stops here (std::runtime_error, exit 1)
  // with the directory in its message, before it touches Kafka. A corrupt store is moved aside.
  void open();
  void close() { store_.reset(); }
  connectors::StateStore& store() { return *store_; }
  // Moves the damaged directory aside and opens an empty one: in place while the store is open
  // (StateStore::quarantine_and_reopen, so every thread using it moves too), else by path. Thread-safe
  // while the store is open.
  void quarantine_and_reopen();
  // The directory was moved aside in this process (the partitions whose state was there must rebuild).
  bool quarantined() const { return quarantined_.load(); }

 private:
  connectors::StateStoreOptions store_options() const;

  const config::Config& config_;
  const connectors::StateEnvironment* environment_;
  std::unique_ptr<connectors::StateStore> store_;
  std::atomic<bool> quarantined_{false};
};

class PartitionState {
 public:
  using Workers = std::map<PartitionKey, std::unique_ptr<PartitionWorker>>;

  PartitionState(ServiceContext& context, StateDirectory& directory, const OutputRouter& router);

  const PipelinesByTopic& pipelines() const { return pipeline_of_topic_; }
  connectors::StateStore& store() { return directory_.store(); }

  // ---- reports and workers ----
  PartitionReport& report_for(const PartitionKey& key);
  const std::map<PartitionKey, PartitionReport>& reports() const { return reports_; }
  // Called once at start-up, after the topics were checked: every input partition gets its report.
  void add_inputs(const std::vector<PartitionKey>& inputs);
  const Workers& workers() const { return workers_; }
  std::vector<PartitionWorker*> all_workers() const;
  PartitionWorker* find(const PartitionKey& key) const;
  PartitionWorker& add(const PartitionKey& key, std::unique_ptr<PartitionWorker> worker);
  // The partition leaves: its filter statistics are kept in its report, its worker goes.
  void remove(const PartitionKey& key);
  // The worker of a consumed message; nullptr when its partition is not assigned here.
  PartitionWorker* worker_for(const connectors::ConsumedMessage& message);
  void invalidate_worker_cache() { cached_worker_ = nullptr; }

  // ---- damaged state ----
  // Runs before a quarantine (the commit protocol finishes what it has in flight).
  void set_before_quarantine(std::function<void()> before) { before_quarantine_ = std::move(before); }
  // Moves the damaged directory aside and opens an empty one. The partitions this member owns keep their
  // filters in memory and write them whole at their next checkpoint; the others lost their state with the
  // directory (lost_with_quarantine).
  void quarantine();
  // Catches up with a quarantine another worker of the process made in the shared directory, as if it were
  // this one's (owned partitions write whole next, the others are lost with it). Cheap when there was none:
  // every checkpoint capture and restore calls it first.
  void notice_quarantines();
  // Whether the partition's state went with a quarantined directory; forgets it.
  bool take_lost_with_quarantine(const PartitionKey& key) {
    notice_quarantines();
    return lost_with_quarantine_.erase(key) != 0;
  }
  void state_corrupt(PartitionReport& report, const std::string& why);
  void drop_state(const connectors::PartitionId& id);

  // ---- checkpoints ----
  // Group commits: the checkpoints of `workers` (each its filter's changed slices and metadata, next offset
  // and output offset) in one synced WriteBatch, one fdatasync for all, or several when their images add up
  // to more than kGroupCommitBytes. Returns how many were not written (logged and counted for each): the
  // caller commits nothing for those, and the next interval tries again with their changes unpersisted.
  std::size_t write_states(const std::vector<PartitionWorker*>& workers);
  // The partition's checkpoint now, and its filter's image since the last persisted one (whole when the
  // store does not hold it).
  connectors::PartitionImage image_of(PartitionWorker& worker) const;
  // The changes in the image just taken count as persisted: the next image holds only later ones.
  static void image_taken(PartitionWorker& worker);
  // A captured image that was not written: the filter writes whole next time, and deletes what it dropped.
  static void unpersisted(PartitionWorker& worker, const connectors::PartitionImage& image);
  static void checkpoint_failed(PartitionWorker& worker, const connectors::PartitionCheckpoint& checkpoint,
                                const connectors::StateStoreError& error);
  // After the store made `checkpoint` durable: its offset may be committed.
  static void checkpoint_written(PartitionWorker& worker, const connectors::PartitionCheckpoint& checkpoint,
                                 const connectors::CheckpointWrite& written, double seconds);
  // A clean stop's snapshots (docs/state.md, "Snapshots at a clean stop").
  void write_snapshots();

  static void refresh_filter_stats(PartitionWorker& worker, filters::TimePoint now);

 private:
  ServiceContext& context_;
  StateDirectory& directory_;
  const OutputRouter& router_;
  PipelinesByTopic pipeline_of_topic_;
  std::function<void()> before_quarantine_;
  std::map<PartitionKey, PartitionReport> reports_;
  Workers workers_;
  std::set<PartitionKey> lost_with_quarantine_;  // partitions whose state went with it, until assigned
  std::uint64_t quarantines_seen_ = 0;           // the store's quarantines() this loop has caught up with

  PartitionWorker* cached_worker_ = nullptr;  // consecutive messages mostly come from one partition
  const rd_kafka_topic_t* cached_topic_ = nullptr;
  std::int32_t cached_partition_ = -1;
};

}  // namespace bloomgate::app
