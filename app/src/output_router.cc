#include "output_router.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "commit_protocol.h"
#include "state_topic_publisher.h"

namespace bloomgate::app {

using connectors::ConsumedMessage;
using connectors::HeaderView;
using connectors::KafkaError;

namespace {

// How a record is written (output_router.h): as it is, then cut harder at each refusal.
constexpr unsigned kWhole = 0;
constexpr unsigned kCutToTopic = 1;
constexpr unsigned kCutToFallback = 2;
constexpr unsigned kOwnHeadersOnly = 3;
constexpr unsigned kStageBits = 2;

// The records produced between two captures form an epoch; a capture may be written once every record
// of its epoch and the ones before is acknowledged (what a flush would ensure). A record's opaque carries
// its epoch and its stage.
void* tag_of(std::uint64_t epoch, unsigned stage) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>((epoch << kStageBits) | stage));
}
std::uint64_t epoch_of(void* tag) { return reinterpret_cast<std::uintptr_t>(tag) >> kStageBits; }
unsigned stage_of(void* tag) {
  return static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(tag) & ((std::uintptr_t{1} << kStageBits) - 1));
}

bool too_large(const KafkaError& error) { return error.code() == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE; }

std::string refused_error(std::string_view topic) {
  return "the record was refused as too large for topic " + std::string(topic) + " (MSG_SIZE_TOO_LARGE)";
}

// A written record's headers: its own, then the service's, from the last bloomgate.source on. The markers
// of an earlier cut are left out: a new cut says again what it cuts.
struct WrittenHeaders {
  std::vector<HeaderView> own;
  std::optional<std::string_view> source;
  std::optional<std::string_view> reason;  // a dead letter's
  std::optional<std::string_view> error;
};

WrittenHeaders split_written(std::vector<HeaderView> all) {
  WrittenHeaders split;
  std::size_t added = all.size();
  for (std::size_t i = all.size(); i-- > 0;) {
    if (all[i].name == headers::kSource) {
      added = i;
      break;
    }
  }
  for (std::size_t i = added; i < all.size(); ++i) {
    const std::string_view value = all[i].value.value_or(std::string_view{});
    if (all[i].name == headers::kSource) split.source = value;
    if (all[i].name == headers::kReason) split.reason = value;
    if (all[i].name == headers::kError) split.error = value;
  }
  all.resize(added);
  split.own = std::move(all);
  return split;
}

std::int64_t timestamp_of(const ConsumedMessage& message) { return message.timestamp_ms().value_or(0); }

}  // namespace

OutputRouter::OutputRouter(ServiceContext& context, ProduceEvents& events) : context_(context), events_(events) {
  for (const auto& pipeline : context.config.pipelines) {
    for (const auto& topic : pipeline.inputs) pipeline_of_input_[topic] = &pipeline;
  }
}

std::optional<Rejection> OutputRouter::oversized(const config::PipelineSettings& pipeline,
                                                 const ConsumedMessage& message) const {
  if (refused_stage(message) != kWhole) {
    return Rejection{RejectionReason::kRecordTooLarge, refused_error(pipeline.output) + " before it was consumed again"};
  }
  const AddedHeaders added(message.topic(), message.partition(), message.offset());
  const std::size_t size = OutputHeaders::wire_size(message, added);
  const std::size_t largest = limits_.largest_record(pipeline.output);
  if (size <= largest) return std::nullopt;
  return Rejection{RejectionReason::kRecordTooLarge,
                   "the record would be " + std::to_string(size) +
                       " bytes as forwarded (key, value and headers, bloomgate.source included), over the " +
                       std::to_string(largest) + " that output topic " + pipeline.output + " takes"};
}

Delivery OutputRouter::deliver(const PartitionWorker& worker, ConsumedMessage& message, const Verdict& verdict) {
  const config::PipelineSettings& pipeline = *worker.pipeline;
  bool produced = false;
  switch (verdict.outcome) {
    case Outcome::kForward: {
      const bool same_partition = pipeline.output_partitioning == config::OutputPartitioning::kSameAsInput;
      const AddedHeaders added(message.topic(), message.partition(), message.offset());
      produced = produce_whole(pipeline.output, message, same_partition ? message.partition() : connectors::kAnyPartition,
                               added, pipeline);
      break;
    }
    case Outcome::kDuplicate: {
      if (pipeline.duplicates.empty()) return Delivery::kDone;
      const AddedHeaders added(message.topic(), message.partition(), message.offset());
      produced = produce_fitting(pipeline.duplicates, message, added, pipeline, kWhole);
      break;
    }
    case Outcome::kDeadLetter: {
      if (pipeline.dead_letter.empty()) return Delivery::kNoDeadLetterTopic;
      const AddedHeaders added(message.topic(), message.partition(), message.offset(), pipeline.name,
                               reason_name(verdict.rejection->reason), verdict.rejection->message);
      produced = produce_fitting(pipeline.dead_letter, message, added, pipeline, refused_stage(message));
      if (produced && !refused_.empty()) {
        refused_.erase(Position(std::string(message.topic()), message.partition(), message.offset()));
      }
      break;
    }
    case Outcome::kWaitForSchema:
      throw std::logic_error("OutputRouter: an event waiting for its schema has no destination yet");
  }
  return produced ? Delivery::kDone : Delivery::kNotProduced;
}

