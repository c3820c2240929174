// File: service_test_support.h
//
// What the service's end-to-end tests share: a service configuration tuned for the embedded broker, a
// producer of described events, reading a topic back in full, the Service running on a thread of its
// own with a stop flag, the committed offsets of a group, steady load from a producer thread, temporary
// directories (a fresh state directory for every service_config()), and the real binary as a child process.
//
// Every wait is bounded (kWaitLimit or less): without a broker, or with a service that never stops, a
// test fails instead of hanging. Broken test plumbing (a produce that fails, a topic that cannot be
// read in time) throws std::runtime_error, which gtest reports as a failure of the test.
//
// Timing of the librdkafka 2.0.2 mock group coordinator (tests/connectors/kafka_test_support.h): the
// first join of an empty group waits 3 s, so every service run takes at least that long to start
// consuming; session.timeout.ms=4000 keeps a 1 s margin on it.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "bloomgate/app/service.h"
#include "bloomgate/app/service_workers.h"
#include "bloomgate/app/source_header.h"
#include "bloomgate/app/temporary_directory.h"
#include "bloomgate/config/config.h"
#include "bloomgate/connectors/admin.h"
#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/kafka_config.h"
#include "bloomgate/connectors/producer.h"
#include "bloomgate/connectors/topic_partition.h"
#include "../support/poll_until.h"
#include "test_broker.h"

extern char** environ;  // NOLINT: POSIX, for posix_spawn

namespace bloomgate::app::test_support {

using bloomgate::test_support::poll_until;  // every wait of the tests is one of these

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Generous for the loaded 2-core CI machine; a healthy run needs a fraction of it.
inline constexpr std::chrono::seconds kWaitLimit{30};
inline constexpr std::chrono::seconds kRequestTimeout{5};  // one metadata, watermark or offset question

// librdkafka properties that make group joins, rebalances and fetches quick on the mock cluster; the
// consumer-only ones carry the `consumer.` prefix of kafka.properties, so the producer is not given them.
inline std::map<std::string, std::string> fast_client_properties() {
  return {{"consumer.session.timeout.ms", "4000"},  {"consumer.heartbeat.interval.ms", "200"},
          {"consumer.fetch.wait.max.ms", "20"},     {"topic.metadata.refresh.interval.ms", "1000"},
          {"reconnect.backoff.ms", "50"},           {"reconnect.backoff.max.ms", "500"}};
}

// The test's own clients: quick fetches and reconnects, the group timeouts left at librdkafka's defaults.
inline connectors::KafkaConfig client_config(const TestBroker& broker) {
  connectors::KafkaConfig config;
  config.with("bootstrap.servers", broker.bootstrap_servers());
  for (const auto& [name, value] : fast_client_properties()) {
    if (name == "consumer.fetch.wait.max.ms") {
      config.with("fetch.wait.max.ms", value);
    } else if (name.rfind("consumer.", 0) != 0) {
      config.with(name, value);
    }
  }
  return config;
}

// ---- configuration ---------------------------------------------------------------------------------

// A directory of this test process's own under the system's temporary directory, removed with all
// that is in it when the process exits; every service_config() gets a fresh state directory in it, so
// tests running at the same time never share (or lock each other out of) one.
class TestDirectories {
 public:
  static TestDirectories& instance() {
    static TestDirectories directories;
    return directories;
  }

  // A path inside the root that does not exist yet ("<name>-<n>").
  std::string fresh(const std::string& name) { return root_.path(name + "-" + std::to_string(next_.fetch_add(1))); }

 private:
  TestDirectories() : root_("bloomgate-test") {}

