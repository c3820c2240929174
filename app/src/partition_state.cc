#include "partition_state.h"

#include <spdlog/spdlog.h>

#include <stdexcept>

#include "checkpoint_writer.h"

namespace bloomgate::app {

using connectors::StateStoreError;

// ---- PartitionState: reports and workers ----------------------------------------------------------------

PartitionState::PartitionState(ServiceContext& context, StateDirectory& directory, const ProducedRecords& records,
                               StateEvents& events)
    : context_(context), directory_(directory), records_(records), events_(events) {
  for (const auto& pipeline : context.config.pipelines) {
    for (const auto& topic : pipeline.inputs) pipeline_of_topic_[topic] = &pipeline;
  }
}

PartitionReport& PartitionState::report_for(const PartitionKey& key) {
  PartitionReport& report = reports_[key];
  report.pipeline = pipeline_of_topic_.at(key.first)->name;
  report.topic = key.first;
  report.partition = key.second;
  return report;
}

void PartitionState::add_inputs(const std::vector<PartitionKey>& inputs) {
  quarantines_seen_ = store().quarantines();
  for (const PartitionKey& key : inputs) report_for(key);
  if (directory_.quarantined()) {
    for (const auto& [key, report] : reports_) lost_with_quarantine_.insert(key);
  }
}

std::vector<PartitionWorker*> PartitionState::all_workers() const {
  std::vector<PartitionWorker*> workers;
  for (const auto& [key, worker] : workers_) workers.push_back(worker.get());
  return workers;
}

PartitionWorker* PartitionState::find(const PartitionKey& key) const {
  const auto it = workers_.find(key);
  return it == workers_.end() ? nullptr : it->second.get();
}

PartitionWorker& PartitionState::add(const PartitionKey& key, std::unique_ptr<PartitionWorker> worker) {
  auto& slot = workers_[key];
  slot = std::move(worker);
  return *slot;
}

void PartitionState::remove(const PartitionKey& key) {
  if (PartitionWorker* worker = find(key)) refresh_filter_stats(*worker, wall_clock_now());
  workers_.erase(key);
  lost_with_quarantine_.erase(key);
  if (const auto it = reports_.find(key); it != reports_.end()) it->second.assigned = false;
}

PartitionWorker* PartitionState::worker_for(const connectors::ConsumedMessage& message) {
  const rd_kafka_topic_t* topic_handle = message.native()->rkt;
  if (cached_worker_ != nullptr && cached_topic_ == topic_handle && cached_partition_ == message.partition()) {
    return cached_worker_;
  }
  PartitionWorker* worker = find(PartitionKey(std::string(message.topic()), message.partition()));
  if (worker == nullptr) return nullptr;
  cached_worker_ = worker;
  cached_topic_ = topic_handle;
  cached_partition_ = message.partition();
  return cached_worker_;
}

// ---- damaged state ------------------------------------------------------------------------------------

void PartitionState::quarantine() {
  events_.before_quarantine();
  directory_.quarantine_and_reopen();
  notice_quarantines();
}

void PartitionState::notice_quarantines() {
  const std::uint64_t quarantines = store().quarantines();
  if (quarantines == quarantines_seen_) return;
  quarantines_seen_ = quarantines;
  for (const auto& [key, report] : reports_) {
    if (workers_.count(key) == 0) lost_with_quarantine_.insert(key);
  }
  for (auto& [key, worker] : workers_) worker->progress.store_replaced();
}

void PartitionState::state_corrupt(PartitionReport& report, const std::string& why) {
  ++report.state_corruptions;
  spdlog::error("{}/{}: the stored state is corrupt ({}); its filter is rebuilt from the input history before the "
                "committed offset",
                report.topic, report.partition, why);
}

void PartitionState::drop_state(const connectors::PartitionId& id) {
  try {
    store().drop(id);
  } catch (const StateStoreError& e) {
    // The worker's next checkpoint writes its whole filter over whatever is left.
    spdlog::error("{}: dropping the stored state failed: {}", connectors::to_string(id), e.what());
  }
}

// ---- checkpoints --------------------------------------------------------------------------------------

std::size_t PartitionState::write_states(const std::vector<PartitionWorker*>& workers,
                                         StateTopicPublisher* publisher, std::chrono::milliseconds publish_timeout) {
  notice_quarantines();
  std::vector<connectors::PartitionImage> images;
  for (PartitionWorker* worker : workers) {
    if (publisher != nullptr) publisher->prepare(*worker);
    images.push_back(image_of(*worker));
  }
  return write_images(workers, images, publisher, publish_timeout);
}

std::size_t PartitionState::write_images(const std::vector<PartitionWorker*>& workers,
                                         const std::vector<connectors::PartitionImage>& images,
                                         StateTopicPublisher* publisher, std::chrono::milliseconds publish_timeout) {
  const std::vector<GroupWrite> groups = write_in_groups(store(), images, kGroupCommitBytes);
  const std::vector<StatePublication> published =
      publisher != nullptr ? publisher->publish(workers, images, publish_timeout) : std::vector<StatePublication>{};
  std::size_t failures = 0;
  for (const GroupWrite& group : groups) {
    for (std::size_t i = group.begin; i < group.end; ++i) {
      if (group.error) {
        checkpoint_failed(*workers[i], images[i].checkpoint, *group.error);
        ++failures;
        continue;
      }
      image_taken(*workers[i]);
      if (!checkpoint_written(*workers[i], images[i].checkpoint, group.written[i - group.begin], group.seconds,
                              published.empty() ? nullptr : &published[i])) {
        ++failures;
      }
    }
  }
  return failures;
}

connectors::PartitionImage PartitionState::image_of(PartitionWorker& worker) const {
  connectors::PartitionImage image;
  image.checkpoint.id = worker.id;
  image.checkpoint.next_offset = worker.progress.next_offset();
  image.checkpoint.output_offset = records_.output_offset(worker);
  image.checkpoint.written_at_ms = wall_clock_ms();
  image.checkpoint.filter_time_ns = filters::to_epoch_nanos(worker.deduplicator.filter_time(filters::TimePoint{}));
  const auto scope =
      worker.progress.full_image_next() ? filters::ImageScope::kFull : filters::ImageScope::kChangedSinceLastPersist;
  image.image = worker.deduplicator.filter().image(scope);
  auto& drops = image.image.dropped_slice_ids;
  drops.insert(drops.end(), worker.progress.unwritten_drops().begin(), worker.progress.unwritten_drops().end());
  return image;
}

void PartitionState::image_taken(PartitionWorker& worker) {
  worker.deduplicator.filter().mark_persisted();
  worker.progress.image_captured();
}

void PartitionState::unpersisted(PartitionWorker& worker, const connectors::PartitionImage& image) {
  worker.progress.image_unwritten(image.image.dropped_slice_ids);
}

void PartitionState::checkpoint_failed(PartitionWorker& worker, const connectors::PartitionCheckpoint& checkpoint,
                                       const StateStoreError& error) {
  ++worker.report->checkpoint_failures;
  spdlog::error("{}: checkpoint at input offset {} failed ({}: {}); its offset is not committed, and the "
                "checkpoint is tried again at the next interval",
                connectors::to_string(worker.id), checkpoint.next_offset, connectors::to_string(error.kind()),
                error.what());
}

bool PartitionState::checkpoint_written(PartitionWorker& worker, const connectors::PartitionCheckpoint& checkpoint,
                                        const connectors::CheckpointWrite& written, double seconds,
                                        const StatePublication* published) {
  PartitionReport& report = *worker.report;
  ++report.checkpoints;
  report.checkpoint_bytes += written.bytes;
  report.last_checkpoint_seconds = seconds;
  // Not acknowledged by the state topic: the partition stays at its previous checkpoint for commits.
  if (published != nullptr && !StateTopicPublisher::account(worker, *published)) return false;
  worker.progress.checkpoint_written(checkpoint.next_offset, checkpoint.output_offset);
  return true;
}

// Each large filter whose checkpoint is the one just written, as it lies in memory, so that the next start
// on this directory copies it into place instead of rebuilding its layout from the slice records. Only a
// faster copy of the checkpoint: a snapshot not written is logged, and that partition restores from its slices.
void PartitionState::write_snapshots() {
  const auto started = Clock::now();
  std::size_t written = 0;
  std::uint64_t bytes = 0;
  for (PartitionWorker* worker : all_workers()) {
    if (!worker->progress.at_checkpoint()) continue;
    if (context_.stop_deadline && Clock::now() >= *context_.stop_deadline) {
      spdlog::warn("stopping: the grace period ran out before every snapshot was written; the other partitions "
                   "restore from their slice records");
      break;
    }
    const std::optional<filters::FilterSnapshot> snapshot = worker->deduplicator.filter().snapshot();
    if (!snapshot) continue;
    try {
      bytes += store().write_snapshot(worker->id, *snapshot);
      ++written;
    } catch (const StateStoreError& e) {
      spdlog::warn("{}: its snapshot was not written ({}); the next start restores it from its slice records",
                   connectors::to_string(worker->id), e.what());
    }
  }
  if (written == 0) return;
  try {
    store().flush();  // the next open then reads table files instead of replaying the snapshots' WAL
  } catch (const StateStoreError& e) {
    spdlog::warn("stopping: flushing the snapshots: {}", e.what());
  }
  spdlog::info("stopping: wrote the snapshots of {} filter(s), {:.1f} MiB, in {} ms", written,
               static_cast<double>(bytes) / (1024.0 * 1024.0),
               std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
}

void PartitionState::refresh_filter_stats(PartitionWorker& worker, filters::TimePoint now) {
  worker.report->filter = worker.deduplicator.filter().stats(worker.deduplicator.filter_time(now));
  worker.report->filter.slice_stats.clear();
}

}  // namespace bloomgate::app
