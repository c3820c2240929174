// The service's life cycle end to end, against an embedded broker over TCP loopback: start-up checks that
// refuse to start before anything is consumed, a graceful stop under load that commits exactly what it
// wrote (on a thread and as the real binary, by SIGTERM), and a bad config that stops the binary with exit
// 2 before it contacts any broker. Every wait is bounded.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>  // after rdkafka.h

#include <optional>
#include <string>
#include <vector>

#include "service_test_support.h"

namespace bloomgate::app {
namespace {

using namespace test_support;

// Start-up checks fail before anything is consumed: run() returned exit 1 with `expected` in its message,
// no offset was committed and nothing was written to the input or any of `untouched`.
void expect_refused_start(const TestBroker& broker, const config::Config& config, ServiceThread& service,
                          const std::vector<std::string>& expected, const std::vector<std::string>& untouched) {
  const std::optional<RunResult> result = service.wait_for_exit();
  ASSERT_TRUE(result && result->exit_code == kExitServiceFailed) << describe(result);
  for (const std::string& fragment : expected) EXPECT_NE(result->error.find(fragment), std::string::npos) << result->error;
  EXPECT_EQ(service.snapshot().consumed, 0U);
  EXPECT_EQ(total(committed_offsets(broker, config.kafka.group_id, "in")), 0);
  EXPECT_EQ(total(end_offsets(broker, "in")), 3);
  for (const std::string& topic : untouched) EXPECT_EQ(total(end_offsets(broker, topic)), 0) << topic;
}

// Input "in" (4 partitions, 3 events), dead-letter "dlq", and output "out" with `output_partitions`, or
// missing when 0.
config::Config start_up_check_config(TestBroker& broker, const std::string& group, int output_partitions) {
  create_topics(broker, {"in", "dlq"}, 4);
  if (output_partitions > 0) {
    create_topics(broker, {"out"}, output_partitions);
  } else {
    // The 2.0.2 mock cluster creates any topic a Metadata request names, whatever the client's
    // allow.auto.create.topics says (tests/connectors/produce_consume_test.cc), so a missing topic is
    // simulated: the broker answers UNKNOWN_TOPIC_OR_PART for it, as a real one does for a topic it lacks.
    rd_kafka_mock_topic_set_error(broker.native_cluster(), "out", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
  }
  produce_all(broker, "in", {keyed("a", "1"), keyed("b", "2"), keyed("c", "3")});
  config::PipelineSettings settings = pipeline("checked", "in", "out", 1h);
  settings.dead_letter = "dlq";
  return service_config(broker, group, {settings});
}

TEST(ServiceEndToEnd, RefusesToStartWithoutItsOutputTopic) {
  TestBroker broker;
  const config::Config config = start_up_check_config(broker, "missing-output", 0);
  ServiceThread service(config, broker);
  expect_refused_start(broker, config, service, {"output topic out"}, {"dlq"});
}

TEST(ServiceEndToEnd, RefusesToStartWhenTheOutputHasFewerPartitionsThanTheInput) {
  TestBroker broker;
  const config::Config config = start_up_check_config(broker, "too-few-partitions", 2);
  ServiceThread service(config, broker);
  expect_refused_start(broker, config, service, {"output topic out has 2 partitions", "the 4 of input in"},
                       {"out", "dlq"});
}

// Checks that the records written for `input` name each offset in [0, end) of each partition exactly
// once, and nothing else.
void expect_each_offset_once(const std::vector<Record>& written, const std::string& input,
                             const std::map<std::int32_t, std::int64_t>& end) {
  std::map<Source, int> times;
  std::size_t outside = 0;
  for (const Record& record : written) {
    const Source source = source_of(record);
    const auto limit = end.find(source.partition);
    if (source.topic != input || limit == end.end() || source.offset < 0 || source.offset >= limit->second) ++outside;
    else ++times[source];
  }
  std::size_t twice = 0;
  for (const auto& [source, count] : times) twice += count > 1 ? 1 : 0;
  EXPECT_EQ(outside, 0U) << "records naming an offset at or beyond the end (the committed offset)";
  EXPECT_EQ(twice, 0U) << "input offsets written more than once";
  EXPECT_EQ(static_cast<std::int64_t>(times.size()), total(end)) << "input offsets below the end not written";
}

constexpr int kWarmUpEvents = 100;
constexpr int kLoadEvents = 20'000;   // over ~2 s, across 4 partitions
constexpr double kLoadPerSecond = 10'000;
constexpr int kStopAfter = 6'000;     // consumed (or written) before the stop is requested: mid-stream

// Creates "stream" and "stream-unique" (4 partitions each) with kWarmUpEvents in "stream", and returns
// the pipeline between them (run_config_yaml() says the same in YAML). Every key is unique and the error
// rate tiny, so no event is dropped as a false positive: every event is forwarded.
config::PipelineSettings prepare_unique_stream(TestBroker& broker) {
  create_topics(broker, {"stream", "stream-unique"}, 4);
  config::PipelineSettings settings = pipeline("unique", "stream", "stream-unique", 1h);
  settings.filter.error_rate = 1e-9;
  settings.filter.expected_per_ttl = 20'000;
  std::vector<Event> warm_up;
  for (int i = 0; i < kWarmUpEvents; ++i) warm_up.push_back(keyed("warm-" + std::to_string(i), "w"));
  produce_all(broker, "stream", warm_up);
  return settings;
}

TEST(ServiceEndToEnd, GracefulStopUnderLoadCommitsExactlyWhatItWroteAndARestartResumesThere) {
  TestBroker broker;
  const config::Config config = service_config(broker, "graceful", {prepare_unique_stream(broker)});
  {
    ServiceThread service(config, broker);
    ASSERT_TRUE(service.wait_until_consumed(kWarmUpEvents)) << "the service never started consuming";
    LoadProducer load(broker, "stream", "load", kLoadEvents, kLoadPerSecond);
    EXPECT_TRUE(service.wait_until_consumed(kWarmUpEvents + kStopAfter));
    const std::optional<RunResult> result = service.stop();
    EXPECT_EQ(load.join(), "");
    ASSERT_TRUE(result && result->exit_code == 0) << describe(result);
  }
  const auto committed = committed_offsets(broker, "graceful", "stream");
  const auto end = end_offsets(broker, "stream");
  ASSERT_EQ(total(end), kWarmUpEvents + kLoadEvents);
  ASSERT_LT(total(committed), total(end)) << "the stop came after the whole stream: nothing left for the restart";
  expect_each_offset_once(read_topic(broker, "stream-unique"), "stream", committed);

  const std::uint64_t rest = static_cast<std::uint64_t>(total(end) - total(committed));
  run_until_consumed(broker, config, rest);
  expect_each_offset_once(read_topic(broker, "stream-unique"), "stream", end);
}

// ---- the real binary ---------------------------------------------------------------------------------------

std::string run_config_yaml(const std::string& brokers, const std::string& group_id, const std::string& state_dir) {
  return run_config_head(brokers, group_id, state_dir) + R"(  - name: unique
    input: [stream]
    output: stream-unique
    key: { from: message_key }
    ttl: 1h
    filter: { error_rate: 1e-9, expected_per_ttl: 20000 }
)";
}

TEST(BloomgateBinary, SigtermStopsGracefullyWithEveryCommittedEventWrittenOnce) {
  TestBroker broker;
  prepare_unique_stream(broker);
  const TempDir dir;
  BloomgateProcess bloomgate(dir.file("bloomgate.yaml", run_config_yaml(broker.bootstrap_servers(), "sigterm", dir.path("state"))),
                             dir.file("stdout"), dir.file("stderr"));
  ASSERT_TRUE(wait_for_output(broker, "stream-unique", kWarmUpEvents)) << bloomgate.output();
  {
    LoadProducer load(broker, "stream", "load", kLoadEvents, kLoadPerSecond);
    EXPECT_TRUE(wait_for_output(broker, "stream-unique", kWarmUpEvents + kStopAfter));
    bloomgate.signal(SIGTERM);
    const std::optional<int> exit_code = bloomgate.wait(kWaitLimit);
    EXPECT_EQ(load.join(), "");
    ASSERT_EQ(exit_code, std::optional<int>(0)) << bloomgate.output();
  }
  const auto committed = committed_offsets(broker, "sigterm", "stream");
  EXPECT_LT(total(committed), kWarmUpEvents + kLoadEvents) << "the stop came after the whole stream";
  expect_each_offset_once(read_topic(broker, "stream-unique"), "stream", committed);
}

// SIGHUP (a closed terminal, a supervisor's hang-up) stops the service as SIGTERM does: what it forwarded
// is committed, it exits 0 and its last line says why it stopped. Its default action would end the
// process at once, without either.
TEST(BloomgateBinary, SighupStopsGracefullyAsSigtermDoes) {
  TestBroker broker;
  prepare_unique_stream(broker);
  const TempDir dir;
  BloomgateProcess bloomgate(dir.file("bloomgate.yaml", run_config_yaml(broker.bootstrap_servers(), "sighup", dir.path("state"))),
                             dir.file("stdout"), dir.file("stderr"));
  ASSERT_TRUE(wait_for_output(broker, "stream-unique", kWarmUpEvents)) << bloomgate.output();
  bloomgate.signal(SIGHUP);
  ASSERT_EQ(bloomgate.wait(kWaitLimit), std::optional<int>(0)) << bloomgate.output();
  EXPECT_NE(bloomgate.error_output().find("dead-lettered 0; on SIGHUP"), std::string::npos) << bloomgate.output();
  EXPECT_EQ(total(committed_offsets(broker, "sighup", "stream")), kWarmUpEvents) << bloomgate.output();
}

// A TCP socket listening on 127.0.0.1, standing in for a broker: it never accepts, so any connection
// attempt stays pending on it.
class LoopbackListener {
 public:
  LoopbackListener() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    auto* generic = reinterpret_cast<sockaddr*>(&address);  // NOLINT: the sockets API
    if (fd_ < 0 || bind(fd_, generic, length) != 0 || listen(fd_, 8) != 0 || getsockname(fd_, generic, &length) != 0) {
      throw std::runtime_error("cannot listen on 127.0.0.1");
    }
    port_ = ntohs(address.sin_port);
  }
  ~LoopbackListener() {
    if (fd_ >= 0) close(fd_);
  }
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  bool connection_pending() const {
    pollfd pending{fd_, POLLIN, 0};
    return poll(&pending, 1, 0) != 0;
  }

 private:
  int fd_;
  std::uint16_t port_ = 0;
};

TEST(BloomgateBinary, BadConfigExitsTwoNamingTheKeyAndLineWithoutContactingTheBroker) {
  const LoopbackListener broker;
  const std::string brokers = broker.address();
  const TempDir dir;
  const std::string yaml = "kafka:\n  brokers: " + brokers + R"(
pipelines:
  - name: orders
    input: [orders]
    output: orders-unique
    key: { from: message_key }
    ttl: 10m
    tll: 5m
)";
  const std::string config_path = dir.file("bad.yaml", yaml);
  BloomgateProcess bloomgate(config_path, dir.file("stdout"), dir.file("stderr"));
  EXPECT_EQ(bloomgate.wait(kWaitLimit), std::optional<int>(2)) << bloomgate.output();
  const std::string stderr_text = bloomgate.error_output();
  EXPECT_NE(stderr_text.find(config_path + ":9:5: pipelines[0].tll: unknown key"), std::string::npos) << stderr_text;
  EXPECT_FALSE(broker.connection_pending()) << "bloomgate connected to the broker address";
}

}  // namespace
}  // namespace bloomgate::app