  app::TemporaryDirectory root_;
  std::atomic<int> next_{0};
};

// A pipeline keyed by the message key, forwarding to `output` with event time and no refresh.
inline config::PipelineSettings pipeline(std::string name, std::string input, std::string output,
                                         config::Duration ttl) {
  config::PipelineSettings settings;
  settings.name = std::move(name);
  settings.inputs = {std::move(input)};
  settings.output = std::move(output);
  settings.ttl = ttl;
  settings.filter.expected_per_ttl = 10'000;
  return settings;
}

inline config::Config service_config(const TestBroker& broker, std::string group_id,
                                     std::vector<config::PipelineSettings> pipelines) {
  config::Config config;
  config.kafka.brokers = broker.bootstrap_servers();
  config.kafka.group_id = std::move(group_id);
  config.kafka.properties = fast_client_properties();
  config.workers = 1;  // tests of several workers say so
  config.state.dir = TestDirectories::instance().fresh("state");
  config.state.checkpoint_interval = 200ms;
  config.shutdown.grace_period = 5s;
  config.metrics.listen = "127.0.0.1:0";
  config.pipelines = std::move(pipelines);
  return config;
}

inline void create_topics(TestBroker& broker, const std::vector<std::string>& topics, int partitions) {
  for (const std::string& topic : topics) {
    if (auto error = broker.create_topic(topic, partitions); !error.ok()) {
      throw std::runtime_error("create_topic " + topic + ": " + error.message());
    }
  }
}

// ---- records ---------------------------------------------------------------------------------------

using Header = std::pair<std::string, std::optional<std::string>>;  // a null value is not an empty one

// An event to produce.
struct Event {
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<Header> headers;
  std::int64_t timestamp_ms = 0;  // 0: the producer stamps the current time
  std::int32_t partition = connectors::kAnyPartition;
};

// An event keyed `key`, partitioned by it, stamped by the producer.
inline Event keyed(std::string key, std::string value, std::vector<Header> headers = {}) {
  return {std::move(key), std::move(value), std::move(headers), 0, connectors::kAnyPartition};
}

// Event times two hours back: every event is in the filters' past, whatever the machine's clock does (the
// event clock caps a timestamp beyond processing time + 1 min).
inline std::int64_t past_start_ms() {
  const auto now = std::chrono::system_clock::now() - std::chrono::hours(2);
  return std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
}

// A record as read back from a topic.
struct Record {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<Header> headers;
  std::int64_t timestamp_ms = -1;

  // The value of the last header called `name`; nothing when absent or null.
  std::optional<std::string> header(std::string_view name) const {
    for (auto it = headers.rbegin(); it != headers.rend(); ++it) {
      if (it->first == name) return it->second;
    }
    return std::nullopt;
  }
};

inline std::optional<std::string> owned(std::optional<std::string_view> view) {
  return view ? std::optional<std::string>(*view) : std::nullopt;
}

inline Record to_record(const connectors::ConsumedMessage& message) {
  Record record{std::string(message.topic()), message.partition(), message.offset(), owned(message.key()),
                owned(message.value()), {}, message.timestamp_ms().value_or(-1)};
  for (const auto& header : message.headers()) record.headers.emplace_back(std::string(header.name), owned(header.value));
  return record;
}

// Where a record the service wrote came from: its bloomgate.source header.
struct Source {
  std::string topic;
  std::int32_t partition = -1;
  std::int64_t offset = -1;
  friend auto operator<=>(const Source&, const Source&) = default;
};

inline Source source_of(const Record& record) {
  const std::optional<std::string> text = record.header(headers::kSource);
  const std::optional<SourcePosition> source = text ? parse_source(*text) : std::nullopt;
  if (!source) return {};
  return {std::string(source->topic), source->partition, source->offset};
}

inline Source position_of(const Record& record) { return {record.topic, record.partition, record.offset}; }

// ---- producing -------------------------------------------------------------------------------------

class EventProducer {
 public:
  explicit EventProducer(const TestBroker& broker) : producer_(make(broker, failed_)) {}

