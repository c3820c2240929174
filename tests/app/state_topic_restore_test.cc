// Where a partition's state comes from (docs/state.md, "Where a partition's state comes from"), end to end
// on the embedded broker: a Service that stopped cleanly leaves its checkpoints in its state directory;
// the test publishes them to a state topic with StateTopicWriter, as the service's write side does (whole,
// chunked, manifest last), and starts a Service with a FRESH state directory and state.topic set:
//   - it restores every partition from the state topic: repeats of keys seen before are dropped, nothing
//     is forwarded twice, /metrics counts bloomgate_restores_total{source="state_topic"} once per
//     partition, the log says so, and the local store then holds the checkpoint and its restore note;
//   - a missing chunk, a truncated chunk, a corrupt byte or a damaged manifest of one partition: that
//     partition falls back to the rebuild from the input (source="rebuild"), the log names the reason, and
//     nothing is lost or forwarded twice;
//   - a local checkpoint that is current wins (source="local") although the state topic holds one; one
//     behind the group's commit loses to the state topic's further checkpoint.
// Where the test makes the state topic's contents, the write side is another part of the service.
// StateTopicTakeover and the three tests after it run the service with state.topic itself, the write side
// and the read side together: a fresh instance taking over, and a restore from what the real broker's compaction kept, a member killed with -9 whose
// state directory is then deleted, and a scale-out from 1 to 3 instances and back to 1. Each checks the
// exact answer and where each restored partition's state came from.
#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <functional>
#include <iostream>
#include <mutex>
#include <sstream>

#include "../support/http_client.h"
#include "bloomgate/app/service_metrics.h"
#include "bloomgate/connectors/state_store.h"
#include "bloomgate/connectors/state_topic_records.h"
#include "state_test_support.h"
#include "state_topic_restore.h"

namespace bloomgate::app {
namespace {

using namespace test_support;

constexpr int kPartitions = 4;
const std::string kStateTopic = "bloomgate-state";
// Small chunks, so that each slice record is several of them and a chunk can go missing in the middle.
constexpr std::size_t kChunkBytes = 256;

// Lines the service logs while it lives (spdlog's default logger, which the in-process Service uses).
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<Sink>()) { spdlog::default_logger()->sinks().push_back(sink_); }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string text() const { return sink_->text(); }

 private:
  class Sink final : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::string text() {
      const std::lock_guard lock(mutex_);
      return lines_;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& message) override {
      spdlog::memory_buf_t line;
      formatter_->format(message, line);
      lines_.append(line.data(), line.size());
    }
    void flush_() override {}

   private:
    std::string lines_;
  };

  std::shared_ptr<Sink> sink_;
};

// Topics orders -> orders-unique and the state topic, 4 partitions each; a service in `group` without a
// state topic (the one that writes the checkpoints the test publishes).
config::Config first_service(TestBroker& broker, const std::string& group) {
  create_topics(broker, {"orders", "orders-unique", kStateTopic}, kPartitions);
  return service_config(broker, group, {orders_pipeline()});
}

// Runs a Service until it has consumed `events`, then stops it gracefully.
void run_until_stopped(const TestBroker& broker, const config::Config& config, std::uint64_t events) {
  ServiceThread service(config, broker);
  ASSERT_TRUE(service.wait_until_consumed(events)) << "consumed " << service.snapshot().consumed << " of " << events;
  const std::optional<RunResult> result = service.stop();
  ASSERT_TRUE(result && result->exit_code == 0) << describe(result);
}

// What a test does to one partition's records before they are produced.
using Damage = std::function<void(std::vector<connectors::StateTopicRecord>&)>;

// Publishes every checkpoint of the (closed) state directory `dir` to the state topic, as whole
// checkpoints of StateTopicWriter: the chunks, then the manifest. `damage` is applied to partition 0's.
void publish_checkpoints(const TestBroker& broker, const std::string& dir, const Damage& damage = {}) {
  const auto store = connectors::StateStore::open_read_only(dir);
  std::vector<Event> records;
  for (const connectors::PartitionCheckpoint& checkpoint : store->list()) {
    const auto stored = store->read(checkpoint.id);
    ASSERT_TRUE(stored.has_value());
    const auto filter = store->restore_filter(checkpoint.id, stored->filter_meta);
    connectors::StateTopicWriter writer(checkpoint.id, kChunkBytes);
    connectors::StateTopicPlan plan =
        writer.plan(checkpoint, filter->image(filters::ImageScope::kFull), checkpoint.written_at_ms);
    if (damage && checkpoint.id.partition == 0) damage(plan.records);
    for (connectors::StateTopicRecord& record : plan.records) {
      records.push_back({std::move(record.key), std::move(record.value), {}, 0,
                         connectors::state_topic_partition(checkpoint.id)});
    }
  }
  ASSERT_FALSE(records.empty()) << "the first service wrote no checkpoint";
  produce_all(broker, kStateTopic, records);
}

