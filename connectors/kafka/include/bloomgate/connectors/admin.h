// File: admin.h
//
// Cluster questions the service asks at start-up and on assignment: how many partitions a topic has, a
// partition's low/high watermarks (the output tail to reconcile; "is this partition empty"), the offset
// of a point in time, a topic's retention (rebuilding a filter from the input history) and its largest
// record batch (max.message.bytes: what an output may be sent), a topic's cleanup.policy (the state topic must
// be compacted), and creating a topic (the state topic, when it is missing).
// Uses its own lightweight client handle, which never auto-creates topics by asking about them.
//
// Ownership: owns its rd_kafka_t. Thread-safety: every method may be called from any thread.
#pragma once

#include "bloomgate/connectors/client_hooks.h"
#include "bloomgate/connectors/handles.h"
#include "bloomgate/connectors/kafka_config.h"
#include "bloomgate/connectors/kafka_error.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bloomgate::connectors {

struct Watermarks {
  std::int64_t low = 0;   // the first offset still stored
  std::int64_t high = 0;  // the offset the next message will get
};

// The partition count of `topic`, asked from the cluster through any client handle.
[[nodiscard]] KafkaResult<int> fetch_partition_count(rd_kafka_t* handle, const std::string& topic,
                                                     std::chrono::milliseconds timeout);

// An outstanding DescribeConfigs question about one topic config. Destroying it abandons it.
class TopicConfigQuery {
 public:
  TopicConfigQuery(QueueHandle queue, std::string name) : queue_(std::move(queue)), name_(std::move(name)) {}
  // Nothing while no answer has arrived; then, once, the config's value per topic as the broker wrote it
  // (cleanup.policy: "compact", "delete,compact"), or the error.
  [[nodiscard]] std::optional<KafkaResult<std::map<std::string, std::string>>> poll_text();
  // The same for a numeric config (retention.ms, max.message.bytes), each value read as a number.
  [[nodiscard]] std::optional<KafkaResult<std::map<std::string, std::int64_t>>> poll();

 private:
  QueueHandle queue_;
  std::string name_;
};

class Admin {
 public:
  // Throws KafkaException if the client cannot be created.
  explicit Admin(const KafkaConfig& config, ClientHooks hooks = {});
  ~Admin() = default;
  Admin(const Admin&) = delete;
  Admin& operator=(const Admin&) = delete;
  Admin(Admin&&) = delete;
  Admin& operator=(Admin&&) = delete;

  // UNKNOWN_TOPIC_OR_PART when the topic does not exist.
  [[nodiscard]] KafkaResult<int> partition_count(const std::string& topic, std::chrono::milliseconds timeout) const;

  [[nodiscard]] KafkaResult<Watermarks> watermarks(const std::string& topic, std::int32_t partition,
                                                   std::chrono::milliseconds timeout) const;

  // The earliest offset whose record timestamp is at or after `timestamp_ms` (ListOffsets by time); -1 when
  // no record is that recent (and, from the embedded broker, which has no time index, always).
  [[nodiscard]] KafkaResult<std::int64_t> offset_for_time(const std::string& topic, std::int32_t partition,
                                                          std::int64_t timestamp_ms,
                                                          std::chrono::milliseconds timeout) const;

  // Asks a config of the topics (DescribeConfigs: retention.ms, where -1 means unlimited;
  // max.message.bytes; cleanup.policy) without waiting for the answer: the embedded broker never answers DescribeConfigs,
  // and start-up must not wait on it.
  [[nodiscard]] TopicConfigQuery ask_topic_config(const std::vector<std::string>& topics, const std::string& name) const;

  // Creates a topic (CreateTopics) with topic-level `configs` (cleanup.policy, retention.ms, ...) and waits
  // until the broker answers Metadata for it, at most about `timeout` for each of the two. TOPIC_ALREADY_EXISTS
  // when it exists. The embedded broker has no
  // CreateTopics: use EmbeddedBroker::create_topic there.
  [[nodiscard]] KafkaError create_topic(const std::string& name, int partitions, int replication_factor,
                                        const std::map<std::string, std::string>& configs,
                                        std::chrono::milliseconds timeout) const;

 private:
  CallbackGuard guard_;  // declared before handle_: outlives it
  KafkaHandle handle_;
};

}  // namespace bloomgate::connectors
