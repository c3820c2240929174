// File: consumer.h
//
// The group consumer. It always uses cooperative-sticky assignment (a rebalance moves only the
// partitions that change owner, so the pipeline keeps the filters of the partitions it keeps), and
// never commits or stores offsets on its own (enable.auto.commit=false, enable.auto.offset.store=false):
// offsets are committed by the pipeline after its checkpoint, through commit().
//
// Rebalances: librdkafka calls the rebalance callback from poll() and close(), on the calling thread.
// It forwards the changed partitions, then applies them:
//   assigned  on_assigned(partitions) runs BEFORE the partitions are assigned; it may set each
//             partition's `offset` to say where to start (kNoOffset: the committed offset, else
//             auto.offset.reset). Then rd_kafka_incremental_assign.
//   revoked   on_revoked(partitions) runs BEFORE the partitions are taken away, so the pipeline can
//             checkpoint and commit them; then rd_kafka_incremental_unassign.
//   lost      on_lost(partitions) instead of on_revoked when the assignment was lost (session timeout,
//             fenced): another member may already own them, so committing would fail or be wrong.
//   paused    with ConsumerOptions::assign_paused, every partition an assignment adds is paused right after
//             it is applied (rd_kafka_pause_partitions): it fetches nothing until resume(). The caller
//             restores its state meanwhile and resumes it, after a seek() to its start, when it is ready.
// If the group ends up on the EAGER protocol (a member that does not support cooperative), the full
// assignment is replaced (rd_kafka_assign) and the same functions are called with the full lists.
// An exception from these functions is caught and reported, and the assignment change is applied anyway
// (leaving the consumer half-rebalanced would stall the whole group).
//
// Ownership: owns its rd_kafka_t; the destructor calls close() if it was not called, which may run
// on_revoked, so whatever the functions capture must outlive the Consumer. Messages returned by poll()
// must be destroyed before the Consumer. Not movable: librdkafka holds a pointer to this.
//
// Batches: poll_batch() hands out what librdkafka has already fetched, many records per call (one queue
// lock and one set of clock reads per call instead of per record). It serves rebalances like poll();
// librdkafka removes from the batch the records of a partition whose fetch stopped or moved during the
// call, so a partition revoked and assigned again within one call returns only records of the new fetch
// (docs/decisions/consume-batches.md). Records of a partition revoked during the call may still be in the
// batch: the caller skips partitions it no longer owns, as it does for poll(). A seek() while the caller
// works through a batch makes that partition's remaining records stale: moved_since_batch() says so.
//
// Thread-safety: poll, poll_batch, commit, seek and close from one thread (the partition callbacks run
// there too); committed() and assignment() from any thread.
#pragma once

#include "bloomgate/connectors/client_hooks.h"
#include "bloomgate/connectors/handles.h"
#include "bloomgate/connectors/kafka_config.h"
#include "bloomgate/connectors/kafka_error.h"
#include "bloomgate/connectors/message.h"
#include "bloomgate/connectors/topic_partition.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bloomgate::connectors {

using PartitionsFunction = std::function<void(TopicPartitions& partitions)>;
// The result of an asynchronous commit (served by poll()).
using CommitFunction = std::function<void(const KafkaError& error, const TopicPartitions& offsets)>;

struct ConsumerOptions {
  std::string group_id;                          // required
  std::optional<std::string> group_instance_id;  // static membership: a restart within
                                                 // session.timeout.ms does not rebalance
  PartitionsFunction on_assigned;
  PartitionsFunction on_revoked;
  PartitionsFunction on_lost;
  CommitFunction on_commit;
  ClientHooks hooks;
  bool assign_paused = false;  // newly assigned partitions start paused (see "Rebalances" above)
};

enum class CommitMode { kSync, kAsync };

class Consumer {
 public:
  // `config` must name bootstrap.servers. Throws KafkaException if the client cannot be created.
  Consumer(const KafkaConfig& config, ConsumerOptions options);
  ~Consumer();
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;
  Consumer(Consumer&&) = delete;
  Consumer& operator=(Consumer&&) = delete;

  // Replaces the subscription. Joining the group happens in later poll() calls.
  [[nodiscard]] KafkaError subscribe(const std::vector<std::string>& topics);

  // Reads exactly these partitions from their `offset`s (kNoOffset: the committed offset, else
  // auto.offset.reset), without subscribing or joining the group: for bounded readers such as the
  // service's output reconciliation. Replaces the previous manual assignment (an empty list clears it).
  // Not for a consumer that subscribed: its group assigns its partitions.
  [[nodiscard]] KafkaError assign(const TopicPartitions& partitions);

  // The next message, or nothing when the timeout passed first. Also serves rebalances, errors and
  // commit results. A returned message may carry an error instead of data (message.h).
  [[nodiscard]] std::optional<ConsumedMessage> poll(std::chrono::milliseconds timeout);

  // Replaces `batch` with up to `max` records already fetched, taken without waiting; when none is, waits
  // up to `timeout` for the first one (so a quiet topic costs no latency). Also serves rebalances, errors
  // and commit results. Returns the batch's size. A record may carry an error instead of data.
  std::size_t poll_batch(std::chrono::milliseconds timeout, std::size_t max, std::vector<ConsumedMessage>& batch);

  // Whether seek() moved `message`'s partition after the poll_batch() that returned it: the record is
  // stale (its partition will be fetched again from the new position) and must be skipped.
  [[nodiscard]] bool moved_since_batch(const ConsumedMessage& message) const noexcept {
    return !moved_since_batch_.empty() && was_moved(message);
  }

