// File: handles.h
//
// One owning smart pointer per librdkafka C object (modern-cpp-kafka's RdKafkaHelper.h pattern): every
// handle this layer creates is held by one of these from the line that creates it, so no early return
// or exception can leak it. std::unique_ptr never calls its deleter on nullptr.
//
// Ownership transfers to librdkafka (rd_kafka_new takes the conf, a successful produce takes the
// headers) are written as `.release()` at the call that transfers, and only after it succeeded.
//
// Thread-safety: as the underlying object (rd_kafka_t is thread-safe; the others are not).
#pragma once

#include <librdkafka/rdkafka.h>

#include <memory>

namespace bloomgate::connectors {

// Calls `destroy` on the object; the one deleter of every handle below.
template <auto destroy>
struct DestroyWith {
  template <typename T>
  void operator()(T* object) const noexcept {
    destroy(object);
  }
};

template <typename T, auto destroy>
using Handle = std::unique_ptr<T, DestroyWith<destroy>>;

using KafkaHandle = Handle<rd_kafka_t, rd_kafka_destroy>;
using ConfHandle = Handle<rd_kafka_conf_t, rd_kafka_conf_destroy>;
using PartitionListHandle = Handle<rd_kafka_topic_partition_list_t, rd_kafka_topic_partition_list_destroy>;
using HeadersHandle = Handle<rd_kafka_headers_t, rd_kafka_headers_destroy>;
using MessageHandle = Handle<rd_kafka_message_t, rd_kafka_message_destroy>;
using QueueHandle = Handle<rd_kafka_queue_t, rd_kafka_queue_destroy>;
using ErrorHandle = Handle<rd_kafka_error_t, rd_kafka_error_destroy>;
using TopicHandle = Handle<rd_kafka_topic_t, rd_kafka_topic_destroy>;
using MetadataHandle = Handle<const rd_kafka_metadata_t, rd_kafka_metadata_destroy>;
using EventHandle = Handle<rd_kafka_event_t, rd_kafka_event_destroy>;
using GroupMetadataHandle = Handle<rd_kafka_consumer_group_metadata_t, rd_kafka_consumer_group_metadata_destroy>;
using ConfigResourceHandle = Handle<rd_kafka_ConfigResource_t, rd_kafka_ConfigResource_destroy>;
using NewTopicHandle = Handle<rd_kafka_NewTopic_t, rd_kafka_NewTopic_destroy>;
using AdminOptionsHandle = Handle<rd_kafka_AdminOptions_t, rd_kafka_AdminOptions_destroy>;

}  // namespace bloomgate::connectors
