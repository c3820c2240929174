// File: handles.h
//
// One owning smart pointer per librdkafka C object (modern-cpp-kafka's RdKafkaHelper.h pattern): every
// handle this layer creates is held by one of these from the line that creates it, so no early return
// or exception can leak it. A deleter is a no-op on nullptr.
//
// Ownership transfers to librdkafka (rd_kafka_new takes the conf, a successful produce takes the
// headers) are written as `.release()` at the call that transfers, and only after it succeeded.
//
// Thread-safety: as the underlying object (rd_kafka_t is thread-safe; the others are not).
#pragma once

#include <librdkafka/rdkafka.h>

#include <memory>

namespace bloomgate::connectors {

struct KafkaHandleDeleter {
  void operator()(rd_kafka_t* handle) const noexcept { rd_kafka_destroy(handle); }
};
struct ConfDeleter {
  void operator()(rd_kafka_conf_t* conf) const noexcept { rd_kafka_conf_destroy(conf); }
};
struct PartitionListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* list) const noexcept {
    rd_kafka_topic_partition_list_destroy(list);
  }
};
struct HeadersDeleter {
  void operator()(rd_kafka_headers_t* headers) const noexcept { rd_kafka_headers_destroy(headers); }
};
struct MessageDeleter {
  void operator()(rd_kafka_message_t* message) const noexcept { rd_kafka_message_destroy(message); }
};
struct QueueDeleter {
  void operator()(rd_kafka_queue_t* queue) const noexcept { rd_kafka_queue_destroy(queue); }
};
struct ErrorDeleter {
  void operator()(rd_kafka_error_t* error) const noexcept { rd_kafka_error_destroy(error); }
};
struct TopicDeleter {
  void operator()(rd_kafka_topic_t* topic) const noexcept { rd_kafka_topic_destroy(topic); }
};
struct MetadataDeleter {
  void operator()(const rd_kafka_metadata_t* metadata) const noexcept { rd_kafka_metadata_destroy(metadata); }
};
struct EventDeleter {
  void operator()(rd_kafka_event_t* event) const noexcept { rd_kafka_event_destroy(event); }
};
struct GroupMetadataDeleter {
  void operator()(rd_kafka_consumer_group_metadata_t* metadata) const noexcept {
    rd_kafka_consumer_group_metadata_destroy(metadata);
  }
};
struct ConfigResourceDeleter {
  void operator()(rd_kafka_ConfigResource_t* resource) const noexcept { rd_kafka_ConfigResource_destroy(resource); }
};

using KafkaHandle = std::unique_ptr<rd_kafka_t, KafkaHandleDeleter>;
using ConfHandle = std::unique_ptr<rd_kafka_conf_t, ConfDeleter>;
using PartitionListHandle = std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionListDeleter>;
using HeadersHandle = std::unique_ptr<rd_kafka_headers_t, HeadersDeleter>;
using MessageHandle = std::unique_ptr<rd_kafka_message_t, MessageDeleter>;
using QueueHandle = std::unique_ptr<rd_kafka_queue_t, QueueDeleter>;
using ErrorHandle = std::unique_ptr<rd_kafka_error_t, ErrorDeleter>;
using TopicHandle = std::unique_ptr<rd_kafka_topic_t, TopicDeleter>;
using MetadataHandle = std::unique_ptr<const rd_kafka_metadata_t, MetadataDeleter>;
using EventHandle = std::unique_ptr<rd_kafka_event_t, EventDeleter>;
using GroupMetadataHandle = std::unique_ptr<rd_kafka_consumer_group_metadata_t, GroupMetadataDeleter>;
using ConfigResourceHandle = std::unique_ptr<rd_kafka_ConfigResource_t, ConfigResourceDeleter>;

}  // namespace bloomgate::connectors
