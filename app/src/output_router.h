// File: output_router.h
//
// OutputRouter: where each decided event goes (the output, duplicates or dead-letter topic, with the
// source and reason headers), which output offsets are acknowledged, and which produced records are still
// in flight (by epoch: the records produced between two checkpoint captures).
//
// No record may stop the service for its size (record_limits.h has the limits):
//   - an event whose forwarded form is larger than its output takes is a dead letter, record_too_large,
//     decided before the filter is asked (oversized()), so its key is not remembered;
//   - a duplicate or dead letter larger than its topic takes is written cut to fit (bounded_record.h);
//   - a record refused as too large all the same (MSG_SIZE_TOO_LARGE: from produce(), or from the broker
//     in its delivery report, when the broker's limit is lower than known) is written to the pipeline's
//     dead-letter topic instead, cut to fit, with its reason (its own if it was a dead letter, else
//     record_too_large), in the same epoch, so no checkpoint passes it before it is written. Each refusal
//     cuts harder (the stage of the record, carried in its opaque with the epoch): to what the topic takes,
//     then to at most kFallbackRecordBytes, then to the service's own headers only; a refusal of that is a
//     failure of the service, with a message naming the topic. With exactly_once the refusal aborts the
//     transaction instead; the record, consumed again after the rewind, is then a dead letter at the next
//     stage. A pipeline without a dead_letter topic stops at such a record, as at an unkeyable one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bloomgate/connectors/message.h"
#include "bloomgate/connectors/producer.h"
#include "bounded_record.h"
#include "commit_ports.h"
#include "output_record.h"
#include "partition_worker.h"
#include "record_limits.h"
#include "service_context.h"

namespace bloomgate::app {

// What the router reports about the records it produces. The service loop answers, from its commit
// protocol: the router and the protocol do not know each other.
class ProduceEvents {
 public:
  // Before each produced record; false when the service failed (the record is not produced).
  virtual bool before_produce() = 0;
  // A record the producer refused; true when it was absorbed (the event is decided again later), false
  // when the service must fail.
  virtual bool produce_refused(const connectors::KafkaError& error) = 0;
  // A failed delivery report (from a librdkafka callback); true when absorbed.
  virtual bool delivery_failed(const connectors::KafkaError& error) = 0;

 protected:
  ~ProduceEvents() = default;
};

enum class Delivery {
  kDone,               // produced (or nothing to produce)
  kNotProduced,        // refused: the service failed, or the commit protocol rewinds
  kNoDeadLetterTopic,  // an unkeyable event and no dead_letter topic: the service must stop before it
};

class OutputRouter final : public ProducedRecords, public TransactionalStateRecords {
 public:
  // A record refused as too large once more is cut to at most this many bytes.
  static constexpr std::size_t kFallbackRecordBytes = 64 * 1024;

  // `events` must outlive the router; it is asked nothing before the first record is produced.
  OutputRouter(ServiceContext& context, ProduceEvents& events);
  RecordLimits& limits() { return limits_; }

  // Why the event cannot be forwarded as it is: its forwarded form is larger than the pipeline's output
  // takes, or the broker refused it as too large before (exactly_once). Nothing when it fits.
  std::optional<Rejection> oversized(const config::PipelineSettings& pipeline,
                                     const connectors::ConsumedMessage& message) const;

  // Produces what the verdict says.
  Delivery deliver(const PartitionWorker& worker, connectors::ConsumedMessage& message, const Verdict& verdict);
  // The producer's delivery report (on the thread that polls it).
  void on_delivery(const connectors::DeliveryReport& report);

  // The highest acknowledged offset of an output partition in this process; -1 when none.
  std::int64_t max_acked(const std::string& topic, std::int32_t partition) const;
  // Where the partition's checkpoint says its output stands: no record forwarded for an input offset at
  // or after its next offset lies below it. -1 with by_key.
  std::int64_t output_offset(const PartitionWorker& worker) const override;

  // exactly_once with state.topic: a record of the state topic, in the current epoch (the open transaction).
  bool produce_state(std::int32_t partition, const connectors::StateTopicRecord& record) override;
  std::size_t chunk_bytes() const override;

  // Ends the current epoch and returns it: a capture taken now may be written once delivered_through(it).
  std::uint64_t seal_epoch() override;
  bool delivered_through(std::uint64_t epoch) const override {
    return in_flight_sealed_.empty() || in_flight_sealed_.front().first > epoch;
  }

 private:
  enum class Sent { kSent, kTooLarge, kFailed };
  using Position = std::tuple<std::string, std::int32_t, std::int64_t>;  // an input record's

  // The whole record, with the consumed headers and `added`.
  bool produce_whole(const std::string& topic, connectors::ConsumedMessage& message, std::int32_t partition,
                     const AddedHeaders& added, const config::PipelineSettings& pipeline);
  // The whole record when it fits `topic`, else cut to fit from `stage` on.
  bool produce_fitting(const std::string& topic, connectors::ConsumedMessage& message, const AddedHeaders& added,
                       const config::PipelineSettings& pipeline, unsigned stage);
  // `parts` cut to fit `topic`, from `stage` on, each refusal cutting harder; in `epoch`.
  bool produce_cut(const std::string& topic, const RecordParts& parts, const AddedHeaders& added, unsigned stage,
                   std::int64_t timestamp_ms, std::uint64_t epoch);
  // A record refused as too large, as a dead letter of `pipeline` cut to fit (see the top of this file).
  bool dead_letter_refused(const config::PipelineSettings& pipeline, const RecordParts& parts,
                           const SourcePosition& source, std::string_view reason, std::string_view error,
                           unsigned stage, std::int64_t timestamp_ms, std::uint64_t epoch);
  void redirect_refused_delivery(const connectors::DeliveryReport& report);
  // `headers`: built native headers (kept there when refused), or null for out.headers.
  Sent send(const std::string& topic, const connectors::OutgoingMessage& out, connectors::HeadersHandle* headers);
  std::size_t largest_at(const std::string& topic, std::span<const connectors::HeaderView> added,
                         unsigned stage) const;
  unsigned refused_stage(const connectors::ConsumedMessage& message) const;
  void count_in_flight(std::uint64_t epoch);
  void delivered_in_epoch(std::uint64_t epoch);

  ServiceContext& context_;
  ProduceEvents& events_;
  RecordLimits limits_;
  std::map<std::string, const config::PipelineSettings*, std::less<>> pipeline_of_input_;
  // exactly_once: input records whose record the broker refused as too large, and the stage to write next.
  std::map<Position, unsigned> refused_;
  // Per output topic, by partition: the highest offset acknowledged in this process (-1: none).
  std::map<std::string, std::vector<std::int64_t>, std::less<>> acked_;
  std::uint64_t epoch_ = 0;
  std::uint64_t in_flight_this_epoch_ = 0;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> in_flight_sealed_;  // (epoch, records unacknowledged)
};

}  // namespace bloomgate::app
