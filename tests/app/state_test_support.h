// File: state_test_support.h
//
// What the durable-state tests share (service_state_test.cc, service_operations_test.cc): streams of
// keyed events with repeats from a fixed seed, a paced producer thread, the output read back per input
// offset and per key, the exact answer, and what a run's log says it did. Every wait is bounded.
#pragma once

#include <iostream>
#include <random>
#include <regex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "service_test_support.h"
#include "stream_seeds.h"

namespace bloomgate::app::test_support {

// The share of repeats in the service tests' streams.
inline constexpr double kRepeatShare = 0.3;

// `count` events of ~100-byte values, keyed "customer-N"; `repeat_share` of them repeat one of the last
// 5,000 keys (within any TTL of an hour: event times are 1 ms apart). Partitioned by key.
inline std::vector<Event> repeating_stream(std::uint64_t seed, int count, double repeat_share) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::string> keys;
  std::vector<Event> events;
  const std::int64_t start = past_start_ms();
  for (int i = 0; i < count; ++i) {
    std::string key;
    if (!keys.empty() && unit(random) < repeat_share) {
      const std::size_t window = std::min<std::size_t>(keys.size(), 5'000);
      key = keys[keys.size() - 1 - std::uniform_int_distribution<std::size_t>(0, window - 1)(random)];
    } else {
      key = "customer-" + std::to_string(keys.size());
      keys.push_back(key);
    }
    std::string value = "{\"order\":" + std::to_string(i) + ",\"pad\":\"";
    value.resize(96, 'x');
    value += "\"}";
    events.push_back({key, value, {}, start + i, connectors::kAnyPartition});
  }
  return events;
}

// How many output records the whole of `events` yields: every repeat of repeating_stream() lies within the
// TTL of orders_pipeline(), so one per distinct key. A test that stops a service "after N more output
// records" caps N with it: when a slow group join let the stream run ahead, fewer may be left to come.
inline std::int64_t distinct_keys(const std::vector<Event>& events) {
  std::unordered_set<std::string> keys;
  for (const Event& event : events) keys.insert(event.key.value_or(""));
  return static_cast<std::int64_t>(keys.size());
}

// Events with the given keys (partitioned by key, or all in `partition`), stamped `first_ms` + 10 ms each.
inline std::vector<Event> keyed_events(const std::vector<std::string>& keys, std::int64_t first_ms,
                                       std::int32_t partition = connectors::kAnyPartition) {
  std::vector<Event> events;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    events.push_back({keys[i], "value of " + keys[i], {}, first_ms + static_cast<std::int64_t>(i) * 10, partition});
  }
  return events;
}

// "<prefix>-<from>" ... "<prefix>-<to - 1>".
inline std::vector<std::string> numbered_keys(const std::string& prefix, int from, int to) {
  std::vector<std::string> keys;
  for (int i = from; i < to; ++i) keys.push_back(prefix + "-" + std::to_string(i));
  return keys;
}

// The YAML of a `bloomgate run` pipeline "orders" -> "orders-unique", keyed by the message key, TTL 1h,
// error rate 1e-6: within a test every repeat is a duplicate and a false positive is all but impossible.
inline std::string orders_pipeline_yaml(std::uint64_t expected_per_ttl = 20'000) {
  return R"(  - name: orders
    input: [orders]
    output: orders-unique
    key: { from: message_key }
    ttl: 1h
    time: event
    filter: { error_rate: 1e-6, expected_per_ttl: )" + std::to_string(expected_per_ttl) + R"( }
)";
}

// The same pipeline for a Service run in-process.
inline config::PipelineSettings orders_pipeline() {
  config::PipelineSettings settings = pipeline("orders", "orders", "orders-unique", std::chrono::hours(1));
  settings.filter.error_rate = 1e-6;
  settings.filter.expected_per_ttl = 20'000;
  return settings;
}

// Waits until `group` has committed every partition of `topic` up to its end.
inline bool wait_until_committed_to_end(const TestBroker& broker, const std::string& group, const std::string& topic,
                                        std::chrono::seconds limit) {
  const auto end = end_offsets(broker, topic);
  const auto at_end = [&] {
    try {
      return committed_offsets(broker, group, topic) == end;
    } catch (const std::runtime_error&) {
      return false;  // the coordinator is still loading or moving: ask again
    }
  };
  return poll_until(at_end, limit, 200ms);
}

// Produces `events` to `topic` at about `per_second` on a thread of its own, while services run, stop
// and are killed; join() waits for the last delivery (the producer retries through a broker outage).
class PacedProducer {
 public:
  PacedProducer(const TestBroker& broker, std::string topic, const std::vector<Event>& events, double per_second)
      : thread_([this, &broker, topic = std::move(topic), &events, per_second] {
          try {
            EventProducer producer(broker);
            const auto start = Clock::now();
            for (std::size_t i = 0; i < events.size(); ++i) {
              if (i % 100 == 0) {
                std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double>(static_cast<double>(i) / per_second)));
              }
              producer.produce(topic, events[i]);
            }
            producer.flush();
          } catch (const std::exception& e) {
            error_ = e.what();
          }
          done_ = true;
        }) {}
  ~PacedProducer() {
    if (thread_.joinable()) thread_.join();
  }
  PacedProducer(const PacedProducer&) = delete;
  PacedProducer& operator=(const PacedProducer&) = delete;

  bool done() const { return done_; }

  std::string join() {
    thread_.join();
    return error_;
  }

 private:
  std::string error_;
  std::atomic<bool> done_{false};
  std::thread thread_;  // last: starts after error_ exists
};

// The output read back: how often each input offset and each key was forwarded.
struct Forwarded {
  std::map<Source, int> by_source;
  std::unordered_map<std::string, int> by_key;

