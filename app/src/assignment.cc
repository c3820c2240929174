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
  reporter_.set_restoring(true);
  reporter_.publish();
  if (context_.options.on_restore) context_.options.on_restore();
  try {
    protocol_.settle(/*may_flush=*/true);
    if (!context_.failed()) assign_partitions(partitions);
  } catch (const std::exception& e) {
    // The consumer applies the assignment anyway; the loop produces nothing once the service failed.
    context_.fail("assigning " + describe(partitions) + ": " + e.what());
  }
  state_.invalidate_worker_cache();
  reporter_.set_joined();
  reporter_.set_restoring(false);
  reporter_.publish();
}

void Assignment::assign_partitions(TopicPartitions& partitions) {
  std::vector<ReconcileRequest> requests;
  std::vector<PartitionWorker*> requesters;
  std::vector<TopicPartition*> fresh;  // no usable checkpoint
  std::vector<PartitionWorker*> restored;
  for (auto& partition : partitions) {
    const auto pipeline = state_.pipelines().find(partition.topic);
    if (pipeline == state_.pipelines().end()) continue;
    const PartitionKey key(partition.topic, partition.partition);
    PartitionReport& report = state_.report_for(key);
    report.assigned = true;
    report.restored = false;
    const std::optional<connectors::PartitionCheckpoint> checkpoint = restore(key, *pipeline->second, report);
    PartitionWorker& worker = *state_.find(key);
    if (checkpoint) {
      partition.offset = checkpoint->next_offset;  // resume exactly where the filter stands
      restored.push_back(&worker);
      if (worker.output_partition >= 0) {
        requests.push_back({key.first, key.second, worker.pipeline->output, worker.output_partition,
                            checkpoint->output_offset, checkpoint->next_offset});
        requesters.push_back(&worker);
      }
    } else {
      partition.offset = connectors::kNoOffset;  // the committed offset, else auto.offset.reset
      fresh.push_back(&partition);
    }
  }
  report_checkpoints_behind_commit(restored);
  // Without a checkpoint a partition starts at its committed offset, whose metadata may still name the
  // output offset of the last checkpoint (state lost, or a new machine): the replay from there is
  // reconciled too. Otherwise only the output's high watermark is needed (the output floor).
  const std::vector<StartPoint> starts = start_points(fresh);
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    PartitionWorker& worker = *state_.find(PartitionKey(fresh[i]->topic, fresh[i]->partition));
    if (starts[i].offset >= 0) {
      fresh[i]->offset = starts[i].offset;
      worker.progress.started_at(starts[i].offset);
      worker.report->next_offset = starts[i].offset;
    }
    // Events before the committed offset were processed by someone, whose filter is not here: rebuild
    // it from the input history, so that repeats of those keys within the TTL are still dropped.
    if (starts[i].committed && starts[i].offset > 0) rebuild(worker);
    if (worker.output_partition < 0) continue;
    // Without an output offset in the commit metadata (no commit yet, or one from an older version) the
    // whole output partition is read: a member that forwarded events of this partition may have died, or
    // seen its commits refused in a rebalance, before any commit of it landed; its records are there.
    const bool reconcile_from_metadata = starts[i].output_offset.has_value() && starts[i].offset >= 0;
    requests.push_back({fresh[i]->topic, fresh[i]->partition, worker.pipeline->output, worker.output_partition,
                        reconcile_from_metadata ? *starts[i].output_offset : 0, std::max<std::int64_t>(starts[i].offset, 0)});
    requesters.push_back(&worker);
  }
  reconcile(requests, requesters);
  // The first checkpoint of a partition without one: where it starts, its empty filter and the output's
  // present end. A crash before its first regular checkpoint then restarts here and reconciles what was
  // forwarded meanwhile, instead of starting over with nothing and forwarding it all again.
  std::vector<PartitionWorker*> starting;
  for (TopicPartition* partition : fresh) {
    PartitionWorker& worker = *state_.find(PartitionKey(partition->topic, partition->partition));
    if (worker.progress.positioned()) starting.push_back(&worker);
  }
  // Restored from the state topic: written to the local store too, so the next restart here is local.
  for (PartitionWorker* worker : restored) {
    if (worker->state_topic_baseline) starting.push_back(worker);
  }
  state_.write_states(starting);
  note_restores(state_.store(), restored, starting);
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
    state_.quarantine();
    state_.take_lost_with_quarantine(key);  // counted just above
    stored.reset();
    filter.reset();
  } catch (const filters::FormatError& e) {
    // Records intact in the store (they passed its checksums) that the filter rejects: drop them.
    state_.state_corrupt(report, e.what());
    state_.drop_state(id);
    stored.reset();
    filter.reset();
  }
  if (!stored && state_.take_lost_with_quarantine(key)) {
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
  state_.add(key, std::move(worker));
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
  return options;
}

// Puts one record of the input history into the filter. A record whose schema the catalog is still fetching
// (the registry slow or down) waits for it here, with backoff, since every key of the window must go in: the
// rebuild holds the loop anyway (it runs inside the rebalance callback). A stop ends the wait.
void Assignment::insert_waiting_for_schema(PartitionWorker& worker, const connectors::ConsumedMessage& message) {
  auto backoff = kSchemaWaitFirstBackoff;
  while (worker.deduplicator.decide(event_of(message, *worker.pipeline, header_views_),
                                    message.timestamp_ms().value_or(-1))
             .outcome == Outcome::kWaitForSchema) {
    if (context_.stop_requested()) return;
    reporter_.publish();
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
  spdlog::info("{}: no usable state; rebuilding its filter from the input before offset {} (one TTL, {} ms; "
               "source rebuild)",
               connectors::to_string(worker.id), request.end_offset, request.ttl.count());
  const auto insert = [&](connectors::ConsumedMessage& message) {
    insert_waiting_for_schema(worker, message);
    ++report.rebuild_events;
  };
  const auto progress = [&](std::uint64_t read, std::uint64_t total) {
    report.rebuild_progress = total == 0 ? 1.0 : static_cast<double>(read) / static_cast<double>(total);
    spdlog::info("{}: rebuilding, {} of {} input records read", connectors::to_string(worker.id), read, total);
    reporter_.publish();  // the assignment blocks the loop: keep /metrics and /readyz current meanwhile
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
  } catch (const std::exception& e) {
    spdlog::error("{}: rebuilding from the input failed ({}); the filter holds only what was read before that",
                  connectors::to_string(worker.id), e.what());
  }
  report.rebuilding = false;
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
}

}  // namespace bloomgate::app
