#include "bloomgate/app/service.h"

#include <spdlog/spdlog.h>

#include <deque>
#include <map>
#include <random>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "bloomgate/connectors/admin.h"
#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/kafka_config.h"
#include "bloomgate/connectors/producer.h"
#include "output_record.h"

namespace bloomgate::app {
namespace {

using connectors::CommitMode;
using connectors::ConsumedMessage;
using connectors::KafkaError;
using connectors::TopicPartition;
using connectors::TopicPartitions;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kPollTimeout{100};
constexpr std::chrono::milliseconds kMetadataTimeout{10'000};
constexpr std::chrono::milliseconds kCheckpointFlushTimeout{30'000};
constexpr std::uint64_t kProducerPollEvery = 1024;  // serve delivery reports without a call per event
constexpr std::uint64_t kTimeOneEventIn = 63;        // mask: the latency histogram samples 1 event in 64

filters::TimePoint wall_clock_now() {
  return std::chrono::time_point_cast<filters::Duration>(std::chrono::system_clock::now());
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

// The live state of one assigned input partition.
struct PartitionWorker {
  PartitionWorker(const config::PipelineSettings& settings, PartitionReport& partition_report)
      : pipeline(&settings), deduplicator(settings, wall_clock_now), report(&partition_report) {}

  const config::PipelineSettings* pipeline;
  PartitionDeduplicator deduplicator;
  PartitionReport* report;                       // cumulative counters, owned by Service::Impl::reports_
  std::int64_t committed_offset = connectors::kNoOffset;
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

  enum class ClientRole { kConsumer, kOther };

  connectors::KafkaConfig client_config(ClientRole role) const {
    connectors::KafkaConfig kafka;
    kafka.with("bootstrap.servers", options_.bootstrap_servers);
    // A new consumer group starts at the beginning of the input: a deduplicator that skipped what was
    // already there would never forward it. kafka.properties, applied after, may say otherwise.
    if (role == ClientRole::kConsumer) kafka.with("auto.offset.reset", "earliest");
    if (KafkaError error = kafka.set_all(config_.kafka.properties); !error.ok()) {
      throw std::runtime_error("kafka.properties: " + error.message());
    }
    return kafka;
  }

  void start() {
    const connectors::KafkaConfig kafka = client_config(ClientRole::kOther);
    for (const PartitionKey& key : check_topics(kafka)) report_for(key);
    connectors::ProducerOptions producer_options;
    producer_options.hooks = options_.hooks;
    producer_options.on_delivery = [this](const connectors::DeliveryReport& report) { on_delivery(report); };
    producer_ = std::make_unique<connectors::Producer>(kafka, std::move(producer_options));
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

  connectors::ConsumerOptions consumer_options() {
    connectors::ConsumerOptions options;
    options.group_id = config_.kafka.group_id;
    if (!config_.kafka.instance_name.empty()) options.group_instance_id = config_.kafka.instance_name;
    options.hooks = options_.hooks;
    options.on_assigned = [this](TopicPartitions& partitions) { assign(partitions); };
    options.on_revoked = [this](TopicPartitions& partitions) { revoke(partitions, /*lost=*/false); };
    options.on_lost = [this](TopicPartitions& partitions) { revoke(partitions, /*lost=*/true); };
    options.on_commit = [](const KafkaError& error, const TopicPartitions&) {
      if (!error.ok()) spdlog::warn("offset commit failed: {}", error.message());
    };
    return options;
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
  std::vector<PartitionKey> check_topics(const connectors::KafkaConfig& kafka) const {
    std::vector<PartitionKey> inputs;
    const connectors::Admin admin(kafka, options_.hooks);
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
    while (!failure_ && !stop_requested()) {
      if (auto message = consumer_->poll(kPollTimeout)) {
        handle(*message);
        if (++consumed_since_producer_poll_ >= kProducerPollEvery) {
          consumed_since_producer_poll_ = 0;
          producer_->poll(std::chrono::milliseconds(0));
        }
      } else {
        producer_->poll(std::chrono::milliseconds(0));
      }
      const auto now = Clock::now();
      if (now >= next_checkpoint) {
        checkpoint(all_workers(), CommitMode::kAsync, now + kCheckpointFlushTimeout);
        next_checkpoint = now + config_.state.checkpoint_interval;
      }
      if (now >= next_snapshot) {
        publish_snapshot();
        next_snapshot = now + options_.snapshot_interval;
      }
    }
  }

  bool stop_requested() const { return options_.stop != nullptr && options_.stop->load(std::memory_order_relaxed); }

  void handle(const ConsumedMessage& message) {
    if (KafkaError error = message.error(); !error.ok()) {
      if (error.is_fatal()) fail("consumer: " + error.message());
      else if (!message.is_partition_eof()) spdlog::warn("consumer: {}", error.message());
      return;
    }
    PartitionWorker* worker = worker_for(message);
    if (worker == nullptr) return;  // fetched just before its partition was revoked: the next owner has it
    const bool timed = (++events_since_timing_ & kTimeOneEventIn) == 0;
    const auto started = timed ? Clock::now() : Clock::time_point{};
    const std::vector<connectors::HeaderView> original = message.headers();
    event_headers_.clear();
    for (const auto& header : original) event_headers_.push_back({header.name, header.value});
    const EventView event{message.key(), message.value().value_or(std::string_view{}), event_headers_};
    const Verdict verdict = worker->deduplicator.decide(event, message.timestamp_ms().value_or(-1));
    if (!deliver(*worker, message, verdict, original)) return;
    PartitionReport& report = *worker->report;
    ++report.consumed;
    report.counters = worker->deduplicator.counters();
    if (verdict.rejection) ++report.dead_letters_by_reason[static_cast<std::size_t>(verdict.rejection->reason)];
    report.next_offset = message.offset() + 1;
    if (timed) processing_latency_.observe(std::chrono::duration<double>(Clock::now() - started).count());
  }

  // Produces what the verdict says; false when the service must stop with this event not processed.
  bool deliver(const PartitionWorker& worker, const ConsumedMessage& message, const Verdict& verdict,
               std::span<const connectors::HeaderView> original) {
    const config::PipelineSettings& pipeline = *worker.pipeline;
    switch (verdict.outcome) {
      case Outcome::kForward: {
        const bool same_partition = pipeline.output_partitioning == config::OutputPartitioning::kSameAsInput;
        return produce(pipeline.output, message, same_partition ? message.partition() : connectors::kAnyPartition,
                       output_headers_.with_source(message, original));
      }
      case Outcome::kDuplicate:
        if (pipeline.duplicates.empty()) return true;
        return produce(pipeline.duplicates, message, connectors::kAnyPartition,
                       output_headers_.with_source(message, original));
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
                       output_headers_.with_rejection(message, original, pipeline.name, *verdict.rejection));
    }
    return false;
  }

  bool produce(const std::string& topic, const ConsumedMessage& message, std::int32_t partition,
               std::span<const connectors::HeaderView> record_headers) {
    connectors::OutgoingMessage out;
    out.partition = partition;
    out.key = message.key();
    out.value = message.value();
    out.headers = record_headers;
    out.timestamp_ms = message.timestamp_ms().value_or(0);
    if (KafkaError error = producer_->produce(topic, out); !error.ok()) {
      fail("producing to " + topic + " failed: " + error.message());
      return false;
    }
    return true;
  }

  void on_delivery(const connectors::DeliveryReport& report) {
    if (report.error.ok()) return;
    fail("delivery to " + std::string(report.topic) + " failed: " + report.error.message());
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

  void assign(TopicPartitions& partitions) {
    for (auto& partition : partitions) {
      const auto pipeline = pipeline_of_topic_.find(partition.topic);
      if (pipeline == pipeline_of_topic_.end()) continue;
      PartitionKey key(partition.topic, partition.partition);
      PartitionReport& report = report_for(key);
      report.assigned = true;
      workers_[key] = std::make_unique<PartitionWorker>(*pipeline->second, report);
      partition.offset = connectors::kNoOffset;  // the committed offset (durable state will refine this)
    }
    invalidate_worker_cache();
    joined_ = true;
    spdlog::info("assigned {} partition(s): {}", partitions.size(), describe(partitions));
  }

  void revoke(const TopicPartitions& partitions, bool lost) {
    std::vector<PartitionWorker*> leaving;
    for (const auto& partition : partitions) {
      const auto it = workers_.find(PartitionKey(partition.topic, partition.partition));
      if (it != workers_.end()) leaving.push_back(it->second.get());
    }
    // A lost partition may already belong to another member: committing for it would be wrong.
    if (!lost) checkpoint(leaving, CommitMode::kSync, Clock::now() + flush_budget());
    for (const auto& partition : partitions) {
      const PartitionKey key(partition.topic, partition.partition);
      if (const auto it = workers_.find(key); it != workers_.end()) refresh_filter_stats(*it->second, wall_clock_now());
      workers_.erase(key);
      if (const auto it = reports_.find(key); it != reports_.end()) it->second.assigned = false;
    }
    invalidate_worker_cache();
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

  // Flush, then commit: an offset is committed only when every record produced for the events before it
  // has been acknowledged. Returns false when nothing could be committed.
  bool checkpoint(const std::vector<PartitionWorker*>& workers, CommitMode mode, Clock::time_point deadline) {
    if (failure_) return false;
    const auto budget = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                                 std::chrono::milliseconds(0));
    if (KafkaError error = producer_->flush(budget); !error.ok()) {
      spdlog::warn("flush did not finish ({} records in flight): {}; offsets not committed", producer_->outq_len(),
                   error.message());
      return false;
    }
    if (failure_) return false;  // a delivery failed during the flush
    TopicPartitions offsets;
    for (PartitionWorker* worker : workers) {
      const PartitionReport& report = *worker->report;
      if (report.next_offset < 0 || report.next_offset == worker->committed_offset) continue;
      offsets.push_back(TopicPartition{report.topic, report.partition, report.next_offset, {}, {}});
    }
    if (offsets.empty()) return true;
    if (KafkaError error = consumer_->commit(offsets, mode); !error.ok()) {
      spdlog::warn("offset commit failed: {}", error.message());
      return false;
    }
    for (PartitionWorker* worker : workers) worker->committed_offset = worker->report->next_offset;
    ++commits_;
    return true;
  }

  // ---- stopping -------------------------------------------------------------------------------------

  void shut_down() {
    if (failure_) return;
    stop_deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(config_.shutdown.grace_period);
    running_ = false;
    spdlog::info("stopping: flushing and committing (grace period {} ms)",
                 std::chrono::duration_cast<std::chrono::milliseconds>(config_.shutdown.grace_period).count());
    if (!checkpoint(all_workers(), CommitMode::kSync, *stop_deadline_)) {
      fail("shutdown: the output was not flushed within the grace period; uncommitted events will be consumed again");
    }
  }

  void close_clients() noexcept {
    if (consumer_) {
      // close() revokes what is still assigned; after a failure, revoke() commits nothing.
      if (KafkaError error = consumer_->close(); !error.ok()) spdlog::warn("consumer close: {}", error.message());
    }
    if (producer_ && !failure_) {
      if (KafkaError error = producer_->flush(flush_budget()); !error.ok()) {
        spdlog::warn("producer flush at exit: {}", error.message());
      }
    }
    consumer_.reset();
    producer_.reset();
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
    snapshot.processing_latency = processing_latency_;
    snapshot.producer_queue = producer_ ? producer_->outq_len() : 0;
    snapshot.running = running_ && joined_;
    {
      std::lock_guard lock(snapshot_mutex_);
      published_ = snapshot;
    }
    if (options_.on_snapshot) options_.on_snapshot(snapshot);
  }

  config::Config config_;
  ServiceOptions options_;
  std::map<std::string, const config::PipelineSettings*> pipeline_of_topic_;

  std::unique_ptr<connectors::Producer> producer_;
  std::unique_ptr<connectors::Consumer> consumer_;  // after producer_: destroyed first, its close() may flush
  std::map<PartitionKey, PartitionReport> reports_;
  std::map<PartitionKey, std::unique_ptr<PartitionWorker>> workers_;

  PartitionWorker* cached_worker_ = nullptr;  // consecutive messages mostly come from one partition
  const rd_kafka_topic_t* cached_topic_ = nullptr;
  std::int32_t cached_partition_ = -1;

  std::vector<EventHeader> event_headers_;
  OutputHeaders output_headers_;
  std::uint64_t consumed_since_producer_poll_ = 0;
  std::uint64_t events_since_timing_ = 0;
  LatencyHistogram processing_latency_;
  std::uint64_t commits_ = 0;
  bool running_ = false;
  bool joined_ = false;  // the group has given this member its first assignment (possibly empty)
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
