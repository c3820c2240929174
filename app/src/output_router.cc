#include "output_router.h"

#include <algorithm>

#include "commit_protocol.h"
#include "output_record.h"

namespace bloomgate::app {

using connectors::ConsumedMessage;
using connectors::KafkaError;

namespace {

// The records produced between two captures form an epoch; a capture may be written once every record
// of its epoch and the ones before is acknowledged (what a flush would ensure).
void* epoch_tag(std::uint64_t epoch) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(epoch)); }

}  // namespace

Delivery OutputRouter::deliver(const PartitionWorker& worker, ConsumedMessage& message, const Verdict& verdict) {
  const config::PipelineSettings& pipeline = *worker.pipeline;
  bool produced = false;
  switch (verdict.outcome) {
    case Outcome::kForward: {
      const bool same_partition = pipeline.output_partitioning == config::OutputPartitioning::kSameAsInput;
      produced = produce(pipeline.output, message, same_partition ? message.partition() : connectors::kAnyPartition,
                         OutputHeaders::with_source(message));
      break;
    }
    case Outcome::kDuplicate:
      if (pipeline.duplicates.empty()) return Delivery::kDone;
      produced = produce(pipeline.duplicates, message, connectors::kAnyPartition, OutputHeaders::with_source(message));
      break;
    case Outcome::kDeadLetter:
      if (pipeline.dead_letter.empty()) return Delivery::kNoDeadLetterTopic;
      produced = produce(pipeline.dead_letter, message, connectors::kAnyPartition,
                         OutputHeaders::with_rejection(message, pipeline.name, *verdict.rejection));
      break;
  }
  return produced ? Delivery::kDone : Delivery::kNotProduced;
}

bool OutputRouter::produce(const std::string& topic, const ConsumedMessage& message, std::int32_t partition,
                           connectors::HeadersHandle record_headers) {
  connectors::OutgoingMessage out;
  out.partition = partition;
  out.key = message.key();
  out.value = message.value();
  out.timestamp_ms = message.timestamp_ms().value_or(0);
  out.opaque = epoch_tag(epoch_);
  if (!protocol_->before_produce()) return false;
  if (KafkaError error = context_.producer->produce(topic, out, std::move(record_headers)); !error.ok()) {
    if (!protocol_->absorb_produce_error(error)) context_.fail("producing to " + topic + " failed: " + error.describe());
    return false;
  }
  ++in_flight_this_epoch_;
  return true;
}

// Keeps, per output (topic, partition), the highest acknowledged offset: a checkpoint's output offset
// comes from it. Keyed by names, never by worker: a lost partition's worker may be gone before the
// reports of its records arrive.
void OutputRouter::on_delivery(const connectors::DeliveryReport& report) {
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
  if (protocol_->absorb_delivery_failure(report.error)) return;
  context_.fail("delivery to " + std::string(report.topic) + " failed: " + report.error.message());
}

std::int64_t OutputRouter::max_acked(const std::string& topic, std::int32_t partition) const {
  const auto it = acked_.find(topic);
  if (it == acked_.end() || partition < 0 || static_cast<std::size_t>(partition) >= it->second.size()) return -1;
  return it->second[static_cast<std::size_t>(partition)];
}

// Records still to be reconciled pin it at the first of them; else it is past everything acknowledged (and
// past the output's end when the partition was assigned). by_key: -1, unknown (the partition's records are
// spread over the output: at-least-once after a crash).
std::int64_t OutputRouter::output_offset(const PartitionWorker& worker) const {
  if (worker.output_partition < 0) return -1;
  if (!worker.delivered.empty()) {
    std::int64_t first = worker.delivered.begin()->second;
    for (const auto& [input, output] : worker.delivered) first = std::min(first, output);
    return first;
  }
  const std::int64_t acked = max_acked(worker.pipeline->output, worker.output_partition);
  return std::max(worker.output_floor, acked < 0 ? -1 : acked + 1);
}

std::uint64_t OutputRouter::seal_epoch() {
  if (in_flight_this_epoch_ != 0) in_flight_sealed_.emplace_back(epoch_, in_flight_this_epoch_);
  in_flight_this_epoch_ = 0;
  return epoch_++;
}

void OutputRouter::delivered_in_epoch(std::uintptr_t epoch) {
  if (epoch == epoch_) {
    --in_flight_this_epoch_;
    return;
  }
  for (auto& [sealed, count] : in_flight_sealed_) {
    if (sealed == epoch) --count;
  }
  while (!in_flight_sealed_.empty() && in_flight_sealed_.front().second == 0) in_flight_sealed_.pop_front();
}

}  // namespace bloomgate::app
