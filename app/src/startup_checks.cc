#include "startup_checks.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace bloomgate::app {
namespace {

using connectors::KafkaError;

int partition_count(const ServiceContext& context, const std::string& topic, const std::string& role) {
  const auto count = context.admin->partition_count(topic, kMetadataTimeout);
  if (!count.ok()) {
    throw std::runtime_error(role + " topic " + topic + ": " + count.error().message() + " (brokers " +
                             context.options.bootstrap_servers + ")");
  }
  return count.value();
}

}  // namespace

connectors::KafkaConfig client_config(const ServiceContext& context, ClientRole role) {
  connectors::KafkaConfig kafka;
  kafka.with("bootstrap.servers", context.options.bootstrap_servers);
  // A new consumer group starts at the beginning of the input: a deduplicator that skipped what was
  // already there would never forward it. kafka.properties, applied after, may say otherwise.
  if (role == ClientRole::kConsumer) kafka.with("auto.offset.reset", "earliest");
  const bool consumes = role == ClientRole::kConsumer || role == ClientRole::kReader;
  const config::ClientRole properties_role = consumes                      ? config::ClientRole::kConsumer
                                             : role == ClientRole::kProducer ? config::ClientRole::kProducer
                                                                             : config::ClientRole::kAdmin;
  if (KafkaError error = kafka.set_all(config::properties_for(context.config.kafka, properties_role)); !error.ok()) {
    throw std::runtime_error("kafka.properties: " + error.message());
  }
  // exactly_once: what an aborted transaction wrote is not there, for the loop (an upstream transactional
  // producer's aborts) and for the reconciliation read of the output (this service's own).
  const bool exactly_once = context.config.kafka.guarantee == config::Guarantee::kExactlyOnce;
  if (consumes && exactly_once) kafka.with("isolation.level", "read_committed");
  return kafka;
}

std::vector<PartitionKey> check_topics(const ServiceContext& context) {
  std::vector<PartitionKey> inputs;
  for (const auto& pipeline : context.config.pipelines) {
    const std::string where = "pipeline " + pipeline.name + ": ";
    const int output_partitions = partition_count(context, pipeline.output, where + "output");
    if (!pipeline.duplicates.empty()) partition_count(context, pipeline.duplicates, where + "duplicates");
    if (!pipeline.dead_letter.empty()) partition_count(context, pipeline.dead_letter, where + "dead-letter");
    for (const auto& input : pipeline.inputs) {
      const int input_partitions = partition_count(context, input, where + "input");
      for (std::int32_t p = 0; p < input_partitions; ++p) inputs.emplace_back(input, p);
      if (pipeline.output_partitioning == config::OutputPartitioning::kSameAsInput &&
          output_partitions < input_partitions) {
        throw std::runtime_error(where + "output topic " + pipeline.output + " has " +
                                 std::to_string(output_partitions) + " partitions, fewer than the " +
                                 std::to_string(input_partitions) + " of input " + input +
                                 "; add partitions or set output_partitioning: by_key");
      }
    }
  }
  return inputs;
}

namespace {

int partitions_needed(const std::vector<PartitionKey>& inputs) {
  int needed = 0;
  for (const auto& [topic, partition] : inputs) needed = std::max(needed, partition + 1);
  return needed;
}

std::string describe_replication(int replication_factor) {
  return replication_factor == config::kBrokerDefaultReplication ? "the broker's default replication factor"
                                                                  : std::to_string(replication_factor) + " replica(s)";
}

// Creates the missing state topic; false when another member created it meanwhile (it is checked then).
bool create_state_topic(const ServiceContext& context, int partitions) {
  const config::StateSettings& state = context.config.state;
  const KafkaError error = context.admin->create_topic(state.topic, partitions, state.topic_replication_factor,
                                                       {{"cleanup.policy", "compact"}}, kMetadataTimeout);
  if (error.code() == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) return false;
  if (!error.ok()) {
    throw StartupRefused("state topic " + state.topic + " does not exist and could not be created (" +
                         error.message() + "); create it with cleanup.policy=compact and at least " +
                         std::to_string(partitions) + " partitions");
  }
  spdlog::info("state topic {} created: cleanup.policy=compact, {} partitions, {}", state.topic, partitions,
               describe_replication(state.topic_replication_factor));
  return true;
}

// Its cleanup.policy, asked with a bounded wait: the embedded broker never answers DescribeConfigs, and a
// broker that does not answer in time leaves the policy unverified (a warning), not the service stopped.
void check_compacted(const ServiceContext& context) {
  const std::string& topic = context.config.state.topic;
  PendingTopicConfig policy;
  policy.ask(*context.admin, {topic}, "cleanup.policy", kStateTopicPolicyWait);
  for (;;) {
    const auto answer = policy.poll_text(Clock::now());
    if (!answer) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (!answer->ok()) {
      spdlog::warn("state topic {}: its cleanup.policy could not be verified ({}); it must be compact, or the "
                   "broker deletes checkpoints that a restore needs",
                   topic, answer->error().message());
      return;
    }
    const auto found = answer->value().find(topic);
    const std::string value = found == answer->value().end() ? std::string() : found->second;
    if (value.find("compact") == std::string::npos) {
      throw StartupRefused("state topic " + topic + " has cleanup.policy=" + value +
                           ", not compact: the broker would delete the checkpoints a restore reads; set "
                           "cleanup.policy=compact on it (kafka-configs --alter --add-config cleanup.policy=compact)");
    }
    return;
  }
}

}  // namespace

