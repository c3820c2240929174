// File: consumer.cc
#include "bloomgate/connectors/consumer.h"

#include "client.h"

#include <cstring>

namespace bloomgate::connectors {
namespace {

using detail::to_timeout_ms;

bool uses_cooperative_protocol(rd_kafka_t* handle) {
  const char* protocol = rd_kafka_rebalance_protocol(handle);
  return protocol != nullptr && std::strcmp(protocol, "COOPERATIVE") == 0;
}

// on_assigned may have chosen start offsets: copy them into the list librdkafka will assign.
void copy_start_offsets(const TopicPartitions& chosen, rd_kafka_topic_partition_list_t* partitions) {
  for (const TopicPartition& partition : chosen) {
    rd_kafka_topic_partition_t* element =
        rd_kafka_topic_partition_list_find(partitions, partition.topic.c_str(), partition.partition);
    if (element != nullptr) element->offset = partition.offset;
  }
}

}  // namespace

Consumer::Callbacks::Callbacks(ConsumerOptions& options)
    : CallbackGuard(std::move(options.hooks)),
      on_assigned_(std::move(options.on_assigned)),
      on_revoked_(std::move(options.on_revoked)),
      on_lost_(std::move(options.on_lost)),
      on_commit_(std::move(options.on_commit)),
      assign_paused_(options.assign_paused) {}

Consumer::Consumer(const KafkaConfig& config, ConsumerOptions options)
    : callbacks_(std::make_unique<Callbacks>(options)) {
  if (options.group_id.empty()) throw KafkaException(KafkaError::invalid_argument("a consumer needs a group.id"));
  ConfHandle conf = config.duplicate();
  detail::require_property(conf.get(), "group.id", options.group_id.c_str());
  if (options.group_instance_id) {
    detail::require_property(conf.get(), "group.instance.id", options.group_instance_id->c_str());
  }
  // Set last, so that they win over anything in `config`: the pipeline's correctness depends on them.
  detail::require_property(conf.get(), "partition.assignment.strategy", "cooperative-sticky");
  detail::require_property(conf.get(), "enable.auto.commit", "false");
  detail::require_property(conf.get(), "enable.auto.offset.store", "false");
  detail::install_guarded_callbacks(conf.get(), callbacks_.get());
  rd_kafka_conf_set_rebalance_cb(conf.get(), rebalance_trampoline);
  rd_kafka_conf_set_offset_commit_cb(conf.get(), commit_trampoline);
  handle_ = detail::create_client(RD_KAFKA_CONSUMER, std::move(conf), "consumer");
  // Serve client errors and commit results from poll() too, so one thread polls one queue.
  rd_kafka_poll_set_consumer(handle_.get());
  queue_.reset(rd_kafka_queue_get_consumer(handle_.get()));
}

Consumer::~Consumer() {
  close();
  if (keep_handle_) {
    queue_.reset();
    (void)handle_.release();
    (void)callbacks_.release();
  }
}

void Consumer::rebalance_trampoline(rd_kafka_t* handle, rd_kafka_resp_err_t reason,
                                    rd_kafka_topic_partition_list_t* partitions, void* opaque) {
  auto* callbacks = static_cast<Callbacks*>(static_cast<CallbackGuard*>(opaque));
  if (callbacks != nullptr) callbacks->rebalance(handle, reason, partitions);
}

void Consumer::commit_trampoline(rd_kafka_t* /*handle*/, rd_kafka_resp_err_t result,
                                 rd_kafka_topic_partition_list_t* offsets, void* opaque) {
  auto* callbacks = static_cast<Callbacks*>(static_cast<CallbackGuard*>(opaque));
  if (callbacks != nullptr) callbacks->committed(result, offsets);
}

void Consumer::Callbacks::rebalance(rd_kafka_t* handle, rd_kafka_resp_err_t reason,
                                    rd_kafka_topic_partition_list_t* partitions) noexcept {
  const bool cooperative = uses_cooperative_protocol(handle);
  if (reason == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    assign(handle, partitions, cooperative);
  } else if (reason == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
    revoke(handle, partitions, cooperative);
  } else {
    // A rebalance error: librdkafka's documented answer is to drop the whole assignment.
    apply_error(KafkaError(reason, "rebalance failed; dropping the assignment"));
    apply_error(KafkaError(rd_kafka_assign(handle, nullptr), "unassign after a failed rebalance"));
  }
}

void Consumer::Callbacks::assign(rd_kafka_t* handle, rd_kafka_topic_partition_list_t* partitions,
                                 bool cooperative) noexcept {
  assigned_once_ = true;
  invoke("assigned partitions", [&] {
    if (!on_assigned_ || !reporting_) return;
    TopicPartitions assigned = to_topic_partitions(partitions);
    on_assigned_(assigned);
    copy_start_offsets(assigned, partitions);
  });
  // Applied whatever on_assigned did: a member stuck half-way through a rebalance stalls the group.
  if (cooperative) {
    apply_error(KafkaError::from_error_object(rd_kafka_incremental_assign(handle, partitions), "incremental assign"));
  } else {
    apply_error(KafkaError(rd_kafka_assign(handle, partitions), "assign"));
  }
  // The partitions exist in this client once assigned; paused now, they stay so until resume(). Records a
  // fetch returned before the pause took effect are still handed out: the caller skips partitions it has not
  // made ready, and its seek() before resume() discards them. librdkafka's fetch of the committed offset
  // may answer after that seek and move the position back: the caller passes over records behind it.
  if (assign_paused_ && partitions->cnt > 0) {
    const rd_kafka_resp_err_t code = rd_kafka_pause_partitions(handle, partitions);
    apply_error(KafkaError(code, "pause the assigned partitions"));
    for (int i = 0; i < partitions->cnt; ++i) {
      if (partitions->elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        apply_error(KafkaError(partitions->elems[i].err, "pause an assigned partition"));
      }
    }
  }
}

void Consumer::Callbacks::revoke(rd_kafka_t* handle, rd_kafka_topic_partition_list_t* partitions,
                                 bool cooperative) noexcept {
  const bool lost = rd_kafka_assignment_lost(handle) != 0;
  invoke(lost ? "lost partitions" : "revoked partitions", [&] {
    const PartitionsFunction& forward = lost ? on_lost_ : on_revoked_;
    if (!forward || !reporting_) return;
    TopicPartitions revoked = to_topic_partitions(partitions);
    forward(revoked);
  });
  if (cooperative) {
    apply_error(
        KafkaError::from_error_object(rd_kafka_incremental_unassign(handle, partitions), "incremental unassign"));
  } else {
    apply_error(KafkaError(rd_kafka_assign(handle, nullptr), "unassign"));
  }
}

void Consumer::Callbacks::apply_error(const KafkaError& error) noexcept {
  if (!error.ok()) this->error(error);
}

void Consumer::Callbacks::committed(rd_kafka_resp_err_t result,
                                    const rd_kafka_topic_partition_list_t* offsets) noexcept {
  if (!on_commit_) return;
  invoke("commit result", [&] {
    const KafkaError error = result == RD_KAFKA_RESP_ERR_NO_ERROR ? KafkaError() : KafkaError(result, "offset commit");
    on_commit_(error, to_topic_partitions(offsets));
  });
}

KafkaError Consumer::subscribe(const std::vector<std::string>& topics) {
  TopicPartitions subscription;
  subscription.reserve(topics.size());
  for (const std::string& topic : topics) {
    TopicPartition entry;
    entry.topic = topic;
    entry.partition = RD_KAFKA_PARTITION_UA;
    subscription.push_back(std::move(entry));
  }
  const PartitionListHandle list = to_partition_list(subscription);
  const KafkaError error(rd_kafka_subscribe(handle_.get(), list.get()), "subscribe");
  subscribed_ = subscribed_ || error.ok();
  return error;
}

KafkaError Consumer::assign(const TopicPartitions& partitions) {
  if (partitions.empty()) return KafkaError(rd_kafka_assign(handle_.get(), nullptr), "clear the assignment");
  const PartitionListHandle list = to_partition_list(partitions);
  return KafkaError(rd_kafka_assign(handle_.get(), list.get()), "assign partitions");
}

std::optional<ConsumedMessage> Consumer::poll(std::chrono::milliseconds timeout) {
  if (closed_) return std::nullopt;
  rd_kafka_message_t* message = rd_kafka_consumer_poll(handle_.get(), to_timeout_ms(timeout));
  if (message == nullptr) return std::nullopt;
  return ConsumedMessage(MessageHandle(message));
}

std::size_t Consumer::poll_batch(std::chrono::milliseconds timeout, std::size_t max,
                                 std::vector<ConsumedMessage>& batch) {
  batch.clear();
  moved_since_batch_.clear();
  if (closed_ || max == 0) return 0;
  raw_batch_.resize(max);
  ssize_t taken = rd_kafka_consume_batch_queue(queue_.get(), 0, raw_batch_.data(), max);
  if (taken == 0) taken = rd_kafka_consume_batch_queue(queue_.get(), to_timeout_ms(timeout), raw_batch_.data(), 1);
  for (ssize_t i = 0; i < taken; ++i) batch.emplace_back(MessageHandle(raw_batch_[static_cast<std::size_t>(i)]));
  return batch.size();
}

bool Consumer::was_moved(const ConsumedMessage& message) const noexcept {
  for (const TopicPartition& moved : moved_since_batch_) {
    if (moved.partition == message.partition() && moved.topic == message.topic()) return true;
  }
  return false;
}

KafkaError Consumer::commit(const TopicPartitions& offsets, CommitMode mode) {
  // An empty list would make librdkafka commit the stored offsets, which this consumer never stores.
  if (offsets.empty()) return {};
  const PartitionListHandle list = to_partition_list(offsets);
  const int async = mode == CommitMode::kAsync ? 1 : 0;
  return KafkaError(rd_kafka_commit(handle_.get(), list.get(), async), "commit offsets");
}

KafkaResult<TopicPartitions> Consumer::committed(const TopicPartitions& partitions,
                                                 std::chrono::milliseconds timeout) const {
  const PartitionListHandle list = to_partition_list(partitions);
  const rd_kafka_resp_err_t code = rd_kafka_committed(handle_.get(), list.get(), to_timeout_ms(timeout));
  if (code != RD_KAFKA_RESP_ERR_NO_ERROR) return KafkaError(code, "fetch committed offsets");
  return to_topic_partitions(list.get());
}

KafkaError Consumer::seek(const TopicPartitions& partitions, std::chrono::milliseconds timeout) {
  if (partitions.empty()) return {};
  const PartitionListHandle list = to_partition_list(partitions);
  KafkaError error = KafkaError::from_error_object(
      rd_kafka_seek_partitions(handle_.get(), list.get(), to_timeout_ms(timeout)), "seek");
  // Even a seek that failed may have moved some of them: their batched records count as stale.
  moved_since_batch_.insert(moved_since_batch_.end(), partitions.begin(), partitions.end());
  if (!error.ok()) return error;
  for (const TopicPartition& partition : to_topic_partitions(list.get())) {
    if (!partition.error.ok()) return partition.error;
  }
  return {};
}

namespace {

// The call's error, or the first partition's.
KafkaError first_error(rd_kafka_resp_err_t code, const PartitionListHandle& list, const char* what) {
  if (code != RD_KAFKA_RESP_ERR_NO_ERROR) return KafkaError(code, what);
  for (const TopicPartition& partition : to_topic_partitions(list.get())) {
    if (!partition.error.ok()) return partition.error;
  }
  return {};
}

}  // namespace

KafkaError Consumer::pause(const TopicPartitions& partitions) {
  const PartitionListHandle list = to_partition_list(partitions);
  return first_error(rd_kafka_pause_partitions(handle_.get(), list.get()), list, "pause");
}

KafkaError Consumer::resume(const TopicPartitions& partitions) {
  const PartitionListHandle list = to_partition_list(partitions);
  return first_error(rd_kafka_resume_partitions(handle_.get(), list.get()), list, "resume");
}

GroupMetadataHandle Consumer::group_metadata() const {
  return GroupMetadataHandle(rd_kafka_consumer_group_metadata(handle_.get()));
}

KafkaResult<TopicPartitions> Consumer::assignment() const {
  rd_kafka_topic_partition_list_t* raw = nullptr;
  const rd_kafka_resp_err_t code = rd_kafka_assignment(handle_.get(), &raw);
  const PartitionListHandle list(raw);
  if (code != RD_KAFKA_RESP_ERR_NO_ERROR) return KafkaError(code, "read the assignment");
  return to_topic_partitions(list.get());
}

std::optional<std::int64_t> Consumer::cached_high_watermark(const std::string& topic, std::int32_t partition) const {
  std::int64_t low = RD_KAFKA_OFFSET_INVALID;
  std::int64_t high = RD_KAFKA_OFFSET_INVALID;
  if (rd_kafka_get_watermark_offsets(handle_.get(), topic.c_str(), partition, &low, &high) != RD_KAFKA_RESP_ERR_NO_ERROR ||
      high == RD_KAFKA_OFFSET_INVALID) {
    return std::nullopt;
  }
  return high;
}

KafkaError Consumer::close(std::chrono::milliseconds first_assignment_wait) {
  if (closed_) return {};
  closed_ = true;
  const bool joining = subscribed_ && !callbacks_->assigned_once();
  if (joining) {
    callbacks_->stop_reporting();
    const auto deadline = std::chrono::steady_clock::now() + first_assignment_wait;
    while (!callbacks_->assigned_once() && std::chrono::steady_clock::now() < deadline) {
      if (rd_kafka_message_t* message = rd_kafka_consumer_poll(handle_.get(), 50)) rd_kafka_message_destroy(message);
    }
  }
  KafkaError result(rd_kafka_consumer_close(handle_.get()), "close the consumer");
  if (joining && !callbacks_->assigned_once() && rd_kafka_version() < kAssignorStateCheckedVersion) {
    // The group was left above; rd_kafka_destroy would now abort. The closed handle (its threads idle, its
    // log silenced, its callbacks' guard with it) is kept until the process exits.
    rd_kafka_set_log_level(handle_.get(), 0);
    keep_handle_ = true;
    kept_handles_.fetch_add(1);
  }
  return result;
}

std::uint64_t Consumer::handles_kept_at_close() noexcept { return kept_handles_.load(); }

}  // namespace bloomgate::connectors
