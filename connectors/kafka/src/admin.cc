// File: admin.cc
#include "bloomgate/connectors/admin.h"

#include "client.h"

#include <cstdlib>
#include <cstring>
#include <thread>

namespace bloomgate::connectors {

using detail::to_timeout_ms;

KafkaResult<int> fetch_partition_count(rd_kafka_t* handle, const std::string& topic,
                                       std::chrono::milliseconds timeout) {
  const TopicHandle topic_handle(rd_kafka_topic_new(handle, topic.c_str(), nullptr));
  if (topic_handle == nullptr) {
    return KafkaError(rd_kafka_last_error(), "metadata for \"" + topic + "\": cannot create the topic handle");
  }
  const rd_kafka_metadata_t* raw = nullptr;
  const rd_kafka_resp_err_t code = rd_kafka_metadata(handle, 0, topic_handle.get(), &raw, to_timeout_ms(timeout));
  const MetadataHandle metadata(raw);
  if (code != RD_KAFKA_RESP_ERR_NO_ERROR) return KafkaError(code, "metadata for \"" + topic + "\"");
  for (int i = 0; i < metadata->topic_cnt; ++i) {
    const rd_kafka_metadata_topic_t& described = metadata->topics[i];
    if (topic != described.topic) continue;
    if (described.err != RD_KAFKA_RESP_ERR_NO_ERROR) return KafkaError(described.err, "metadata for \"" + topic + "\"");
    return described.partition_cnt;
  }
  return KafkaError(RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, "metadata for \"" + topic + "\": not in the answer");
}

Admin::Admin(const KafkaConfig& config, ClientHooks hooks) : guard_(std::move(hooks)) {
  ConfHandle conf = config.duplicate();
  // Asking about a topic must not create it (the mock cluster and many brokers auto-create on Metadata).
  detail::require_property(conf.get(), "allow.auto.create.topics", "false");
  detail::install_guarded_callbacks(conf.get(), &guard_);
  handle_ = detail::create_client(RD_KAFKA_PRODUCER, std::move(conf), "admin client");
}

KafkaResult<int> Admin::partition_count(const std::string& topic, std::chrono::milliseconds timeout) const {
  return fetch_partition_count(handle_.get(), topic, timeout);
}

namespace {

// What a partition answers for a moment after its topic was created, or while its leader moves.
bool partition_not_ready(rd_kafka_resp_err_t code) {
  return code == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE || code == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION ||
         code == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || code == RD_KAFKA_RESP_ERR_REPLICA_NOT_AVAILABLE ||
         code == RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS;
}

}  // namespace

KafkaResult<Watermarks> Admin::watermarks(const std::string& topic, std::int32_t partition,
                                          std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Watermarks marks;
  rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR_NO_ERROR;
  // A real broker lists a new topic before every partition's log is loaded: asked then, a partition
  // answers "not leader" or "unknown" for a moment. Asked again until the timeout; the embedded broker
  // never does this.
  do {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    code = rd_kafka_query_watermark_offsets(handle_.get(), topic.c_str(), partition, &marks.low, &marks.high,
                                            to_timeout_ms(std::max(left, std::chrono::milliseconds(1))));
    if (!partition_not_ready(code)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (std::chrono::steady_clock::now() < deadline);
  if (code != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return KafkaError(code, "watermarks of " + topic + "[" + std::to_string(partition) + "]");
  }
  return marks;
}

KafkaResult<std::int64_t> Admin::offset_for_time(const std::string& topic, std::int32_t partition,
                                                 std::int64_t timestamp_ms, std::chrono::milliseconds timeout) const {
  const PartitionListHandle list(rd_kafka_topic_partition_list_new(1));
  // The query's "offset" field carries the timestamp; the answer replaces it with the offset.
  rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), partition)->offset = timestamp_ms;
  const std::string what = "the offset of time " + std::to_string(timestamp_ms) + " in " + topic + "[" +
                           std::to_string(partition) + "]";
  const rd_kafka_resp_err_t code = rd_kafka_offsets_for_times(handle_.get(), list.get(), to_timeout_ms(timeout));
  if (code != RD_KAFKA_RESP_ERR_NO_ERROR) return KafkaError(code, what);
  const rd_kafka_topic_partition_t& answer = list->elems[0];
  if (answer.err != RD_KAFKA_RESP_ERR_NO_ERROR) return KafkaError(answer.err, what);
  return answer.offset;
}

namespace {

// The config `name` of one described topic, as the broker wrote it.
KafkaResult<std::string> config_of(const rd_kafka_ConfigResource_t* resource, const std::string& name) {
  const std::string what = name + " of " + rd_kafka_ConfigResource_name(resource);
  if (const auto code = rd_kafka_ConfigResource_error(resource); code != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return KafkaError(code, what);
  }
  std::size_t entries = 0;
  const rd_kafka_ConfigEntry_t** configs = rd_kafka_ConfigResource_configs(resource, &entries);
  for (std::size_t i = 0; i < entries; ++i) {
    if (name != rd_kafka_ConfigEntry_name(configs[i])) continue;
    const char* value = rd_kafka_ConfigEntry_value(configs[i]);
    if (value == nullptr) break;
    return std::string(value);
  }
  return KafkaError(RD_KAFKA_RESP_ERR__NOENT, what + ": not in the answer");
}

}  // namespace

TopicConfigQuery Admin::ask_topic_config(const std::vector<std::string>& topics, const std::string& name) const {
  QueueHandle queue(rd_kafka_queue_new(handle_.get()));
  std::vector<ConfigResourceHandle> owned;
  std::vector<rd_kafka_ConfigResource_t*> resources;
  for (const std::string& topic : topics) {
    owned.emplace_back(rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str()));
    resources.push_back(owned.back().get());
  }
  // librdkafka copies the resources into the request.
  rd_kafka_DescribeConfigs(handle_.get(), resources.data(), resources.size(), nullptr, queue.get());
  return TopicConfigQuery(std::move(queue), name);
}

