// File: test_broker.h
//
// The broker the service's end-to-end tests run against. The `integration` tier builds them with the
// embedded broker (librdkafka's mock cluster, in the test process); the `kafka` tier builds the same test
// files with BLOOMGATE_TEST_ON_KAFKA, where each test starts a real Apache Kafka broker of its own
// (support/kafka_broker.h, through scripts/kafka). Both have bootstrap_servers(), create_topic() and
// set_broker_down/up(), which is all the shared helpers use.
//
// A test says where it runs: SKIP_ON_REAL_KAFKA(why) for what only the mock can do (injected request errors)
// or what the broker plays no part in; SKIP_ON_EMBEDDED_BROKER(why) for what the mock does not do (compaction,
// retention, ListOffsets by time, read_committed, fencing). Both skip before any broker starts.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

#ifdef BLOOMGATE_TEST_ON_KAFKA
#include "../support/kafka_broker.h"
#else
#include "bloomgate/connectors/embedded_broker.h"
#endif

namespace bloomgate::app::test_support {

#ifdef BLOOMGATE_TEST_ON_KAFKA
using TestBroker = bloomgate::test_support::KafkaBroker;
inline constexpr bool kOnRealKafka = true;
#else
using TestBroker = connectors::EmbeddedBroker;
inline constexpr bool kOnRealKafka = false;
#endif

// `embedded` on the mock, `real` on Kafka: the sizes of a test that the mock's 5 MiB a partition cannot hold.
template <typename T>
constexpr T on_broker(T embedded, T real) {
  return kOnRealKafka ? real : embedded;
}

// A topic with topic-level `configs` (retention.ms, segment.ms, ...), which only a real broker keeps.
inline connectors::KafkaError create_topic_with_configs(TestBroker& broker, const std::string& name, int partitions,
                                                        const std::map<std::string, std::string>& configs) {
#ifdef BLOOMGATE_TEST_ON_KAFKA
  return broker.create_topic(name, partitions, 1, configs);
#else
  if (!configs.empty()) return {RD_KAFKA_RESP_ERR__NOT_IMPLEMENTED, "the embedded broker keeps no topic configs"};
  return broker.create_topic(name, partitions);
#endif
}

// Every broker stops answering (false) or answers again (true): the real broker hangs with its connections
// open (its JVM stopped), which no client notices before its request timeouts; the embedded one refuses
// connections (all it can do).
inline void set_responsive(TestBroker& broker, bool responsive) {
#ifdef BLOOMGATE_TEST_ON_KAFKA
  responsive ? broker.thaw() : broker.freeze();
#else
  if (auto error = responsive ? broker.set_broker_up(-1) : broker.set_broker_down(-1); !error.ok()) {
    throw std::runtime_error(error.message());
  }
#endif
}

}  // namespace bloomgate::app::test_support

#define SKIP_ON_REAL_KAFKA(why) \
  if (::bloomgate::app::test_support::kOnRealKafka) GTEST_SKIP() << "runs on the embedded broker only: " << why
#define SKIP_ON_EMBEDDED_BROKER(why) \
  if (!::bloomgate::app::test_support::kOnRealKafka) GTEST_SKIP() << "runs on the real Kafka broker only: " << why