  // Commits the given offsets (next offset to read, with optional metadata). kSync waits for the
  // coordinator's answer; kAsync returns at once and reports through on_commit from poll().
  [[nodiscard]] KafkaError commit(const TopicPartitions& offsets, CommitMode mode);

  // The committed offsets (and metadata) of the given partitions, asked from the coordinator.
  [[nodiscard]] KafkaResult<TopicPartitions> committed(const TopicPartitions& partitions,
                                                       std::chrono::milliseconds timeout) const;

  // Moves the fetch positions of assigned partitions to their `offset`s; messages already fetched beyond
  // them are discarded (a transaction aborted: its input is consumed again).
  [[nodiscard]] KafkaError seek(const TopicPartitions& partitions, std::chrono::milliseconds timeout);

  // Stops fetching the partitions until resume(); records already fetched are still handed out (a seek()
  // discards them). A partition revoked meanwhile is no longer paused when it is assigned again.
  [[nodiscard]] KafkaError pause(const TopicPartitions& partitions);
  [[nodiscard]] KafkaError resume(const TopicPartitions& partitions);

  // The group's generation and member, for Producer::send_offsets_to_transaction (fences a member that
  // was rebalanced out, KIP-447).
  [[nodiscard]] GroupMetadataHandle group_metadata() const;

  // The partitions currently assigned to this member.
  [[nodiscard]] KafkaResult<TopicPartitions> assignment() const;

  // The partition's high watermark as last reported by a fetch response (no request is made; librdkafka
  // caches it), or nothing before the first fetch. high watermark - next offset = consumer lag.
  [[nodiscard]] std::optional<std::int64_t> cached_high_watermark(const std::string& topic, std::int32_t partition) const;

  // Leaves the group (running on_revoked for what it owns) and stops fetching. Idempotent.
  // A member that subscribed but has not had its first assignment yet may be half-way through joining:
  // librdkafka 2.0.2 aborts the process when such a cooperative-sticky member is destroyed (its assignor
  // has no state until the first assignment; fixed in librdkafka 2.3.0). So close() first polls, for at
  // most `first_assignment_wait`, until that assignment comes; it takes and gives back what it is handed
  // then without calling on_assigned or on_revoked, and drops the messages polled meanwhile (nothing was
  // stored or committed for them). If it does not come (a group still waiting out dead members' sessions,
  // as after a crash loop), the member leaves the group and, with librdkafka before 2.3.0, its closed handle
  // is never destroyed: it is kept, idle, until the process exits (docs/decisions/workers.md).
  KafkaError close(std::chrono::milliseconds first_assignment_wait = std::chrono::seconds(10));

  // Closed handles kept by close() in this process, for tests.
  [[nodiscard]] static std::uint64_t handles_kept_at_close() noexcept;

  [[nodiscard]] std::uint64_t callback_exceptions() const noexcept { return callbacks_->exceptions_caught(); }
  [[nodiscard]] rd_kafka_t* native_handle() const noexcept { return handle_.get(); }

 private:
  class Callbacks : public CallbackGuard {
   public:
    explicit Callbacks(ConsumerOptions& options);
    void rebalance(rd_kafka_t* handle, rd_kafka_resp_err_t reason, rd_kafka_topic_partition_list_t* partitions) noexcept;
    void committed(rd_kafka_resp_err_t result, const rd_kafka_topic_partition_list_t* offsets) noexcept;
    bool assigned_once() const noexcept { return assigned_once_; }
    // From now on assignments and revocations are applied without calling the functions (close()).
    void stop_reporting() noexcept { reporting_ = false; }

   private:
    void assign(rd_kafka_t* handle, rd_kafka_topic_partition_list_t* partitions, bool cooperative) noexcept;
    void revoke(rd_kafka_t* handle, rd_kafka_topic_partition_list_t* partitions, bool cooperative) noexcept;
    void apply_error(const KafkaError& error) noexcept;

    PartitionsFunction on_assigned_;
    PartitionsFunction on_revoked_;
    PartitionsFunction on_lost_;
    CommitFunction on_commit_;
    bool assign_paused_ = false;
    bool assigned_once_ = false;
    bool reporting_ = true;
  };
  static void rebalance_trampoline(rd_kafka_t* handle, rd_kafka_resp_err_t reason,
                                   rd_kafka_topic_partition_list_t* partitions, void* opaque);
  static void commit_trampoline(rd_kafka_t* handle, rd_kafka_resp_err_t result,
                                rd_kafka_topic_partition_list_t* offsets, void* opaque);

  [[nodiscard]] bool was_moved(const ConsumedMessage& message) const noexcept;

  // The first librdkafka that checks the assignor's state before destroying it (2.3.0).
  static constexpr int kAssignorStateCheckedVersion = 0x020300ff;
  static inline std::atomic<std::uint64_t> kept_handles_{0};

  std::unique_ptr<Callbacks> callbacks_;  // declared before handle_: outlives it
  KafkaHandle handle_;
  QueueHandle queue_;  // the consumer queue poll_batch() reads; declared after handle_: destroyed first
  std::vector<rd_kafka_message_t*> raw_batch_;
  TopicPartitions moved_since_batch_;  // partitions seek() moved since the last poll_batch()
  bool subscribed_ = false;
  bool closed_ = false;
  bool keep_handle_ = false;  // close() left a member that never had an assignment: never destroyed
};

}  // namespace bloomgate::connectors
