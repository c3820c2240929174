// The service writes its state topic, and an instance without that state restores from it, end to end
// (docs/state.md, "Where a partition's state comes from"): a restore from what the real broker's
// compaction kept, a member killed with -9 whose state directory is then deleted, and a scale-out from 1
// to 3 instances and back to 1, each new instance with a fresh state directory. Each checks the exact
// answer and where each restored partition's state came from.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "state_test_support.h"
#include "state_topic_restore.h"
#include "state_topic_test_support.h"

namespace bloomgate::app {
namespace {

using namespace test_support;

// Partitions of `snapshot` whose state came from `source` (bloomgate_restores_total{source}, per partition).
std::uint64_t restored_from(const ServiceSnapshot& snapshot, RestoreSource source) {
  std::uint64_t restores = 0;
  for (const PartitionReport& partition : snapshot.partitions) {
    restores += partition.restores_by_source[static_cast<std::size_t>(source)];
  }
  return restores;
}

// Runs a Service on `config` while `keys` arrive in batches of 20, one batch every 300 ms, so that the
// checkpoints of its short interval supersede one another; stopped once it has consumed them all.
void run_wave(const TestBroker& broker, const config::Config& config, const std::vector<std::string>& keys,
              std::int64_t first_ms) {
  ServiceThread service(config, broker);
  const std::vector<Event> events = keyed_events(keys, first_ms);
  for (std::size_t at = 0; at < events.size(); at += 20) {
    const auto end = events.begin() + static_cast<std::ptrdiff_t>(std::min(at + 20, events.size()));
    produce_all(broker, "orders", std::vector<Event>(events.begin() + static_cast<std::ptrdiff_t>(at), end));
    std::this_thread::sleep_for(300ms);
  }
  ASSERT_TRUE(service.wait_until_consumed(keys.size())) << "consumed " << service.snapshot().consumed << " of " << keys.size();
  const std::optional<RunResult> result = service.stop();
  ASSERT_TRUE(result && result->exit_code == 0) << describe(result);
}

// What the state topic holds, read from the beginning: its records, the keys held more than once (a
// superseded checkpoint's records) and the tombstones. Keys outside the service's (test/...) are left out.
struct StateTopicContents {
  std::size_t records = 0;
  std::size_t superseded = 0;
  std::size_t tombstones = 0;
};

StateTopicContents state_topic_contents(const TestBroker& broker) {
  StateTopicContents contents;
  std::set<std::pair<std::int32_t, std::string>> keys;
  for (const Record& record : read_topic(broker, kStateTopic)) {
    if (!record.key || record.key->starts_with("test/")) continue;
    ++contents.records;
    contents.superseded += keys.emplace(record.partition, *record.key).second ? 0U : 1U;
    contents.tombstones += record.value ? 0U : 1U;
  }
  return contents;
}

// Waits (bounded) until compaction has run to completion on every state partition: no key held twice.
// Tombstones are not waited for: Kafka removes one only in a later cleaning, delete.retention.ms after the
// cleaning that kept it, and nothing here makes the log dirty enough for one. Kafka never cleans a partition's active segment, so each round produces a record
// under a key the restore ignores (test/segment-roll-P), which rolls the segment (segment.ms=100) and
// leaves the checkpoints' records in cleanable ones.
bool wait_until_compacted(const TestBroker& broker, StateTopicContents& contents, std::chrono::seconds limit) {
  int round = 0;
  const auto roll_and_read = [&] {
    std::vector<Event> rolls;
    for (std::int32_t p = 0; p < kPartitions; ++p) {
      rolls.push_back({"test/segment-roll-" + std::to_string(p), std::to_string(round), {}, 0, p});
    }
    ++round;
    produce_all(broker, kStateTopic, rolls);
    contents = state_topic_contents(broker);
  };
  const auto compacted = [&] { return contents.superseded == 0; };
  const auto step = [&] {
    std::this_thread::sleep_for(1s);
    roll_and_read();
  };
  return poll_until(compacted, limit, step);
}

// Topic configs under which the real broker compacts within seconds: segments roll after 100 ms, a log
// with 1% of superseded records is cleaned, and a later cleaning may drop tombstones 100 ms after one kept them.
const std::map<std::string, std::string> kQuickCompaction = {{"cleanup.policy", "compact"},
                                                             {"segment.ms", "100"},
                                                             {"min.cleanable.dirty.ratio", "0.01"},
                                                             {"delete.retention.ms", "100"}};

TEST(StateTopicRestore, AFreshInstanceRestoresFromWhatCompactionKept) {
  SKIP_ON_EMBEDDED_BROKER("the embedded broker does not compact");
  TestBroker broker;
  create_topics(broker, {"orders", "orders-unique"}, kPartitions);
  ASSERT_TRUE(create_topic_with_configs(broker, kStateTopic, kPartitions, kQuickCompaction).ok());
  config::Config first = service_config(broker, "state-topic-compacted", {orders_pipeline()});
  first.state.topic = kStateTopic;
  first.state.checkpoint_interval = 300ms;
  const std::int64_t start = past_start_ms();
  // Three waves of 100 new keys, each with repeats of the wave before (keys early-0 .. early-299 in all).
  for (int wave = 0; wave < 3; ++wave) {
    std::vector<std::string> keys = numbered_keys("early", wave * 100, wave * 100 + 100);
    const std::vector<std::string> repeats = numbered_keys("early", std::max(0, wave - 1) * 100, std::max(0, wave - 1) * 100 + 20);
    if (wave > 0) keys.insert(keys.end(), repeats.begin(), repeats.end());
    run_wave(broker, first, keys, start + wave * 10'000);
  }
  StateTopicContents contents = state_topic_contents(broker);
  std::cout << "before compaction: " << contents.records << " records, " << contents.superseded << " superseded, "
            << contents.tombstones << " tombstones" << std::endl;
  ASSERT_GT(contents.superseded, 0U) << "the waves wrote no checkpoint over another";
  ASSERT_GT(contents.tombstones, 0U) << "the waves wrote no tombstone";
  const std::size_t written = contents.records;
  const auto waited_from = Clock::now();
  ASSERT_TRUE(wait_until_compacted(broker, contents, 60s)) << contents.superseded << " superseded records left";
  std::cout << "compacted in " << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - waited_from).count()
            << " ms: " << contents.records << " of " << written << " records kept, " << contents.tombstones
            << " of them tombstones" << std::endl;

  config::Config second = first;
  second.state.dir = TestDirectories::instance().fresh("state");
  const SecondRun run = run_with_repeats(broker, second, start);
  EXPECT_EQ(restores(run, "state_topic"), kPartitions) << run.scrape << run.log;
  EXPECT_EQ(restores(run, "rebuild"), 0) << run.scrape;
  EXPECT_EQ(occurrences(run.log, "(source state_topic)"), static_cast<std::size_t>(kPartitions)) << run.log;
  EXPECT_EQ(sum_of(run.snapshot, &PartitionReport::rebuild_events), 0U) << "nothing was rebuilt from the input";
  EXPECT_EQ(run.snapshot.duplicates, 150U) << "repeats of keys seen by the first instance must be dropped";
  EXPECT_EQ(run.snapshot.forwarded, 150U);
  expect_exact_answer(compare_with_exact_answer(broker, "orders", "orders-unique"));
}

// The YAML of `bloomgate run` on orders -> orders-unique with state.topic, in `group`, on `state_dir`.
std::string state_topic_run_yaml(const TestBroker& broker, const std::string& group, const std::string& state_dir,
                                 std::uint64_t expected_per_ttl) {
  std::string yaml = run_config_head(broker.bootstrap_servers(), group, state_dir);
  yaml.replace(yaml.find("state:\n"), 7, "state:\n  topic: " + kStateTopic + "\n");
  return yaml + orders_pipeline_yaml(expected_per_ttl);
}

// On the real broker the service creates the state topic itself (compacted); the embedded broker has no
// CreateTopics, so the test creates it there.
void create_service_topics(TestBroker& broker) {
  create_topics(broker, {"orders", "orders-unique"}, kPartitions);
  if (!kOnRealKafka) create_topics(broker, {kStateTopic}, kPartitions);
}

// Waits until `group` has committed every partition of `topic` past its first offset.
bool wait_until_committed(const TestBroker& broker, const std::string& group, const std::string& topic) {
  const auto committed_everywhere = [&] {
    try {
      const auto offsets = committed_offsets(broker, group, topic);
      return offsets.size() == static_cast<std::size_t>(kPartitions) &&
             std::all_of(offsets.begin(), offsets.end(), [](const auto& offset) { return offset.second > 0; });
    } catch (const std::runtime_error&) {
      return false;  // the coordinator is still loading or moving: ask again
    }
  };
  return poll_until(committed_everywhere, kWaitLimit, 200ms);
}

// Small on the embedded broker, whose 5 MB a partition must hold the state topic's current checkpoints.
constexpr int kStreamEvents = on_broker(6'000, 60'000);
constexpr double kStreamEventsPerSecond = kStreamEvents / 20.0;

TEST(StateTopicRestore, AMemberKilledWhoseStateDirectoryIsDeletedRestoresFromTheStateTopic) {
  TestBroker broker;
  create_service_topics(broker);
  const std::vector<Event> events = repeating_stream(kStateTopicKillSeed, kStreamEvents, kRepeatShare);
  const TempDir dir;
  const std::string state_dir = dir.path("state");
  const std::string yaml = dir.file(
      "bloomgate.yaml", state_topic_run_yaml(broker, "state-topic-kill", state_dir, static_cast<std::uint64_t>(kStreamEvents)));
  std::string log;
  {
    PacedProducer producer(broker, "orders", events, kStreamEventsPerSecond);
    {
      BloomgateProcess killed(yaml, dir.file("stdout-killed"), dir.file("stderr-killed"));
      // Killed once every partition was committed, so its checkpoint is in the state topic, and 500 output
      // records later, past that checkpoint.
      ASSERT_TRUE(wait_until_committed(broker, "state-topic-kill", "orders")) << killed.output();
      if (!kill_at_output(killed, broker, "orders-unique", total(end_offsets(broker, "orders-unique")) + 500)) return;
    }
    std::filesystem::remove_all(state_dir);  // the volume is lost with the member
    BloomgateProcess restarted(yaml, dir.file("stdout-restarted"), dir.file("stderr-restarted"));
    ASSERT_EQ(producer.join(), "");
    const bool finished = wait_until_committed_to_end(broker, "state-topic-kill", "orders", 60s);
    restarted.signal(SIGTERM);
    const std::optional<int> exit_code = restarted.wait(kWaitLimit);
    log = restarted.error_output();
    ASSERT_TRUE(finished) << "the restarted member did not commit the whole input:\n" << log;
    ASSERT_EQ(exit_code, std::optional<int>(0)) << log;
  }
  EXPECT_EQ(occurrences(log, "(source state_topic)"), static_cast<std::size_t>(kPartitions)) << log;
  EXPECT_EQ(occurrences(log, "cannot be used"), 0U) << log;
  EXPECT_EQ(occurrences(log, "holds no checkpoint"), 0U) << log;
  std::cout << reconciled_in_log(log) << " events found already delivered by the restarted member" << std::endl;
  expect_exact_answer(compare_with_exact_answer(broker, "orders", "orders-unique"));
}

// Partitions of `snapshot` assigned to the instance.
std::size_t owned(const ServiceSnapshot& snapshot) {
  return static_cast<std::size_t>(std::count_if(snapshot.partitions.begin(), snapshot.partitions.end(),
                                                [](const PartitionReport& p) { return p.assigned; }));
}

// Running with at least one partition, every assigned one restored and consuming.
bool settled(const ServiceSnapshot& snapshot) {
  return snapshot.running && snapshot.partitions_restoring == 0 && owned(snapshot) > 0;
}

// The offset the instance of `snapshot` last committed for `partition` (-1 before a commit).
std::int64_t committed(const ServiceSnapshot& snapshot, std::int32_t partition) {
  for (const PartitionReport& report : snapshot.partitions) {
    if (report.partition == partition) return report.committed_offset;
  }
  return -1;
}

// Each partition assigned in `snapshot` was committed past where `before` last committed it: its
// checkpoint in the state topic is ahead of the one `before` holds locally.
bool committed_past(const ServiceSnapshot& snapshot, const ServiceSnapshot& before) {
  return std::all_of(snapshot.partitions.begin(), snapshot.partitions.end(), [&](const PartitionReport& p) {
    return !p.assigned || p.committed_offset > committed(before, p.partition);
  });
}

// Each partition `instance` owns consumed events and was then committed past them: its checkpoint in the state
// topic is ahead of the one the first instance keeps locally (written when it revoked the partition).
bool commits_past_its_start(ServiceThread& instance) {
  std::map<std::int32_t, std::int64_t> consumed_to;
  const bool consumed = instance.wait_until([&](const ServiceSnapshot& s) {
    consumed_to.clear();
    for (const PartitionReport& p : s.partitions) {
      if (!p.assigned) continue;
      if (p.consumed == 0) return false;
      consumed_to[p.partition] = p.next_offset;
    }
    return !consumed_to.empty();
  });
  return consumed && instance.wait_until([&](const ServiceSnapshot& s) {
    return std::all_of(s.partitions.begin(), s.partitions.end(), [&](const PartitionReport& p) {
      const auto to = consumed_to.find(p.partition);
      return !p.assigned || to == consumed_to.end() || p.committed_offset >= to->second;
    });
  });
}

// Scale-out from 1 to 3 instances and back to 1 while events flow, each new instance with a fresh state
// directory: the partitions that move to the new instances come from the state topic, and so do those
// that move back (the first instance's local checkpoints of them are behind what the others committed).
// The scale test's stream lasts twice as long on the embedded broker, whose coordinator waits seconds in every
// rebalance round: the stream must outlast the rounds that spread the partitions
// (docs/decisions/commits-during-rebalances.md).
constexpr double kScaleEventsPerSecond = kStreamEvents / on_broker(40.0, 20.0);

TEST(StateTopicRestore, ScalingFromOneToThreeInstancesAndBackRestoresTheMovedPartitionsFromTheStateTopic) {
  TestBroker broker;
  create_service_topics(broker);
  const std::vector<Event> events = repeating_stream(kStateTopicScaleSeed, kStreamEvents, kRepeatShare);
  config::Config config = service_config(broker, "state-topic-scale", {orders_pipeline()});
  config.state.topic = kStateTopic;
  config.pipelines.front().filter.expected_per_ttl = static_cast<std::uint64_t>(kStreamEvents);
  const auto fresh_instance = [&] {
    config::Config instance = config;
    instance.state.dir = TestDirectories::instance().fresh("state");
    return instance;
  };
  ServiceThread first(config, broker);
  ASSERT_TRUE(first.wait_until(settled));
  PacedProducer producer(broker, "orders", events, kScaleEventsPerSecond);
  // Every partition has a checkpoint in the state topic before any moves.
  const ServiceSnapshot none;
  ASSERT_TRUE(first.wait_until([&](const ServiceSnapshot& s) { return owned(s) == kPartitions && committed_past(s, none); }));
  ServiceSnapshot second_last, third_last;
  std::size_t moved_out = 0;
  {
    ServiceThread second(fresh_instance(), broker);
    ServiceThread third(fresh_instance(), broker);
    const auto spread = [&] {
      const ServiceSnapshot a = first.snapshot(), b = second.snapshot(), c = third.snapshot();
      return settled(a) && settled(b) && settled(c) && owned(a) + owned(b) + owned(c) == kPartitions;
    };
    ASSERT_TRUE(poll_until(spread, kWaitLimit)) << "the three instances never split the partitions";
    moved_out = owned(second.snapshot()) + owned(third.snapshot());
    ASSERT_TRUE(commits_past_its_start(second)) << "the second instance committed none of its partitions";
    ASSERT_TRUE(commits_past_its_start(third)) << "the third instance committed none of its partitions";
    ASSERT_FALSE(producer.done()) << "the stream ended before the scale-in";
    for (ServiceThread* instance : {&second, &third}) {
      const std::optional<RunResult> result = instance->stop();
      ASSERT_TRUE(result && result->exit_code == 0) << describe(result);
    }
    second_last = second.snapshot();
    third_last = third.snapshot();
  }
  ASSERT_EQ(producer.join(), "");
  ASSERT_TRUE(wait_until_committed_to_end(broker, "state-topic-scale", "orders", 60s));
  ASSERT_TRUE(first.wait_until([](const ServiceSnapshot& s) { return owned(s) == kPartitions && settled(s); }));
  const std::optional<RunResult> result = first.stop();
  ASSERT_TRUE(result && result->exit_code == 0) << describe(result);
  const ServiceSnapshot first_last = first.snapshot();

  std::cout << moved_out << " partitions moved out and back" << std::endl;
  EXPECT_EQ(restored_from(second_last, RestoreSource::kStateTopic) + restored_from(third_last, RestoreSource::kStateTopic),
            moved_out)
      << "each partition moved to a new instance came from the state topic";
  EXPECT_EQ(restored_from(first_last, RestoreSource::kStateTopic), moved_out)
      << "each partition moved back came from the state topic";
  // The first instance may restore its own partitions from its local checkpoints (a rebalance that
  // took them away and gave them back); the new ones have none.
  EXPECT_EQ(restored_from(second_last, RestoreSource::kLocal) + restored_from(third_last, RestoreSource::kLocal), 0U);
  for (const ServiceSnapshot* snapshot : std::array<const ServiceSnapshot*, 3>{&first_last, &second_last, &third_last}) {
    EXPECT_EQ(restored_from(*snapshot, RestoreSource::kRebuild), 0U);
    EXPECT_EQ(sum_of(*snapshot, &PartitionReport::rebuild_events), 0U) << "nothing was rebuilt from the input";
  }
  expect_exact_answer(compare_with_exact_answer(broker, "orders", "orders-unique"));
}

}  // namespace
}  // namespace bloomgate::app
