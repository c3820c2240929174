// Restores off the rebalance path (docs/state.md, "Restores off the rebalance path"): the Service on a thread
// against an embedded broker. A first run consumes and commits a stream; its state directory is then
// removed, so the next member to own a partition rebuilds its filter from the input history on the restore
// thread. ServiceOptions::on_rebuild_record slows (or holds) those rebuilds, so that:
//   - a member whose rebuilds take longer than max.poll.interval.ms stays in the group when another joins;
//   - while one partition is held in its rebuild, the member's other partition forwards events;
//   - a second member joining during the rebuilds revokes partitions whose restore is then cancelled;
//   - a stop during a rebuild returns within the grace period and commits nothing of it.
// Each ends with the output against the exact answer: nothing lost, nothing forwarded twice. Event keys are
// fixed lists; nothing is random.
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <mutex>
#include <regex>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "state_test_support.h"

namespace bloomgate::app {
namespace {

using namespace test_support;

config::PipelineSettings events_pipeline() {
  config::PipelineSettings settings = pipeline("restore", "events", "events-unique", std::chrono::hours(1));
  settings.filter.error_rate = 1e-6;
  settings.filter.expected_per_ttl = 20'000;
  return settings;
}

// Topics "events" -> "events-unique" with `partitions` each, `early_events` keyed events consumed and
// committed by a first run of group `group`, whose state directory is then removed: the next owner of each
// partition rebuilds its filter from them. Returns the configuration for the next runs.
config::Config committed_without_state(TestBroker& broker, const std::string& group, int partitions,
                                       int early_events) {
  create_topics(broker, {"events", "events-unique"}, partitions);
  config::Config config = service_config(broker, group, {events_pipeline()});
  produce_all(broker, "events", keyed_events(numbered_keys("early", 0, early_events), past_start_ms()));
  run_until_consumed(broker, config, static_cast<std::uint64_t>(early_events));
  EXPECT_TRUE(wait_until_committed_to_end(broker, group, "events", kWaitLimit));
  std::filesystem::remove_all(config.state.dir);
  return config;
}

// Repeats of the early keys (to be dropped: the rebuilt filters hold them) and as many fresh keys.
void produce_repeats_and_fresh(const TestBroker& broker, int count) {
  std::vector<std::string> keys = numbered_keys("early", 0, count);
  const std::vector<std::string> fresh = numbered_keys("late", 0, count);
  keys.insert(keys.end(), fresh.begin(), fresh.end());
  produce_all(broker, "events", keyed_events(keys, past_start_ms() + 60'000));
}

std::uint64_t restoring(const ServiceSnapshot& snapshot) { return snapshot.partitions_restoring; }

// The service's log lines (spdlog's default logger, which every member in this process writes to) from
// construction to destruction; construct it before the services start and destroy it after they stopped.
class CapturedLog {
 public:
  CapturedLog() { spdlog::default_logger()->sinks().push_back(sink_); }
  ~CapturedLog() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  std::vector<std::string> matching(const std::regex& pattern) const {
    std::vector<std::string> lines;
    for (const std::string& line : sink_->last_formatted()) {
      if (std::regex_search(line, pattern)) lines.push_back(line);
    }
    return lines;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_ = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(20'000);
};

// max.poll.interval.ms at librdkafka's smallest that session.timeout.ms allows (it must be at least that), and
// the first member's rebuilds slowed to 2 x 150 records at 40 ms each: 12 s, three times as long. A second
// member joins during them: the group's rebalance waits at most max.poll.interval.ms for the first member to
// join again, which a member whose restore held the rebalance callback could not do (it was removed from
// the group, and its partitions were lost). Here it keeps polling: no partition is lost, and the stream
// after the rebalance is deduplicated exactly.
TEST(RestoreOffTheRebalancePath, ARebuildLongerThanMaxPollIntervalKeepsTheMemberInTheGroup) {
  TestBroker broker;
  config::Config config = committed_without_state(broker, "slow-rebuild", 2, 300);
  config.kafka.properties["consumer.max.poll.interval.ms"] = config.kafka.properties.at("consumer.session.timeout.ms");
  config::Config other = config;
  other.state.dir = TestDirectories::instance().fresh("state");
  const CapturedLog log;
  std::atomic<std::uint64_t> rebuild_records{0};
  ServiceThread first(config, broker, [&](ServiceOptions& options) {
    options.on_rebuild_record = [&](const std::string&, std::int32_t) {
      ++rebuild_records;
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
    };
  });
  ASSERT_TRUE(poll_until([&] { return rebuild_records.load() > 0; }, kWaitLimit)) << "no rebuild started";
  ServiceThread second(other, broker);
  const auto assigned = [](const ServiceSnapshot& s) {
    return std::count_if(s.partitions.begin(), s.partitions.end(), [](const PartitionReport& p) { return p.assigned; });
  };
  const auto both_ready = [&] {
    const ServiceSnapshot a = first.snapshot();
    const ServiceSnapshot b = second.snapshot();
    return a.running && b.running && assigned(a) + assigned(b) == 2;
  };
  ASSERT_TRUE(poll_until(both_ready, kWaitLimit + std::chrono::seconds(15))) << "the members never both got ready";
  produce_repeats_and_fresh(broker, 100);
  const auto consumed = [&] { return first.snapshot().consumed + second.snapshot().consumed; };
  ASSERT_TRUE(poll_until([&] { return consumed() >= 200; }, kWaitLimit)) << "consumed " << consumed();
  const std::uint64_t duplicates = first.snapshot().duplicates + second.snapshot().duplicates;
  const std::optional<RunResult> second_result = second.stop();
  const std::optional<RunResult> first_result = first.stop();
  EXPECT_TRUE(second_result && second_result->exit_code == 0) << describe(second_result);
  EXPECT_TRUE(first_result && first_result->exit_code == 0) << describe(first_result);
  const std::vector<std::string> lost = log.matching(std::regex("lost [0-9]+ partition\\(s\\)"));
  EXPECT_TRUE(lost.empty()) << "a member lost its partitions: " << lost.front();
  EXPECT_EQ(duplicates, 100U) << "every repeat of an early key dropped";
  expect_exact_answer(compare_with_exact_answer(broker, "events", "events-unique"));
}

// The second partition whose rebuild starts is held until the test lets it go; the first one, restored,
// forwards new events meanwhile.
TEST(RestoreOffTheRebalancePath, AnotherPartitionKeepsForwardingWhileOnePartitionRebuilds) {
  TestBroker broker;
  const config::Config config = committed_without_state(broker, "flowing", 2, 200);
  std::mutex mutex;
  std::optional<std::int32_t> first_rebuilt;
  std::atomic<int> held_partition{-1};
  std::atomic<bool> release{false};
  ServiceThread service(config, broker, [&](ServiceOptions& options) {
    options.on_rebuild_record = [&](const std::string&, std::int32_t partition) {
      {
        const std::lock_guard lock(mutex);
        if (!first_rebuilt) first_rebuilt = partition;
        if (*first_rebuilt == partition) return;
      }
      held_partition = partition;
      poll_until([&] { return release.load(); }, kWaitLimit);  // bounded: the test fails, never hangs
    };
  });
  ASSERT_TRUE(poll_until([&] { return held_partition.load() >= 0; }, kWaitLimit)) << "no rebuild was held";
  const std::int32_t held = held_partition.load();
  const std::int32_t flowing = 1 - held;
  produce_all(broker, "events", keyed_events(numbered_keys("flowing", 0, 50), past_start_ms() + 60'000, flowing));
  const bool forwarded_meanwhile =
      service.wait_until([](const ServiceSnapshot& s) { return s.forwarded >= 50; });
  const ServiceSnapshot during = service.snapshot();
  release = true;
  EXPECT_TRUE(forwarded_meanwhile) << "forwarded " << during.forwarded << " of 50 while the other partition rebuilt";
  EXPECT_EQ(restoring(during), 1U) << "the held partition is still restoring";
  EXPECT_FALSE(during.running) << "/readyz says 503 while a partition restores";
  for (const PartitionReport& partition : during.partitions) {
    if (partition.partition == held) {
      EXPECT_EQ(partition.consumed, 0U) << "the held partition consumed nothing";
    }
  }
  produce_all(broker, "events", keyed_events(numbered_keys("held", 0, 50), past_start_ms() + 70'000, held));
  ASSERT_TRUE(service.wait_until([](const ServiceSnapshot& s) { return s.forwarded >= 100 && s.running; }))
      << "forwarded " << service.snapshot().forwarded;
  const ServiceSnapshot after = service.snapshot();
  const std::optional<RunResult> result = service.stop();
  ASSERT_TRUE(result && result->exit_code == 0) << describe(result);
  EXPECT_EQ(sum_of(after, &PartitionReport::rebuilds), 2U);
  EXPECT_EQ(restoring(after), 0U);
  expect_exact_answer(compare_with_exact_answer(broker, "events", "events-unique"));
}

// The first member rebuilds 4 partitions at 50 ms a record (15 s in all); a second member joins after the
// first rebuild started, and the group moves 2 partitions to it. Their restores on the first member are
// cancelled (counted), the second member restores them, and the stream after that is deduplicated exactly.
TEST(RestoreOffTheRebalancePath, ARevocationDuringARestoreCancelsIt) {
  TestBroker broker;
  const config::Config config = committed_without_state(broker, "revoked-restore", 4, 300);
  config::Config other = config;
  other.state.dir = TestDirectories::instance().fresh("state");
  std::atomic<bool> slow{true};
  ServiceThread first(config, broker, [&](ServiceOptions& options) {
    options.on_rebuild_record = [&](const std::string&, std::int32_t) {
      if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    };
  });
  ASSERT_TRUE(first.wait_until([](const ServiceSnapshot& s) {
    return std::any_of(s.partitions.begin(), s.partitions.end(), [](const PartitionReport& p) { return p.rebuilding; });
  })) << "the first member never started rebuilding";
  ServiceThread second(other, broker);
  const auto assigned = [](const ServiceSnapshot& s) {
    return std::count_if(s.partitions.begin(), s.partitions.end(), [](const PartitionReport& p) { return p.assigned; });
  };
  ASSERT_TRUE(second.wait_until([&](const ServiceSnapshot& s) { return assigned(s) >= 1 && s.running; },
                                kWaitLimit + std::chrono::seconds(15)))
      << "the second member never restored a partition";
  const std::uint64_t cancelled = sum_of(first.snapshot(), &PartitionReport::restores_cancelled);
  slow = false;
  ASSERT_TRUE(first.wait_until([](const ServiceSnapshot& s) { return s.running; })) << "the first member never got ready";
  EXPECT_GE(cancelled, 1U) << "no restore of a revoked partition was cancelled";
  EXPECT_EQ(assigned(first.snapshot()) + assigned(second.snapshot()), 4);

  produce_repeats_and_fresh(broker, 100);
  const auto consumed = [&] { return first.snapshot().consumed + second.snapshot().consumed; };
  ASSERT_TRUE(poll_until([&] { return consumed() >= 200; }, kWaitLimit)) << "consumed " << consumed();
  const ServiceSnapshot a = first.snapshot();
  const ServiceSnapshot b = second.snapshot();
  EXPECT_EQ(a.duplicates + b.duplicates, 100U) << "every repeat of an early key dropped";
  const std::optional<RunResult> second_result = second.stop();
  const std::optional<RunResult> first_result = first.stop();
  EXPECT_TRUE(second_result && second_result->exit_code == 0) << describe(second_result);
  EXPECT_TRUE(first_result && first_result->exit_code == 0) << describe(first_result);
  expect_exact_answer(compare_with_exact_answer(broker, "events", "events-unique"));
}

// A stop while every partition is still rebuilding: run() returns well within the grace period (5 s plus
// the limit's slack), with exit 0, committing nothing; the next run restores and deduplicates exactly.
TEST(RestoreOffTheRebalancePath, AStopDuringARestoreExitsCleanlyAndCommitsNothingOfIt) {
  TestBroker broker;
  const config::Config config = committed_without_state(broker, "stopped-restore", 2, 200);
  const auto committed_before = committed_offsets(broker, "stopped-restore", "events");
  produce_repeats_and_fresh(broker, 50);
  {
    ServiceThread service(config, broker, [&](ServiceOptions& options) {
      options.on_rebuild_record = [&](const std::string&, std::int32_t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      };
    });
    ASSERT_TRUE(service.wait_until([](const ServiceSnapshot& s) { return restoring(s) == 2; }))
        << "the partitions were never restoring";
    ASSERT_TRUE(service.wait_until([](const ServiceSnapshot& s) {
      return std::any_of(s.partitions.begin(), s.partitions.end(), [](const PartitionReport& p) { return p.rebuilding; });
    })) << "no rebuild in progress";
    const std::optional<RunResult> result = service.stop(
        std::chrono::duration_cast<std::chrono::milliseconds>(config.shutdown.grace_period) + std::chrono::seconds(5));
    ASSERT_TRUE(result) << "run() did not return within the grace period";
    EXPECT_EQ(result->exit_code, 0) << describe(result);
    const ServiceSnapshot last = service.snapshot();
    EXPECT_EQ(last.consumed, 0U);
    EXPECT_EQ(sum_of(last, &PartitionReport::rebuilds), 0U) << "no rebuild finished";
    EXPECT_GE(sum_of(last, &PartitionReport::restores_cancelled), 1U);
  }
  EXPECT_EQ(committed_offsets(broker, "stopped-restore", "events"), committed_before) << "something was committed";
  ServiceThread next(config, broker);
  ASSERT_TRUE(next.wait_until_consumed(100)) << "consumed " << next.snapshot().consumed;
  const ServiceSnapshot snapshot = next.snapshot();
  ASSERT_TRUE(next.stop());
  EXPECT_EQ(snapshot.duplicates, 50U);
  expect_exact_answer(compare_with_exact_answer(broker, "events", "events-unique"));
}

}  // namespace
}  // namespace bloomgate::app
