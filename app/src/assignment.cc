#include "assignment.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <thread>

#include "bloomgate/filters/format.h"
#include "startup_checks.h"
#include "state_topic_restore.h"

namespace bloomgate::app {

using connectors::PartitionId;
using connectors::StateStoreError;
using connectors::TopicPartition;
using connectors::TopicPartitions;

namespace {

constexpr std::chrono::milliseconds kReconcileIdleTimeout{30'000};
// How long a revocation waits for the restore of a leaving partition to stop (a cancelled read stops at its
// next poll: the side readers' kPollTimeout), and the restore thread for a quarantine it asked the loop for.
constexpr std::chrono::milliseconds kCancelWait{5'000};
constexpr std::chrono::milliseconds kQuarantinePollInterval{10};
constexpr std::chrono::milliseconds kSeekTimeout{5'000};

void throw_if_cancelled(const RestoreJob& job) {
  if (job.cancelled) throw SideReadCancelled();
}
// A rebuild's wait for a schema the catalog is fetching: asked again after 50 ms, doubling to 1 s.
constexpr std::chrono::milliseconds kSchemaWaitFirstBackoff{50};
constexpr std::chrono::milliseconds kSchemaWaitLongestBackoff{1'000};

// The commit metadata written next to a committed offset: the checkpoint's output offset, in decimal.
std::optional<std::int64_t> parse_output_offset(const std::string& metadata) {
  std::int64_t number = 0;
  const auto result = std::from_chars(metadata.data(), metadata.data() + metadata.size(), number);
  if (metadata.empty() || result.ec != std::errc() || result.ptr != metadata.data() + metadata.size()) return std::nullopt;
  return number;
}

}  // namespace

std::string describe(const TopicPartitions& partitions) {
  std::string text;
  for (const auto& p : partitions) text += (text.empty() ? "" : " ") + p.topic + "/" + std::to_string(p.partition);
  return text;
}

void Assignment::assigned(TopicPartitions& partitions) {
  spdlog::info("assigned {} partition(s): {}", partitions.size(), describe(partitions));
  if (second_round_follows_) {
    second_round_follows_ = false;
  } else {
    protocol_.rebalance_done();
  }
  reporter_.set_assigning(true);
  reporter_.publish();
  if (context_.options.on_restore) context_.options.on_restore();
  try {
    protocol_.settle(/*may_flush=*/true);
    if (!context_.failed()) submit_restores(partitions);
  } catch (const std::exception& e) {
    // The consumer applies the assignment anyway; the loop produces nothing once the service failed.
    context_.fail("assigning " + describe(partitions) + ": " + e.what());
  }
  state_.invalidate_worker_cache();
  reporter_.set_joined();
  reporter_.set_assigning(false);
  publish_restoring();
}

// One job per partition, for the restore thread; the consumer applies them paused. (Every subscribed topic
// is a pipeline's input: a partition of another topic would stay paused.)
void Assignment::submit_restores(const TopicPartitions& partitions) {
  for (const auto& partition : partitions) {
    const auto pipeline = state_.pipelines().find(partition.topic);
    if (pipeline == state_.pipelines().end()) continue;
    const PartitionKey key(partition.topic, partition.partition);
    PartitionReport& report = state_.report_for(key);
    report.assigned = true;
    report.restored = false;
    auto job = std::make_shared<RestoreJob>(key, *pipeline->second, report);
    job->live_report = &report;
    job->lost_with_quarantine = state_.take_lost_with_quarantine(key);
    restoring_[key] = job;
    runner_.submit(std::move(job));
  }
}

void Assignment::poll_restores() {
  for (auto& job : runner_.take_finished()) finished_.push_back(std::move(job));
  if (restoring_.empty() && finished_.empty()) return;
  quarantine_if_wanted();
  mirror_restore_progress();
  const auto applied = [&](const std::shared_ptr<RestoreJob>& job) {
    const auto it = restoring_.find(job->key);
    if (it == restoring_.end() || it->second != job || job->cancelled) return true;  // revoked meanwhile
    if (!apply_restore(*job)) return false;  // the seek is tried again next time
    restoring_.erase(it);
    return true;
  };
  const std::size_t before = restoring_.size();
  finished_.erase(std::remove_if(finished_.begin(), finished_.end(), applied), finished_.end());
  if (restoring_.size() != before) publish_restoring();
}

// A restore found the store corrupt: the directory goes aside here, on the loop thread (it settles the
// commit protocol first and tells every owned worker), while the restore thread waits for it.
void Assignment::quarantine_if_wanted() {
  std::vector<PartitionKey> asking;
  for (const auto& [key, job] : restoring_) {
    if (job->quarantine_wanted.exchange(false)) asking.push_back(key);
  }
  if (asking.empty()) return;
  state_.quarantine();
  // Counted as corrupt by the restore that asked, not again as lost with the quarantine.
  for (const PartitionKey& key : asking) (void)state_.take_lost_with_quarantine(key);
}

// Live rebuild progress for /metrics while the restore thread works (the job's own report is copied back
// when it is applied).
void Assignment::mirror_restore_progress() {
  for (const auto& [key, job] : restoring_) {
    job->live_report->rebuilding = job->rebuilding.load();
    job->live_report->rebuild_progress = job->rebuild_progress.load();
  }
}

// The partition's restore is done: its worker joins PartitionState (after the commit protocol settled, as
// before any change of the workers), writes its first checkpoint, and its partition is sought to its start
// and resumed. False when the seek failed (the assignment is still being applied): nothing changed.
bool Assignment::apply_restore(RestoreJob& job) {
  const TopicPartition partition{job.key.first, job.key.second, job.start_offset, {}, {}};
  if (job.failure) {
    context_.fail("assigning " + describe({partition}) + ": " + *job.failure);
    return true;
  }
  if (job.start_offset >= 0) {
    if (connectors::KafkaError error = context_.consumer->seek({partition}, kSeekTimeout); !error.ok()) {
      spdlog::debug("{}: seeking to offset {} failed ({}); trying again", describe({partition}), job.start_offset,
                    error.message());
      return false;
    }
  }
  protocol_.settle(/*may_flush=*/true);
  PartitionReport& report = *job.live_report;
  report = job.report;
  report.assigned = true;
  job.worker->report = &report;
  PartitionWorker& worker = state_.add(job.key, std::move(job.worker));
  state_.invalidate_worker_cache();
  if (state_.take_lost_with_quarantine(job.key)) worker.progress.store_replaced();
  // The first checkpoint of a partition without one: where it starts, its filter and the output's present
  // end. A crash before its first regular checkpoint then restarts here and reconciles what was forwarded
  // meanwhile, instead of starting over with nothing and forwarding it all again.
  // Restored from the state topic: written whole to the local store too, so the next restart here is local.
  if ((job.first_checkpoint && worker.progress.positioned()) || worker.state_topic_baseline) {
    state_.write_states({&worker});
  }
  note_restores(state_.store(), {&worker});
  if (connectors::KafkaError error = context_.consumer->resume({partition}); !error.ok()) {
    context_.fail("resuming " + describe({partition}) + " after its restore: " + error.message());
    return true;
  }
  spdlog::info("{}: ready, consuming from {}", describe({partition}),
               job.start_offset >= 0 ? "offset " + std::to_string(job.start_offset) : std::string("its committed offset"));
  return true;
}

void Assignment::publish_restoring() {
  reporter_.set_restoring(restoring_.size());
  reporter_.publish();
}

void Assignment::stop_restores() {
  for (const auto& [key, job] : restoring_) ++job->live_report->restores_cancelled;
  runner_.stop();
  restoring_.clear();
  finished_.clear();
}

// On the restore thread: what the job throws is caught here (runner_ runs nothing that may throw).
void Assignment::run_restore(RestoreJob& job) {
  job_ = &job;
  try {
    run_restore_steps(job);
  } catch (const SideReadCancelled&) {
    job.cancelled = true;
  } catch (const std::exception& e) {
    job.failure = e.what();
  }
  job.rebuilding = false;
  job_ = nullptr;
}

// One partition, on the restore thread: its checkpoint (or start point and rebuild), then the output's tail.
void Assignment::run_restore_steps(RestoreJob& job) {
  const std::optional<connectors::PartitionCheckpoint> checkpoint = restore(job.key, job.pipeline, job.report);
  throw_if_cancelled(job);
  PartitionWorker& worker = *job.worker;
  std::vector<ReconcileRequest> requests;
  if (checkpoint) {
    job.start_offset = checkpoint->next_offset;  // resume exactly where the filter stands
    report_checkpoints_behind_commit({&worker});
    if (worker.output_partition >= 0) {
      requests.push_back({job.key.first, job.key.second, worker.pipeline->output, worker.output_partition,
                          checkpoint->output_offset, checkpoint->next_offset});
    }
  } else {
    // Without a checkpoint a partition starts at its committed offset, whose metadata may still name the
    // output offset of the last checkpoint (state lost, or a new machine): the replay from there is
    // reconciled too. Otherwise only the output's high watermark is needed (the output floor).
    TopicPartition partition{job.key.first, job.key.second, connectors::kNoOffset, {}, {}};
    const StartPoint start = start_points({&partition}).front();
    if (start.offset >= 0) {
      job.start_offset = start.offset;
      worker.progress.started_at(start.offset);
      worker.report->next_offset = start.offset;
    }
    // Events before the committed offset were processed by someone, whose filter is not here: rebuild
    // it from the input history, so that repeats of those keys within the TTL are still dropped.
    if (start.committed && start.offset > 0) rebuild(worker);
    throw_if_cancelled(job);
    // Without an output offset in the commit metadata (no commit yet, or one from an older version) the
    // whole output partition is read: a member that forwarded events of this partition may have died, or
    // seen its commits refused in a rebalance, before any commit of it landed; its records are there.
    if (worker.output_partition >= 0) {
      const bool reconcile_from_metadata = start.output_offset.has_value() && start.offset >= 0;
      requests.push_back({job.key.first, job.key.second, worker.pipeline->output, worker.output_partition,
                          reconcile_from_metadata ? *start.output_offset : 0, std::max<std::int64_t>(start.offset, 0)});
    }
    job.first_checkpoint = true;
  }
  reconcile(requests, {&worker});
}

// In at_least_once a commit always follows its checkpoint, so a checkpoint behind the group's committed
// offset means the store lost synced checkpoints (a write-ahead log cut short: RocksDB opens at its last
// whole record, state_store.h), or another member processed the partition after this one's last
// checkpoint; in exactly_once also a crash between a commit and the checkpoint written after it. Either way
// the replay from the checkpoint is reconciled against the output (the reconciliation read below); this only
// says that it happened.
void Assignment::report_checkpoints_behind_commit(const std::vector<PartitionWorker*>& restored) {
  if (restored.empty()) return;
  TopicPartitions query;
  for (const PartitionWorker* worker : restored) {
    query.push_back({worker->id.topic, worker->id.partition, connectors::kNoOffset, {}, {}});
  }
  const auto committed = context_.consumer->committed(query, kMetadataTimeout);
  if (!committed.ok()) {
    spdlog::debug("restored checkpoints not compared with the committed offsets: {}", committed.error().message());
    return;
  }
  for (const TopicPartition& answer : committed.value()) {
    for (PartitionWorker* worker : restored) {
      if (worker->id.topic != answer.topic || worker->id.partition != answer.partition) continue;
      if (!answer.error.ok() || answer.offset <= worker->progress.next_offset()) continue;
      ++worker->report->restores_behind_commit;
      spdlog::warn("{}: the checkpoint at input offset {} is behind the group's committed offset {}: the state "
                   "store lost its newer checkpoints, or another member processed the partition since; the events "
                   "from offset {} are consumed again and reconciled against the output",
                   connectors::to_string(worker->id), worker->progress.next_offset(), answer.offset,
                   worker->progress.next_offset());
    }
  }
}

// Where partitions without a checkpoint start: the committed offset (and its metadata), else the input's
// low or high watermark as auto.offset.reset says.
std::vector<Assignment::StartPoint> Assignment::start_points(const std::vector<TopicPartition*>& partitions) {
  std::vector<StartPoint> points(partitions.size());
  if (partitions.empty()) return points;
  TopicPartitions query;
  for (const TopicPartition* partition : partitions) {
    query.push_back({partition->topic, partition->partition, connectors::kNoOffset, {}, {}});
  }
  const auto committed = context_.consumer->committed(query, kMetadataTimeout);
  if (!committed.ok()) {
    spdlog::warn("asking the committed offsets of {} partition(s) failed ({}); they start without a first "
                 "checkpoint and without reconciling the output",
                 partitions.size(), committed.error().message());
    return points;
  }
  for (const TopicPartition& answer : committed.value()) {
    if (!answer.error.ok() || answer.offset < 0) continue;
    for (std::size_t i = 0; i < partitions.size(); ++i) {
      if (*partitions[i] != answer) continue;
      points[i].offset = answer.offset;
      points[i].committed = true;
      const auto output_offset = parse_output_offset(answer.metadata);
      if (output_offset && *output_offset >= 0) points[i].output_offset = output_offset;
    }
  }
  const auto& properties = context_.config.kafka.properties;
  const auto reset = properties.find("auto.offset.reset");
  const std::string policy = reset == properties.end() ? "earliest" : reset->second;
  const bool from_start = policy == "earliest" || policy == "smallest" || policy == "beginning";
  const bool from_end = policy == "latest" || policy == "largest" || policy == "end";
  for (std::size_t i = 0; i < partitions.size(); ++i) {
    if (points[i].offset >= 0 || (!from_start && !from_end)) continue;
    const auto marks = context_.admin->watermarks(partitions[i]->topic, partitions[i]->partition, kMetadataTimeout);
    if (!marks.ok()) {
      spdlog::warn("{}/{}: {}; it starts without a first checkpoint", partitions[i]->topic, partitions[i]->partition,
                   marks.error().message());
      continue;
    }
    points[i].offset = from_start ? marks.value().low : marks.value().high;
  }
  return points;
}

// Reads the partition's checkpoint and builds its worker: around the restored filter when the checkpoint is
// usable, else with an empty filter. Returns the checkpoint the worker starts from.
std::optional<connectors::PartitionCheckpoint> Assignment::restore(const PartitionKey& key,
                                                                   const config::PipelineSettings& pipeline,
                                                                   PartitionReport& report) {
  const PartitionId id{key.first, key.second};
  const auto started = Clock::now();
  report.last_restore_source.reset();
  std::optional<connectors::StoredPartition> stored;
  std::unique_ptr<filters::Filter> filter;
  connectors::RestoreReport restored_from;
  try {
    stored = state_.store().read(id);
    if (stored) filter = state_.store().restore_filter(id, stored->filter_meta, &restored_from);  // no copy of a record
  } catch (const StateStoreError& e) {
    if (e.kind() != StateStoreError::Kind::kCorrupt) throw;
    // A damaged table file fails every compaction that reads it, which stops all writes: the whole
    // directory goes aside, not only this partition's records.
    state_.state_corrupt(report, e.what());
    quarantine_from_restore_thread();
    stored.reset();
    filter.reset();
  } catch (const filters::FormatError& e) {
    // Records intact in the store (they passed its checksums) that the filter rejects: drop them.
    state_.state_corrupt(report, e.what());
    state_.drop_state(id);
    stored.reset();
    filter.reset();
  }
  if (!stored && job_->lost_with_quarantine) {
    state_.state_corrupt(report, "its state was in the state directory moved aside");
  }
  if (stored && !PartitionDeduplicator::matches_settings(*filter, pipeline)) {
    spdlog::warn("{}: the stored filter was written with other filter settings than pipeline {} has now; dropping "
                 "it and starting with an empty filter at the committed offset",
                 connectors::to_string(id), pipeline.name);
    state_.drop_state(id);
    stored.reset();
  }
  if (stored && !input_holds(id, stored->checkpoint.next_offset)) {
    state_.drop_state(id);
    stored.reset();
  }
  std::optional<connectors::StateManifest> baseline;  // the state topic's checkpoint, when it is the source
  const std::string& state_topic = context_.config.state.topic;
  const std::optional<std::int64_t> local_next =
      stored ? std::optional<std::int64_t>(stored->checkpoint.next_offset) : std::nullopt;
  if (!state_topic.empty() &&
      !(local_next && local_checkpoint_is_current(*local_next, group_committed_offset(*context_.consumer, id)))) {
    auto from_topic =
        restore_from_state_topic(state_topic, id, pipeline, *context_.admin, side_reader_options("state-reader"), report);
    if (from_topic && input_holds(id, from_topic->checkpoint.next_offset) &&
        pick_restore_source(local_next, from_topic->checkpoint.next_offset) == RestoreSource::kStateTopic) {
      if (stored) state_.drop_state(id);  // behind: its records go, the state topic's are written whole
      stored = connectors::StoredPartition{from_topic->checkpoint, {}};
      filter = std::move(from_topic->filter);
      restored_from = from_topic->loaded;
      baseline = std::move(from_topic->manifest);
    }
  }
  std::unique_ptr<PartitionWorker> worker;
  if (stored) {
    const connectors::PartitionCheckpoint& checkpoint = stored->checkpoint;
    worker = std::make_unique<PartitionWorker>(pipeline, report, std::move(filter),
                                               filters::from_epoch_nanos(checkpoint.filter_time_ns),
                                               context_.options.schemas);
    worker->progress.restored(checkpoint.next_offset, checkpoint.output_offset);
    report.next_offset = checkpoint.next_offset;
    report.restored = true;
    const RestoreSource source = baseline ? RestoreSource::kStateTopic : RestoreSource::kLocal;
    ++report.restores_by_source[static_cast<std::size_t>(source)];
    report.last_restore_source = source;
    if (baseline) {
      // The local store holds none of it yet: the first checkpoint (after reconciling) writes it whole.
      worker->progress.needs_full_image();
      worker->state_topic_baseline = std::move(baseline);
    }
    if (!restored_from.snapshot_ignored.empty()) {
      spdlog::warn("{}: its snapshot was passed over ({}); the filter was restored from its slice records",
                   connectors::to_string(id), restored_from.snapshot_ignored);
    }
    spdlog::info("{}: restored from the {} of {} ms ago at input offset {} (output offset {}), from {} (source {})",
                 connectors::to_string(id), worker->state_topic_baseline ? "state topic's checkpoint" : "checkpoint",
                 std::max<std::int64_t>(wall_clock_ms() - checkpoint.written_at_ms, 0), checkpoint.next_offset,
                 checkpoint.output_offset,
                 restored_from.from_snapshot ? "the snapshot of a clean stop" : "its slice records",
                 restore_source_name(source));
  } else {
    worker = std::make_unique<PartitionWorker>(pipeline, report, context_.options.schemas);
    worker->progress.needs_full_image();
  }
  PartitionState::refresh_filter_stats(*worker, wall_clock_now());
  job_->worker = std::move(worker);
  report.last_restore_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (!stored) return std::nullopt;
  return stored->checkpoint;
}

// A checkpoint beyond the input's high watermark belongs to an earlier topic of the same name (deleted and
// created again): its filter would drop the new topic's events as duplicates.
bool Assignment::input_holds(const PartitionId& id, std::int64_t next_offset) const {
  const auto marks = context_.admin->watermarks(id.topic, id.partition, kMetadataTimeout);
  if (!marks.ok()) {
    spdlog::warn("{}: {}; restoring without checking the checkpoint against the input", connectors::to_string(id),
                 marks.error().message());
    return true;
  }
  if (next_offset <= marks.value().high) return true;
  spdlog::warn("{}: the checkpoint's next offset {} is beyond the input's high watermark {}: the state belongs to an "
               "earlier topic of that name; dropping it and starting with an empty filter",
               connectors::to_string(id), next_offset, marks.value().high);
  return false;
}

// A reader outside the group, named after the group so operators can tell whose it is.
SideReaderOptions Assignment::side_reader_options(const std::string& role) const {
  SideReaderOptions options;
  options.config = client_config(context_, ClientRole::kReader);
  options.hooks = context_.options.hooks;
  options.group_id = context_.config.kafka.group_id + "." + role;
  options.idle_timeout = kReconcileIdleTimeout;
  options.request_timeout = kMetadataTimeout;
  options.cancel = job_ != nullptr ? &job_->cancelled : nullptr;
  return options;
}

// Puts one record of the input history into the filter. A record whose schema the catalog is still fetching
// (the registry slow or down) waits for it here, with backoff, since every key of the window must go in (the
// partition is paused until its restore ends). A stop or a cancellation ends the wait.
void Assignment::insert_waiting_for_schema(PartitionWorker& worker, const connectors::ConsumedMessage& message) {
  auto backoff = kSchemaWaitFirstBackoff;
  while (worker.deduplicator.decide(event_of(message, *worker.pipeline, header_views_),
                                    message.timestamp_ms().value_or(-1))
             .outcome == Outcome::kWaitForSchema) {
    if (context_.stop_requested() || job_->cancelled) return;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, kSchemaWaitLongestBackoff);
  }
}

// Step 3 of the state invariant (input_rebuilder.h): fills a fresh worker's filter from the input history
// before its committed offset, producing nothing. A read that fails leaves what was inserted (a partial window
// still drops more repeats than none) and is logged; consumption goes on.
void Assignment::rebuild(PartitionWorker& worker) {
  PartitionReport& report = *worker.report;
  RebuildRequest request{worker.id.topic, worker.id.partition, worker.progress.next_offset(),
                         std::chrono::duration_cast<std::chrono::milliseconds>(worker.pipeline->ttl),
                         worker.pipeline->time, wall_clock_now};
  const RebuildOptions options{side_reader_options("rebuilder")};
  report.rebuilding = true;
  ++report.restores_by_source[static_cast<std::size_t>(RestoreSource::kRebuild)];
  report.last_restore_source = RestoreSource::kRebuild;
  job_->rebuilding = true;
  spdlog::info("{}: no usable state; rebuilding its filter from the input before offset {} (one TTL, {} ms; "
               "source rebuild)",
               connectors::to_string(worker.id), request.end_offset, request.ttl.count());
  const auto insert = [&](connectors::ConsumedMessage& message) {
    insert_waiting_for_schema(worker, message);
    ++report.rebuild_events;
    if (context_.options.on_rebuild_record) context_.options.on_rebuild_record(worker.id.topic, worker.id.partition);
    throw_if_cancelled(*job_);
  };
  const auto progress = [&](std::uint64_t read, std::uint64_t total) {
    report.rebuild_progress = total == 0 ? 1.0 : static_cast<double>(read) / static_cast<double>(total);
    spdlog::info("{}: rebuilding, {} of {} input records read", connectors::to_string(worker.id), read, total);
    job_->rebuild_progress = report.rebuild_progress;  // the loop shows it (mirror_restore_progress)
  };
  try {
    const RebuildResult result = rebuild_from_input(request, *context_.admin, options, insert, progress);
    report.rebuild_progress = 1.0;
    report.last_rebuild_seconds = result.seconds;
    ++report.rebuilds;
    if (result.history_truncated) {
      spdlog::warn("{}: the input no longer holds the whole TTL before offset {} (retention shorter than the TTL?): "
                   "keys of the deleted part are not in the rebuilt filter",
                   connectors::to_string(worker.id), request.end_offset);
    }
    spdlog::info("{}: rebuilt from input offsets {} to {} in {:.3f} s: {} key(s) inserted, {} record(s) older than "
                 "the TTL skipped",
                 connectors::to_string(worker.id), result.from_offset, request.end_offset - 1, result.seconds,
                 result.inserted, result.skipped);
  } catch (const SideReadCancelled&) {
    report.rebuilding = false;
    throw;
  } catch (const std::exception& e) {
    spdlog::error("{}: rebuilding from the input failed ({}); the filter holds only what was read before that",
                  connectors::to_string(worker.id), e.what());
  }
  report.rebuilding = false;
  job_->rebuilding = false;
  worker.progress.needs_full_image();
}

// Reads the output tails (output_reconciler.h) and hands each worker the input offsets already delivered
// beyond its start, and its output floor. Throws when the output cannot be read.
void Assignment::reconcile(const std::vector<ReconcileRequest>& requests, const std::vector<PartitionWorker*>& workers) {
  if (requests.empty()) return;
  const ReconcileOptions options = side_reader_options("reconciler");
  const auto started = Clock::now();
  const std::vector<ReconcileResult> results = reconcile_outputs(requests, *context_.admin, options);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const ReconcileRequest& request = requests[i];
    const ReconcileResult& result = results[i];
    PartitionWorker& worker = *workers[i];
    worker.progress.reconciled(result.output_end, result.delivered);
    if (request.output_from < 0) continue;
    const std::string input = request.input_topic + "/" + std::to_string(request.input_partition);
    const std::string output = request.output_topic + "/" + std::to_string(request.output_partition);
    if (result.output_behind) {
      spdlog::warn("{}: the checkpoint counts output {} up to offset {}, but its high watermark is {}: the output "
                   "lost records (or is a new topic); nothing to reconcile",
                   input, output, request.output_from, result.output_end);
    } else if (result.output_truncated && request.output_from > 0) {
      spdlog::warn("{}: output {} no longer holds offsets {} to {} (retention): events forwarded there may be "
                   "forwarded again",
                   input, output, request.output_from, result.read_from - 1);
    }
    if (result.records_read == 0) {
      spdlog::debug("{}: output {} holds nothing past offset {}: nothing to reconcile", input, output,
                    request.output_from);
      continue;
    }
    spdlog::info("{}: reconciled against output {} offsets {} to {} ({} records read): {} event(s) from input "
                 "offset {} on were already delivered and will not be forwarded again",
                 input, output, result.read_from, result.output_end - 1, result.records_read,
                 result.delivered.size(), request.input_from);
  }
  spdlog::debug("reconciling {} partition(s) took {} ms", requests.size(),
                std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
}

void Assignment::revoked(const TopicPartitions& partitions, bool lost) {
  // Either way the member rejoins: after a revocation for the rebalance's second round, after a loss to
  // get an assignment at all.
  protocol_.rebalancing();
  second_round_follows_ = !lost;
  cancel_restores(partitions);
  protocol_.settle(/*may_flush=*/!lost);
  std::vector<PartitionWorker*> leaving;
  for (const auto& partition : partitions) {
    if (PartitionWorker* worker = state_.find(PartitionKey(partition.topic, partition.partition))) {
      leaving.push_back(worker);
    }
  }
  // A lost partition may already belong to another member: committing for it would be wrong.
  if (!lost) protocol_.checkpoint_now(leaving, connectors::CommitMode::kSync, Clock::now() + context_.flush_budget());
  for (const auto& partition : partitions) state_.remove(PartitionKey(partition.topic, partition.partition));
  state_.invalidate_worker_cache();
  if (lost) protocol_.partitions_lost(partitions);
  spdlog::info("{} {} partition(s): {}", lost ? "lost" : "revoked", partitions.size(), describe(partitions));
  publish_restoring();
}

// The restores of partitions that leave stop: they are cancelled, and the revocation waits (bounded) for the
// restore thread to let go of them, so that it writes nothing to the store for a partition that another
// worker of this process may own next. Their workers never joined PartitionState: nothing of them is
// checkpointed or committed.
void Assignment::cancel_restores(const TopicPartitions& partitions) {
  std::vector<std::shared_ptr<RestoreJob>> leaving;
  for (const auto& partition : partitions) {
    const auto it = restoring_.find(PartitionKey(partition.topic, partition.partition));
    if (it == restoring_.end()) continue;
    it->second->cancelled = true;
    ++it->second->live_report->restores_cancelled;
    leaving.push_back(it->second);
    restoring_.erase(it);
  }
  const auto deadline = Clock::now() + std::min<Clock::duration>(context_.flush_budget(), kCancelWait);
  for (const auto& job : leaving) {
    if (!runner_.wait_finished(*job, deadline)) {
      spdlog::warn("{}/{}: its restore did not stop within {} ms of its revocation; it is dropped when it does",
                   job->key.first, job->key.second, std::chrono::duration_cast<std::chrono::milliseconds>(kCancelWait).count());
    } else {
      spdlog::info("{}/{}: its restore was cancelled", job->key.first, job->key.second);
    }
  }
}

// On the restore thread: asks the loop to quarantine the corrupt store, and waits until it has (or the job
// is cancelled), so that this restore and the next ones read the new, empty store.
void Assignment::quarantine_from_restore_thread() {
  const std::uint64_t before = state_.store().quarantines();
  job_->quarantine_wanted = true;
  const auto deadline = Clock::now() + kCancelWait;
  while (state_.store().quarantines() == before && !job_->cancelled && Clock::now() < deadline) {
    std::this_thread::sleep_for(kQuarantinePollInterval);
  }
}

}  // namespace bloomgate::app
