#include "bloomgate/app/service.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "bloomgate/connectors/admin.h"
#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/kafka_config.h"
#include "bloomgate/connectors/producer.h"
#include "bloomgate/connectors/state_store.h"
#include "bloomgate/filters/format.h"
#include "checkpoint_writer.h"
#include "input_rebuilder.h"
#include "output_reconciler.h"
#include "output_record.h"
#include "output_transaction.h"

namespace bloomgate::app {
namespace {

using connectors::CommitMode;
using connectors::ConsumedMessage;
using connectors::KafkaError;
using connectors::PartitionId;
using connectors::StateStore;
using connectors::StateStoreError;
using connectors::TopicPartition;
using connectors::TopicPartitions;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kPollTimeout{100};
constexpr std::chrono::milliseconds kMetadataTimeout{10'000};
constexpr std::chrono::milliseconds kCheckpointFlushTimeout{30'000};
constexpr std::chrono::milliseconds kReconcileIdleTimeout{30'000};
constexpr std::uint64_t kProducerPollEvery = 1024;  // serve delivery reports without a call per event
constexpr std::uint64_t kTimeOneEventIn = 63;        // mask: the latency histogram samples 1 event in 64

// A group commit holds its partitions' images in memory at once, and full images (partitions restored from
// nothing, a quarantined store) can be large: above this many bytes the next partitions go into another batch.
constexpr std::uint64_t kGroupCommitBytes = std::uint64_t{64} << 20;

// Events between two reads of the clock for the checkpoint and snapshot timers under load (an idle poll
// always checks them): at 10^6 events/s, every 64 us.
constexpr std::uint32_t kTimerCheckEvery = 64;
constexpr std::chrono::seconds kRetentionAnswerWait{30};  // how long the loop looks for the retention answer
constexpr std::chrono::milliseconds kTransactionInitTimeout{60'000};

filters::TimePoint wall_clock_now() {
  return std::chrono::time_point_cast<filters::Duration>(std::chrono::system_clock::now());
}

std::int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A StateStoreError's message, starting with "state store: " once (most of them already do).
std::string store_message(const std::exception& error) {
  const std::string what = error.what();
  return what.rfind("state store: ", 0) == 0 ? what : "state store: " + what;
}

// The commit metadata written next to a committed offset: the checkpoint's output offset, in decimal.
std::optional<std::int64_t> parse_output_offset(const std::string& metadata) {
  std::int64_t number = 0;
  const auto result = std::from_chars(metadata.data(), metadata.data() + metadata.size(), number);
  if (metadata.empty() || result.ec != std::errc() || result.ptr != metadata.data() + metadata.size()) return std::nullopt;
  return number;
}

// Measures the false-positive rate the way a user meets it: keys that were never inserted, asked at the
// filter's present. Probe keys are 16 random bytes from a generator with a fixed seed (the same probes in
// every run); a real key equal to one is a 2^-128 event.
class FprProbe {
 public:
  // Asks kFprProbesPerSnapshot keys; returns the hits, and keeps the window for observed().
  std::uint64_t probe(const filters::Filter& filter, filters::TimePoint now) {
    std::uint64_t hits = 0;
    for (std::uint64_t i = 0; i < kFprProbesPerSnapshot; ++i) {
      const std::array<std::uint64_t, 2> bytes{random_(), random_()};
      const std::string_view key(reinterpret_cast<const char*>(bytes.data()), sizeof bytes);
      if (filter.contains(key, now)) ++hits;
    }
    window_.push_back(hits);
    window_hits_ += hits;
    if (window_.size() > kFprWindowSnapshots) {
      window_hits_ -= window_.front();
      window_.pop_front();
    }
    return hits;
  }

  double observed() const {
    if (window_.empty()) return 0;
    return static_cast<double>(window_hits_) / static_cast<double>(window_.size() * kFprProbesPerSnapshot);
  }

 private:
  std::mt19937_64 random_{0x6670722d70726f62};  // "fpr-prob"
  std::deque<std::uint64_t> window_;
  std::uint64_t window_hits_ = 0;
};

// The event as key extraction sees it. Only a key taken from a header needs the headers as views (into
// `storage`, reused); the output detaches them from the record instead.
EventView event_of(const connectors::ConsumedMessage& message, const config::PipelineSettings& pipeline,
                   std::vector<connectors::HeaderView>& storage) {
  storage.clear();
  if (key_reads_headers(pipeline.key)) storage = message.headers();
  return {message.key(), message.value().value_or(std::string_view{}), storage};
}

// The live state of one assigned input partition.
struct PartitionWorker {
  // With an empty filter.
  PartitionWorker(const config::PipelineSettings& settings, PartitionReport& partition_report)
      : pipeline(&settings), deduplicator(settings, wall_clock_now), report(&partition_report) {
    init();
  }
  // Around a filter restored from a checkpoint, whose present was `filter_time`.
  PartitionWorker(const config::PipelineSettings& settings, PartitionReport& partition_report,
                  std::unique_ptr<filters::Filter> restored, filters::TimePoint filter_time)
      : pipeline(&settings),
        deduplicator(settings, wall_clock_now, std::move(restored), filter_time),
        report(&partition_report) {
    init();
  }

  void init() {
    id = PartitionId{report->topic, report->partition};
    // same_as_input: the output partition has the input partition's number, so its tail can be
    // reconciled. by_key scatters the partition's records over the output: no output position is kept.
    if (pipeline->output_partitioning == config::OutputPartitioning::kSameAsInput) output_partition = id.partition;
  }

  const config::PipelineSettings* pipeline;
  PartitionDeduplicator deduplicator;
  PartitionReport* report;                       // cumulative counters, owned by Service::Impl::reports_
  PartitionId id;
  std::int32_t output_partition = -1;            // in pipeline->output; -1 with by_key
  std::int64_t next_offset = -1;                 // the next input offset to process; -1: none yet this assignment
  std::int64_t committed_offset = connectors::kNoOffset;
  std::int64_t checkpointed_offset = -1;         // next_offset of the last checkpoint written (or restored)
  std::int64_t checkpointed_output = -1;         // that checkpoint's output offset (the commit metadata)
  std::int64_t output_floor = -1;                // the output's high watermark at assignment: nothing this
                                                 // partition forwarded before then lies at or above it
  // Reconciliation: input offsets at or after the restored position that the output already holds, with
  // the output offset of their record. Their events are decided again (so their keys are inserted) but
  // not produced again. Emptied as consumption passes them.
  std::map<std::int64_t, std::int64_t> delivered;
  // exactly_once: `delivered` as it was at the last commit, for the rewind after an aborted transaction.
  std::map<std::int64_t, std::int64_t> delivered_at_last_commit;
  // exactly_once: the filter decided an event since the last commit. Not the same as next_offset having
  // moved: an event whose record was refused is decided and fetched, but its offset never advanced.
  bool decided_since_commit = false;
  bool full_image_next = false;                  // the next checkpoint writes every slice (a fresh store)
  // Slices dropped from the filter whose deletion was in a checkpoint that failed to write: the next
  // checkpoint deletes them (a whole image rewrites the slices, not what is gone).
  std::vector<std::uint64_t> unwritten_drops;
  FprProbe fpr_probe;
};

using PartitionKey = std::pair<std::string, std::int32_t>;

}  // namespace

class Service::Impl {
 public:
  Impl(config::Config config, ServiceOptions options) : config_(std::move(config)), options_(std::move(options)) {
    for (const auto& pipeline : config_.pipelines) {
      filter_options_for(pipeline);  // throws on settings the filters reject, before any Kafka work
      for (const auto& topic : pipeline.inputs) pipeline_of_topic_[topic] = &pipeline;
    }
  }

  RunResult run() noexcept {
    try {
      start();
      loop();
      shut_down();
    } catch (const std::exception& e) {
      fail(e.what());
    }
    running_ = false;
    close_clients();
    publish_snapshot();
    if (failure_) return {kExitServiceFailed, *failure_};
    return {};
  }

  ServiceSnapshot snapshot() const {
    std::lock_guard lock(snapshot_mutex_);
    return published_;
  }

 private:
  // ---- start-up ----------------------------------------------------------------------------------

  enum class ClientRole { kConsumer, kReader, kOther };  // kReader: the reconciler's and rebuilder's consumers

  connectors::KafkaConfig client_config(ClientRole role) const {
    connectors::KafkaConfig kafka;
    kafka.with("bootstrap.servers", options_.bootstrap_servers);
    // A new consumer group starts at the beginning of the input: a deduplicator that skipped what was
    // already there would never forward it. kafka.properties, applied after, may say otherwise.
    if (role == ClientRole::kConsumer) kafka.with("auto.offset.reset", "earliest");
    if (KafkaError error = kafka.set_all(config_.kafka.properties); !error.ok()) {
      throw std::runtime_error("kafka.properties: " + error.message());
    }
    // exactly_once: what an aborted transaction wrote is not there, for the loop (an upstream transactional
    // producer's aborts) and for the reconciliation read of the output (this service's own).
    if (role != ClientRole::kOther && exactly_once()) kafka.with("isolation.level", "read_committed");
    return kafka;
  }

  bool exactly_once() const { return config_.kafka.guarantee == config::Guarantee::kExactlyOnce; }

  void start() {
    open_state_store();
    const connectors::KafkaConfig kafka = client_config(ClientRole::kOther);
    admin_ = std::make_unique<connectors::Admin>(kafka, options_.hooks);
    for (const PartitionKey& key : check_topics()) report_for(key);
    ask_retention();
    if (state_quarantined_) {
      for (const auto& [key, report] : reports_) lost_with_quarantine_.insert(key);
    }
    connectors::ProducerOptions producer_options;
    producer_options.hooks = options_.hooks;
    producer_options.on_delivery = [this](const connectors::DeliveryReport& report) { on_delivery(report); };
    if (exactly_once()) producer_options.transactional_id = config::transactional_id(config_.kafka);
    producer_ = std::make_unique<connectors::Producer>(kafka, std::move(producer_options));
    if (exactly_once()) start_transactions();
    consumer_ = std::make_unique<connectors::Consumer>(client_config(ClientRole::kConsumer), consumer_options());
    std::vector<std::string> topics;
    for (const auto& [topic, pipeline] : pipeline_of_topic_) topics.push_back(topic);
    if (KafkaError error = consumer_->subscribe(topics); !error.ok()) {
      throw std::runtime_error("subscribing to the input topics failed: " + error.message());
    }
    running_ = true;
    spdlog::info("consuming {} input topic(s) of {} pipeline(s) as group {}", topics.size(), config_.pipelines.size(),
                 config_.kafka.group_id);
  }

  // Before the consumer joins: a predecessor with this transactional.id is fenced and its open transaction
  // ended, so the reconciliation read that follows an assignment sees the output as it will stay.
  void start_transactions() {
    transaction_ = std::make_unique<OutputTransaction>(*producer_);
    transaction_->init(Clock::now() + kTransactionInitTimeout);
    spdlog::info("exactly_once: transactional.id {}", config::transactional_id(config_.kafka));
  }

  // The input topic is the filter's changelog: a rebuild needs one TTL of it. Said at start-up, since a
  // rebuild is exactly when it is too late to find out. Asked without waiting (the embedded broker never
  // answers); the loop looks for the answer until kRetentionAnswerWait has passed.
  void ask_retention() {
    std::vector<std::string> topics;
    for (const auto& [topic, pipeline] : pipeline_of_topic_) topics.push_back(topic);
    retention_query_.emplace(admin_->ask_retention(topics));
    retention_deadline_ = Clock::now() + kRetentionAnswerWait;
  }

  void check_retention(Clock::time_point now) {
    if (!retention_query_) return;
    auto answer = retention_query_->poll();
    if (!answer) {
      if (now < retention_deadline_) return;
      spdlog::info("the input topics' retention could not be checked against the TTL: no answer to DescribeConfigs");
      retention_query_.reset();
      return;
    }
    retention_query_.reset();
    if (!answer->ok()) {
      spdlog::info("the input topics' retention could not be checked against the TTL ({})", answer->error().message());
      return;
    }
    for (const auto& [topic, retention_ms] : answer->value()) warn_if_short(topic, retention_ms);
  }

  void warn_if_short(const std::string& topic, std::int64_t retention_ms) const {
    const auto pipeline = pipeline_of_topic_.find(topic);
    if (pipeline == pipeline_of_topic_.end()) return;
    const auto ttl_ms = std::chrono::duration_cast<std::chrono::milliseconds>(pipeline->second->ttl).count();
    if (retention_ms < 0 || retention_ms >= ttl_ms) return;
    spdlog::warn("input topic {} keeps records for {} ms (retention.ms), less than pipeline {}'s TTL of {} ms: a "
                 "partition whose state is lost cannot be fully rebuilt from its input, and repeats of keys older than "
                 "the retention would be forwarded again",
                 topic, retention_ms, pipeline->second->name, ttl_ms);
  }

  // ---- the state store -----------------------------------------------------------------------------

  // RocksDB's own warnings go to the debug level and its errors to warn: what they mean for the service
  // (a failed checkpoint, corrupt state) is logged at error level by the service itself, with the partition.
  static connectors::StateStoreLog rocksdb_log() {
    return [](std::string_view level, std::string_view message) {
      spdlog::log(level == "warn" ? spdlog::level::debug : spdlog::level::warn, "rocksdb {}: {}", level, message);
    };
  }

  connectors::StateStoreOptions store_options() const {
    connectors::StateStoreOptions options;
    options.log = rocksdb_log();
    options.environment = options_.state_environment;
    return options;
  }

  // Before anything else: a second process on the same directory stops here (exit 1) with the
  // directory in its message, before it touches Kafka.
  void open_state_store() {
    const std::string& dir = config_.state.dir;
    try {
      store_ = StateStore::open(dir, store_options());
    } catch (const StateStoreError& e) {
      if (e.kind() != StateStoreError::Kind::kCorrupt) throw std::runtime_error(store_message(e));
      spdlog::error("{}; moving the state directory aside and starting with empty state", store_message(e));
      quarantine_and_reopen();
    }
    if (config_.kafka.brokers == config::kEmbeddedBrokers) {
      // The embedded broker starts empty with every run: state from an earlier run describes topics that
      // no longer exist, and would drop their new events as duplicates.
      try {
        for (const auto& checkpoint : store_->list()) store_->drop(checkpoint.id);
      } catch (const StateStoreError& e) {
        if (e.kind() != StateStoreError::Kind::kCorrupt) throw std::runtime_error(store_message(e));
        store_.reset();
        quarantine_and_reopen();
        state_quarantined_ = false;  // nothing of value was lost: the state was stale anyway
      }
    }
    spdlog::info("state store open at {}", dir);
  }

  // Moves the damaged directory aside (StateStore::quarantine) and opens an empty one. The partitions
  // this member owns keep their filters in memory and write them whole at their next checkpoint; the
  // others lost their state with the directory (lost_with_quarantine_).
  void quarantine_and_reopen() {
    finish_pending_checkpoint();
    store_.reset();
    const std::string moved = StateStore::quarantine(config_.state.dir);
    spdlog::error("state store: the damaged state directory was moved to {}; the partitions whose state was there "
                  "rebuild their filters from the input history before their committed offsets",
                  moved);
    store_ = StateStore::open(config_.state.dir, store_options());
    state_quarantined_ = true;
    for (const auto& [key, report] : reports_) {
      if (workers_.count(key) == 0) lost_with_quarantine_.insert(key);
    }
    for (auto& [key, worker] : workers_) {
      worker->full_image_next = true;
      worker->checkpointed_offset = -1;  // not in the new directory: the next checkpoint writes it, events or not
    }
  }

  connectors::ConsumerOptions consumer_options() {
    connectors::ConsumerOptions options;
    options.group_id = config_.kafka.group_id;
    if (!config_.kafka.instance_name.empty()) options.group_instance_id = config_.kafka.instance_name;
    options.hooks = options_.hooks;
    options.on_assigned = [this](TopicPartitions& partitions) { assign(partitions); };
    options.on_revoked = [this](TopicPartitions& partitions) { revoke(partitions, /*lost=*/false); };
    options.on_lost = [this](TopicPartitions& partitions) { revoke(partitions, /*lost=*/true); };
    options.on_commit = [this](const KafkaError& error, const TopicPartitions& partitions) {
      if (!error.ok()) spdlog::warn("offset commit failed: {}", error.describe());
      commit_result(error, partitions);
    };
    return options;
  }

  // An asynchronous commit's answer (on the service thread, from poll). checkpoint() counts a partition
  // as committed when its commit is sent; a refused one (REBALANCE_IN_PROGRESS while the group
  // rebalances) is forgotten here, so the next checkpoint sends it again even without new events. Before,
  // a partition whose last commit a rebalance refused stayed behind in Kafka until it was revoked: wrong
  // lag, and a longer replay for the next owner.
  void commit_result(const KafkaError& error, const TopicPartitions& partitions) {
    for (const TopicPartition& partition : partitions) {
      if (error.ok() && partition.error.ok()) continue;
      const auto it = workers_.find(PartitionKey(partition.topic, partition.partition));
      if (it != workers_.end() && it->second->committed_offset == partition.offset) {
        it->second->committed_offset = connectors::kNoOffset;
      }
    }
  }

  int partition_count(const connectors::Admin& admin, const std::string& topic, const std::string& role) const {
    const auto count = admin.partition_count(topic, kMetadataTimeout);
    if (!count.ok()) {
      throw std::runtime_error(role + " topic " + topic + ": " + count.error().message() + " (brokers " +
                               options_.bootstrap_servers + ")");
    }
    return count.value();
  }

  // Everything the pipelines write to must exist before the first event is consumed: a missing output
  // discovered mid-stream would stop the service with events half-processed.
  // Returns every input partition, so their reports (and metrics) exist from start-up.
  std::vector<PartitionKey> check_topics() const {
    std::vector<PartitionKey> inputs;
    const connectors::Admin& admin = *admin_;
    for (const auto& pipeline : config_.pipelines) {
      const std::string where = "pipeline " + pipeline.name + ": ";
      const int output_partitions = partition_count(admin, pipeline.output, where + "output");
      if (!pipeline.duplicates.empty()) partition_count(admin, pipeline.duplicates, where + "duplicates");
      if (!pipeline.dead_letter.empty()) partition_count(admin, pipeline.dead_letter, where + "dead-letter");
      for (const auto& input : pipeline.inputs) {
        const int input_partitions = partition_count(admin, input, where + "input");
        for (std::int32_t p = 0; p < input_partitions; ++p) inputs.emplace_back(input, p);
        if (pipeline.output_partitioning == config::OutputPartitioning::kSameAsInput &&
            output_partitions < input_partitions) {
          throw std::runtime_error(where + "output topic " + pipeline.output + " has " +
                                   std::to_string(output_partitions) + " partitions, fewer than the " +
                                   std::to_string(input_partitions) + " of input " + input +
                                   "; add partitions or set output_partitioning: by_key");
        }
      }
    }
    return inputs;
  }

  PartitionReport& report_for(const PartitionKey& key) {
    PartitionReport& report = reports_[key];
    report.pipeline = pipeline_of_topic_.at(key.first)->name;
    report.topic = key.first;
    report.partition = key.second;
    return report;
  }

  // ---- the loop -----------------------------------------------------------------------------------

  void loop() {
    auto next_checkpoint = Clock::now() + config_.state.checkpoint_interval;
    auto next_snapshot = Clock::now();
    std::uint32_t events_since_timer_check = 0;
    while (!failure_ && !stop_requested()) {
      if (auto message = consumer_->poll(kPollTimeout)) {
        handle(*message);
        if (++consumed_since_producer_poll_ >= kProducerPollEvery) {
          consumed_since_producer_poll_ = 0;
          producer_->poll(std::chrono::milliseconds(0));
        }
        // Under load the timers are checked every kTimerCheckEvery events, not after each one: a clock
        // read is a sizeable share of an event's cost, and the timers need no finer grain.
        if (++events_since_timer_check < kTimerCheckEvery) continue;
      } else {
        producer_->poll(std::chrono::milliseconds(0));
      }
      events_since_timer_check = 0;
      const auto now = Clock::now();
      check_retention(now);
      if (transaction_ && (now >= next_checkpoint || transaction_doomed_)) {
        checkpoint(all_workers(), CommitMode::kAsync, now + kCheckpointFlushTimeout);
        next_checkpoint = now + config_.state.checkpoint_interval;
      } else if (!transaction_ && now >= next_checkpoint && !pending_checkpoint_) {
        capture_checkpoint();
        next_checkpoint = now + config_.state.checkpoint_interval;
      }
      advance_checkpoint();
      if (now >= next_snapshot) {
        publish_snapshot();
        next_snapshot = now + options_.snapshot_interval;
      }
    }
  }

  bool stop_requested() const { return options_.stop != nullptr && options_.stop->load(std::memory_order_relaxed); }

  void handle(ConsumedMessage& message) {
    if (failure_) return;  // e.g. an assignment that failed inside this poll: produce nothing more
    if (KafkaError error = message.error(); !error.ok()) {
      if (error.is_fatal()) fail("consumer: " + error.message());
      else if (!message.is_partition_eof()) spdlog::warn("consumer: {}", error.message());
      return;
    }
    PartitionWorker* worker = worker_for(message);
    if (worker == nullptr) return;  // fetched just before its partition was revoked: the next owner has it
    const bool timed = (++events_since_timing_ & kTimeOneEventIn) == 0;
    const auto started = timed ? Clock::now() : Clock::time_point{};
    const EventView event = event_of(message, *worker->pipeline, header_views_);
    worker->decided_since_commit = true;
    const Verdict verdict = worker->deduplicator.decide(event, message.timestamp_ms().value_or(-1));
    PartitionReport& report = *worker->report;
    if (!worker->delivered.empty() && already_delivered(*worker, message.offset())) {
      ++report.reconciled;  // decided (its key is in the filter) but forwarded before the restart: not again
    } else {
      if (!deliver(*worker, message, verdict)) return;
      switch (verdict.outcome) {
        case Outcome::kForward: ++report.counters.forwarded; break;
        case Outcome::kDuplicate:
          ++report.counters.duplicates;
          if (verdict.duplicate_age) observe_age(report, *verdict.duplicate_age, worker->pipeline->ttl);
          break;
        case Outcome::kDeadLetter:
          ++report.counters.dead_lettered;
          ++report.dead_letters_by_reason[static_cast<std::size_t>(verdict.rejection->reason)];
          break;
      }
    }
    ++report.consumed;
    worker->next_offset = message.offset() + 1;
    report.next_offset = worker->next_offset;
    if (timed) processing_latency_.observe(std::chrono::duration<double>(Clock::now() - started).count());
  }

  static void observe_age(PartitionReport& report, filters::Duration age, filters::Duration ttl) {
    using Seconds = std::chrono::duration<double>;
    report.duplicate_ages.observe(Seconds(age).count(), Seconds(ttl).count());
  }

  // Whether the output already holds the record for this input offset (reconciliation); forgets the
  // offsets consumption has passed.
  static bool already_delivered(PartitionWorker& worker, std::int64_t offset) {
    auto& delivered = worker.delivered;
    delivered.erase(delivered.begin(), delivered.lower_bound(offset));
    if (delivered.empty() || delivered.begin()->first != offset) return false;
    delivered.erase(delivered.begin());
    return true;
  }

  // Produces what the verdict says; false when the service must stop with this event not processed.
  bool deliver(const PartitionWorker& worker, ConsumedMessage& message, const Verdict& verdict) {
    const config::PipelineSettings& pipeline = *worker.pipeline;
    switch (verdict.outcome) {
      case Outcome::kForward: {
        const bool same_partition = pipeline.output_partitioning == config::OutputPartitioning::kSameAsInput;
        return produce(pipeline.output, message, same_partition ? message.partition() : connectors::kAnyPartition,
                       OutputHeaders::with_source(message));
      }
      case Outcome::kDuplicate:
        if (pipeline.duplicates.empty()) return true;
        return produce(pipeline.duplicates, message, connectors::kAnyPartition,
                       OutputHeaders::with_source(message));
      case Outcome::kDeadLetter:
        if (pipeline.dead_letter.empty()) {
          // The events before this one are processed: flush their records and commit up to (not past)
          // this event, as a graceful stop would. A failure skips the exit flush, so without this their
          // records would be discarded unsent, or written and then written again by the next run.
          checkpoint(all_workers(), CommitMode::kSync,
                     Clock::now() + std::chrono::duration_cast<Clock::duration>(config_.shutdown.grace_period));
          fail("pipeline " + pipeline.name + ": the event at " + std::string(message.topic()) + "/" +
               std::to_string(message.partition()) + " offset " + std::to_string(message.offset()) +
               " cannot be keyed (" + std::string(reason_name(verdict.rejection->reason)) + ": " +
               verdict.rejection->message +
               ") and the pipeline has no dead_letter topic; stopping without committing it");
          return false;
        }
        return produce(pipeline.dead_letter, message, connectors::kAnyPartition,
                       OutputHeaders::with_rejection(message, pipeline.name, *verdict.rejection));
    }
    return false;
  }

  bool produce(const std::string& topic, const ConsumedMessage& message, std::int32_t partition,
               connectors::HeadersHandle record_headers) {
    connectors::OutgoingMessage out;
    out.partition = partition;
    out.key = message.key();
    out.value = message.value();
    out.timestamp_ms = message.timestamp_ms().value_or(0);
    out.opaque = epoch_tag(epoch_);
    if (transaction_) {
      if (KafkaError error = transaction_->ensure_open(); !error.ok()) {
        fail("exactly_once: a transaction could not begin: " + error.describe());
        return false;
      }
    }
    if (KafkaError error = producer_->produce(topic, out, std::move(record_headers)); !error.ok()) {
      // In a transaction, a record refused for a reason that may pass (a full queue) or that librdkafka
      // says needs an abort: abort, rewind and decide again. Anything else is permanent (an unknown topic,
      // no authorization): retrying would abort forever, so stop, as librdkafka's transactions example does.
      if (transaction_ && (error.requires_abort() || error.is_retriable()) && !error.is_fatal()) abort_and_rewind(error);
      else fail("producing to " + topic + " failed: " + error.describe());
      return false;
    }
    ++in_flight_this_epoch_;
    return true;
  }

  // Keeps, per output (topic, partition), the highest acknowledged offset: a checkpoint's output offset
  // comes from it. Keyed by names, never by worker: a lost partition's worker may be gone before the
  // reports of its records arrive.
  void on_delivery(const connectors::DeliveryReport& report) {
    delivered_in_epoch(reinterpret_cast<std::uintptr_t>(report.opaque));
    if (report.error.ok()) {
      if (report.partition < 0 || report.offset < 0) return;
      auto topic = acked_.find(report.topic);
      if (topic == acked_.end()) topic = acked_.emplace(std::string(report.topic), std::vector<std::int64_t>{}).first;
      std::vector<std::int64_t>& offsets = topic->second;
      const auto index = static_cast<std::size_t>(report.partition);
      if (offsets.size() <= index) offsets.resize(index + 1, -1);
      offsets[index] = std::max(offsets[index], report.offset);
      return;
    }
    // In a transaction a failed delivery dooms the transaction, not the service: the loop aborts it and
    // rewinds (never from here, a librdkafka callback). The purged records of an abort report here too.
    if (transaction_ && !report.error.is_fatal()) {
      if (!discarding_aborted_ && !transaction_doomed_) transaction_doomed_ = report.error;
      return;
    }
    fail("delivery to " + std::string(report.topic) + " failed: " + report.error.message());
  }

  // The highest acknowledged offset of an output partition in this process; -1 when none.
  std::int64_t max_acked(const std::string& topic, std::int32_t partition) const {
    const auto it = acked_.find(topic);
    if (it == acked_.end() || partition < 0 || static_cast<std::size_t>(partition) >= it->second.size()) return -1;
    return it->second[static_cast<std::size_t>(partition)];
  }

  PartitionWorker* worker_for(const ConsumedMessage& message) {
    const rd_kafka_topic_t* topic_handle = message.native()->rkt;
    if (cached_worker_ != nullptr && cached_topic_ == topic_handle && cached_partition_ == message.partition()) {
      return cached_worker_;
    }
    const auto it = workers_.find(PartitionKey(std::string(message.topic()), message.partition()));
    if (it == workers_.end()) return nullptr;
    cached_worker_ = it->second.get();
    cached_topic_ = topic_handle;
    cached_partition_ = message.partition();
    return cached_worker_;
  }

  // ---- rebalancing ----------------------------------------------------------------------------------

  // Restores each partition from its checkpoint (or rebuilds it from the input history), then reconciles
  // against the output tail, all before the first event of the partition is fetched. Not ready meanwhile:
  // /readyz says 503 from the start of the assignment until its last partition is restored.
  void assign(TopicPartitions& partitions) {
    spdlog::info("assigned {} partition(s): {}", partitions.size(), describe(partitions));
    restoring_ = true;
    publish_snapshot();
    if (options_.on_restore) options_.on_restore();
    try {
      finish_pending_checkpoint();
      if (!failure_) assign_partitions(partitions);
    } catch (const std::exception& e) {
      // The consumer applies the assignment anyway; handle() produces nothing once the service failed.
      fail("assigning " + describe(partitions) + ": " + e.what());
    }
    invalidate_worker_cache();
    joined_ = true;
    restoring_ = false;
    publish_snapshot();
  }

  void assign_partitions(TopicPartitions& partitions) {
    std::vector<ReconcileRequest> requests;
    std::vector<PartitionWorker*> requesters;
    std::vector<TopicPartition*> fresh;  // no usable checkpoint
    std::vector<PartitionWorker*> restored;
    for (auto& partition : partitions) {
      const auto pipeline = pipeline_of_topic_.find(partition.topic);
      if (pipeline == pipeline_of_topic_.end()) continue;
      const PartitionKey key(partition.topic, partition.partition);
      PartitionReport& report = report_for(key);
      report.assigned = true;
      report.restored = false;
      const std::optional<connectors::PartitionCheckpoint> checkpoint = restore(key, *pipeline->second, report);
      PartitionWorker& worker = *workers_.at(key);
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
      PartitionWorker& worker = *workers_.at(PartitionKey(fresh[i]->topic, fresh[i]->partition));
      if (starts[i].offset >= 0) {
        fresh[i]->offset = starts[i].offset;
        worker.next_offset = starts[i].offset;
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
      PartitionWorker& worker = *workers_.at(PartitionKey(partition->topic, partition->partition));
      if (worker.next_offset >= 0) starting.push_back(&worker);
    }
    write_states(starting);
  }

  // In at_least_once a commit always follows its checkpoint, so a checkpoint behind the group's committed
  // offset means the store lost synced checkpoints (a write-ahead log cut short: RocksDB opens at its last
  // whole record, state_store.h), or another member processed the partition after this one's last
  // checkpoint; in exactly_once also a crash between a commit and the checkpoint written after it. Either way the replay from the checkpoint is reconciled
  // against the output (the reconciliation read below); this only says that it happened.
  void report_checkpoints_behind_commit(const std::vector<PartitionWorker*>& restored) {
    if (restored.empty()) return;
    TopicPartitions query;
    for (const PartitionWorker* worker : restored) {
      query.push_back({worker->id.topic, worker->id.partition, connectors::kNoOffset, {}, {}});
    }
    const auto committed = consumer_->committed(query, kMetadataTimeout);
    if (!committed.ok()) {
      spdlog::debug("restored checkpoints not compared with the committed offsets: {}", committed.error().message());
      return;
    }
    for (const TopicPartition& answer : committed.value()) {
      for (PartitionWorker* worker : restored) {
        if (worker->id.topic != answer.topic || worker->id.partition != answer.partition) continue;
        if (!answer.error.ok() || answer.offset <= worker->next_offset) continue;
        ++worker->report->restores_behind_commit;
        spdlog::warn("{}: the checkpoint at input offset {} is behind the group's committed offset {}: the state "
                     "store lost its newer checkpoints, or another member processed the partition since; the events "
                     "from offset {} are consumed again and reconciled against the output",
                     connectors::to_string(worker->id), worker->next_offset, answer.offset, worker->next_offset);
      }
    }
  }

  struct StartPoint {
    std::int64_t offset = connectors::kNoOffset;  // unknown: librdkafka decides
    bool committed = false;                       // the offset is the group's committed one
    std::optional<std::int64_t> output_offset;    // from the commit metadata
  };

  // Where partitions without a checkpoint start: the committed offset (and its metadata), else the input's
  // low or high watermark as auto.offset.reset says.
  std::vector<StartPoint> start_points(const std::vector<TopicPartition*>& partitions) {
    std::vector<StartPoint> points(partitions.size());
    if (partitions.empty()) return points;
    TopicPartitions query;
    for (const TopicPartition* partition : partitions) {
      query.push_back({partition->topic, partition->partition, connectors::kNoOffset, {}, {}});
    }
    const auto committed = consumer_->committed(query, kMetadataTimeout);
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
    const auto reset = config_.kafka.properties.find("auto.offset.reset");
    const std::string policy = reset == config_.kafka.properties.end() ? "earliest" : reset->second;
    const bool from_start = policy == "earliest" || policy == "smallest" || policy == "beginning";
    const bool from_end = policy == "latest" || policy == "largest" || policy == "end";
    for (std::size_t i = 0; i < partitions.size(); ++i) {
      if (points[i].offset >= 0 || (!from_start && !from_end)) continue;
      const auto marks = admin_->watermarks(partitions[i]->topic, partitions[i]->partition, kMetadataTimeout);
      if (!marks.ok()) {
        spdlog::warn("{}/{}: {}; it starts without a first checkpoint", partitions[i]->topic, partitions[i]->partition,
                     marks.error().message());
        continue;
      }
      points[i].offset = from_start ? marks.value().low : marks.value().high;
    }
    return points;
  }

  // Reads the partition's checkpoint and builds its worker: around the restored filter when the
  // checkpoint is usable, else with an empty filter. Returns the checkpoint the worker starts from.
  std::optional<connectors::PartitionCheckpoint> restore(const PartitionKey& key, const config::PipelineSettings& pipeline,
                                                         PartitionReport& report) {
    const PartitionId id{key.first, key.second};
    const auto started = Clock::now();
    std::optional<connectors::StoredPartition> stored;
    std::unique_ptr<filters::Filter> filter;
    connectors::RestoreReport restored_from;
    try {
      stored = store_->read(id);
      if (stored) filter = store_->restore_filter(id, stored->filter_meta, &restored_from);  // no copy of a record
    } catch (const StateStoreError& e) {
      if (e.kind() != StateStoreError::Kind::kCorrupt) throw;
      // A damaged table file fails every compaction that reads it, which stops all writes: the whole
      // directory goes aside, not only this partition's records.
      state_corrupt(report, e.what());
      quarantine_and_reopen();
      lost_with_quarantine_.erase(key);  // counted just above
      stored.reset();
      filter.reset();
    } catch (const filters::FormatError& e) {
      // Records intact in the store (they passed its checksums) that the filter rejects: drop them.
      state_corrupt(report, e.what());
      drop_state(id);
      stored.reset();
      filter.reset();
    }
    if (!stored && lost_with_quarantine_.erase(key) != 0) {
      state_corrupt(report, "its state was in the state directory moved aside");
    }
    if (stored && !PartitionDeduplicator::matches_settings(*filter, pipeline)) {
      spdlog::warn("{}: the stored filter was written with other filter settings than pipeline {} has now; dropping "
                   "it and starting with an empty filter at the committed offset",
                   connectors::to_string(id), pipeline.name);
      drop_state(id);
      stored.reset();
    }
    if (stored && !input_holds(id, stored->checkpoint.next_offset)) {
      drop_state(id);
      stored.reset();
    }
    std::unique_ptr<PartitionWorker> worker;
    if (stored) {
      const connectors::PartitionCheckpoint& checkpoint = stored->checkpoint;
      worker = std::make_unique<PartitionWorker>(pipeline, report, std::move(filter),
                                                 filters::from_epoch_nanos(checkpoint.filter_time_ns));
      worker->next_offset = checkpoint.next_offset;
      worker->checkpointed_offset = checkpoint.next_offset;
      worker->checkpointed_output = checkpoint.output_offset;
      report.next_offset = checkpoint.next_offset;
      report.restored = true;
      if (!restored_from.snapshot_ignored.empty()) {
        spdlog::warn("{}: its snapshot was passed over ({}); the filter was restored from its slice records",
                     connectors::to_string(id), restored_from.snapshot_ignored);
      }
      spdlog::info("{}: restored from the checkpoint of {} ms ago at input offset {} (output offset {}), from {}",
                   connectors::to_string(id), std::max<std::int64_t>(wall_clock_ms() - checkpoint.written_at_ms, 0),
                   checkpoint.next_offset, checkpoint.output_offset,
                   restored_from.from_snapshot ? "the snapshot of a clean stop" : "its slice records");
    } else {
      worker = std::make_unique<PartitionWorker>(pipeline, report);
      worker->full_image_next = true;
    }
    refresh_filter_stats(*worker, wall_clock_now());
    workers_[key] = std::move(worker);
    report.last_restore_seconds = std::chrono::duration<double>(Clock::now() - started).count();
    if (!stored) return std::nullopt;
    return stored->checkpoint;
  }

  // A checkpoint beyond the input's high watermark belongs to an earlier topic of the same name (deleted
  // and created again): its filter would drop the new topic's events as duplicates.
  bool input_holds(const PartitionId& id, std::int64_t next_offset) const {
    const auto marks = admin_->watermarks(id.topic, id.partition, kMetadataTimeout);
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

  void state_corrupt(PartitionReport& report, const std::string& why) {
    ++report.state_corruptions;
    spdlog::error("{}/{}: the stored state is corrupt ({}); its filter is rebuilt from the input history before the "
                  "committed offset",
                  report.topic, report.partition, why);
  }

  void drop_state(const PartitionId& id) {
    try {
      store_->drop(id);
    } catch (const StateStoreError& e) {
      // The worker's next checkpoint writes its whole filter over whatever is left.
      spdlog::error("{}: dropping the stored state failed: {}", connectors::to_string(id), e.what());
    }
  }

  // A reader outside the group, named after the group so operators can tell whose it is.
  SideReaderOptions side_reader_options(const std::string& role) const {
    SideReaderOptions options;
    options.config = client_config(ClientRole::kReader);
    options.hooks = options_.hooks;
    options.group_id = config_.kafka.group_id + "." + role;
    options.idle_timeout = kReconcileIdleTimeout;
    options.request_timeout = kMetadataTimeout;
    return options;
  }

  // Step 3 of the invariant (input_rebuilder.h): fills a fresh worker's filter from the input history
  // before its committed offset, producing nothing. A read that fails leaves what was inserted (a
  // partial window still drops more repeats than none) and is logged; consumption goes on.
  void rebuild(PartitionWorker& worker) {
    PartitionReport& report = *worker.report;
    RebuildRequest request{worker.id.topic, worker.id.partition, worker.next_offset,
                           std::chrono::duration_cast<std::chrono::milliseconds>(worker.pipeline->ttl),
                           worker.pipeline->time == config::TimeSource::kProcessing};
    const RebuildOptions options{side_reader_options("rebuilder")};
    report.rebuilding = true;
    spdlog::info("{}: no usable state; rebuilding its filter from the input before offset {} (one TTL, {} ms)",
                 connectors::to_string(worker.id), worker.next_offset, request.ttl.count());
    const auto insert = [&](connectors::ConsumedMessage& message) {
      (void)worker.deduplicator.decide(event_of(message, *worker.pipeline, header_views_),
                                       message.timestamp_ms().value_or(-1));
      ++report.rebuild_events;
    };
    const auto progress = [&](std::uint64_t read, std::uint64_t total) {
      report.rebuild_progress = total == 0 ? 1.0 : static_cast<double>(read) / static_cast<double>(total);
      spdlog::info("{}: rebuilding, {} of {} input records read", connectors::to_string(worker.id), read, total);
      publish_snapshot();  // the assignment blocks the loop: keep /metrics and /readyz current meanwhile
    };
    try {
      const RebuildResult result = rebuild_from_input(request, *admin_, options, insert, progress);
      report.rebuild_progress = 1.0;
      report.last_rebuild_seconds = result.seconds;
      ++report.rebuilds;
      if (result.history_truncated) {
        spdlog::warn("{}: the input no longer holds the whole TTL before offset {} (retention shorter than the TTL?): "
                     "keys of the deleted part are not in the rebuilt filter",
                     connectors::to_string(worker.id), worker.next_offset);
      }
      spdlog::info("{}: rebuilt from input offsets {} to {} in {:.3f} s: {} key(s) inserted, {} record(s) older than "
                   "the TTL skipped",
                   connectors::to_string(worker.id), result.from_offset, worker.next_offset - 1, result.seconds,
                   result.inserted, result.skipped);
    } catch (const std::exception& e) {
      spdlog::error("{}: rebuilding from the input failed ({}); the filter holds only what was read before that",
                    connectors::to_string(worker.id), e.what());
    }
    report.rebuilding = false;
    worker.full_image_next = true;
  }

  // Reads the output tails (output_reconciler.h) and hands each worker the input offsets already
  // delivered beyond its start, and its output floor. Throws when the output cannot be read.
  void reconcile(const std::vector<ReconcileRequest>& requests, const std::vector<PartitionWorker*>& workers) {
    if (requests.empty()) return;
    const ReconcileOptions options = side_reader_options("reconciler");
    const auto started = Clock::now();
    const std::vector<ReconcileResult> results = reconcile_outputs(requests, *admin_, options);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const ReconcileRequest& request = requests[i];
      const ReconcileResult& result = results[i];
      PartitionWorker& worker = *workers[i];
      worker.output_floor = result.output_end;
      worker.delivered = result.delivered;
      worker.delivered_at_last_commit = result.delivered;
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

  void revoke(const TopicPartitions& partitions, bool lost) {
    finish_pending_checkpoint(/*may_flush=*/!lost);
    std::vector<PartitionWorker*> leaving;
    for (const auto& partition : partitions) {
      const auto it = workers_.find(PartitionKey(partition.topic, partition.partition));
      if (it != workers_.end()) leaving.push_back(it->second.get());
    }
    // A lost partition may already belong to another member: committing for it would be wrong. In a
    // transaction that holds its records, so the whole transaction is aborted once it is gone, and the
    // partitions kept go back to the last commit.
    if (!lost) checkpoint(leaving, CommitMode::kSync, Clock::now() + flush_budget());
    for (const auto& partition : partitions) {
      const PartitionKey key(partition.topic, partition.partition);
      if (const auto it = workers_.find(key); it != workers_.end()) refresh_filter_stats(*it->second, wall_clock_now());
      workers_.erase(key);
      lost_with_quarantine_.erase(key);
      if (const auto it = reports_.find(key); it != reports_.end()) it->second.assigned = false;
    }
    invalidate_worker_cache();
    if (lost && transaction_ && transaction_->is_open() && !failure_) {
      abort_and_rewind(KafkaError::invalid_argument("partitions lost: " + describe(partitions)));
    }
    spdlog::info("{} {} partition(s): {}", lost ? "lost" : "revoked", partitions.size(), describe(partitions));
  }

  void invalidate_worker_cache() { cached_worker_ = nullptr; }

  static std::string describe(const TopicPartitions& partitions) {
    std::string text;
    for (const auto& p : partitions) text += (text.empty() ? "" : " ") + p.topic + "/" + std::to_string(p.partition);
    return text;
  }

  // ---- offsets --------------------------------------------------------------------------------------

  std::vector<PartitionWorker*> all_workers() const {
    std::vector<PartitionWorker*> workers;
    for (const auto& [key, worker] : workers_) workers.push_back(worker.get());
    return workers;
  }

  std::chrono::milliseconds flush_budget() const {
    if (!stop_deadline_) return kCheckpointFlushTimeout;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*stop_deadline_ - Clock::now());
    return std::max(left, std::chrono::milliseconds(0));
  }

  struct CheckpointResult {
    bool committed = true;           // flushed, and the commit (if any) was accepted
    std::size_t state_failures = 0;  // partitions whose state could not be written: not committed
    bool flushed = true;             // false: nothing was written or committed (committed is false too)
    bool aborted = false;            // exactly_once: the transaction was aborted, its input rewound
  };

  // Flush, write the state, then commit (service-design.md, "The state invariant", step 1): a partition's
  // checkpoint is written only when every record produced for the events before its next offset has been
  // acknowledged, and its offset is committed only when its checkpoint is durable.
  CheckpointResult checkpoint(const std::vector<PartitionWorker*>& workers, CommitMode mode, Clock::time_point deadline) {
    if (transaction_) return transactional_checkpoint(deadline);
    finish_pending_checkpoint();
    CheckpointResult result;
    if (failure_) return {false, 0};
    const auto budget = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                                 std::chrono::milliseconds(0));
    if (KafkaError error = producer_->flush(budget); !error.ok()) {
      spdlog::warn("flush did not finish ({} records in flight): {}; no state written, offsets not committed",
                   producer_->outq_len(), error.message());
      return {false, 0, false};
    }
    if (failure_) return {false, 0, false};  // a delivery failed during the flush
    std::vector<PartitionWorker*> changed;
    for (PartitionWorker* worker : workers) {
      if (worker->next_offset >= 0 && worker->next_offset != worker->checkpointed_offset) changed.push_back(worker);
    }
    result.state_failures = write_states(changed);
    result.committed = commit_checkpointed(workers, mode);
    return result;
  }

  // Commits each partition's last durable checkpoint that Kafka does not have yet; false when the commit
  // failed. A checkpoint that failed to write leaves its partition at the one before.
  bool commit_checkpointed(const std::vector<PartitionWorker*>& workers, CommitMode mode) {
    TopicPartitions offsets;
    std::vector<PartitionWorker*> committing;
    for (PartitionWorker* worker : workers) {
      if (worker->checkpointed_offset < 0 || worker->checkpointed_offset == worker->committed_offset) continue;
      offsets.push_back(TopicPartition{worker->id.topic, worker->id.partition, worker->checkpointed_offset,
                                       std::to_string(worker->checkpointed_output), {}});
      committing.push_back(worker);
    }
    if (offsets.empty()) return true;
    if (KafkaError error = consumer_->commit(offsets, mode); !error.ok()) {
      spdlog::warn("offset commit failed: {}", error.describe());
      return false;
    }
    for (PartitionWorker* worker : committing) {
      worker->committed_offset = worker->checkpointed_offset;
      worker->report->committed_offset = worker->checkpointed_offset;
    }
    ++commits_;
    return true;
  }

  // ---- at_least_once: the periodic checkpoint, written off the service thread ------------------------
  // (docs/state.md, "Checkpoints off the polling thread")

  // The records produced between two captures form an epoch; a capture may be written once every record
  // of its epoch and the ones before is acknowledged (what the flush ensured before).
  static void* epoch_tag(std::uint64_t epoch) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(epoch)); }

  std::uint64_t seal_epoch() {
    if (in_flight_this_epoch_ != 0) in_flight_sealed_.emplace_back(epoch_, in_flight_this_epoch_);
    in_flight_this_epoch_ = 0;
    return epoch_++;
  }

  void delivered_in_epoch(std::uintptr_t epoch) {
    if (epoch == epoch_) {
      --in_flight_this_epoch_;
      return;
    }
    for (auto& [sealed, count] : in_flight_sealed_) {
      if (sealed == epoch) --count;
    }
    while (!in_flight_sealed_.empty() && in_flight_sealed_.front().second == 0) in_flight_sealed_.pop_front();
  }

  bool delivered_through(std::uint64_t epoch) const {
    return in_flight_sealed_.empty() || in_flight_sealed_.front().first > epoch;
  }

  // The checkpoint of every partition that moved, taken now without a flush: its images, offsets and
  // output offsets are those of this moment. The filters count the captured changes as persisted at once;
  // a failed write makes them write whole again (written_in_background).
  void capture_checkpoint() {
    if (failure_) return;
    PendingCheckpoint pending;
    pending.epoch = seal_epoch();
    for (PartitionWorker* worker : all_workers()) {
      if (worker->next_offset < 0 || worker->next_offset == worker->checkpointed_offset) continue;
      pending.images.push_back(image_of(*worker));
      image_taken(*worker);
      pending.workers.push_back(worker);
    }
    if (pending.workers.empty()) {
      (void)commit_checkpointed(all_workers(), CommitMode::kAsync);  // one refused before is sent again
      return;
    }
    pending_checkpoint_ = std::move(pending);
  }

  // Called from the loop: hands the capture to the writer once its records are acknowledged, then takes
  // the written checkpoints and commits them.
  void advance_checkpoint() {
    if (!pending_checkpoint_ || failure_) return;
    if (!checkpoint_writer_.busy()) {
      if (!delivered_through(pending_checkpoint_->epoch)) return;
      checkpoint_writer_.submit(*store_, std::move(pending_checkpoint_->images));
      return;
    }
    if (!checkpoint_writer_.finished()) return;
    written_in_background(checkpoint_writer_.take());
    if (!failure_) (void)commit_checkpointed(all_workers(), CommitMode::kAsync);
  }

  // Before anything else touches the workers or the store (a rebalance, a synchronous checkpoint, the
  // store's quarantine): the capture in progress is flushed for, written and taken, not committed (the
  // caller's checkpoint commits it, or the next interval's). Without `may_flush` (lost partitions: no
  // waiting on the brokers inside the rebalance) a capture whose records are still in flight is dropped,
  // its partitions writing whole next time.
  void finish_pending_checkpoint(bool may_flush = true) {
    if (!pending_checkpoint_) return;
    if (!checkpoint_writer_.busy()) {
      if (may_flush && !failure_ && !delivered_through(pending_checkpoint_->epoch)) {
        if (KafkaError error = producer_->flush(flush_budget()); !error.ok()) {
          spdlog::warn("flush did not finish ({} records in flight): {}; the checkpoint taken is not written",
                       producer_->outq_len(), error.message());
        }
      }
      if (failure_ || !delivered_through(pending_checkpoint_->epoch)) {
        for (std::size_t i = 0; i < pending_checkpoint_->workers.size(); ++i) {
          unpersisted(*pending_checkpoint_->workers[i], pending_checkpoint_->images[i]);
        }
        pending_checkpoint_.reset();
        return;
      }
      checkpoint_writer_.submit(*store_, std::move(pending_checkpoint_->images));
    }
    written_in_background(checkpoint_writer_.take());
  }

  void written_in_background(CheckpointWriter::Done done) {
    const std::vector<PartitionWorker*> workers = std::move(pending_checkpoint_->workers);
    pending_checkpoint_.reset();
    if (done.fatal) {
      try {
        std::rethrow_exception(done.fatal);
      } catch (const std::exception& e) {
        fail(std::string("writing checkpoints: ") + e.what());
      } catch (...) {
        fail("writing checkpoints failed");
      }
      return;
    }
    for (const GroupWrite& group : done.groups) {
      for (std::size_t i = group.begin; i < group.end; ++i) {
        PartitionWorker& worker = *workers[i];
        const connectors::PartitionImage& image = done.images[i];
        if (group.error) {
          checkpoint_failed(worker, image.checkpoint, *group.error);
          unpersisted(worker, image);
        } else {
          checkpoint_written(worker, image.checkpoint, group.written[i - group.begin], group.seconds);
        }
      }
    }
  }

  // The changes in the image just taken count as persisted: the next image holds only later ones.
  static void image_taken(PartitionWorker& worker) {
    worker.deduplicator.filter().mark_persisted();
    worker.full_image_next = false;
    worker.unwritten_drops.clear();
  }

  // A captured image that was not written: the filter writes whole next time, and deletes what it dropped.
  static void unpersisted(PartitionWorker& worker, const connectors::PartitionImage& image) {
    worker.full_image_next = true;
    const auto& drops = image.image.dropped_slice_ids;
    worker.unwritten_drops.insert(worker.unwritten_drops.end(), drops.begin(), drops.end());
  }

  // ---- exactly_once: one transaction per checkpoint interval (docs/state.md, "Transactional mode") -------

  // Flush, send every partition's next offset to the transaction, commit it, and only then write the
  // state: a checkpoint never runs ahead of a commit. Every partition takes part, whichever are leaving:
  // the transaction holds the records of all of them.
  CheckpointResult transactional_checkpoint(Clock::time_point deadline) {
    if (failure_) return {false, 0};
    if (transaction_doomed_) return abort_and_rewind(*transaction_doomed_);
    const auto budget = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                                 std::chrono::milliseconds(0));
    if (KafkaError error = producer_->flush(budget); !error.ok()) {
      spdlog::warn("flush did not finish ({} records in flight): {}; the transaction stays open", producer_->outq_len(),
                   error.message());
      return {false, 0, false};
    }
    if (transaction_doomed_) return abort_and_rewind(*transaction_doomed_);
    TopicPartitions offsets;
    std::vector<PartitionWorker*> committing;
    for (PartitionWorker* worker : all_workers()) {
      if (worker->next_offset < 0 || worker->next_offset == worker->committed_offset) continue;
      offsets.push_back(TopicPartition{worker->id.topic, worker->id.partition, worker->next_offset,
                                       std::to_string(output_offset(*worker)), {}});
      committing.push_back(worker);
    }
    const bool was_open = transaction_->is_open();
    const TransactionResult result = transaction_->commit(offsets, *consumer_, deadline);
    if (result.outcome == TransactionOutcome::kAborted) return rewound_after_abort();
    if (result.outcome == TransactionOutcome::kFailed) {
      fail("exactly_once: the transaction could not be committed (" + result.error.describe() +
           "); a restart resumes at the last checkpoint and reconciles against the committed output");
      return {false, 0};
    }
    if (was_open || !offsets.empty()) ++transactions_committed_;
    if (!offsets.empty()) ++commits_;
    CheckpointResult checkpointed;
    for (PartitionWorker* worker : all_workers()) worker->decided_since_commit = false;
    for (PartitionWorker* worker : committing) {
      worker->committed_offset = worker->next_offset;
      worker->report->committed_offset = worker->next_offset;
      worker->delivered_at_last_commit = worker->delivered;
    }
    checkpointed.state_failures = write_states(committing);
    // The rewind after an abort restores filters from the store: a checkpoint behind the last commit would
    // replay committed events into the output again.
    if (checkpointed.state_failures != 0) {
      fail("exactly_once: the state of " + std::to_string(checkpointed.state_failures) +
           " partition(s) could not be written after a commit (see above); a restart reconciles them against the "
           "committed output");
      return {false, checkpointed.state_failures};
    }
    return checkpointed;
  }

  // Aborts the open transaction, then rewinds every partition to the last commit. Stops the service when
  // the abort fails.
  CheckpointResult abort_and_rewind(const KafkaError& why) {
    const TransactionResult result = transaction_->abort(why, Clock::now() + kCheckpointFlushTimeout);
    if (result.outcome == TransactionOutcome::kFailed) {
      fail("exactly_once: aborting the transaction failed (" + result.error.describe() + ") after: " + why.describe());
      return {false, 0};
    }
    return rewound_after_abort();
  }

  CheckpointResult rewound_after_abort() {
    ++transactions_aborted_;
    // Serve the purged records' delivery reports now, so they cannot doom the next transaction.
    discarding_aborted_ = true;
    static_cast<void>(producer_->flush(kCheckpointFlushTimeout));
    discarding_aborted_ = false;
    transaction_doomed_.reset();
    rewind_to_last_commit();
    return {false, 0, true, true};
  }

  // Every partition that consumed since the last commit goes back to it: its filter and event clock to the
  // checkpoint written right after that commit (read again from the store), its reconciliation set to what
  // it was then, and the consumer to the checkpoint's next offset. Workers are changed in place: handle()
  // may hold one.
  void rewind_to_last_commit() {
    TopicPartitions positions;
    for (const auto& [key, worker] : workers_) {
      if (!worker->decided_since_commit && worker->next_offset == worker->checkpointed_offset) continue;
      if (!rewind(*worker)) return;
      positions.push_back(TopicPartition{worker->id.topic, worker->id.partition, worker->next_offset, {}, {}});
    }
    if (KafkaError error = consumer_->seek(positions, kMetadataTimeout); !error.ok()) {
      fail("exactly_once: rewinding the input after an aborted transaction failed: " + error.describe());
      return;
    }
    spdlog::info("exactly_once: {} partition(s) rewound to their last commit", positions.size());
  }

  bool rewind(PartitionWorker& worker) {
    const std::string name = connectors::to_string(worker.id);
    if (worker.checkpointed_offset < 0) {
      fail("exactly_once: " + name + " cannot be rewound after an aborted transaction: it has no checkpoint (its start "
           "offset was unknown)");
      return false;
    }
    try {
      const std::optional<connectors::StoredPartition> stored = store_->read(worker.id);
      if (!stored || stored->checkpoint.next_offset != worker.checkpointed_offset) {
        throw std::runtime_error("the store does not hold the checkpoint of the last commit");
      }
      worker.deduplicator = PartitionDeduplicator(*worker.pipeline, wall_clock_now,
                                                  store_->restore_filter(worker.id, stored->filter_meta),
                                                  filters::from_epoch_nanos(stored->checkpoint.filter_time_ns));
    } catch (const std::exception& e) {
      fail("exactly_once: " + name + " cannot be rewound after an aborted transaction: " + e.what());
      return false;
    }
    worker.next_offset = worker.checkpointed_offset;
    worker.report->next_offset = worker.next_offset;
    worker.delivered = worker.delivered_at_last_commit;
    worker.decided_since_commit = false;
    return true;
  }

  // Where the partition's checkpoint says its output stands: no record forwarded for an input offset at
  // or after its next offset lies below it. Records still to be reconciled pin it at the first of them;
  // else it is past everything acknowledged (and past the output's end when the partition was assigned).
  // by_key: -1, unknown (the partition's records are spread over the output: at-least-once after a crash).
  std::int64_t output_offset(const PartitionWorker& worker) const {
    if (worker.output_partition < 0) return -1;
    if (!worker.delivered.empty()) {
      std::int64_t first = worker.delivered.begin()->second;
      for (const auto& [input, output] : worker.delivered) first = std::min(first, output);
      return first;
    }
    const std::int64_t acked = max_acked(worker.pipeline->output, worker.output_partition);
    return std::max(worker.output_floor, acked < 0 ? -1 : acked + 1);
  }

  // Group commits: the checkpoints of `workers` (each its filter's changed slices and metadata, next offset
  // and output offset) in one synced WriteBatch, one fdatasync for all, or several when their images add up
  // to more than kGroupCommitBytes. Returns how many were not written (logged and counted for each): the
  // caller commits nothing for those, and the next interval tries again with their changes unpersisted.
  std::size_t write_states(const std::vector<PartitionWorker*>& workers) {
    std::vector<connectors::PartitionImage> images;
    for (PartitionWorker* worker : workers) images.push_back(image_of(*worker));
    std::size_t failures = 0;
    for (const GroupWrite& group : write_in_groups(*store_, images, kGroupCommitBytes)) {
      for (std::size_t i = group.begin; i < group.end; ++i) {
        if (group.error) {
          checkpoint_failed(*workers[i], images[i].checkpoint, *group.error);
          ++failures;
          continue;
        }
        image_taken(*workers[i]);
        checkpoint_written(*workers[i], images[i].checkpoint, group.written[i - group.begin], group.seconds);
      }
    }
    return failures;
  }

  static void checkpoint_failed(PartitionWorker& worker, const connectors::PartitionCheckpoint& checkpoint,
                                const StateStoreError& error) {
    ++worker.report->checkpoint_failures;
    spdlog::error("{}: checkpoint at input offset {} failed ({}: {}); its offset is not committed, and the "
                  "checkpoint is tried again at the next interval",
                  connectors::to_string(worker.id), checkpoint.next_offset, connectors::to_string(error.kind()),
                  error.what());
  }

  // The partition's checkpoint now, and its filter's image since the last persisted one (whole when the
  // store does not hold it).
  connectors::PartitionImage image_of(PartitionWorker& worker) const {
    connectors::PartitionImage image;
    image.checkpoint.id = worker.id;
    image.checkpoint.next_offset = worker.next_offset;
    image.checkpoint.output_offset = output_offset(worker);
    image.checkpoint.written_at_ms = wall_clock_ms();
    image.checkpoint.filter_time_ns = filters::to_epoch_nanos(worker.deduplicator.filter_time(filters::TimePoint{}));
    const auto scope = worker.full_image_next ? filters::ImageScope::kFull : filters::ImageScope::kChangedSinceLastPersist;
    image.image = worker.deduplicator.filter().image(scope);
    auto& drops = image.image.dropped_slice_ids;
    drops.insert(drops.end(), worker.unwritten_drops.begin(), worker.unwritten_drops.end());
    return image;
  }

  // After the store made `checkpoint` durable: its offset may be committed.
  static void checkpoint_written(PartitionWorker& worker, const connectors::PartitionCheckpoint& checkpoint,
                                 const connectors::CheckpointWrite& written, double seconds) {
    worker.checkpointed_offset = checkpoint.next_offset;
    worker.checkpointed_output = checkpoint.output_offset;
    PartitionReport& report = *worker.report;
    ++report.checkpoints;
    report.checkpoint_bytes += written.bytes;
    report.last_checkpoint_seconds = seconds;
  }

  // ---- stopping -------------------------------------------------------------------------------------

  void shut_down() {
    if (failure_) return;
    stop_deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(config_.shutdown.grace_period);
    running_ = false;
    spdlog::info("stopping: flushing and committing (grace period {} ms)",
                 std::chrono::duration_cast<std::chrono::milliseconds>(config_.shutdown.grace_period).count());
    const CheckpointResult result = checkpoint(all_workers(), CommitMode::kSync, *stop_deadline_);
    if (result.aborted) {
      spdlog::warn("shutdown: the last transaction was aborted; its events are consumed again by the next run");
    } else if (result.flushed && !result.committed) {
      commit_failed_at_shutdown();
    } else if (!result.committed) {
      fail("shutdown: the output was not flushed within the grace period; uncommitted events will be consumed again");
    } else if (result.state_failures != 0) {
      fail("shutdown: the state of " + std::to_string(result.state_failures) +
           " partition(s) could not be written (see above); their events since the last checkpoint will be "
           "consumed again and reconciled");
    }
    if (!failure_) write_snapshots();
  }

  // A clean stop's snapshots (docs/state.md, "Snapshots at a clean stop"): each large filter whose checkpoint
  // is the one just written, as it lies in memory, so that the next start on this directory copies it into
  // place instead of rebuilding its layout from the slice records. Only a faster copy of the checkpoint:
  // a snapshot not written is logged, and that partition restores from its slices.
  void write_snapshots() {
    const auto started = Clock::now();
    std::size_t written = 0;
    std::uint64_t bytes = 0;
    for (PartitionWorker* worker : all_workers()) {
      if (worker->next_offset < 0 || worker->checkpointed_offset != worker->next_offset) continue;
      if (stop_deadline_ && Clock::now() >= *stop_deadline_) {
        spdlog::warn("stopping: the grace period ran out before every snapshot was written; the other partitions "
                     "restore from their slice records");
        break;
      }
      const std::optional<filters::FilterSnapshot> snapshot = worker->deduplicator.filter().snapshot();
      if (!snapshot) continue;
      try {
        bytes += store_->write_snapshot(worker->id, *snapshot);
        ++written;
      } catch (const StateStoreError& e) {
        spdlog::warn("{}: its snapshot was not written ({}); the next start restores it from its slice records",
                     connectors::to_string(worker->id), e.what());
      }
    }
    if (written == 0) return;
    try {
      store_->flush();  // the next open then reads table files instead of replaying the snapshots' WAL
    } catch (const StateStoreError& e) {
      spdlog::warn("stopping: flushing the snapshots: {}", e.what());
    }
    spdlog::info("stopping: wrote the snapshots of {} filter(s), {:.1f} MiB, in {} ms", written,
                 static_cast<double>(bytes) / (1024.0 * 1024.0),
                 std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
  }

  // The output was flushed and every partition's checkpoint written, but Kafka refused the commit (a
  // rebalance in progress at the moment of the stop answers REBALANCE_IN_PROGRESS or ILLEGAL_GENERATION).
  // Nothing is lost or forwarded twice: a restart on this state directory resumes at the checkpoints, and
  // a member that gets a partition instead starts at its last committed offset and reconciles the output
  // from that commit's output offset. So this is no failure: close() revokes the partitions and revoke()
  // commits once more, under the rebalance's new generation.
  void commit_failed_at_shutdown() {
    spdlog::warn("shutdown: the offset commit failed (see above) after the state was written; the state directory "
                 "holds every partition's checkpoint, and the commit is tried again as the partitions are revoked");
  }

  void close_clients() noexcept {
    if (consumer_) {
      // close() revokes what is still assigned; after a failure, revoke() commits nothing.
      if (KafkaError error = consumer_->close(); !error.ok()) spdlog::warn("consumer close: {}", error.message());
    }
    if (transaction_ && transaction_->is_open()) {
      // After a failure: end it now rather than when the coordinator's transaction.timeout.ms runs out.
      transaction_->abort(KafkaError::invalid_argument("the service is stopping after a failure"),
                          Clock::now() + flush_budget());
    }
    if (producer_ && !failure_) {
      if (KafkaError error = producer_->flush(flush_budget()); !error.ok()) {
        spdlog::warn("producer flush at exit: {}", error.message());
      }
    }
    consumer_.reset();
    transaction_.reset();
    producer_.reset();
    store_.reset();  // after the consumer: its close() may checkpoint revoked partitions
  }

  void fail(const std::string& why) noexcept {
    if (failure_) return;
    failure_ = why;
    spdlog::error("{}", why);
  }

  // ---- reporting ------------------------------------------------------------------------------------

  static void refresh_filter_stats(PartitionWorker& worker, filters::TimePoint now) {
    worker.report->filter = worker.deduplicator.filter().stats(worker.deduplicator.filter_time(now));
    worker.report->filter.slice_stats.clear();
  }

  void sample_partition(PartitionWorker& worker, filters::TimePoint now) {
    refresh_filter_stats(worker, now);
    PartitionReport& report = *worker.report;
    report.fpr_probe_hits += worker.fpr_probe.probe(worker.deduplicator.filter(), worker.deduplicator.filter_time(now));
    report.fpr_probes += kFprProbesPerSnapshot;
    report.observed_fpr = worker.fpr_probe.observed();
    if (const auto high = consumer_->cached_high_watermark(report.topic, report.partition)) report.high_watermark = *high;
  }

  void publish_snapshot() {
    ServiceSnapshot snapshot;
    const auto now = wall_clock_now();
    for (auto& [key, report] : reports_) {
      if (const auto worker = workers_.find(key); worker != workers_.end()) sample_partition(*worker->second, now);
      PartitionReport copy = report;
      snapshot.consumed += copy.consumed;
      snapshot.forwarded += copy.counters.forwarded;
      snapshot.duplicates += copy.counters.duplicates;
      snapshot.dead_lettered += copy.counters.dead_lettered;
      snapshot.partitions.push_back(std::move(copy));
    }
    snapshot.commits = commits_;
    snapshot.transactions_committed = transactions_committed_;
    snapshot.transactions_aborted = transactions_aborted_;
    snapshot.processing_latency = processing_latency_;
    snapshot.producer_queue = producer_ ? producer_->outq_len() : 0;
    snapshot.running = running_ && joined_ && !restoring_;
    {
      std::lock_guard lock(snapshot_mutex_);
      published_ = snapshot;
    }
    if (options_.on_snapshot) options_.on_snapshot(snapshot);
  }

  config::Config config_;
  ServiceOptions options_;
  std::map<std::string, const config::PipelineSettings*> pipeline_of_topic_;

  std::unique_ptr<StateStore> store_;  // first: destroyed last, after the consumer's close() checkpointed
  CheckpointWriter checkpoint_writer_{kGroupCommitBytes};  // after store_: stops before it closes
  struct PendingCheckpoint {
    std::uint64_t epoch = 0;  // written once the records of this epoch and before are acknowledged
    std::vector<PartitionWorker*> workers;
    std::vector<connectors::PartitionImage> images;  // moved to the writer when submitted
  };
  std::optional<PendingCheckpoint> pending_checkpoint_;
  std::uint64_t epoch_ = 0;
  std::uint64_t in_flight_this_epoch_ = 0;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> in_flight_sealed_;  // (epoch, records unacknowledged)
  std::unique_ptr<connectors::Admin> admin_;
  std::unique_ptr<connectors::Producer> producer_;
  std::unique_ptr<OutputTransaction> transaction_;  // exactly_once only; uses producer_
  std::optional<KafkaError> transaction_doomed_;    // a delivery failed: the open transaction must abort
  bool discarding_aborted_ = false;                 // serving the purged records' reports after an abort
  std::uint64_t transactions_committed_ = 0;
  std::uint64_t transactions_aborted_ = 0;
  std::unique_ptr<connectors::Consumer> consumer_;  // after producer_: destroyed first, its close() may flush
  std::map<PartitionKey, PartitionReport> reports_;
  std::map<PartitionKey, std::unique_ptr<PartitionWorker>> workers_;
  // Per output topic, by partition: the highest offset acknowledged in this process (-1: none).
  std::map<std::string, std::vector<std::int64_t>, std::less<>> acked_;
  bool state_quarantined_ = false;  // the state directory was moved aside in this process
  std::set<PartitionKey> lost_with_quarantine_;  // partitions whose state went with it, until assigned

  PartitionWorker* cached_worker_ = nullptr;  // consecutive messages mostly come from one partition
  const rd_kafka_topic_t* cached_topic_ = nullptr;
  std::int32_t cached_partition_ = -1;

  std::vector<connectors::HeaderView> header_views_;  // event_of()'s storage, reused event after event
  std::uint64_t consumed_since_producer_poll_ = 0;
  std::uint64_t events_since_timing_ = 0;
  LatencyHistogram processing_latency_;
  std::uint64_t commits_ = 0;
  bool running_ = false;
  bool joined_ = false;     // the group has given this member its first assignment (possibly empty)
  bool restoring_ = false;  // inside an assignment: restoring, rebuilding, reconciling
  std::optional<connectors::RetentionQuery> retention_query_;  // until answered or given up
  Clock::time_point retention_deadline_;
  std::optional<Clock::time_point> stop_deadline_;
  std::optional<std::string> failure_;

  mutable std::mutex snapshot_mutex_;
  ServiceSnapshot published_;
};

Service::Service(config::Config config, ServiceOptions options)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(options))) {}
Service::~Service() = default;
RunResult Service::run() { return impl_->run(); }
ServiceSnapshot Service::snapshot() const { return impl_->snapshot(); }

}  // namespace bloomgate::app