  void produce(const std::string& topic, const Event& event) {
    std::vector<connectors::HeaderView> headers;
    for (const auto& [name, value] : event.headers) {
      headers.push_back({name, value ? std::optional<std::string_view>(*value) : std::nullopt});
    }
    connectors::OutgoingMessage message;
    message.partition = event.partition;
    if (event.key) message.key = *event.key;
    if (event.value) message.value = *event.value;
    message.headers = headers;
    message.timestamp_ms = event.timestamp_ms;
    if (auto error = producer_->produce(topic, message); !error.ok()) {
      throw std::runtime_error("producing to " + topic + ": " + error.message());
    }
  }

  void flush() {
    if (auto error = producer_->flush(kWaitLimit); !error.ok()) throw std::runtime_error("flush: " + error.message());
    if (failed_->load() != 0) throw std::runtime_error(std::to_string(failed_->load()) + " events were not delivered");
  }

 private:
  static std::unique_ptr<connectors::Producer> make(const TestBroker& broker,
                                                    const std::shared_ptr<std::atomic<int>>& failed) {
    connectors::ProducerOptions options;
    options.on_delivery = [failed](const connectors::DeliveryReport& report) {
      if (!report.error.ok()) ++*failed;
    };
    return std::make_unique<connectors::Producer>(client_config(broker).with("linger.ms", "5"), std::move(options));
  }

  std::shared_ptr<std::atomic<int>> failed_ = std::make_shared<std::atomic<int>>(0);
  std::unique_ptr<connectors::Producer> producer_;
};

inline void produce_all(const TestBroker& broker, const std::string& topic, const std::vector<Event>& events) {
  EventProducer producer(broker);
  for (const Event& event : events) producer.produce(topic, event);
  producer.flush();
}

// Produces `count` events with unique keys ("<prefix>-<i>") to every partition of `topic` (by key), at
// about `per_second`, on a thread of its own; join() waits for the last delivery.
class LoadProducer {
 public:
  LoadProducer(const TestBroker& broker, std::string topic, std::string prefix, int count, double per_second)
      : thread_([this, &broker, topic = std::move(topic), prefix = std::move(prefix), count, per_second] {
          try {
            run(broker, topic, prefix, count, per_second);
          } catch (const std::exception& e) {
            error_ = e.what();
          }
        }) {}
  ~LoadProducer() {
    if (thread_.joinable()) thread_.join();
  }
  LoadProducer(const LoadProducer&) = delete;
  LoadProducer& operator=(const LoadProducer&) = delete;

  // Empty when every event was delivered.
  std::string join() {
    thread_.join();
    return error_;
  }

 private:
  static void run(const TestBroker& broker, const std::string& topic, const std::string& prefix, int count,
                  double per_second) {
    EventProducer producer(broker);
    const auto start = Clock::now();
    for (int i = 0; i < count; ++i) {
      if (i % 100 == 0) {
        std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(i / per_second)));
      }
      const std::string key = prefix + "-" + std::to_string(i);
      producer.produce(topic, Event{key, "{\"n\":" + std::to_string(i) + "}", {}, 0, connectors::kAnyPartition});
    }
    producer.flush();
  }

  std::string error_;
  std::thread thread_;  // last: starts after error_ exists
};

// ---- reading back ----------------------------------------------------------------------------------

inline int partition_count(const TestBroker& broker, const std::string& topic) {
  const connectors::Admin admin(client_config(broker));
  const auto count = admin.partition_count(topic, kRequestTimeout);
  if (!count.ok()) throw std::runtime_error("partition count of " + topic + ": " + count.error().message());
  return count.value();
}

// The high watermark (next offset) of every partition of `topic`. The embedded broker keeps only the
// newest 5 MiB of a partition: a low watermark above 0 there means records were dropped, and fails here.
// A real broker deletes only by the retention a test sets.
inline std::map<std::int32_t, std::int64_t> end_offsets(const TestBroker& broker, const std::string& topic) {
  const connectors::Admin admin(client_config(broker));
  std::map<std::int32_t, std::int64_t> ends;
  for (std::int32_t partition = 0; partition < partition_count(broker, topic); ++partition) {
    const auto marks = admin.watermarks(topic, partition, kRequestTimeout);
    if (!marks.ok()) throw std::runtime_error("watermarks of " + topic + ": " + marks.error().message());
    if (!kOnRealKafka && marks.value().low != 0) throw std::runtime_error("the embedded broker dropped records of " + topic);
    ends[partition] = marks.value().high;
  }
  return ends;
}

