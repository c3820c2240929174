// File: embedded_broker.h
//
// An in-process Kafka cluster: librdkafka's mock cluster (rdkafka_mock.h), which speaks the Kafka
// protocol over TCP on 127.0.0.1 with ephemeral ports. Clients reach it through `bootstrap_servers()`
// like any broker, so tests exercise the real network path. `kafka.brokers: embedded` starts one.
//
// What it can and cannot do (librdkafka 2.0.2; docs/real-kafka.md compares it with a real broker): consumer groups, offset
// commits with metadata, idempotent and transactional producers, fault injection (brokers down, request
// errors); no persistence, no SASL/SSL, no CreateTopics (use create_topic), and aborted transactional
// records stay visible. Retention is fixed: each partition keeps only its newest 5 MiB or 100,000
// message sets (rdkafka_mock.c), older records are dropped as if by retention, so a reader that falls
// further behind than that loses records (the demo paces its producer for this reason).
// The mock API is marked experimental by librdkafka: only this class touches it.
//
// Ownership: owns a dedicated producer handle that hosts the cluster, and the cluster; the destructor
// stops the cluster, then destroys the handle. Clients connected to it should be destroyed first (they
// survive, but only see connection refused).
//
// Thread-safety: the fault-injection methods may be called from any thread (the mock cluster serialises
// them on its own thread).
#pragma once

#include "bloomgate/connectors/client_hooks.h"
#include "bloomgate/connectors/handles.h"
#include "bloomgate/connectors/kafka_error.h"

#include <cstdint>
#include <memory>
#include <string>

struct rd_kafka_mock_cluster_s;

namespace bloomgate::connectors {

class EmbeddedBroker {
 public:
  // Starts `broker_count` brokers (ids 1..broker_count). Throws KafkaException if it cannot.
  explicit EmbeddedBroker(int broker_count = 1, ClientHooks hooks = {});
  ~EmbeddedBroker();
  EmbeddedBroker(const EmbeddedBroker&) = delete;
  EmbeddedBroker& operator=(const EmbeddedBroker&) = delete;
  EmbeddedBroker(EmbeddedBroker&&) = delete;
  EmbeddedBroker& operator=(EmbeddedBroker&&) = delete;

  // "127.0.0.1:PORT,127.0.0.1:PORT,...", for bootstrap.servers.
  [[nodiscard]] const std::string& bootstrap_servers() const noexcept { return bootstrap_servers_; }
  [[nodiscard]] int broker_count() const noexcept { return broker_count_; }

  // Creates a topic (the mock has no CreateTopics API). replication_factor <= broker_count.
  [[nodiscard]] KafkaError create_topic(const std::string& name, int partitions, int replication_factor = 1);

  // Disconnects a broker and refuses new connections (no leader change), or lets it accept them again.
  // broker_id is 1..broker_count; -1 means all brokers.
  [[nodiscard]] KafkaError set_broker_down(std::int32_t broker_id);
  [[nodiscard]] KafkaError set_broker_up(std::int32_t broker_id);

  // Escape hatch for fault tests that need more of rdkafka_mock.h (request errors, RTT, leaders).
  [[nodiscard]] rd_kafka_mock_cluster_s* native_cluster() const noexcept { return cluster_.get(); }

 private:
  struct ClusterDeleter {
    void operator()(rd_kafka_mock_cluster_s* cluster) const noexcept;
  };

  // Declaration order is destruction order reversed: the cluster goes first, then the handle that
  // hosts it, then the guard its callbacks use.
  CallbackGuard guard_;
  KafkaHandle handle_;
  std::unique_ptr<rd_kafka_mock_cluster_s, ClusterDeleter> cluster_;
  int broker_count_ = 0;
  std::string bootstrap_servers_;
};

}  // namespace bloomgate::connectors
