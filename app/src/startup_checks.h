// File: startup_checks.h
//
// What the service checks and sets up before it consumes: the Kafka configuration of each client role,
// the topics every pipeline names (they exist; with same_as_input the output has enough partitions), the
// state topic (state.topic: created when missing, else compacted with enough partitions), and the input
// topics' retention against the TTL.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bloomgate/config/config.h"
#include "bloomgate/connectors/admin.h"
#include "bloomgate/connectors/kafka_config.h"
#include "partition_worker.h"
#include "service_context.h"

namespace bloomgate::app {

using PipelinesByTopic = std::map<std::string, const config::PipelineSettings*>;

// kConsumer: the group consumer; kReader: the reconciler's and rebuilder's consumers.
enum class ClientRole { kConsumer, kReader, kProducer, kAdmin };

// bootstrap.servers, the kafka.properties of the role (config::properties_for: readers take the consumer's)
// and what the role needs besides. Throws std::runtime_error naming a property librdkafka rejects.
connectors::KafkaConfig client_config(const ServiceContext& context, ClientRole role);

// Everything the pipelines write to must exist before the first event is consumed: a missing output
// discovered mid-stream would stop the service with events half-processed. Returns every input partition,
// so their reports (and metrics) exist from start-up. Throws std::runtime_error naming the topic.
std::vector<PartitionKey> check_topics(const ServiceContext& context);

// A start-up check that a configuration cannot pass until it (or the cluster) changes: the service stops
// with exit 2 (kExitUsage) before it consumes, as for a bad configuration file.
class StartupRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How long start-up waits for the state topic's cleanup.policy (DescribeConfigs) before it goes on without
// it: the embedded broker never answers.
inline constexpr std::chrono::seconds kStateTopicPolicyWait{3};

// state.topic, when set (docs/state.md, "State topic"): the state topic needs a partition for each input
// partition number (state_topic_partition), so as many partitions as the largest input topic (`inputs`,
// check_topics' answer). A missing one is created compacted with that many partitions and
// state.topic_replication_factor replicas; an existing one must be compacted and have that many. Throws
// StartupRefused naming the topic and what is wrong.
void check_state_topic(const ServiceContext& context, const std::vector<PartitionKey>& inputs);

// A question about one config of some topics (DescribeConfigs), asked without waiting: the embedded broker
// never answers it. The caller looks for the answer until `wait` (kAnswerWait by default) has passed.
class PendingTopicConfig {
 public:
  static constexpr std::chrono::seconds kAnswerWait{30};

  void ask(const connectors::Admin& admin, const std::vector<std::string>& topics, const std::string& name,
           std::chrono::milliseconds wait = kAnswerWait);
  // Once: the answer, or a _TIMED_OUT error when none came within the wait; nothing before, and after.
  std::optional<connectors::KafkaResult<std::map<std::string, std::int64_t>>> poll(Clock::time_point now);
  // The same for a config that is text (cleanup.policy).
  std::optional<connectors::KafkaResult<std::map<std::string, std::string>>> poll_text(Clock::time_point now);

 private:
  template <typename Values>
  std::optional<connectors::KafkaResult<Values>> poll_with(
      Clock::time_point now, std::optional<connectors::KafkaResult<Values>> (connectors::TopicConfigQuery::*answer_of)());

  std::optional<connectors::TopicConfigQuery> query_;  // until answered or given up
  Clock::time_point deadline_;
};

// The input topic is the filter's changelog: a rebuild needs one TTL of it. Said at start-up, since a
// rebuild is exactly when it is too late to find out.
class RetentionCheck {
 public:
  void ask(const connectors::Admin& admin, const PipelinesByTopic& pipelines);
  // Called from the loop: logs a warning for each input whose retention is shorter than its TTL.
  void poll(Clock::time_point now);

 private:
  void warn_if_short(const std::string& topic, std::int64_t retention_ms) const;

  const PipelinesByTopic* pipelines_ = nullptr;
  PendingTopicConfig retention_;
};

}  // namespace bloomgate::app
