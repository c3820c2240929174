// state.topic on the embedded broker (docs/state.md, "State topic"): the service's checkpoints land in the
// state topic, one input partition per state partition, and read back whole as the checkpoint whose next
// offset the group committed, in at_least_once and in exactly_once; a state topic the service cannot use
// stops it at start-up (exit 2) before it consumes anything. The embedded broker never answers DescribeConfigs, so each start here waits
// kStateTopicPolicyWait for the cleanup.policy and goes on with a warning; the policy check itself runs on
// the real broker (real_kafka_test.cc).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "bloomgate/connectors/state_topic_records.h"
#include "bloomgate/filters/filter.h"
#include "service_test_support.h"

namespace bloomgate::app {
namespace {

using namespace test_support;

constexpr int kPartitions = 2;
constexpr int kEvents = 400;

// Input "in" and output "out" of kPartitions, the state topic "state" of `state_partitions`, and kEvents
// events in "in", every key different ("key-<i>").
config::Config state_topic_config(TestBroker& broker, const std::string& group, int state_partitions) {
  create_topics(broker, {"in", "out"}, kPartitions);
  create_topics(broker, {"state"}, state_partitions);
  std::vector<Event> events;
  for (int i = 0; i < kEvents; ++i) events.push_back(keyed("key-" + std::to_string(i), "v"));
  produce_all(broker, "in", events);
  config::Config config = service_config(broker, group, {pipeline("orders", "in", "out", std::chrono::hours(1))});
  config.state.topic = "state";
  return config;
}

// Partition `partition` of "in" as a restore reads it from the state topic.
std::variant<connectors::StateTopicCheckpoint, connectors::StateTopicGap> read_state(const std::vector<Record>& state,
                                                                                     std::int32_t partition) {
  connectors::StateTopicAssembler assembler({"in", partition});
  for (const Record& record : state) {
    if (record.partition != connectors::state_topic_partition({"in", partition}) || !record.key) continue;
    assembler.add(*record.key, record.value ? std::optional<std::string_view>(*record.value) : std::nullopt);
  }
  return assembler.finish();
}

// After a run and a clean stop, each input partition's state partition reads back as the checkpoint at
// its `committed` offset, with a filter that holds every key the service forwarded from it.
void expect_state_topic_holds_the_committed_checkpoints(const TestBroker& broker,
                                                        const std::map<std::int32_t, std::int64_t>& committed) {
  const std::vector<Record> forwarded = read_topic(broker, "out");
  const std::vector<Record> state = read_topic(broker, "state");
  ASSERT_FALSE(state.empty());
  for (std::int32_t partition = 0; partition < kPartitions; ++partition) {
    const auto read = read_state(state, partition);
    ASSERT_TRUE(std::holds_alternative<connectors::StateTopicCheckpoint>(read))
        << "in/" << partition << ": " << std::get<connectors::StateTopicGap>(read).reason;
    const connectors::StateTopicCheckpoint& checkpoint = std::get<connectors::StateTopicCheckpoint>(read);
    EXPECT_GT(committed.at(partition), 0) << "in/" << partition;
    EXPECT_EQ(checkpoint.manifest.checkpoint.next_offset, committed.at(partition)) << "in/" << partition;

    const std::unique_ptr<filters::Filter> filter =
        filters::restore(checkpoint.meta, [&](std::uint64_t id) -> std::optional<std::string> {
          const auto slice = checkpoint.slices.find(id);
          if (slice == checkpoint.slices.end()) return std::nullopt;
          return slice->second;
        });
    const filters::TimePoint now = filters::from_epoch_nanos(checkpoint.manifest.checkpoint.filter_time_ns);
    std::size_t keys = 0;
    for (const Record& record : forwarded) {
      if (record.partition != partition || !record.key) continue;
      ++keys;
      EXPECT_TRUE(filter->contains(*record.key, now)) << *record.key;
    }
    EXPECT_GT(keys, 0U) << "in/" << partition;
  }
}

TEST(StateTopic, TheServicesCheckpointsReadBackAsTheCommittedOnes) {
  TestBroker broker;
  const config::Config config = state_topic_config(broker, "state-topic-written", kPartitions);
  run_until_consumed(broker, config, kEvents);
  expect_state_topic_holds_the_committed_checkpoints(broker, committed_offsets(broker, "state-topic-written", "in"));
}

// exactly_once: the state records go into the transactions that commit the offsets they describe. The
// embedded broker stores no offsets sent to a transaction: the committed offsets are the service's own
// (its last committed transaction's, in its snapshot).
TEST(StateTopic, ExactlyOnceWritesTheCheckpointsInItsTransactions) {
  TestBroker broker;
  config::Config config = state_topic_config(broker, "state-topic-eos", kPartitions);
  config.kafka.guarantee = config::Guarantee::kExactlyOnce;
  config.kafka.instance_name = "state-topic-eos-member";
  ServiceThread service(config, broker);
  EXPECT_TRUE(service.wait_until_consumed(kEvents));
  const std::optional<RunResult> result = service.stop();
  ASSERT_TRUE(result && result->exit_code == 0) << describe(result);
  std::map<std::int32_t, std::int64_t> committed;
  for (const PartitionReport& partition : service.snapshot().partitions) {
    if (partition.topic == "in") committed[partition.partition] = partition.committed_offset;
  }
  expect_state_topic_holds_the_committed_checkpoints(broker, committed);
}

TEST(StateTopic, TooFewPartitionsStopsTheServiceWithExitTwoBeforeItConsumes) {
  TestBroker broker;
  const config::Config config = state_topic_config(broker, "state-topic-too-small", 1);
  ServiceThread service(config, broker);
  const std::optional<RunResult> result = service.wait_for_exit();
  ASSERT_TRUE(result && result->exit_code == kExitUsage) << describe(result);
  EXPECT_NE(result->error.find("state topic state has 1 partitions"), std::string::npos) << result->error;
  EXPECT_NE(result->error.find("fewer than the 2"), std::string::npos) << result->error;
  EXPECT_EQ(service.snapshot().consumed, 0U);
  EXPECT_EQ(total(committed_offsets(broker, "state-topic-too-small", "in")), 0);
  EXPECT_EQ(total(end_offsets(broker, "out")), 0);
  EXPECT_EQ(total(end_offsets(broker, "state")), 0);
}

}  // namespace
}  // namespace bloomgate::app
