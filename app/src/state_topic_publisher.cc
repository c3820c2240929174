#include "state_topic_publisher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "service_context.h"
#include "startup_checks.h"

namespace bloomgate::app {
namespace {

constexpr std::chrono::milliseconds kAbandonCheck{50};

}  // namespace

using connectors::KafkaError;

std::size_t state_chunk_bytes(std::int64_t message_max_bytes) noexcept {
  constexpr std::int64_t kFraming = 4096;  // the key (< 400 bytes), the chunk's 33, the batch's and record's
  constexpr std::int64_t kSmallest = 1024;
  const std::int64_t fits = std::max(message_max_bytes - kFraming, kSmallest);
  return static_cast<std::size_t>(std::min<std::int64_t>(fits, connectors::kDefaultStateChunkBytes));
}

void StateTopicPublisher::prepare(PartitionWorker& worker, std::size_t chunk_bytes) {
  if (!worker.state_topic_writer) worker.state_topic_writer.emplace(worker.id, chunk_bytes);
  connectors::StateTopicWriter& writer = *worker.state_topic_writer;
  if (writer.has_baseline()) return;
  if (worker.state_topic_baseline) {
    writer.resume_from(std::exchange(worker.state_topic_baseline, {}).value());
    return;
  }
  worker.progress.needs_full_image();
}

std::vector<StatePublication> StateTopicPublisher::publish(const std::vector<PartitionWorker*>& workers,
                                                           const std::vector<connectors::PartitionImage>& images,
                                                           std::chrono::milliseconds timeout) {
  std::vector<StatePublication> published(images.size());
  for (std::size_t i = 0; i < images.size(); ++i) {
    PartitionWorker& worker = *workers[i];
    connectors::StateTopicWriter& writer = *worker.state_topic_writer;  // prepare() made it
    const connectors::StateTopicPlan plan = writer.plan(images[i].checkpoint, images[i].image, wall_clock_ms());
    const std::int32_t partition = connectors::state_topic_partition(worker.id);
    published[i].bytes = plan.bytes;
    if (KafkaError error = sink_->produce_acknowledged(partition, plan.records, timeout, abandoned_); !error.ok()) {
      writer.reset();  // its planned manifest is not the topic's: the next checkpoint writes a full image
      spdlog::warn("{}: the state topic did not acknowledge the checkpoint at input offset {} ({}); its offset is "
                   "not committed, and its next checkpoint writes the whole filter",
                   connectors::to_string(worker.id), images[i].checkpoint.next_offset, error.message());
      continue;
    }
    published[i].acknowledged = true;
    if (plan.tombstones_after_ack.empty()) continue;
    for (const connectors::StateTopicRecord& tombstone : plan.tombstones_after_ack) {
      published[i].bytes += tombstone.key.size();
    }
    if (KafkaError error = sink_->produce_acknowledged(partition, plan.tombstones_after_ack, timeout, abandoned_); !error.ok()) {
      spdlog::warn("{}: {} tombstone(s) of replaced checkpoint records were not acknowledged ({}); those records "
                   "stay in the state topic, unreferenced",
                   connectors::to_string(worker.id), plan.tombstones_after_ack.size(), error.message());
    }
  }
  return published;
}

bool StateTopicPublisher::account(PartitionWorker& worker, const StatePublication& publication) {
  worker.report->state_topic_produced_bytes += publication.bytes;
  if (!publication.acknowledged) ++worker.report->state_topic_produce_failures;
  return publication.acknowledged;
}

KafkaStateTopicSink::KafkaStateTopicSink(const ServiceContext& context) : topic_(context.config.state.topic) {
  connectors::KafkaConfig kafka = client_config(context, ClientRole::kProducer);
  kafka.with("acks", "all");  // the idempotent producer's requirement, whatever producer.acks says
  connectors::ProducerOptions options;
  options.hooks = context.options.hooks;
  // On the thread that flushes (produce_acknowledged's); never throws.
  options.on_delivery = [this](const connectors::DeliveryReport& report) noexcept {
    if (!report.error.ok() && first_failure_.ok()) first_failure_ = report.error;
  };
  producer_ = std::make_unique<connectors::Producer>(kafka, std::move(options));
}

// The wait for acknowledgements, in slices of kAbandonCheck so that an abandon is seen soon.
KafkaError KafkaStateTopicSink::produce_acknowledged(std::int32_t partition,
                                                     const std::vector<connectors::StateTopicRecord>& records,
                                                     std::chrono::milliseconds timeout,
                                                     const std::atomic<bool>& abandoned) {
  first_failure_ = {};
  for (const connectors::StateTopicRecord& record : records) {
    connectors::OutgoingMessage message;
    message.partition = partition;
    message.key = record.key;
    if (record.value) message.value = *record.value;
    if (KafkaError error = producer_->produce(topic_, message); !error.ok()) {
      // What was enqueued before it still gets its reports: served here so that they cannot count for the next call.
      static_cast<void>(producer_->flush(timeout));
      return error;
    }
  }
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    KafkaError error = producer_->flush(std::min(time_left(deadline), kAbandonCheck));
    if (error.ok()) return first_failure_;
    if (abandoned.load() || Clock::now() >= deadline) return error;
  }
}

}  // namespace bloomgate::app
