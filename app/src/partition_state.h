// File: partition_state.h
//
// PartitionState: the durable side of one loop's partitions (docs/state.md), over the process's
// StateDirectory (state_directory.h): the report of every input partition, the worker of each assigned
// one, and what writes them to the store (group-committed checkpoints, a clean stop's snapshots, dropping
// and quarantining what is damaged).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bloomgate/connectors/state_store.h"
#include "commit_ports.h"
#include "partition_worker.h"
#include "service_context.h"
#include "state_directory.h"
#include "startup_checks.h"
#include "state_topic_publisher.h"

namespace bloomgate::app {


// What PartitionState reports before it changes the store under the other parts. The service loop
// answers, from its commit protocol.
class StateEvents {
 public:
  // Before a quarantine: what is in flight to the store is finished first.
  virtual void before_quarantine() = 0;

 protected:
  ~StateEvents() = default;
};

// A group commit holds its partitions' images in memory at once, and full images (partitions restored from
// nothing, a quarantined store) can be large: above this many bytes the next partitions go into another batch.
inline constexpr std::uint64_t kGroupCommitBytes = std::uint64_t{64} << 20;

class PartitionState {
 public:
  using Workers = std::map<PartitionKey, std::unique_ptr<PartitionWorker>>;

  // `events` must outlive it.
  PartitionState(ServiceContext& context, StateDirectory& directory, const ProducedRecords& records,
                 StateEvents& events);

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
  // With a `publisher` (state.topic), each checkpoint is also produced to the state topic, each wait for its
  // acknowledgement at most `publish_timeout`, and one it did not acknowledge is not written either.
  std::size_t write_states(const std::vector<PartitionWorker*>& workers, StateTopicPublisher* publisher = nullptr,
                           std::chrono::milliseconds publish_timeout = kCheckpointFlushTimeout);
  // The same for images already taken (image_of), one per worker, which the state topic already has when
  // there is no publisher (exactly_once: they were in the transaction).
  std::size_t write_images(const std::vector<PartitionWorker*>& workers,
                           const std::vector<connectors::PartitionImage>& images, StateTopicPublisher* publisher,
                           std::chrono::milliseconds publish_timeout);
  // The partition's checkpoint now, and its filter's image since the last persisted one (whole when the
  // store does not hold it).
  connectors::PartitionImage image_of(PartitionWorker& worker) const;
  // The changes in the image just taken count as persisted: the next image holds only later ones.
  static void image_taken(PartitionWorker& worker);
  // A captured image that was not written: the filter writes whole next time, and deletes what it dropped.
  static void unpersisted(PartitionWorker& worker, const connectors::PartitionImage& image);
  static void checkpoint_failed(PartitionWorker& worker, const connectors::PartitionCheckpoint& checkpoint,
                                const connectors::StateStoreError& error);
  // After the store made `checkpoint` durable: its offset may be committed, unless `published` (with
  // state.topic: what the state topic made of it) says the state topic did not acknowledge it. Returns
  // whether it counts as written.
  static bool checkpoint_written(PartitionWorker& worker, const connectors::PartitionCheckpoint& checkpoint,
                                 const connectors::CheckpointWrite& written, double seconds,
                                 const StatePublication* published = nullptr);
  // A clean stop's snapshots (docs/state.md, "Snapshots at a clean stop").
  void write_snapshots();

  static void refresh_filter_stats(PartitionWorker& worker, filters::TimePoint now);

 private:
  ServiceContext& context_;
  StateDirectory& directory_;
  const ProducedRecords& records_;
  PipelinesByTopic pipeline_of_topic_;
  StateEvents& events_;
  std::map<PartitionKey, PartitionReport> reports_;
  Workers workers_;
  std::set<PartitionKey> lost_with_quarantine_;  // partitions whose state went with it, until assigned
  std::uint64_t quarantines_seen_ = 0;           // the store's quarantines() this loop has caught up with

  PartitionWorker* cached_worker_ = nullptr;  // consecutive messages mostly come from one partition
  const rd_kafka_topic_t* cached_topic_ = nullptr;
  std::int32_t cached_partition_ = -1;
};

}  // namespace bloomgate::app
