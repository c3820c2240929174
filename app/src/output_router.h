// File: output_router.h
//
// OutputRouter: where each decided event goes (the output, duplicates or dead-letter topic, with the
// source and reason headers), which output offsets are acknowledged, and which produced records are still
// in flight (by epoch: the records produced between two checkpoint captures).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bloomgate/connectors/message.h"
#include "bloomgate/connectors/producer.h"
#include "partition_worker.h"
#include "service_context.h"

namespace bloomgate::app {

class CommitProtocol;

enum class Delivery {
  kDone,               // produced (or nothing to produce)
  kNotProduced,        // refused: the service failed, or the commit protocol rewinds
  kNoDeadLetterTopic,  // an unkeyable event and no dead_letter topic: the service must stop before it
};

class OutputRouter {
 public:
  explicit OutputRouter(ServiceContext& context) : context_(context) {}
  void set_commit_protocol(CommitProtocol& protocol) { protocol_ = &protocol; }

  // Produces what the verdict says.
  Delivery deliver(const PartitionWorker& worker, connectors::ConsumedMessage& message, const Verdict& verdict);
  // The producer's delivery report (on the thread that polls it).
  void on_delivery(const connectors::DeliveryReport& report);

  // The highest acknowledged offset of an output partition in this process; -1 when none.
  std::int64_t max_acked(const std::string& topic, std::int32_t partition) const;
  // Where the partition's checkpoint says its output stands: no record forwarded for an input offset at
  // or after its next offset lies below it. -1 with by_key.
  std::int64_t output_offset(const PartitionWorker& worker) const;

  // Ends the current epoch and returns it: a capture taken now may be written once delivered_through(it).
  std::uint64_t seal_epoch();
  bool delivered_through(std::uint64_t epoch) const {
    return in_flight_sealed_.empty() || in_flight_sealed_.front().first > epoch;
  }

 private:
  bool produce(const std::string& topic, const connectors::ConsumedMessage& message, std::int32_t partition,
               connectors::HeadersHandle record_headers);
  void delivered_in_epoch(std::uintptr_t epoch);

  ServiceContext& context_;
  CommitProtocol* protocol_ = nullptr;
  // Per output topic, by partition: the highest offset acknowledged in this process (-1: none).
  std::map<std::string, std::vector<std::int64_t>, std::less<>> acked_;
  std::uint64_t epoch_ = 0;
  std::uint64_t in_flight_this_epoch_ = 0;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> in_flight_sealed_;  // (epoch, records unacknowledged)
};

}  // namespace bloomgate::app
