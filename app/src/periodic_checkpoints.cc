#include "periodic_checkpoints.h"

#include <spdlog/spdlog.h>

#include <exception>

namespace bloomgate::app {

using connectors::CommitMode;
using connectors::KafkaError;
using connectors::TopicPartition;
using connectors::TopicPartitions;

namespace {

// The coordinator's answers to a commit sent during a rebalance (with the generation that is ending).
bool refused_for_rebalance(const KafkaError& error) {
  return error.code() == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS ||
         error.code() == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION;
}

}  // namespace

PeriodicCheckpoints::PeriodicCheckpoints(ServiceContext& context, PartitionState& state, const CommitPorts& ports)
    : context_(context),
      state_(state),
      output_(ports.output),
      input_(ports.input),
      records_(ports.records),
      make_state_topic_(ports.make_state_topic) {}

void PeriodicCheckpoints::start() {
  if (make_state_topic_) {
    if (std::unique_ptr<StateTopicSink> sink = make_state_topic_()) publisher_.emplace(std::move(sink));
  }
  last_tick_ = Clock::now();
  next_checkpoint_ = last_tick_ + context_.config.state.checkpoint_interval;
}

void PeriodicCheckpoints::tick(Clock::time_point now) {
  last_tick_ = now;
  if (now >= next_checkpoint_ && !pending_) {
    capture();
    next_checkpoint_ = now + context_.config.state.checkpoint_interval;
  }
  advance();
}

CheckpointResult PeriodicCheckpoints::checkpoint_now(const std::vector<PartitionWorker*>& workers, CommitMode mode,
                                                     Clock::time_point deadline) {
  settle(/*may_flush=*/true);
  CheckpointResult result;
  if (context_.failed()) return {false, 0};
  if (KafkaError error = output_.flush(time_left(deadline)); !error.ok()) {
    spdlog::warn("flush did not finish ({} records in flight): {}; no state written, offsets not committed",
                 output_.in_flight(), error.message());
    return {false, 0, false};
  }
  if (context_.failed()) return {false, 0, false};  // a delivery failed during the flush
  std::vector<PartitionWorker*> changed;
  for (PartitionWorker* worker : workers) {
    if (worker->progress.moved_since_checkpoint()) changed.push_back(worker);
  }
  result.state_failures = state_.write_states(changed, publisher(), time_left(deadline));
  result.committed = commit_checkpointed(workers, mode);
  return result;
}

// Commits each partition's last durable checkpoint that Kafka does not have yet; false when the commit
// failed. A checkpoint that failed to write leaves its partition at the one before.
bool PeriodicCheckpoints::commit_checkpointed(const std::vector<PartitionWorker*>& workers, CommitMode mode) {
  TopicPartitions offsets;
  std::vector<PartitionWorker*> committing;
  for (PartitionWorker* worker : workers) {
    if (!worker->progress.checkpoint_uncommitted()) continue;
    offsets.push_back(TopicPartition{worker->id.topic, worker->id.partition, worker->progress.checkpointed_offset(),
                                     std::to_string(worker->progress.checkpointed_output()), {}});
    committing.push_back(worker);
  }
  if (offsets.empty()) return true;
  if (mode == CommitMode::kAsync && last_tick_ < commits_held_until_) return true;  // sent after the rebalance
  if (KafkaError error = input_.commit(offsets, mode); !error.ok()) {
    spdlog::warn("offset commit failed: {}", error.describe());
    return false;
  }
  for (PartitionWorker* worker : committing) {
    worker->progress.commit_sent();
    worker->report->committed_offset = worker->progress.committed_offset();
  }
  ++context_.counters.commits;
  return true;
}

// An asynchronous commit's answer (on the service thread, from poll). A partition counts as committed when
// its commit is sent; a refused one (REBALANCE_IN_PROGRESS while the group rebalances) is forgotten here, so
// a later checkpoint sends it again even without new events: otherwise the partition would stay behind in
// Kafka until it was revoked (wrong lag, and a longer replay for the next owner). A refusal for a rebalance
// holds the periodic commits back until the rebalance is done (periodic_checkpoints.h).
void PeriodicCheckpoints::commit_answered(const KafkaError& error, const TopicPartitions& partitions) {
  bool refused_for_a_rebalance = refused_for_rebalance(error);
  for (const TopicPartition& partition : partitions) {
    if (error.ok() && partition.error.ok()) continue;
    refused_for_a_rebalance = refused_for_a_rebalance || refused_for_rebalance(partition.error);
    PartitionWorker* worker = state_.find(PartitionKey(partition.topic, partition.partition));
    if (worker != nullptr) worker->progress.commit_refused(partition.offset);
  }
  if (refused_for_a_rebalance) rebalancing();
}

// The checkpoint of every partition that moved, taken now without a flush: its images, offsets and output
// offsets are those of this moment. The filters count the captured changes as persisted at once; a failed
// write makes them write whole again (written_in_background).
void PeriodicCheckpoints::capture() {
  if (context_.failed()) return;
  state_.notice_quarantines();
  PendingCheckpoint pending;
  pending.epoch = records_.seal_epoch();
  for (PartitionWorker* worker : state_.all_workers()) {
    if (!worker->progress.moved_since_checkpoint()) continue;
    if (publisher_) publisher_->prepare(*worker);
    pending.images.push_back(state_.image_of(*worker));
    PartitionState::image_taken(*worker);
    pending.workers.push_back(worker);
  }
  if (pending.workers.empty()) {
    (void)commit_checkpointed(state_.all_workers(), CommitMode::kAsync);  // one refused before is sent again
    return;
  }
  pending_ = std::move(pending);
}

// Hands the capture to the writer once its records are acknowledged, then takes the written checkpoints
// and commits them.
void PeriodicCheckpoints::advance() {
  if (!pending_ || context_.failed()) return;
  if (!writer_.busy()) {
    if (!records_.delivered_through(pending_->epoch)) return;
    submit_pending();
    return;
  }
  if (!writer_.finished()) return;
  written_in_background(writer_.take());
  if (!context_.failed()) (void)commit_checkpointed(state_.all_workers(), CommitMode::kAsync);
}

// The capture in progress is flushed for, written and taken, not committed (the caller's checkpoint commits
// it, or the next interval's). Without `may_flush` (lost partitions: no waiting on the brokers inside the
// rebalance) a capture whose records are still in flight is dropped, its partitions writing whole next time.
void PeriodicCheckpoints::settle(bool may_flush) {
  if (!pending_) return;
  if (!writer_.busy()) {
    if (may_flush && !context_.failed() && !records_.delivered_through(pending_->epoch)) {
      if (KafkaError error = output_.flush(context_.flush_budget()); !error.ok()) {
        spdlog::warn("flush did not finish ({} records in flight): {}; the checkpoint taken is not written",
                     output_.in_flight(), error.message());
      }
    }
    if (context_.failed() || !records_.delivered_through(pending_->epoch)) {
      for (std::size_t i = 0; i < pending_->workers.size(); ++i) {
        PartitionState::unpersisted(*pending_->workers[i], pending_->images[i]);
      }
      pending_.reset();
      return;
    }
    submit_pending();
  }
  // Lost partitions: the state topic's acknowledgements are not waited for (those checkpoints count as not
  // written); the store write in hand is.
  if (!may_flush && publisher_) publisher_->abandon_waits();
  CheckpointWriter::Done done = writer_.take();
  if (publisher_) publisher_->resume_waits();
  written_in_background(std::move(done));
}

// The capture to the writer's thread: the store write, then the state topic's, whose acknowledgements are
// waited for there, off the polling thread.
void PeriodicCheckpoints::submit_pending() {
  PublishImages publish;
  if (publisher_) {
    publish = [publisher = &*publisher_, workers = pending_->workers](const std::vector<connectors::PartitionImage>& images) {
      return publisher->publish(workers, images, kCheckpointFlushTimeout);
    };
  }
  writer_.submit(state_.store(), std::move(pending_->images), std::move(publish));
}

void PeriodicCheckpoints::written_in_background(CheckpointWriter::Done done) {
  const std::vector<PartitionWorker*> workers = std::move(pending_->workers);
  pending_.reset();
  if (done.fatal) {
    try {
      std::rethrow_exception(done.fatal);
    } catch (const std::exception& e) {
      context_.fail(std::string("writing checkpoints: ") + e.what());
    } catch (...) {
      context_.fail("writing checkpoints failed");
    }
    return;
  }
  for (const GroupWrite& group : done.groups) {
    for (std::size_t i = group.begin; i < group.end; ++i) {
      PartitionWorker& worker = *workers[i];
      const connectors::PartitionImage& image = done.images[i];
      if (group.error) {
        PartitionState::checkpoint_failed(worker, image.checkpoint, *group.error);
        PartitionState::unpersisted(worker, image);
      } else {
        PartitionState::checkpoint_written(worker, image.checkpoint, group.written[i - group.begin], group.seconds,
                                           done.published.empty() ? nullptr : &done.published[i]);
      }
    }
  }
}

}  // namespace bloomgate::app