void check_state_topic(const ServiceContext& context, const std::vector<PartitionKey>& inputs) {
  const std::string& topic = context.config.state.topic;
  if (topic.empty()) return;
  const int needed = partitions_needed(inputs);
  auto count = context.admin->partition_count(topic, kMetadataTimeout);
  if (!count.ok() && count.error().code() == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
    if (create_state_topic(context, needed)) return;
    count = context.admin->partition_count(topic, kMetadataTimeout);
  }
  if (!count.ok()) {
    throw StartupRefused("state topic " + topic + ": " + count.error().message() + " (brokers " +
                         context.options.bootstrap_servers + ")");
  }
  if (count.value() < needed) {
    throw StartupRefused("state topic " + topic + " has " + std::to_string(count.value()) +
                         " partitions, fewer than the " + std::to_string(needed) +
                         " of the largest input topic: each input partition's checkpoints go to the state partition "
                         "of its number; add partitions to it");
  }
  check_compacted(context);
}

void PendingTopicConfig::ask(const connectors::Admin& admin, const std::vector<std::string>& topics,
                             const std::string& name, std::chrono::milliseconds wait) {
  query_.emplace(admin.ask_topic_config(topics, name));
  deadline_ = Clock::now() + wait;
}

template <typename Values>
std::optional<connectors::KafkaResult<Values>> PendingTopicConfig::poll_with(
    Clock::time_point now, std::optional<connectors::KafkaResult<Values>> (connectors::TopicConfigQuery::*answer_of)()) {
  if (!query_) return std::nullopt;
  auto answer = ((*query_).*answer_of)();
  if (!answer && now < deadline_) return std::nullopt;
  query_.reset();
  if (!answer) return KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT, "no answer to DescribeConfigs");
  return answer;
}

std::optional<connectors::KafkaResult<std::map<std::string, std::int64_t>>> PendingTopicConfig::poll(
    Clock::time_point now) {
  return poll_with(now, &connectors::TopicConfigQuery::poll);
}

std::optional<connectors::KafkaResult<std::map<std::string, std::string>>> PendingTopicConfig::poll_text(
    Clock::time_point now) {
  return poll_with(now, &connectors::TopicConfigQuery::poll_text);
}

void RetentionCheck::ask(const connectors::Admin& admin, const PipelinesByTopic& pipelines) {
  pipelines_ = &pipelines;
  std::vector<std::string> topics;
  for (const auto& [topic, pipeline] : pipelines) topics.push_back(topic);
  retention_.ask(admin, topics, "retention.ms");
}

void RetentionCheck::poll(Clock::time_point now) {
  const auto answer = retention_.poll(now);
  if (!answer) return;
  if (!answer->ok()) {
    spdlog::info("the input topics' retention could not be checked against the TTL ({})", answer->error().message());
    return;
  }
  for (const auto& [topic, retention_ms] : answer->value()) warn_if_short(topic, retention_ms);
}

void RetentionCheck::warn_if_short(const std::string& topic, std::int64_t retention_ms) const {
  const auto pipeline = pipelines_->find(topic);
  if (pipeline == pipelines_->end()) return;
  const auto ttl_ms = std::chrono::duration_cast<std::chrono::milliseconds>(pipeline->second->ttl).count();
  if (retention_ms < 0 || retention_ms >= ttl_ms) return;
  spdlog::warn("input topic {} keeps records for {} ms (retention.ms), less than pipeline {}'s TTL of {} ms: a "
               "partition whose state is lost cannot be fully rebuilt from its input, and repeats of keys older than "
               "the retention would be forwarded again",
               topic, retention_ms, pipeline->second->name, ttl_ms);
}

}  // namespace bloomgate::app
