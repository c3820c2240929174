#include "service_loop.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <utility>

namespace bloomgate::app {
namespace {

using connectors::CommitMode;
using connectors::ConsumedMessage;
using connectors::KafkaError;
using connectors::TopicPartitions;

constexpr std::chrono::milliseconds kPollTimeout{100};
// Records taken from the consumer per call under load (docs/decisions/consume-batches.md); a quiet input
// returns each record as it comes.
constexpr std::size_t kBatchSize = 1024;
constexpr std::uint64_t kProducerPollEvery = 1024;  // serve delivery reports without a call per event
constexpr std::uint64_t kTimeOneEventIn = 63;        // mask: the latency histogram samples 1 event in 64

// Events between two reads of the clock for the checkpoint and snapshot timers under load (an idle poll
// always checks them): at 10^6 events/s, every 64 us.
constexpr std::uint32_t kTimerCheckEvery = 64;
constexpr std::chrono::milliseconds kSeekBackTimeout{5'000};

void observe_age(PartitionReport& report, filters::Duration age, filters::Duration ttl) {
  using Seconds = std::chrono::duration<double>;
  report.duplicate_ages.observe(Seconds(age).count(), Seconds(ttl).count());
}

void count_verdict(PartitionReport& report, const PartitionWorker& worker, const Verdict& verdict) {
  switch (verdict.outcome) {
    case Outcome::kForward: ++report.counters.forwarded; break;
    case Outcome::kDuplicate:
      ++report.counters.duplicates;
      if (verdict.duplicate_age) observe_age(report, *verdict.duplicate_age, worker.pipeline->ttl);
      break;
    case Outcome::kDeadLetter:
      ++report.counters.dead_lettered;
      ++report.dead_letters_by_reason[static_cast<std::size_t>(verdict.rejection->reason)];
      break;
    case Outcome::kWaitForSchema: break;  // not decided: handle() holds it back
  }
}

}  // namespace

ServiceLoop::ServiceLoop(const config::Config& config, const ServiceOptions& options, StateDirectory& directory)
    : config_(config), options_(options), state_(context_, directory, router_, *this) {}

RunResult ServiceLoop::run() noexcept {
  try {
    start();
    loop();
    shut_down();
  } catch (const StartupRefused& e) {
    context_.fail(e.what(), kExitUsage);
  } catch (const std::exception& e) {
    context_.fail(e.what());
  }
  reporter_.set_running(false);
  close_clients();
  reporter_.publish();
  return result();
}

RunResult ServiceLoop::fail_before_start(const std::string& why) noexcept {
  context_.fail(why);
  reporter_.publish();
  return result();
}

RunResult ServiceLoop::result() const {
  if (context_.failure()) return {context_.failure_exit_code(), *context_.failure()};
  return {};
}

void ServiceLoop::start() {
  context_.admin = std::make_unique<connectors::Admin>(client_config(context_, ClientRole::kAdmin), options_.hooks);
  const std::vector<PartitionKey> inputs = check_topics(context_);
  state_.add_inputs(inputs);
  check_state_topic(context_, inputs);
  retention_.ask(*context_.admin, state_.pipelines());
  connectors::ProducerOptions producer_options;
  producer_options.hooks = options_.hooks;
  producer_options.on_delivery = [this](const connectors::DeliveryReport& report) { router_.on_delivery(report); };
  protocol_->configure_producer(producer_options);
  context_.producer =
      std::make_unique<connectors::Producer>(client_config(context_, ClientRole::kProducer), std::move(producer_options));
  router_.limits().set_producer_limit(context_.producer->message_max_bytes());
  router_.limits().ask(*context_.admin, config_);
  protocol_->start();
  context_.consumer =
      std::make_unique<connectors::Consumer>(client_config(context_, ClientRole::kConsumer), consumer_options());
  std::vector<std::string> topics;
  for (const auto& [topic, pipeline] : state_.pipelines()) topics.push_back(topic);
  if (KafkaError error = context_.consumer->subscribe(topics); !error.ok()) {
    throw std::runtime_error("subscribing to the input topics failed: " + error.message());
  }
  reporter_.set_running(true);
  spdlog::info("consuming {} input topic(s) of {} pipeline(s) as group {}", topics.size(), config_.pipelines.size(),
               config_.kafka.group_id);
}

connectors::ConsumerOptions ServiceLoop::consumer_options() {
  connectors::ConsumerOptions options;
  options.group_id = config_.kafka.group_id;
  if (!config_.kafka.instance_name.empty()) options.group_instance_id = config_.kafka.instance_name;
  options.hooks = options_.hooks;
  options.assign_paused = true;  // each new partition is resumed once its restore is done (assignment.h)
  options.on_assigned = [this](TopicPartitions& partitions) { assignment_.assigned(partitions); };
  options.on_revoked = [this](TopicPartitions& partitions) { assignment_.revoked(partitions, /*lost=*/false); };
  options.on_lost = [this](TopicPartitions& partitions) { assignment_.revoked(partitions, /*lost=*/true); };
  options.on_commit = [this](const KafkaError& error, const TopicPartitions& partitions) {
    if (!error.ok()) spdlog::warn("offset commit failed: {}", error.describe());
    protocol_->commit_answered(error, partitions);
  };
  return options;
}

void ServiceLoop::loop() {
  connectors::Consumer& consumer = *context_.consumer;
  next_snapshot_ = Clock::now();
  while (!context_.failed() && !context_.stop_requested()) {
    if (consumer.poll_batch(kPollTimeout, kBatchSize, batch_) == 0) {
      context_.producer->poll(std::chrono::milliseconds(0));
      check_timers();
      continue;
    }
    for (ConsumedMessage& message : batch_) {
      // Rewound after an aborted transaction while this batch was in hand: fetched again from the commit.
      if (consumer.moved_since_batch(message)) continue;
      handle(message);
      after_event();
    }
    batch_.clear();
  }
}

void ServiceLoop::after_event() {
  if (++consumed_since_producer_poll_ >= kProducerPollEvery) {
    consumed_since_producer_poll_ = 0;
    context_.producer->poll(std::chrono::milliseconds(0));
  }
  // Under load the timers are checked every kTimerCheckEvery events, not after each one: a clock read is a
  // sizeable share of an event's cost, and the timers need no finer grain.
  if (++events_since_timer_check_ < kTimerCheckEvery) return;
  events_since_timer_check_ = 0;
  check_timers();
}

void ServiceLoop::check_timers() {
  const auto now = Clock::now();
  retention_.poll(now);
  router_.limits().poll(now);
  protocol_->tick(now);
  assignment_.poll_restores();
  if (options_.schemas) {
    schema_waits_.resume_ready(*context_.consumer, *options_.schemas);
    context_.partitions_waiting_for_schema = schema_waits_.held();
  }
  if (now >= next_snapshot_) {
    reporter_.publish();
    next_snapshot_ = now + options_.snapshot_interval;
  }
}

void ServiceLoop::handle(ConsumedMessage& message) {
  if (context_.failed()) return;  // e.g. an assignment that failed inside this poll: produce nothing more
  if (KafkaError error = message.error(); !error.ok()) {
    if (error.is_fatal()) context_.fail("consumer: " + error.message());
    else if (!message.is_partition_eof()) spdlog::warn("consumer: {}", error.message());
    return;
  }
  PartitionWorker* worker = state_.worker_for(message);
  if (worker == nullptr) return;  // fetched just before its partition was revoked: the next owner has it
  if (message.offset() < worker->progress.next_offset()) return seek_back(*worker, message);
  const bool timed = (++events_since_timing_ & kTimeOneEventIn) == 0;
  const auto started = timed ? Clock::now() : Clock::time_point{};
  const EventView event = event_of(message, *worker->pipeline, header_views_);
  const Verdict verdict = decide(*worker, message, event);
  if (verdict.outcome == Outcome::kWaitForSchema) return hold_for_schema(message, verdict.pending_schema);
  worker->progress.decided();
  PartitionReport& report = *worker->report;
  if (worker->progress.take_delivered(message.offset())) {
    ++report.reconciled;  // decided (its key is in the filter) but forwarded before the restart: not again
  } else {
    const Delivery delivery = router_.deliver(*worker, message, verdict);
    if (delivery == Delivery::kNoDeadLetterTopic) stop_at_unkeyable(*worker, message, verdict);
    if (delivery != Delivery::kDone) return;
    count_verdict(report, *worker, verdict);
  }
  ++report.consumed;
  worker->progress.processed(message.offset());
  report.next_offset = worker->progress.next_offset();
  if (timed) reporter_.processing_latency().observe(std::chrono::duration<double>(Clock::now() - started).count());
}

// A record behind the partition's position: librdkafka moved the fetch position back after the seek that
// made the partition ready (an offset fetch for the paused partition that answered after the seek resets it
// to the group's commit or to auto.offset.reset). Every record before the position is decided already, or
// before the partition's start: none is decided again; the partition is sought back to its position, so
// its fetches do not re-read what lies between.
void ServiceLoop::seek_back(const PartitionWorker& worker, const ConsumedMessage& message) {
  const std::int64_t position = worker.progress.next_offset();
  spdlog::warn("{}/{}: the consumer handed out offset {}, behind the partition's position {}; seeking back to it",
               message.topic(), message.partition(), message.offset(), position);
  const connectors::TopicPartition partition{std::string(message.topic()), message.partition(), position, {}, {}};
  if (KafkaError error = context_.consumer->seek({partition}, kSeekBackTimeout); !error.ok()) {
    spdlog::warn("{}/{}: seeking back to offset {} failed ({}); its records before it are passed over",
                 message.topic(), message.partition(), position, error.message());
  }
}

// The partition stops at this record until the catalog has its schema (schema_waits.h).
void ServiceLoop::hold_for_schema(const ConsumedMessage& message, std::uint32_t schema_id) {
  KafkaError error = schema_waits_.hold(*context_.consumer, message, schema_id);
  context_.partitions_waiting_for_schema = schema_waits_.held();
  if (!error.ok()) {
    context_.fail("consumer: holding " + std::string(message.topic()) + "/" + std::to_string(message.partition()) +
                  " back for schema " + std::to_string(schema_id) + " failed: " + error.message());
  }
}

// An event too large to forward is a dead letter before its key reaches the filter (output_router.h).
Verdict ServiceLoop::decide(PartitionWorker& worker, const ConsumedMessage& message, const EventView& event) {
  const std::optional<Rejection> too_large = router_.oversized(*worker.pipeline, message);
  return worker.deduplicator.decide(event, message.timestamp_ms().value_or(-1), too_large ? &*too_large : nullptr);
}

// An event that cannot be keyed (or forwarded), and no dead_letter topic. The events before it are processed: their
// records are flushed and committed up to (not past) this event, as a graceful stop would. A failure skips
// the exit flush, so without this their records would be discarded unsent, or written and then written
// again by the next run.
void ServiceLoop::stop_at_unkeyable(const PartitionWorker& worker, const ConsumedMessage& message,
                                    const Verdict& verdict) {
  protocol_->checkpoint_now(state_.all_workers(), CommitMode::kSync,
                            Clock::now() + std::chrono::duration_cast<Clock::duration>(config_.shutdown.grace_period));
  context_.fail("pipeline " + worker.pipeline->name + ": the event at " + std::string(message.topic()) + "/" +
                std::to_string(message.partition()) + " offset " + std::to_string(message.offset()) +
                " cannot be keyed or forwarded (" + std::string(reason_name(verdict.rejection->reason)) + ": " +
                verdict.rejection->message +
                ") and the pipeline has no dead_letter topic; stopping without committing it");
}

void ServiceLoop::shut_down() {
  if (context_.failed()) return;
  context_.stop_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(config_.shutdown.grace_period);
  assignment_.stop_restores();  // a partition still restoring has nothing to flush or commit
  reporter_.set_running(false);
  spdlog::info("stopping: flushing and committing (grace period {} ms)",
               std::chrono::duration_cast<std::chrono::milliseconds>(config_.shutdown.grace_period).count());
  const CheckpointResult result =
      protocol_->checkpoint_now(state_.all_workers(), CommitMode::kSync, *context_.stop_deadline);
  if (result.aborted) {
    spdlog::warn("shutdown: the last transaction was aborted; its events are consumed again by the next run");
  } else if (result.flushed && !result.committed) {
    // The output was flushed and every partition's checkpoint written, but Kafka refused the commit (a
    // rebalance in progress at the moment of the stop answers REBALANCE_IN_PROGRESS or ILLEGAL_GENERATION).
    // Nothing is lost or forwarded twice: a restart on this state directory resumes at the checkpoints, and
    // a member that gets a partition instead starts at its last committed offset and reconciles the output
    // from that commit's output offset. So this is no failure: close() revokes the partitions and the
    // revocation commits once more, under the rebalance's new generation.
    spdlog::warn("shutdown: the offset commit failed (see above) after the state was written; the state directory "
                 "holds every partition's checkpoint, and the commit is tried again as the partitions are revoked");
  } else if (!result.committed) {
    context_.fail("shutdown: the output was not flushed within the grace period; uncommitted events will be "
                  "consumed again");
  } else if (result.state_failures != 0) {
    context_.fail("shutdown: the state of " + std::to_string(result.state_failures) +
                  " partition(s) could not be written (see above); their events since the last checkpoint will be "
                  "consumed again and reconciled");
  }
  if (!context_.failed()) state_.write_snapshots();
}

void ServiceLoop::close_clients() noexcept {
  batch_.clear();  // records must not outlive their consumer (a failure may leave a batch half-handled)
  assignment_.stop_restores();  // the restore thread asks the consumer: joined before it closes
  if (context_.consumer) {
    // close() revokes what is still assigned; after a failure, the revocation commits nothing. A member
    // still joining waits for its first assignment within half of what is left of the grace period: the
    // other half is the close's own, so that a group that assigns nothing yet (one still waiting out dead
    // members) does not hold the stop past the grace period (shutdown_deadline.h).
    const auto join_wait = std::min<std::chrono::milliseconds>(context_.flush_budget() / 2, std::chrono::seconds(10));
    if (KafkaError error = context_.consumer->close(join_wait); !error.ok()) {
      spdlog::warn("consumer close: {}", error.message());
    }
  }
  if (context_.producer) protocol_->close();
  if (context_.producer && !context_.failed()) {
    if (KafkaError error = context_.producer->flush(context_.flush_budget()); !error.ok()) {
      spdlog::warn("producer flush at exit: {}", error.message());
    }
  }
  context_.consumer.reset();
  context_.producer.reset();
  protocol_.reset();  // its checkpoint writer stops before the directory's owner closes the store
}

}  // namespace bloomgate::app
