// File: topic_partition.h
//
// A (topic, partition, offset, commit metadata) value and its conversion to and from librdkafka's
// rd_kafka_topic_partition_list_t. Used for assignments, commits and committed-offset queries.
//
// Commit metadata is the string Kafka stores next to a committed offset; the pipeline writes the
// checkpoint's output offset there (docs/state.md, "The three facts and the one rule").
//
// Thread-safety: value types.
#pragma once

#include "bloomgate/connectors/handles.h"
#include "bloomgate/connectors/kafka_error.h"

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace bloomgate::connectors {

// RD_KAFKA_OFFSET_INVALID: "no offset given"; an assignment then starts at the committed offset, or at
// auto.offset.reset when there is none.
inline constexpr std::int64_t kNoOffset = RD_KAFKA_OFFSET_INVALID;
inline constexpr std::int32_t kAnyPartition = RD_KAFKA_PARTITION_UA;  // let the partitioner choose

struct TopicPartition {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = kNoOffset;  // for commits: the NEXT offset to read (last processed + 1)
  std::string metadata;             // commit metadata; empty when none
  KafkaError error;                 // per-partition error in results (committed offsets)

  // Identity is (topic, partition): offsets and metadata are payload.
  friend bool operator==(const TopicPartition& a, const TopicPartition& b) {
    return a.topic == b.topic && a.partition == b.partition;
  }
  friend std::strong_ordering operator<=>(const TopicPartition& a, const TopicPartition& b) {
    if (const auto by_topic = a.topic <=> b.topic; by_topic != 0) return by_topic;
    return a.partition <=> b.partition;
  }
};

using TopicPartitions = std::vector<TopicPartition>;

// Copies topic, partition, offset, metadata (and the per-partition error) out of a C list.
[[nodiscard]] TopicPartitions to_topic_partitions(const rd_kafka_topic_partition_list_t* list);

// Builds an owned C list. Metadata is copied into malloc'ed memory, which the list's destroy frees.
[[nodiscard]] PartitionListHandle to_partition_list(const TopicPartitions& partitions);

}  // namespace bloomgate::connectors