std::optional<KafkaResult<std::map<std::string, std::string>>> TopicConfigQuery::poll_text() {
  if (!queue_) return std::nullopt;
  const EventHandle event(rd_kafka_queue_poll(queue_.get(), 0));
  if (!event) return std::nullopt;
  queue_.reset();
  if (const auto code = rd_kafka_event_error(event.get()); code != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return KafkaError(code, std::string("DescribeConfigs: ") + rd_kafka_event_error_string(event.get()));
  }
  const rd_kafka_DescribeConfigs_result_t* result = rd_kafka_event_DescribeConfigs_result(event.get());
  if (result == nullptr) return KafkaError(RD_KAFKA_RESP_ERR__BAD_MSG, "DescribeConfigs: an unexpected answer");
  std::size_t count = 0;
  const rd_kafka_ConfigResource_t** resources = rd_kafka_DescribeConfigs_result_resources(result, &count);
  std::map<std::string, std::string> values;
  for (std::size_t i = 0; i < count; ++i) {
    KafkaResult<std::string> value = config_of(resources[i], name_);
    if (!value.ok()) return value.error();
    values[rd_kafka_ConfigResource_name(resources[i])] = value.value();
  }
  return values;
}

std::optional<KafkaResult<std::map<std::string, std::int64_t>>> TopicConfigQuery::poll() {
  auto answer = poll_text();
  if (!answer) return std::nullopt;
  if (!answer->ok()) return answer->error();
  std::map<std::string, std::int64_t> numbers;
  for (const auto& [topic, value] : answer->value()) {
    numbers[topic] = static_cast<std::int64_t>(std::strtoll(value.c_str(), nullptr, 10));
  }
  return numbers;
}

KafkaError Admin::create_topic(const std::string& name, int partitions, int replication_factor,
                               const std::map<std::string, std::string>& configs,
                               std::chrono::milliseconds timeout) const {
  const std::string what = "creating topic " + name;
  char reason[512] = {};
  NewTopicHandle topic(rd_kafka_NewTopic_new(name.c_str(), partitions, replication_factor, reason, sizeof reason));
  if (!topic) return KafkaError(RD_KAFKA_RESP_ERR__INVALID_ARG, what + ": " + reason);
  for (const auto& [key, value] : configs) {
    if (const auto code = rd_kafka_NewTopic_set_config(topic.get(), key.c_str(), value.c_str()); code) {
      return KafkaError(code, what + ": config " + key);
    }
  }
  const AdminOptionsHandle options(rd_kafka_AdminOptions_new(handle_.get(), RD_KAFKA_ADMIN_OP_CREATETOPICS));
  rd_kafka_AdminOptions_set_request_timeout(options.get(), to_timeout_ms(timeout), reason, sizeof reason);
  const QueueHandle queue(rd_kafka_queue_new(handle_.get()));
  rd_kafka_NewTopic_t* topics[] = {topic.get()};
  rd_kafka_CreateTopics(handle_.get(), topics, 1, options.get(), queue.get());
  // The request times out after `timeout`; the margin lets its own error event arrive first.
  const EventHandle event(rd_kafka_queue_poll(queue.get(), to_timeout_ms(timeout) + 1000));
  if (!event) return KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT, what);
  if (const auto code = rd_kafka_event_error(event.get()); code != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return KafkaError(code, what + ": " + rd_kafka_event_error_string(event.get()));
  }
  const rd_kafka_CreateTopics_result_t* result = rd_kafka_event_CreateTopics_result(event.get());
  std::size_t count = 0;
  const rd_kafka_topic_result_t** results = result ? rd_kafka_CreateTopics_result_topics(result, &count) : nullptr;
  if (count != 1) return KafkaError(RD_KAFKA_RESP_ERR__BAD_MSG, what + ": an unexpected answer");
  if (const auto code = rd_kafka_topic_result_error(results[0]); code != RD_KAFKA_RESP_ERR_NO_ERROR) {
    const char* message = rd_kafka_topic_result_error_string(results[0]);
    return KafkaError(code, what + (message ? std::string(": ") + message : std::string()));
  }
  // The controller has created it; the broker answers Metadata for it a moment later.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  KafkaResult<int> described = partition_count(name, timeout);
  while (!described.ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    described = partition_count(name, timeout);
  }
  return described.ok() ? KafkaError() : KafkaError(described.error().code(), what + ": not in the metadata in time");
}

}  // namespace bloomgate::connectors