bool OutputRouter::produce_whole(const std::string& topic, ConsumedMessage& message, std::int32_t partition,
                                 const AddedHeaders& added, const config::PipelineSettings& pipeline) {
  connectors::OutgoingMessage out;
  out.partition = partition;
  out.key = message.key();
  out.value = message.value();
  out.timestamp_ms = timestamp_of(message);
  out.opaque = tag_of(epoch_, kWhole);
  connectors::HeadersHandle headers = OutputHeaders::detached_with(message, added);
  const Sent sent = send(topic, out, &headers);
  if (sent != Sent::kTooLarge) return sent == Sent::kSent;
  // librdkafka refused what was sized to fit: a dead letter instead, cut to fit. The refused headers are
  // still in `headers` (the record's own, then `added`).
  WrittenHeaders split = split_written(connectors::header_views(headers.get()));
  const RecordParts parts{message.key(), message.value(), std::move(split.own)};
  const std::string error = split.error ? std::string(*split.error) : refused_error(topic);
  return dead_letter_refused(pipeline, parts, {message.topic(), message.partition(), message.offset()},
                             split.reason.value_or(reason_name(RejectionReason::kRecordTooLarge)), error, kCutToTopic,
                             out.timestamp_ms, epoch_);
}

bool OutputRouter::produce_fitting(const std::string& topic, ConsumedMessage& message, const AddedHeaders& added,
                                   const config::PipelineSettings& pipeline, unsigned stage) {
  if (stage == kWhole && OutputHeaders::wire_size(message, added) <= limits_.largest_record(topic)) {
    return produce_whole(topic, message, connectors::kAnyPartition, added, pipeline);
  }
  const RecordParts parts{message.key(), message.value(), message.headers()};
  return produce_cut(topic, parts, added, std::max(stage, kCutToTopic), timestamp_of(message), epoch_);
}

bool OutputRouter::produce_cut(const std::string& topic, const RecordParts& parts, const AddedHeaders& added,
                               unsigned stage, std::int64_t timestamp_ms, std::uint64_t epoch) {
  for (; stage <= kOwnHeadersOnly; ++stage) {
    const BoundedRecord cut(parts, added.views(), largest_at(topic, added.views(), stage));
    if (!cut.fits()) continue;
    connectors::OutgoingMessage out = cut.message();
    out.timestamp_ms = timestamp_ms;
    out.opaque = tag_of(epoch, stage);
    const Sent sent = send(topic, out, nullptr);
    if (sent != Sent::kTooLarge) return sent == Sent::kSent;
  }
  context_.fail("topic " + topic + " refused even a record of only the service's own headers as too large " +
                "(MSG_SIZE_TOO_LARGE); raise its max.message.bytes");
  return false;
}

bool OutputRouter::dead_letter_refused(const config::PipelineSettings& pipeline, const RecordParts& parts,
                                       const SourcePosition& source, std::string_view reason, std::string_view error,
                                       unsigned stage, std::int64_t timestamp_ms, std::uint64_t epoch) {
  const std::string where = std::string(source.topic) + "/" + std::to_string(source.partition) + "/" +
                            std::to_string(source.offset);
  if (pipeline.dead_letter.empty()) {
    context_.fail("pipeline " + pipeline.name + ": the record of " + where + " was refused as too large (" +
                  std::string(error) + ") and the pipeline has no dead_letter topic; stopping");
    return false;
  }
  spdlog::warn("pipeline {}: the record of {} could not be written ({}); writing it to dead-letter topic {} cut to "
               "fit",
               pipeline.name, where, error, pipeline.dead_letter);
  const AddedHeaders added(source.topic, source.partition, source.offset, pipeline.name, reason, error);
  return produce_cut(pipeline.dead_letter, parts, added, stage, timestamp_ms, epoch);
}

bool OutputRouter::produce_state(std::int32_t partition, const connectors::StateTopicRecord& record) {
  connectors::OutgoingMessage out;
  out.partition = partition;
  out.key = record.key;
  if (record.value) out.value = *record.value;
  out.opaque = tag_of(epoch_, kWhole);
  const std::string& topic = context_.config.state.topic;
  const Sent sent = send(topic, out, nullptr);
  if (sent == Sent::kTooLarge) {
    context_.fail("producing to state topic " + topic + " failed: a checkpoint chunk is larger than the producer's "
                  "message.max.bytes");
  }
  return sent == Sent::kSent;
}

