// File: topic_partition.cc
#include "bloomgate/connectors/topic_partition.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace bloomgate::connectors {

TopicPartitions to_topic_partitions(const rd_kafka_topic_partition_list_t* list) {
  TopicPartitions partitions;
  if (list == nullptr) return partitions;
  partitions.reserve(static_cast<std::size_t>(list->cnt));
  for (int i = 0; i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& element = list->elems[i];
    TopicPartition partition;
    partition.topic = element.topic;
    partition.partition = element.partition;
    partition.offset = element.offset;
    if (element.metadata != nullptr && element.metadata_size > 0) {
      partition.metadata.assign(static_cast<const char*>(element.metadata), element.metadata_size);
    }
    if (element.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      partition.error = KafkaError(element.err, partition.topic + "[" + std::to_string(element.partition) + "]");
    }
    partitions.push_back(std::move(partition));
  }
  return partitions;
}

PartitionListHandle to_partition_list(const TopicPartitions& partitions) {
  PartitionListHandle list(rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
  for (const TopicPartition& partition : partitions) {
    rd_kafka_topic_partition_t* element =
        rd_kafka_topic_partition_list_add(list.get(), partition.topic.c_str(), partition.partition);
    element->offset = partition.offset;
    if (!partition.metadata.empty()) {
      // The list's destroy releases metadata with free(), so it must come from malloc.
      void* metadata = std::malloc(partition.metadata.size());
      if (metadata == nullptr) throw std::bad_alloc();
      std::memcpy(metadata, partition.metadata.data(), partition.metadata.size());
      element->metadata = metadata;
      element->metadata_size = partition.metadata.size();
    }
  }
  return list;
}

}  // namespace bloomgate::connectors
