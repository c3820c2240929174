// File: admin.h
//
// Cluster questions the service asks at start-up and on assignment: how many partitions a topic has,
// and a partition's low/high watermarks (the output tail to reconcile; "is this partition empty").
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
#include <string>

namespace bloomgate::connectors {

struct Watermarks {
  std::int64_t low = 0;   // the first offset still stored
  std::int64_t high = 0;  // the offset the next message will get
};

// The partition count of `topic`, asked from the cluster through any client handle.
[[nodiscard]] KafkaResult<int> fetch_partition_count(rd_kafka_t* handle, const std::string& topic,
                                                     std::chrono::milliseconds timeout);

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

 private:
  CallbackGuard guard_;  // declared before handle_: outlives it
  KafkaHandle handle_;
};

}  // namespace bloomgate::connectors
