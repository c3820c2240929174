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
// StateTopicTakeover runs the service with state.topic itself, the write side and the read side together:
// a fresh instance takes over what it wrote. state_topic_scaling_test.cc goes on from there (compaction,
// a member killed with -9, scaling out and back).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <sstream>

#include "bloomgate/connectors/state_store.h"
#include "bloomgate/connectors/state_topic_records.h"
#include "state_test_support.h"
#include "state_topic_restore.h"
#include "state_topic_test_support.h"

namespace bloomgate::app {
namespace {

using namespace test_support;

// Small chunks, so that each slice record is several of them and a chunk can go missing in the middle.
constexpr std::size_t kChunkBytes = 256;

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
