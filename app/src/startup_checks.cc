#include "startup_checks.h"

#include <spdlog/spdlog.h>

#include <stdexcept>

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

void PendingTopicConfig::ask(const connectors::Admin& admin, const std::vector<std::string>& topics,
                             const std::string& name) {
  query_.emplace(admin.ask_topic_config(topics, name));
  deadline_ = Clock::now() + kAnswerWait;
}

std::optional<connectors::KafkaResult<std::map<std::string, std::int64_t>>> PendingTopicConfig::poll(
    Clock::time_point now) {
  if (!query_) return std::nullopt;
  auto answer = query_->poll();
  if (!answer && now < deadline_) return std::nullopt;
  query_.reset();
  if (!answer) return KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT, "no answer to DescribeConfigs");
  return answer;
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