std::size_t OutputRouter::chunk_bytes() const { return state_chunk_bytes(context_.producer->message_max_bytes()); }

OutputRouter::Sent OutputRouter::send(const std::string& topic, const connectors::OutgoingMessage& out,
                                      connectors::HeadersHandle* headers) {
  if (!events_.before_produce()) return Sent::kFailed;
  connectors::Producer& producer = *context_.producer;
  const KafkaError error = headers != nullptr ? producer.produce(topic, out, *headers) : producer.produce(topic, out);
  if (error.ok()) {
    count_in_flight(epoch_of(out.opaque));
    return Sent::kSent;
  }
  if (too_large(error)) return Sent::kTooLarge;
  if (!events_.produce_refused(error)) context_.fail("producing to " + topic + " failed: " + error.describe());
  return Sent::kFailed;
}

std::size_t OutputRouter::largest_at(const std::string& topic, std::span<const HeaderView> added,
                                     unsigned stage) const {
  if (stage == kOwnHeadersOnly) return BoundedRecord::least_size(added);
  const std::size_t largest = limits_.largest_record(topic);
  return stage == kCutToFallback ? std::min(largest, kFallbackRecordBytes) : largest;
}

unsigned OutputRouter::refused_stage(const ConsumedMessage& message) const {
  if (refused_.empty()) return kWhole;
  const auto it = refused_.find(Position(std::string(message.topic()), message.partition(), message.offset()));
  return it == refused_.end() ? kWhole : it->second;
}

// Keeps, per output (topic, partition), the highest acknowledged offset: a checkpoint's output offset
// comes from it. Keyed by names, never by worker: a lost partition's worker may be gone before the
// reports of its records arrive.
void OutputRouter::on_delivery(const connectors::DeliveryReport& report) {
  if (too_large(report.error) && report.message != nullptr) {
    redirect_refused_delivery(report);
    return;
  }
  delivered_in_epoch(epoch_of(report.opaque));
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
  if (events_.delivery_failed(report.error)) return;
  context_.fail("delivery to " + std::string(report.topic) + " failed: " + report.error.message());
}

// The broker refused a record as too large: its dead letter, cut to fit, is produced in the refused
// record's epoch before that record leaves it, so no checkpoint passes the input record unwritten.
void OutputRouter::redirect_refused_delivery(const connectors::DeliveryReport& report) {
  const std::uint64_t epoch = epoch_of(report.opaque);
  const unsigned next_stage = std::max(stage_of(report.opaque) + 1, kCutToTopic);
  WrittenHeaders split = split_written(connectors::header_views(*report.message));
  const std::optional<SourcePosition> source = split.source ? parse_source(*split.source) : std::nullopt;
  const auto pipeline = source ? pipeline_of_input_.find(source->topic) : pipeline_of_input_.end();
  if (pipeline == pipeline_of_input_.end()) {
    delivered_in_epoch(epoch);
    context_.fail("delivery to " + std::string(report.topic) + " failed: " + report.error.message() +
                  ", and the record names no input of a pipeline");
    return;
  }
  if (events_.delivery_failed(report.error)) {  // exactly_once: aborted, the input consumed again
    refused_[Position(std::string(source->topic), source->partition, source->offset)] = next_stage;
    delivered_in_epoch(epoch);
    return;
  }
  const RecordParts parts{report.key, report.value, std::move(split.own)};
  const std::string error = split.error ? std::string(*split.error) : refused_error(report.topic);
  (void)dead_letter_refused(*pipeline->second, parts, *source,
                            split.reason.value_or(reason_name(RejectionReason::kRecordTooLarge)), error, next_stage,
                            report.timestamp_ms.value_or(0), epoch);
  delivered_in_epoch(epoch);
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
  return worker.progress.output_position(max_acked(worker.pipeline->output, worker.output_partition));
}

std::uint64_t OutputRouter::seal_epoch() {
  if (in_flight_this_epoch_ != 0) in_flight_sealed_.emplace_back(epoch_, in_flight_this_epoch_);
  in_flight_this_epoch_ = 0;
  return epoch_++;
}

void OutputRouter::count_in_flight(std::uint64_t epoch) {
  if (epoch == epoch_) {
    ++in_flight_this_epoch_;
    return;
  }
  for (auto& [sealed, count] : in_flight_sealed_) {
    if (sealed == epoch) ++count;
  }
}

void OutputRouter::delivered_in_epoch(std::uint64_t epoch) {
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
