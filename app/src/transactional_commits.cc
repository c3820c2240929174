#include "transactional_commits.h"

#include <spdlog/spdlog.h>

#include <stdexcept>
#include <utility>

#include "assignment.h"

namespace bloomgate::app {

using connectors::CommitMode;
using connectors::KafkaError;
using connectors::TopicPartition;
using connectors::TopicPartitions;

namespace {

constexpr std::chrono::milliseconds kTransactionInitTimeout{60'000};

}  // namespace

TransactionalCommits::TransactionalCommits(ServiceContext& context, PartitionState& state, CommitPorts ports)
    : context_(context), state_(state), ports_(std::move(ports)) {}

void TransactionalCommits::configure_producer(connectors::ProducerOptions& options) const {
  options.transactional_id = config::transactional_id(context_.config.kafka);
}

// Before the consumer joins: a predecessor with this transactional.id is fenced and its open transaction
// ended, so the reconciliation read that follows an assignment sees the output as it will stay.
void TransactionalCommits::start() {
  transaction_ = ports_.make_transactions();
  transaction_->init(Clock::now() + kTransactionInitTimeout);
  spdlog::info("exactly_once: transactional.id {}", config::transactional_id(context_.config.kafka));
  next_checkpoint_ = Clock::now() + context_.config.state.checkpoint_interval;
}

void TransactionalCommits::tick(Clock::time_point now) {
  if (now < next_checkpoint_ && !transaction_doomed_) return;
  commit(now + kCheckpointFlushTimeout);
  next_checkpoint_ = now + context_.config.state.checkpoint_interval;
}

CheckpointResult TransactionalCommits::checkpoint_now(const std::vector<PartitionWorker*>&, CommitMode,
                                                      Clock::time_point deadline) {
  return commit(deadline);
}

bool TransactionalCommits::before_produce() {
  if (KafkaError error = transaction_->ensure_open(); !error.ok()) {
    context_.fail("exactly_once: a transaction could not begin: " + error.describe());
    return false;
  }
  return true;
}

// A record refused for a reason that may pass (a full queue) or that librdkafka says needs an abort: abort,
// rewind and decide again. Anything else is permanent (an unknown topic, no authorization): retrying would
// abort forever, so the service stops, as librdkafka's transactions example does.
bool TransactionalCommits::absorb_produce_error(const KafkaError& error) {
  if (!(error.requires_abort() || error.is_retriable()) || error.is_fatal()) return false;
  abort_and_rewind(error);
  return true;
}

// A failed delivery dooms the transaction, not the service: the loop aborts it and rewinds (never from
// here, a librdkafka callback). The purged records of an abort report here too.
bool TransactionalCommits::absorb_delivery_failure(const KafkaError& error) {
  if (error.is_fatal()) return false;
  if (!discarding_aborted_ && !transaction_doomed_) transaction_doomed_ = error;
  return true;
}

// A lost partition may already belong to another member: the transaction holds its records, so the whole
// transaction is aborted once it is gone, and the partitions kept go back to the last commit.
void TransactionalCommits::partitions_lost(const TopicPartitions& partitions) {
  if (transaction_->is_open() && !context_.failed()) {
    abort_and_rewind(KafkaError::invalid_argument("partitions lost: " + describe(partitions)));
  }
}

void TransactionalCommits::close() {
  if (!transaction_ || !transaction_->is_open()) return;
  transaction_->abort(KafkaError::invalid_argument("the service is stopping after a failure"),
                      Clock::now() + context_.flush_budget());
}

// Flush, send every partition's next offset to the transaction, commit it, and only then write the state:
// a checkpoint never runs ahead of a commit.
CheckpointResult TransactionalCommits::commit(Clock::time_point deadline) {
  if (context_.failed()) return {false, 0};
  if (transaction_doomed_) return abort_and_rewind(*transaction_doomed_);
  if (KafkaError error = ports_.output.flush(time_left(deadline)); !error.ok()) {
    spdlog::warn("flush did not finish ({} records in flight): {}; the transaction stays open",
                 ports_.output.in_flight(), error.message());
    return {false, 0, false};
  }
  if (transaction_doomed_) return abort_and_rewind(*transaction_doomed_);
  TopicPartitions offsets;
  std::vector<PartitionWorker*> committing;
  for (PartitionWorker* worker : state_.all_workers()) {
    if (!worker->progress.uncommitted()) continue;
    offsets.push_back(TopicPartition{worker->id.topic, worker->id.partition, worker->progress.next_offset(),
                                     std::to_string(ports_.records.output_offset(*worker)), {}});
    committing.push_back(worker);
  }
  std::vector<connectors::PartitionImage> images;
  if (!stage_state_records(committing, images)) {
    state_records_aborted(committing);
    return context_.failed() ? CheckpointResult{false, 0} : CheckpointResult{false, 0, true, true};
  }
  const bool was_open = transaction_->is_open();
  const TransactionResult result = transaction_->commit(offsets, deadline);
  if (result.outcome == TransactionOutcome::kAborted) {
    state_records_aborted(committing);
    return rewound_after_abort();
  }
  if (result.outcome == TransactionOutcome::kFailed) {
    context_.fail("exactly_once: the transaction could not be committed (" + result.error.describe() +
                  "); a restart resumes at the last checkpoint and reconciles against the committed output");
    return {false, 0};
  }
  if (was_open || !offsets.empty()) ++context_.counters.transactions_committed;
  if (!offsets.empty()) ++context_.counters.commits;
  CheckpointResult checkpointed;
  for (PartitionWorker* worker : state_.all_workers()) worker->progress.transaction_committed();
  for (PartitionWorker* worker : committing) worker->report->committed_offset = worker->progress.committed_offset();
  if (ports_.state_records != nullptr) {
    for (std::size_t i = 0; i < committing.size(); ++i) StateTopicPublisher::account(*committing[i], staged_[i]);
    for (auto& [partition, records] : staged_tombstones_) {
      tombstones_[partition].insert(tombstones_[partition].end(), records.begin(), records.end());
    }
    staged_tombstones_.clear();
    checkpointed.state_failures = state_.write_images(committing, images, nullptr, kCheckpointFlushTimeout);
  } else {
    checkpointed.state_failures = state_.write_states(committing);
  }
  // The rewind after an abort restores filters from the store: a checkpoint behind the last commit would
  // replay committed events into the output again.
  if (checkpointed.state_failures != 0) {
    context_.fail("exactly_once: the state of " + std::to_string(checkpointed.state_failures) +
                  " partition(s) could not be written after a commit (see above); a restart reconciles them against "
                  "the committed output");
    return {false, checkpointed.state_failures};
  }
  return checkpointed;
}

// state.topic: the tombstones of the checkpoints committed before, then the checkpoint of each committing
// partition at this commit (`images`, for the store afterwards), produced into the open transaction. False
// when a record was not produced (the service failed, or the transaction was aborted and rewound).
bool TransactionalCommits::stage_state_records(const std::vector<PartitionWorker*>& committing,
                                               std::vector<connectors::PartitionImage>& images) {
  if (ports_.state_records == nullptr) return true;
  for (const auto& [partition, records] : std::exchange(tombstones_, {})) {
    for (const connectors::StateTopicRecord& record : records) {
      if (!ports_.state_records->produce_state(partition, record)) return false;
    }
  }
  staged_.clear();
  staged_tombstones_.clear();
  state_.notice_quarantines();
  for (PartitionWorker* worker : committing) {
    StateTopicPublisher::prepare(*worker, ports_.state_records->chunk_bytes());
    images.push_back(state_.image_of(*worker));
    const connectors::StateTopicPlan plan =
        worker->state_topic_writer->plan(images.back().checkpoint, images.back().image, wall_clock_ms());
    const std::int32_t partition = connectors::state_topic_partition(worker->id);
    staged_.push_back({true, plan.bytes});
    for (const connectors::StateTopicRecord& record : plan.records) {
      if (!ports_.state_records->produce_state(partition, record)) return false;
    }
    auto& tombstones = staged_tombstones_[partition];
    tombstones.insert(tombstones.end(), plan.tombstones_after_ack.begin(), plan.tombstones_after_ack.end());
  }
  return true;
}

// The transaction that held the committing partitions' checkpoints did not commit: their writers planned
// manifests the state topic does not have, so each starts over with a full image.
void TransactionalCommits::state_records_aborted(const std::vector<PartitionWorker*>& committing) {
  if (ports_.state_records == nullptr) return;
  for (PartitionWorker* worker : committing) {
    if (worker->state_topic_writer && worker->state_topic_writer->has_baseline()) {
      worker->state_topic_writer->reset();
      ++worker->report->state_topic_produce_failures;
    }
  }
  staged_.clear();
  staged_tombstones_.clear();
}

// Aborts the open transaction, then rewinds every partition to the last commit. Stops the service when the
// abort fails.
CheckpointResult TransactionalCommits::abort_and_rewind(const KafkaError& why) {
  const TransactionResult result = transaction_->abort(why, Clock::now() + kCheckpointFlushTimeout);
  if (result.outcome == TransactionOutcome::kFailed) {
    context_.fail("exactly_once: aborting the transaction failed (" + result.error.describe() +
                  ") after: " + why.describe());
    return {false, 0};
  }
  return rewound_after_abort();
}

CheckpointResult TransactionalCommits::rewound_after_abort() {
  ++context_.counters.transactions_aborted;
  // Serve the purged records' delivery reports now, so they cannot doom the next transaction.
  discarding_aborted_ = true;
  static_cast<void>(ports_.output.flush(kCheckpointFlushTimeout));
  discarding_aborted_ = false;
  transaction_doomed_.reset();
  rewind_to_last_commit();
  return {false, 0, true, true};
}

// Every partition that consumed since the last commit goes back to it: its filter and event clock to the
// checkpoint written right after that commit (read again from the store), its reconciliation set to what
// it was then, and the consumer to the checkpoint's next offset. Workers are changed in place: the loop
// may hold one.
void TransactionalCommits::rewind_to_last_commit() {
  TopicPartitions positions;
  for (const auto& [key, worker] : state_.workers()) {
    if (!worker->progress.decided_since_commit() && !worker->progress.moved_since_checkpoint()) continue;
    if (!rewind(*worker)) return;
    positions.push_back(TopicPartition{worker->id.topic, worker->id.partition, worker->progress.next_offset(), {}, {}});
  }
  if (KafkaError error = ports_.input.seek(positions, kMetadataTimeout); !error.ok()) {
    context_.fail("exactly_once: rewinding the input after an aborted transaction failed: " + error.describe());
    return;
  }
  spdlog::info("exactly_once: {} partition(s) rewound to their last commit", positions.size());
}

bool TransactionalCommits::rewind(PartitionWorker& worker) {
  const std::string name = connectors::to_string(worker.id);
  if (worker.progress.checkpointed_offset() < 0) {
    context_.fail("exactly_once: " + name + " cannot be rewound after an aborted transaction: it has no checkpoint "
                  "(its start offset was unknown)");
    return false;
  }
  try {
    connectors::StateStore& store = state_.store();
    const std::optional<connectors::StoredPartition> stored = store.read(worker.id);
    if (!stored || stored->checkpoint.next_offset != worker.progress.checkpointed_offset()) {
      throw std::runtime_error("the store does not hold the checkpoint of the last commit");
    }
    worker.deduplicator = PartitionDeduplicator(*worker.pipeline, wall_clock_now,
                                                store.restore_filter(worker.id, stored->filter_meta),
                                                filters::from_epoch_nanos(stored->checkpoint.filter_time_ns));
  } catch (const std::exception& e) {
    context_.fail("exactly_once: " + name + " cannot be rewound after an aborted transaction: " + e.what());
    return false;
  }
  worker.progress.rewound();
  worker.report->next_offset = worker.progress.next_offset();
  return true;
}

}  // namespace bloomgate::app
