// File: state_topic_publisher.h
//
// state.topic (docs/state.md, "State topic"): every checkpoint the service writes to its state store is
// also produced to the state topic, as the records StateTopicWriter plans (state_topic_records.h): the
// chunks and the manifest to the partition's state partition, then, once they are acknowledged, the
// tombstones of what the new manifest no longer lists. A partition's checkpoint counts as written (its
// offset may be committed) only when the store wrote it AND the state topic acknowledged it.
//
// Each partition's StateTopicWriter lives in its PartitionWorker, so a revoked or lost partition forgets
// its writer with its worker: a later owner writes newer epochs, and this member starts again from a full
// image if it gets the partition back.
//
// Thread-safety: publish() runs on the checkpoint writer's thread (periodic checkpoints) or on the loop's
// (a synchronous checkpoint); prepare() and account() run on the loop's thread, never while a publish()
// of the same workers is in flight (the loop settles the checkpoint in flight first).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "bloomgate/connectors/producer.h"
#include "bloomgate/connectors/state_store.h"
#include "commit_ports.h"
#include "partition_worker.h"

namespace bloomgate::app {

class ServiceContext;

// The chunk size of a producer whose message.max.bytes is `message_max_bytes`: kDefaultStateChunkBytes,
// or less when the producer takes less, leaving room for the key, the chunk's framing and the batch's.
std::size_t state_chunk_bytes(std::int64_t message_max_bytes) noexcept;

// What the state topic made of one partition's checkpoint.
struct StatePublication {
  bool acknowledged = false;  // its chunks and manifest were acknowledged
  std::uint64_t bytes = 0;    // keys and values produced for it, tombstones' keys included
};

class StateTopicPublisher {
 public:
  explicit StateTopicPublisher(std::unique_ptr<StateTopicSink> sink) : sink_(std::move(sink)) {}

  // Before the worker's image is taken. A writer without a baseline continues from the state-topic
  // manifest the filter was restored from, when there is one (taking it), or else asks for a full image:
  // an incremental first checkpoint would leave the unchanged slices out of the manifest.
  static void prepare(PartitionWorker& worker, std::size_t chunk_bytes);
  void prepare(PartitionWorker& worker) const { prepare(worker, sink_->chunk_bytes()); }

  // Plans and produces each image (of workers[i]) and waits for the acknowledgements; then its
  // tombstones. A checkpoint not acknowledged resets its writer, so the next one is a full image; a
  // tombstone not acknowledged only leaves an unreferenced record behind (space, not correctness).
  std::vector<StatePublication> publish(const std::vector<PartitionWorker*>& workers,
                                        const std::vector<connectors::PartitionImage>& images,
                                        std::chrono::milliseconds timeout);

  // From another thread than publish()'s: the publish() in progress stops waiting for acknowledgements (what
  // it has not seen acknowledged counts as not), so that a caller that may not wait on the brokers (lost
  // partitions, inside the rebalance) can join it at once. Until resume_waits().
  void abandon_waits() noexcept { abandoned_.store(true); }
  void resume_waits() noexcept { abandoned_.store(false); }

  // On the loop's thread, with publish()'s answer for the worker: counts the bytes or the failure, and
  // says whether the checkpoint may count as written.
  static bool account(PartitionWorker& worker, const StatePublication& publication);

 private:
  std::unique_ptr<StateTopicSink> sink_;
  std::atomic<bool> abandoned_{false};
};

// The state topic's producer of a service loop: its own client (kafka.properties and producer.* apply),
// idempotent with acks=all, so that when a partition's manifest is acknowledged every chunk before it is.
class KafkaStateTopicSink final : public StateTopicSink {
 public:
  explicit KafkaStateTopicSink(const ServiceContext& context);

  connectors::KafkaError produce_acknowledged(std::int32_t partition,
                                              const std::vector<connectors::StateTopicRecord>& records,
                                              std::chrono::milliseconds timeout,
                                              const std::atomic<bool>& abandoned) override;
  std::size_t chunk_bytes() const override { return state_chunk_bytes(producer_->message_max_bytes()); }

 private:
  std::string topic_;
  connectors::KafkaError first_failure_;  // of the records of the call in progress, from delivery reports
  std::unique_ptr<connectors::Producer> producer_;  // last: its delivery reports write first_failure_
};

}  // namespace bloomgate::app
