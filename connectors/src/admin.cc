// File: admin.cc
#include "bloomgate/connectors/admin.h"

#include "client.h"

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

KafkaResult<Watermarks> Admin::watermarks(const std::string& topic, std::int32_t partition,
                                          std::chrono::milliseconds timeout) const {
  Watermarks marks;
  const rd_kafka_resp_err_t code = rd_kafka_query_watermark_offsets(handle_.get(), topic.c_str(), partition, &marks.low,
                                                                    &marks.high, to_timeout_ms(timeout));
  if (code != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return KafkaError(code, "watermarks of " + topic + "[" + std::to_string(partition) + "]");
  }
  return marks;
}

}  // namespace bloomgate::connectors