inline std::int64_t total(const std::map<std::int32_t, std::int64_t>& per_partition) {
  std::int64_t sum = 0;
  for (const auto& [partition, count] : per_partition) sum += count;
  return sum;
}

// Every record of `topic` as it is now (all partitions, up to their high watermarks), ordered by
// (partition, offset), as a reader with `isolation` (read_committed: librdkafka's default) sees them.
// Partitions are assigned directly, so no group join is waited for. A partition is read to its end when
// the consumer's position reaches the high watermark: a transactional topic's last offsets can be commit
// or abort markers, which are never delivered.
inline std::vector<Record> read_topic(const TestBroker& broker, const std::string& topic,
                                      const std::string& isolation = "read_committed") {
  const std::map<std::int32_t, std::int64_t> ends = end_offsets(broker, topic);
  std::vector<Record> records;
  connectors::TopicPartitions assignment;
  for (const auto& [partition, end] : ends) {
    // From offset 0, which end_offsets() checked is still stored: an explicit offset starts fetching at
    // once, where "beginning" would first ask for it (half a second on the mock cluster).
    if (end > 0) assignment.push_back({topic, partition, 0, {}, {}});
  }
  if (assignment.empty()) return records;
  connectors::ConsumerOptions options;
  options.group_id = "reader-of-" + topic;
  connectors::Consumer consumer(client_config(broker).with("isolation.level", isolation), std::move(options));
  const connectors::PartitionListHandle list = connectors::to_partition_list(assignment);
  if (auto error = connectors::KafkaError::from_error_object(
          rd_kafka_incremental_assign(consumer.native_handle(), list.get()), "assign");
      !error.ok()) {
    throw std::runtime_error("reading " + topic + ": " + error.message());
  }
  const auto unread = [&] {
    const connectors::PartitionListHandle positions = connectors::to_partition_list(assignment);
    rd_kafka_position(consumer.native_handle(), positions.get());
    for (int i = 0; i < positions->cnt; ++i) {
      if (positions->elems[i].offset < ends.at(positions->elems[i].partition)) return true;
    }
    return false;
  };
  // A real broker's topic can hold millions of records: 20,000 a second is a tenth of a loaded machine's pace.
  const auto read_one = [&] {
    const auto message = consumer.poll(50ms);
    if (!message || !message->error().ok() || message->offset() >= ends.at(message->partition())) return;
    records.push_back(to_record(*message));
  };
  if (!poll_until([&] { return !unread(); }, kWaitLimit + std::chrono::seconds(total(ends) / 20'000), read_one)) {
    throw std::runtime_error("reading " + topic + ": " + std::to_string(records.size()) + " of " +
                             std::to_string(total(ends)) + " records within the time limit");
  }
  (void)consumer.close();
  std::sort(records.begin(), records.end(),
            [](const Record& a, const Record& b) { return position_of(a) < position_of(b); });
  return records;
}

// The offsets `group_id` has committed for each partition of `topic` (0 where it has committed none).
inline std::map<std::int32_t, std::int64_t> committed_offsets(const TestBroker& broker, const std::string& group_id,
                                                              const std::string& topic) {
  connectors::TopicPartitions partitions;
  for (std::int32_t partition = 0; partition < partition_count(broker, topic); ++partition) {
    partitions.push_back({topic, partition, connectors::kNoOffset, {}, {}});
  }
  connectors::ConsumerOptions options;
  options.group_id = group_id;  // asks the coordinator; never subscribes, so never joins the group
  const connectors::Consumer consumer(client_config(broker), std::move(options));
  const auto committed = consumer.committed(partitions, kRequestTimeout);
  if (!committed.ok()) throw std::runtime_error("committed offsets: " + committed.error().message());
  std::map<std::int32_t, std::int64_t> offsets;
  for (const auto& entry : committed.value()) offsets[entry.partition] = std::max<std::int64_t>(entry.offset, 0);
  return offsets;
}

// ---- running the service ---------------------------------------------------------------------------

// Service::run on a thread of its own, stopped through a std::atomic<bool> like SIGTERM does. If the
// service does not stop within the limit the thread is left behind (it owns what it uses) and the test
// fails instead of hanging.
class ServiceThread {
 public:
  // `customize` may set further options (hooks) before the service is built.
  ServiceThread(config::Config config, const TestBroker& broker,
                const std::function<void(ServiceOptions&)>& customize = {})
      : state_(std::make_shared<State>()) {
    ServiceOptions options;
    options.bootstrap_servers = broker.bootstrap_servers();
    options.stop = &state_->stop;
    options.snapshot_interval = 50ms;
    if (customize) customize(options);
    state_->service = std::make_unique<ServiceWorkers>(std::move(config), std::move(options));
    std::packaged_task<RunResult()> task([state = state_] { return state->service->run(); });
    result_ = task.get_future();
    thread_ = std::thread(std::move(task));
  }
  ~ServiceThread() {
    if (thread_.joinable()) (void)stop();
  }
  ServiceThread(const ServiceThread&) = delete;
  ServiceThread& operator=(const ServiceThread&) = delete;

  ServiceSnapshot snapshot() const { return state_->service->snapshot(); }
  const ServiceWorkers& service() const { return *state_->service; }

  // True once the service has consumed at least `events`; false if it stopped first or time ran out.
  bool wait_until_consumed(std::uint64_t events, std::chrono::milliseconds limit = kWaitLimit) const {
    return wait_until([events](const ServiceSnapshot& s) { return s.consumed >= events; }, limit);
  }

  // True once a snapshot satisfies `condition`; false if the service stopped first or time ran out.
  bool wait_until(const std::function<bool(const ServiceSnapshot&)>& condition,
                  std::chrono::milliseconds limit = kWaitLimit) const {
    bool stopped = false;
    poll_until([&] { return stopped || condition(snapshot()); }, limit,
               [&] { stopped = result_.wait_for(20ms) == std::future_status::ready; });
    return condition(snapshot());
  }

  // Waits for run() to return by itself; nothing if it did not within the limit.
  std::optional<RunResult> wait_for_exit(std::chrono::milliseconds limit = kWaitLimit) {
    if (!thread_.joinable()) return std::nullopt;
    if (result_.wait_for(limit) != std::future_status::ready) {
      thread_.detach();
      return std::nullopt;
    }
    thread_.join();
    return result_.get();
  }

  // Requests a graceful stop and waits for run() to return.
  std::optional<RunResult> stop(std::chrono::milliseconds limit = kWaitLimit) {
    state_->stop.store(true);
    return wait_for_exit(limit);
  }

 private:
  struct State {
    std::atomic<bool> stop{false};
    std::unique_ptr<ServiceWorkers> service;
  };

  std::shared_ptr<State> state_;
  std::future<RunResult> result_;
  std::thread thread_;
};

// "exit 0" or "exit 1: why", for assertion messages.
inline std::string describe(const std::optional<RunResult>& result) {
  if (!result) return "run() did not return within the time limit";
  return "exit " + std::to_string(result->exit_code) + (result->error.empty() ? "" : ": " + result->error);
}

// Runs the service on `config` until it has consumed `events`, then stops it: exit 0 expected.
inline void run_until_consumed(const TestBroker& broker, config::Config config, std::uint64_t events) {
  ServiceThread service(std::move(config), broker);
  EXPECT_TRUE(service.wait_until_consumed(events)) << "consumed " << service.snapshot().consumed << " of " << events;
  const std::optional<RunResult> result = service.stop();
  ASSERT_TRUE(result && result->exit_code == 0) << describe(result);
}

// ---- the real binary ------------------------------------------------------------------------------

// A temporary directory for one test's files, removed with everything in it.
class TempDir : public app::TemporaryDirectory {
 public:
  TempDir() : TemporaryDirectory("bloomgate-e2e") {}

  // Writes `text` to a file inside it and returns the file's path.
  std::string file(const std::string& name, const std::string& text = {}) const {
    const std::string file_path = path(name);
    std::ofstream(file_path) << text;
    return file_path;
  }
};

// The YAML of a `bloomgate run` config up to `pipelines:` (test brokers, fast client settings, short
// checkpoint interval and grace period, any free metrics port); callers append their pipelines.
// The name of a test instance with `param.param` workers: OneWorker, 2Workers.
inline std::string workers_name(const ::testing::TestParamInfo<std::uint32_t>& param) {
  return param.param == 1 ? std::string("OneWorker") : std::to_string(param.param) + "Workers";
}

inline std::string run_config_head(const std::string& brokers, const std::string& group_id, const std::string& state_dir,
                                   std::uint32_t workers = 1) {
  std::string yaml = "workers: " + std::to_string(workers) + "\nkafka:\n  brokers: " + brokers +
                     "\n  group_id: " + group_id + "\n  properties:\n";
  for (const auto& [name, value] : fast_client_properties()) yaml += "    " + name + ": \"" + value + "\"\n";
  return yaml + "state:\n  dir: " + state_dir + R"(
  checkpoint_interval: 200ms
metrics:
  listen: 127.0.0.1:0
shutdown:
  grace_period: 5s
pipelines:
)";
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `bloomgate run --config FILE` (or any other command) as a child process, its stdout and stderr in files.
class BloomgateProcess {
 public:
  BloomgateProcess(const std::string& config_path, std::string stdout_path, std::string stderr_path)
      : BloomgateProcess(std::vector<std::string>{"run", "--config", config_path}, std::move(stdout_path),
                         std::move(stderr_path)) {}

  // `bloomgate ARGS...`
  BloomgateProcess(std::vector<std::string> command, std::string stdout_path, std::string stderr_path)
      : stdout_path_(std::move(stdout_path)), stderr_path_(std::move(stderr_path)) {
    std::vector<std::string> args{BLOOMGATE_BINARY};
    args.insert(args.end(), command.begin(), command.end());
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int error = posix_spawn(&pid_, BLOOMGATE_BINARY, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0) throw std::runtime_error("posix_spawn " + std::string(BLOOMGATE_BINARY) + " failed");
  }
  ~BloomgateProcess() {
    if (pid_ > 0) (void)wait(0ms);  // kills it if it still runs
  }
  BloomgateProcess(const BloomgateProcess&) = delete;
  BloomgateProcess& operator=(const BloomgateProcess&) = delete;

  void signal(int number) const { ::kill(pid_, number); }

  // The exit code once it exits, or nothing if it did not within the limit (then it is killed with
  // SIGKILL) or was killed by a signal.
  std::optional<int> wait(std::chrono::milliseconds limit) {
    int status = 0;
    if (!poll_until([&] { return waitpid(pid_, &status, WNOHANG) != 0; }, limit, 20ms)) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      pid_ = -1;
      return std::nullopt;
    }
    pid_ = -1;
    return WIFEXITED(status) ? std::optional<int>(WEXITSTATUS(status)) : std::nullopt;
  }

  std::string output() const { return read_file(stdout_path_) + read_file(stderr_path_); }
  std::string error_output() const { return read_file(stderr_path_); }

 private:
  std::string stdout_path_;
  std::string stderr_path_;
  pid_t pid_ = -1;
};


// Waits until the output topic holds at least `records`; false if it does not within the limit.
inline bool wait_for_output(const TestBroker& broker, const std::string& topic, std::int64_t records) {
  return poll_until([&] { return total(end_offsets(broker, topic)) >= records; }, kWaitLimit);
}

}  // namespace bloomgate::app::test_support