  std::size_t offsets_twice() const {
    std::size_t n = 0;
    for (const auto& [source, times] : by_source) n += times > 1 ? 1 : 0;
    return n;
  }
  std::size_t keys_twice() const {
    std::size_t n = 0;
    for (const auto& [key, times] : by_key) n += times > 1 ? 1 : 0;
    return n;
  }
  int times(const std::string& key) const {
    const auto it = by_key.find(key);
    return it == by_key.end() ? 0 : it->second;
  }
};

inline Forwarded read_forwarded(const TestBroker& broker, const std::string& output) {
  Forwarded forwarded;
  for (const Record& record : read_topic(broker, output)) {
    ++forwarded.by_source[source_of(record)];
    ++forwarded.by_key[record.key.value_or("")];
  }
  return forwarded;
}

// The output against the exact answer. With every repeat within the TTL, an input event is new exactly
// when its key is first seen in the input's order (per key all events are in one partition, in order).
struct GroundTruth {
  std::size_t events = 0;
  std::size_t exact_new = 0;             // events the exact answer forwards
  std::size_t lost = 0;                  // new events never forwarded
  std::size_t duplicates_forwarded = 0;  // repeats forwarded
  std::size_t offsets_twice = 0;         // input offsets forwarded more than once
  std::size_t keys_twice = 0;            // keys forwarded more than once
  std::size_t outside = 0;               // output records naming no input offset of the topic

  std::string describe() const {
    return std::to_string(events) + " events, " + std::to_string(exact_new) + " new by the exact answer: " +
           std::to_string(duplicates_forwarded) + " duplicates forwarded, " + std::to_string(lost) + " lost, " +
           std::to_string(offsets_twice) + " input offsets forwarded twice, " + std::to_string(keys_twice) +
           " keys forwarded twice";
  }
};

inline GroundTruth compare_with_exact_answer(const TestBroker& broker, const std::string& input,
                                             const std::string& output) {
  const std::vector<Record> records = read_topic(broker, input);
  const Forwarded forwarded = read_forwarded(broker, output);
  GroundTruth truth;
  truth.events = records.size();
  std::unordered_set<std::string> seen;
  for (const Record& record : records) {
    const bool is_new = seen.insert(record.key.value_or("")).second;
    const bool out = forwarded.by_source.count(position_of(record)) != 0;
    truth.exact_new += is_new ? 1 : 0;
    truth.lost += is_new && !out ? 1 : 0;
    truth.duplicates_forwarded += !is_new && out ? 1 : 0;
  }
  truth.offsets_twice = forwarded.offsets_twice();
  truth.keys_twice = forwarded.keys_twice();
  for (const auto& [source, times] : forwarded.by_source) {
    truth.outside += source.topic != input || source.offset < 0 ? 1U : 0U;
  }
  return truth;
}

// The output holds each new event exactly once, and nothing else.
inline void expect_exact_answer(const GroundTruth& truth) {
  std::cout << truth.describe() << std::endl;
  EXPECT_EQ(truth.lost, 0U) << truth.describe();
  EXPECT_EQ(truth.duplicates_forwarded, 0U) << truth.describe();
  EXPECT_EQ(truth.offsets_twice, 0U) << truth.describe();
  EXPECT_EQ(truth.keys_twice, 0U) << truth.describe();
  EXPECT_EQ(truth.outside, 0U) << truth.describe();
  EXPECT_GT(truth.exact_new, 0U);
}

// Waits until `topic` holds `records`, then kills the process with SIGKILL; false (with the process's
// output as a test failure) when the records did not come in time.
inline bool kill_at_output(BloomgateProcess& process, const TestBroker& broker, const std::string& topic,
                           std::int64_t records) {
  const bool reached = wait_for_output(broker, topic, records);
  process.signal(SIGKILL);
  EXPECT_EQ(process.wait(kWaitLimit), std::nullopt) << "not killed";
  EXPECT_TRUE(reached) << topic << " did not reach " << records << " records:\n" << process.output();
  return reached;
}

inline std::uint64_t sum_of(const ServiceSnapshot& snapshot, std::uint64_t PartitionReport::*field) {
  std::uint64_t sum = 0;
  for (const PartitionReport& partition : snapshot.partitions) sum += partition.*field;
  return sum;
}

// ---- what a run's log says -----------------------------------------------------------------------------

inline std::size_t occurrences(const std::string& text, const std::string& fragment) {
  std::size_t n = 0;
  for (std::size_t at = text.find(fragment); at != std::string::npos; at = text.find(fragment, at + 1)) ++n;
  return n;
}

// Waits until the process's stderr holds `fragment` at least `times` times.
inline bool wait_for_log(const BloomgateProcess& process, const std::string& fragment, std::size_t times) {
  return poll_until([&] { return occurrences(process.error_output(), fragment) >= times; }, kWaitLimit);
}

// Events found already delivered by reconciliation: the sum of "N event(s) from input offset" lines.
inline std::uint64_t reconciled_in_log(const std::string& text) {
  std::uint64_t reconciled = 0;
  const std::string marker = " event(s) from input offset";
  for (std::size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + 1)) {
    const std::size_t begin = text.rfind(' ', at - 1) + 1;
    reconciled += static_cast<std::uint64_t>(std::stoll(text.substr(begin, at - begin)));
  }
  return reconciled;
}

// The binary's last line, "stopped: consumed N, forwarded F, ...": N, or nothing when it did not stop cleanly.
inline std::optional<std::uint64_t> consumed_in_log(const std::string& text) {
  static const std::regex line("stopped: consumed ([0-9]+), forwarded");
  std::smatch match;
  if (!std::regex_search(text, match, line)) return std::nullopt;
  return std::stoull(match[1].str());
}

}  // namespace bloomgate::app::test_support