// The sum of the samples of `metric` whose labels include `label` (e.g. source="state_topic").
double sum_of_samples(const std::string& scrape, const std::string& metric, const std::string& label) {
  double sum = 0;
  std::istringstream lines(scrape);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(metric + "{", 0) != 0 || line.find(label) == std::string::npos) continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

struct SecondRun {
  ServiceSnapshot snapshot;
  std::string scrape;  // /metrics, scraped over HTTP before the stop
  std::string log;
};

// A Service on `config` while 150 repeats of the first run's keys and 150 new keys arrive; stopped once
// it has consumed them.
SecondRun run_with_repeats(const TestBroker& broker, const config::Config& config, std::int64_t start_ms) {
  std::vector<std::string> keys = numbered_keys("early", 0, 150);
  const std::vector<std::string> fresh = numbered_keys("late", 0, 150);
  keys.insert(keys.end(), fresh.begin(), fresh.end());
  produce_all(broker, "orders", keyed_events(keys, start_ms + 60'000));
  LogCapture log;
  SecondRun run;
  ServiceThread service(config, broker);
  const ServiceEndpoints endpoints(service.service(), config, config.metrics.listen);
  const std::string address = endpoints.address();
  const auto port = static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
  EXPECT_TRUE(service.wait_until_consumed(300)) << "consumed " << service.snapshot().consumed << " of 300";
  run.scrape = bloomgate::testing::http_request(port, "/metrics").body;
  const std::optional<RunResult> result = service.stop();
  EXPECT_TRUE(result && result->exit_code == 0) << describe(result);
  run.snapshot = service.snapshot();
  run.log = log.text();
  return run;
}

double restores(const SecondRun& run, const std::string& source) {
  return sum_of_samples(run.scrape, "bloomgate_restores_total", "source=\"" + source + "\"");
}

// Where the store says each partition's state came from at its last restore.
std::vector<std::string> noted_sources(const std::string& dir) {
  const auto store = connectors::StateStore::open_read_only(dir);
  std::vector<std::string> sources;
  for (std::int32_t p = 0; p < kPartitions; ++p) {
    const auto note = store->read_restore_note({"orders", p});
    sources.push_back(note ? note->source : "none");
  }
  return sources;
}

TEST(StateTopicRestore, AFreshStateDirectoryRestoresEveryPartitionFromTheStateTopic) {
  SKIP_ON_REAL_KAFKA("the state topic is made by the test here; the real broker's compaction is another test's");
  TestBroker broker;
  const config::Config first = first_service(broker, "state-topic");
  const std::int64_t start = past_start_ms();
  produce_all(broker, "orders", keyed_events(numbered_keys("early", 0, 300), start));
  run_until_stopped(broker, first, 300);
  publish_checkpoints(broker, first.state.dir);

  config::Config second = first;
  second.state.dir = TestDirectories::instance().fresh("state");
  second.state.topic = kStateTopic;
  const SecondRun run = run_with_repeats(broker, second, start);
  EXPECT_EQ(run.snapshot.duplicates, 150U) << "repeats of keys seen by the first service must be dropped";
  EXPECT_EQ(run.snapshot.forwarded, 150U);
  EXPECT_EQ(restores(run, "state_topic"), kPartitions) << run.scrape;
  EXPECT_EQ(restores(run, "rebuild"), 0) << run.scrape;
  EXPECT_EQ(restores(run, "local"), 0) << run.scrape;
  const double bytes = sum_of_samples(run.scrape, "bloomgate_state_topic_read_bytes_total", "partition=");
  const double seconds = sum_of_samples(run.scrape, "bloomgate_state_topic_read_seconds_total", "partition=");
  EXPECT_GT(bytes, 0) << run.scrape;
  EXPECT_GT(seconds, 0) << run.scrape;
  std::cout << "read " << bytes << " bytes of the state topic in " << seconds << " s for " << kPartitions
            << " partitions" << std::endl;
  EXPECT_EQ(sum_of(run.snapshot, &PartitionReport::rebuild_events), 0U) << "nothing was rebuilt from the input";
  EXPECT_EQ(occurrences(run.log, "restored from the state topic's checkpoint"), static_cast<std::size_t>(kPartitions))
      << run.log;
  EXPECT_EQ(occurrences(run.log, "(source state_topic)"), static_cast<std::size_t>(kPartitions)) << run.log;
  expect_exact_answer(compare_with_exact_answer(broker, "orders", "orders-unique"));

  // The restore wrote the local checkpoint, so the next start here is local, and noted where it came from.
  EXPECT_EQ(noted_sources(second.state.dir), std::vector<std::string>(static_cast<std::size_t>(kPartitions), "state_topic"));
  const auto store = connectors::StateStore::open_read_only(second.state.dir);
  EXPECT_EQ(store->list().size(), static_cast<std::size_t>(kPartitions));
}

// Both sides of the service together: an instance with state.topic writes its checkpoints there itself,
// and an instance with a fresh state directory (a moved pod, a lost volume) takes over from them, in
// at_least_once and in exactly_once (where the records went through the transactions).
class StateTopicTakeover : public ::testing::TestWithParam<config::Guarantee> {};

// On the real broker (the kafka tier) the service creates the state topic itself, compacted; the embedded
// broker has no CreateTopics, so the test creates it there.
TEST_P(StateTopicTakeover, AFreshInstanceRestoresWhatTheServiceWroteToItsStateTopic) {
  TestBroker broker;
  create_topics(broker, {"orders", "orders-unique"}, kPartitions);
  if (!kOnRealKafka) create_topics(broker, {kStateTopic}, kPartitions);
  config::Config first = service_config(broker, "state-topic-takeover", {orders_pipeline()});
  first.state.topic = kStateTopic;
  first.kafka.guarantee = GetParam();
  if (GetParam() == config::Guarantee::kExactlyOnce) first.kafka.instance_name = "takeover";
  const std::int64_t start = past_start_ms();
  produce_all(broker, "orders", keyed_events(numbered_keys("early", 0, 300), start));
  run_until_stopped(broker, first, 300);

  config::Config second = first;
  second.state.dir = TestDirectories::instance().fresh("state");
  const SecondRun run = run_with_repeats(broker, second, start);
  EXPECT_EQ(run.snapshot.duplicates, 150U) << "repeats of keys seen by the first instance must be dropped";
  EXPECT_EQ(run.snapshot.forwarded, 150U);
  EXPECT_EQ(restores(run, "state_topic"), kPartitions) << run.scrape << run.log;
  EXPECT_EQ(restores(run, "rebuild"), 0) << run.scrape;
  EXPECT_EQ(sum_of(run.snapshot, &PartitionReport::rebuild_events), 0U) << "nothing was rebuilt from the input";
  expect_exact_answer(compare_with_exact_answer(broker, "orders", "orders-unique"));
}

INSTANTIATE_TEST_SUITE_P(StateTopicRestore, StateTopicTakeover,
                         ::testing::Values(config::Guarantee::kAtLeastOnce, config::Guarantee::kExactlyOnce),
                         [](const auto& param_info) {
                           return std::string(param_info.param == config::Guarantee::kAtLeastOnce ? "AtLeastOnce"
                                                                                            : "ExactlyOnce");
                         });

// ---- the service writes its state topic, and an instance without that state restores from it ----

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

// Scale-out from 1 to 3 instances and back to 1 while events flow, each new instance with a fresh state
// directory: the partitions that move to the new instances come from the state topic, and so do those
// that move back (the first instance's local checkpoints of them are behind what the others committed).
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
  PacedProducer producer(broker, "orders", events, kStreamEventsPerSecond);
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
    const ServiceSnapshot handed_over = first.snapshot();
    moved_out = owned(second.snapshot()) + owned(third.snapshot());
    const auto ahead = [&](const ServiceSnapshot& s) { return committed_past(s, handed_over); };
    ASSERT_TRUE(second.wait_until(ahead)) << "the second instance committed none of its partitions";
    ASSERT_TRUE(third.wait_until(ahead)) << "the third instance committed none of its partitions";
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

TEST(StateTopicRestore, ACurrentLocalCheckpointWinsOverTheStateTopic) {
  SKIP_ON_REAL_KAFKA("the source decision, whatever the broker");
  TestBroker broker;
  config::Config config = first_service(broker, "state-topic-local");
  const std::int64_t start = past_start_ms();
  produce_all(broker, "orders", keyed_events(numbered_keys("early", 0, 300), start));
  run_until_stopped(broker, config, 300);
  publish_checkpoints(broker, config.state.dir);

  config.state.topic = kStateTopic;  // the same state directory: its checkpoints are at the group's commits
  const SecondRun run = run_with_repeats(broker, config, start);
  EXPECT_EQ(run.snapshot.duplicates, 150U);
  EXPECT_EQ(restores(run, "local"), kPartitions) << run.scrape;
  EXPECT_EQ(restores(run, "state_topic"), 0) << run.scrape;
  EXPECT_EQ(sum_of_samples(run.scrape, "bloomgate_state_topic_read_bytes_total", "partition="), 0)
      << "a current local checkpoint needs no read of the state topic\n"
      << run.scrape;
  EXPECT_EQ(occurrences(run.log, "(source local)"), static_cast<std::size_t>(kPartitions)) << run.log;
  expect_exact_answer(compare_with_exact_answer(broker, "orders", "orders-unique"));
  EXPECT_EQ(noted_sources(config.state.dir), std::vector<std::string>(static_cast<std::size_t>(kPartitions), "local"));
}

// A local checkpoint behind the group's commit (a copy of the state directory from before the last run
// elsewhere) is not current: the state topic's checkpoint, further ahead, wins, and the local one is
// replaced by it, so the keys of the run the local directory missed are dropped as repeats.
TEST(StateTopicRestore, ALocalCheckpointBehindTheCommitLosesToTheStateTopicsFurtherOne) {
  SKIP_ON_REAL_KAFKA("the source decision, whatever the broker");
  TestBroker broker;
  const config::Config config = first_service(broker, "state-topic-behind");
  const std::int64_t start = past_start_ms();
  produce_all(broker, "orders", keyed_events(numbered_keys("before", 0, 200), start));
  run_until_stopped(broker, config, 200);
  const std::string behind = TestDirectories::instance().fresh("state");
  std::filesystem::copy(config.state.dir, behind, std::filesystem::copy_options::recursive);
  produce_all(broker, "orders", keyed_events(numbered_keys("early", 0, 300), start + 10'000));
  run_until_stopped(broker, config, 300);  // the same directory: its checkpoints are now 300 records further
  publish_checkpoints(broker, config.state.dir);

  config::Config stale = config;
  stale.state.dir = behind;
  stale.state.topic = kStateTopic;
  const SecondRun run = run_with_repeats(broker, stale, start);
  EXPECT_EQ(restores(run, "state_topic"), kPartitions) << run.scrape;
  EXPECT_EQ(restores(run, "local"), 0) << run.scrape;
  EXPECT_EQ(run.snapshot.consumed, 300U) << "resumed at the state topic's checkpoint, not at the stale local one";
  EXPECT_EQ(run.snapshot.duplicates, 150U) << "keys the local directory never saw are repeats all the same";
  expect_exact_answer(compare_with_exact_answer(broker, "orders", "orders-unique"));
  EXPECT_EQ(noted_sources(behind), std::vector<std::string>(static_cast<std::size_t>(kPartitions), "state_topic"));
}

// Without a broker the read of the state topic ends, within its timeouts, as a gap naming what failed: the
// caller falls back to the rebuild (which fails the same way, and says so) instead of waiting.
TEST(StateTopicRestore, AReadWithoutABrokerEndsAsAGapWithinItsTimeouts) {
  SKIP_ON_REAL_KAFKA("a broker that refuses connections, which only the embedded one can do");
  TestBroker broker;
  create_topics(broker, {kStateTopic}, kPartitions);
  set_responsive(broker, false);
  SideReaderOptions options;
  options.config = client_config(broker);
  options.group_id = "state-reader-test";
  options.request_timeout = std::chrono::milliseconds(1'000);
  options.idle_timeout = std::chrono::milliseconds(1'000);
  const connectors::Admin admin(options.config);
  // Bounded by the read's own timeouts (ctest's TIMEOUT is the backstop).
  const std::optional<StateTopicRead> read = read_state_topic(kStateTopic, {"orders", 2}, admin, options);
  const auto* gap = std::get_if<connectors::StateTopicGap>(&read->result);
  ASSERT_NE(gap, nullptr) << "a checkpoint was read without a broker";
  EXPECT_NE(gap->reason.find(kStateTopic + "/2"), std::string::npos) << gap->reason;
  EXPECT_FALSE(read->held_nothing) << "a failed read is not an empty state topic";
  EXPECT_EQ(read->bytes, 0U);
  set_responsive(broker, true);
}

// ---- damaged state-topic records: partition 0 falls back to the rebuild ----

struct DamageCase {
  const char* name;
  Damage damage;
  const char* reason;  // in the log's warning
};

// The first chunk of a slice record (a record of several chunks): its index in `records`.
std::size_t first_slice_chunk(const std::vector<connectors::StateTopicRecord>& records) {
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (records[i].key.find("/s") != std::string::npos && records[i].key.ends_with("#1")) return i;
  }
  ADD_FAILURE() << "no slice of two chunks or more";
  return 0;
}

const DamageCase kDamages[] = {
    {"MissingChunk", [](auto& records) { records.erase(records.begin() + static_cast<std::ptrdiff_t>(first_slice_chunk(records))); },
     "is missing"},
    {"TruncatedChunk",
     [](auto& records) {
       auto& value = *records[first_slice_chunk(records)].value;
       value.resize(value.size() / 2);
     },
     "fails its checksum"},
    {"CorruptByte",
     [](auto& records) {
       char& byte = (*records[first_slice_chunk(records)].value)[40];  // in the payload, after the chunk header
       byte = static_cast<char>(byte ^ 0x20);
     },
     "fails its checksum"},
    {"DamagedManifest",
     [](auto& records) {
       char& byte = (*records.back().value)[20];  // the manifest is produced last
       byte = static_cast<char>(byte ^ 0x01);
     },
     "the state manifest fails its checksum"},
};

void PrintTo(const DamageCase& damage, std::ostream* out) { *out << damage.name; }

std::string damage_name(const ::testing::TestParamInfo<DamageCase>& damage) { return damage.param.name; }

class DamagedStateTopic : public ::testing::TestWithParam<DamageCase> {};

TEST_P(DamagedStateTopic, FallsBackToTheRebuildAndLosesNothing) {
  SKIP_ON_REAL_KAFKA("records damaged by the test, whatever the broker");
  TestBroker broker;
  const config::Config first = first_service(broker, std::string("state-topic-") + GetParam().name);
  const std::int64_t start = past_start_ms();
  produce_all(broker, "orders", keyed_events(numbered_keys("early", 0, 300), start));
  run_until_stopped(broker, first, 300);
  publish_checkpoints(broker, first.state.dir, GetParam().damage);

  config::Config second = first;
  second.state.dir = TestDirectories::instance().fresh("state");
  second.state.topic = kStateTopic;
  const SecondRun run = run_with_repeats(broker, second, start);
  EXPECT_EQ(restores(run, "rebuild"), 1) << "partition 0\n" << run.scrape;
  EXPECT_EQ(restores(run, "state_topic"), kPartitions - 1) << run.scrape;
  EXPECT_EQ(occurrences(run.log, "orders-0: the checkpoint in state topic " + kStateTopic + " cannot be used"), 1U)
      << run.log;
  EXPECT_NE(run.log.find(GetParam().reason), std::string::npos) << run.log;
  EXPECT_EQ(run.snapshot.duplicates, 150U) << "the rebuilt filter drops the repeats too";
  expect_exact_answer(compare_with_exact_answer(broker, "orders", "orders-unique"));
  const std::vector<std::string> sources = noted_sources(second.state.dir);
  EXPECT_EQ(sources.front(), "rebuild");
}

INSTANTIATE_TEST_SUITE_P(StateTopicRestore, DamagedStateTopic, ::testing::ValuesIn(kDamages),
                         damage_name);

}  // namespace
}  // namespace bloomgate::app
