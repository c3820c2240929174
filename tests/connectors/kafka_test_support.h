// File: kafka_test_support.h
//
// What the integration tests share: client configurations tuned for the embedded broker (short
// session, heartbeat, metadata and fetch intervals, so group joins and rebalances take seconds, not
// tens of seconds), bounded poll loops, and a thread-safe log collector.
//
// Timing of the librdkafka 2.0.2 mock group coordinator: the first join of an empty group waits 3 s
// (its fixed group.initial.rebalance.delay); every later rebalance waits up to session.timeout.ms
// minus 1 s for members to rejoin, and a member whose session expires while it waits is dropped. So
// session.timeout.ms must exceed 3 s: 4000 gives 3 s rebalances and a 1 s margin on the first join.
#pragma once

#include "bloomgate/connectors/client_hooks.h"
#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/embedded_broker.h"
#include "bloomgate/connectors/kafka_config.h"
#include "bloomgate/connectors/producer.h"
#include "../support/poll_until.h"

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace bloomgate::connectors::test_support {

using Clock = std::chrono::steady_clock;

// Generous for the loaded 2-core CI machine; a healthy run needs a fraction of it.
inline constexpr std::chrono::seconds kWaitLimit{20};

inline KafkaConfig producer_config(const EmbeddedBroker& broker) {
  KafkaConfig config;
  config.with("bootstrap.servers", broker.bootstrap_servers())
      .with("linger.ms", "5")
      .with("reconnect.backoff.ms", "50")
      .with("reconnect.backoff.max.ms", "500")
      .with("topic.metadata.refresh.interval.ms", "1000");
  return config;
}

inline KafkaConfig consumer_config(const EmbeddedBroker& broker) {
  KafkaConfig config;
  config.with("bootstrap.servers", broker.bootstrap_servers())
      .with("auto.offset.reset", "earliest")
      .with("session.timeout.ms", "4000")
      .with("heartbeat.interval.ms", "200")
      .with("topic.metadata.refresh.interval.ms", "1000")
      .with("fetch.wait.max.ms", "20")
      .with("reconnect.backoff.ms", "50")
      .with("reconnect.backoff.max.ms", "500");
  return config;
}

// Collects log lines from any thread.
class LogCollector {
 public:
  LogFunction function() {
    return [this](int level, std::string_view facility, std::string_view message) {
      const std::lock_guard lock(mutex_);
      lines_.push_back(std::to_string(level) + " " + std::string(facility) + " " + std::string(message));
    };
  }
  bool contains(std::string_view fragment) const {
    const std::lock_guard lock(mutex_);
    for (const std::string& line : lines_) {
      if (line.find(fragment) != std::string::npos) return true;
    }
    return false;
  }
  std::size_t size() const {
    const std::lock_guard lock(mutex_);
    return lines_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

// Polls every consumer in turn (their callbacks run here) until `done()` or the limit; returns done().
inline bool poll_until(const std::vector<Consumer*>& consumers, const std::function<bool()>& done,
                       std::chrono::milliseconds limit = kWaitLimit,
                       const std::function<void(ConsumedMessage&)>& on_message = {}) {
  return bloomgate::test_support::poll_until(done, limit, [&] {
    for (Consumer* consumer : consumers) {
      if (auto message = consumer->poll(std::chrono::milliseconds(20)); message && on_message) on_message(*message);
    }
  });
}

}  // namespace bloomgate::connectors::test_support
