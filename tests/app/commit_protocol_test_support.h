// File: commit_protocol_test_support.h
//
// What the tests of the two commit protocols share (periodic_checkpoints_test.cc, transactional_commits_test.cc):
// fakes of the producer, the consumer, the records in flight, the transactions and the state topic
// (app/src/commit_ports.h), and a fixture that runs one protocol over a real state store in a temporary
// directory. No broker, no sleep, no wall-clock pacing: time is what the test hands to tick(), and the
// checkpoint writer's thread is joined through settle().
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "bloomgate/app/temporary_directory.h"
#include "commit_protocol.h"
#include "partition_state.h"

namespace bloomgate::app::test_support {

using namespace std::chrono_literals;
using connectors::CommitMode;
using connectors::KafkaError;
using connectors::TopicPartition;
using connectors::TopicPartitions;

inline constexpr std::int64_t kT0 = 1'700'000'000'000;  // event time of offset 0, ms since the epoch

// The producer: a flush delivers every record in flight (FakeRecords), unless it is told to fail.
struct FakeOutput final : OutputQueue {
  KafkaError flush(std::chrono::milliseconds) override {
    ++flushes;
    if (!flush_error.ok()) return flush_error;
    if (on_flush) on_flush();
    return {};
  }
  int in_flight() const override { return 0; }

  int flushes = 0;
  KafkaError flush_error;
  std::function<void()> on_flush;
};

struct FakeInput final : InputPositions {
  KafkaError commit(const TopicPartitions& offsets, CommitMode) override {
    if (!commit_error.ok()) return commit_error;
    commits.push_back(offsets);
    return {};
  }
  KafkaError seek(const TopicPartitions& positions, std::chrono::milliseconds) override {
    seeks.push_back(positions);
    return {};
  }

  KafkaError commit_error;
  std::vector<TopicPartitions> commits;
  std::vector<TopicPartitions> seeks;
};

// Records in flight by epoch: produced() puts one in the current epoch, deliver_all() acknowledges them.
struct FakeRecords final : ProducedRecords {
  std::uint64_t seal_epoch() override { return epoch++; }
  bool delivered_through(std::uint64_t sealed) const override {
    return !oldest_in_flight || *oldest_in_flight > sealed;
  }
  std::int64_t output_offset(const PartitionWorker& worker) const override {
    return worker.progress.output_position(acked);
  }
  void produced() {
    if (!oldest_in_flight) oldest_in_flight = epoch;
    ++acked_pending;
  }
  void deliver_all() {
    oldest_in_flight.reset();
    acked += acked_pending;
    acked_pending = 0;
  }

  std::uint64_t epoch = 0;
  std::optional<std::uint64_t> oldest_in_flight;
  std::int64_t acked = -1;
  std::int64_t acked_pending = 0;
};

// What the transactions were asked, and the outcomes the test scripts for their commits.
struct TransactionLog {
  int begun = 0;
  int aborts = 0;
  std::vector<TopicPartitions> committed_offsets;
  std::deque<TransactionOutcome> outcomes;  // empty: kCommitted
};

struct FakeTransactions final : Transactions {
  explicit FakeTransactions(TransactionLog& transactions) : log(transactions) {}
  void init(Clock::time_point) override {}
  KafkaError ensure_open() override {
    if (!open) ++log.begun;
    open = true;
    return {};
  }
  bool is_open() const override { return open; }
  TransactionResult commit(const TopicPartitions& offsets, Clock::time_point) override {
    open = false;
    TransactionOutcome outcome = TransactionOutcome::kCommitted;
    if (!log.outcomes.empty()) {
      outcome = log.outcomes.front();
      log.outcomes.pop_front();
    }
    if (outcome == TransactionOutcome::kCommitted) log.committed_offsets.push_back(offsets);
    return {outcome, outcome == TransactionOutcome::kCommitted ? KafkaError{} : KafkaError::invalid_argument("scripted")};
  }
  TransactionResult abort(const KafkaError& why, Clock::time_point) override {
    open = false;
    ++log.aborts;
    return {TransactionOutcome::kAborted, why};
  }

  TransactionLog& log;
  bool open = false;
};

// The state topic: what each produce_acknowledged call was handed, by state partition, and how many offset
// commits had been sent when it answered; it fails while told to.
struct FakeStateTopic final : StateTopicSink {
  struct Call {
    std::int32_t partition = 0;
    std::vector<connectors::StateTopicRecord> records;
    std::size_t commits_before = 0;
  };
  KafkaError produce_acknowledged(std::int32_t partition, const std::vector<connectors::StateTopicRecord>& records,
                                  std::chrono::milliseconds, const std::atomic<bool>&) override {
    calls.push_back({partition, records, commits->size()});
    return error;
  }

  const std::vector<TopicPartitions>* commits = nullptr;
  KafkaError error;
  std::vector<Call> calls;
};

// exactly_once: the state topic's records as the transactional producer was handed them, with how many
// transactions had committed when each was produced.
struct FakeStateRecords final : TransactionalStateRecords {
  bool produce_state(std::int32_t partition, const connectors::StateTopicRecord& record) override {
    produced.push_back({partition, {record}, log->committed_offsets.size()});
    return true;
  }

  const TransactionLog* log = nullptr;
  std::vector<FakeStateTopic::Call> produced;
};

struct NoQuarantine final : StateEvents {
  void before_quarantine() override {}
};

inline config::Config config_for(config::Guarantee guarantee, const std::string& state_dir) {
  config::Config config;
  config.kafka.brokers = "127.0.0.1:9";  // never contacted: the fakes stand for the clients
  config.kafka.guarantee = guarantee;
  config.state.dir = state_dir;
  config.state.checkpoint_interval = 1s;
  config::PipelineSettings pipeline;
  pipeline.name = "orders";
  pipeline.inputs = {"orders"};
  pipeline.output = "orders-unique";
  pipeline.ttl = 10min;
  pipeline.filter.expected_per_ttl = 1000;
  config.pipelines.push_back(pipeline);
  return config;
}

class CommitProtocolTest {
 public:
  // With `state_topic`, the protocol's state topic is `state_topic_sink` (what it was handed, and its failures).
  explicit CommitProtocolTest(config::Guarantee guarantee, bool state_topic = false)
      : config_(config_for(guarantee, dir_.path("state"))) {
    directory_.open();
    state_.add_inputs({{"orders", 0}, {"orders", 1}});
    output.on_flush = [this] { records.deliver_all(); };
    auto owned_sink = std::make_unique<FakeStateTopic>();
    owned_sink->commits = &input.commits;
    state_topic_sink = owned_sink.get();
    CommitPorts ports{output, input, records, [this] { return std::make_unique<FakeTransactions>(transactions); }};
    state_records.log = &transactions;
    if (state_topic) {
      ports.make_state_topic = [sink = std::make_shared<std::unique_ptr<FakeStateTopic>>(std::move(owned_sink))] {
        return std::unique_ptr<StateTopicSink>(std::move(*sink));
      };
      ports.state_records = &state_records;
    }
    protocol_ = make_commit_protocol(context_, state_, std::move(ports));
    protocol_->start();
  }

  // The partition is assigned here, starting at `offset` without a checkpoint.
  PartitionWorker& assign(std::int32_t partition, std::int64_t offset) {
    const PartitionKey key("orders", partition);
    PartitionReport& report = state_.report_for(key);
    report.assigned = true;
    auto worker = std::make_unique<PartitionWorker>(*state_.pipelines().at("orders"), report);
    worker->progress.started_at(offset);
    worker->progress.needs_full_image();
    return state_.add(key, std::move(worker));
  }

  // The loop's handling of one event whose record is produced: decided, produced, processed.
  Outcome consume(PartitionWorker& worker, std::int64_t offset, const std::string& key) {
    worker.progress.decided();
    const Outcome outcome = decide_again(worker, offset, key);
    EXPECT_TRUE(protocol_->before_produce());
    records.produced();
    worker.progress.processed(offset);
    return outcome;
  }
  static Outcome decide_again(PartitionWorker& worker, std::int64_t offset, const std::string& key) {
    return worker.deduplicator.decide(EventView{key, "value", {}}, kT0 + offset).outcome;
  }

  // The periodic work once an interval has passed (each call a later interval).
  void interval_passed() {
    now_ += 2s;
    protocol_->tick(now_);
  }
  // What the store holds of the partition: its checkpoint's next offset, or -1.
  std::int64_t stored_offset(std::int32_t partition) {
    const auto stored = state_.store().read({"orders", partition});
    return stored ? stored->checkpoint.next_offset : -1;
  }

  CommitProtocol& protocol() { return *protocol_; }
  PartitionState& state() { return state_; }
  ServiceContext& context() { return context_; }

  FakeOutput output;
  FakeInput input;
  FakeRecords records;
  TransactionLog transactions;
  FakeStateTopic* state_topic_sink = nullptr;  // owned by the protocol once it has a state topic
  FakeStateRecords state_records;              // exactly_once's state topic

 private:
  TemporaryDirectory dir_{"commit-protocol"};
  config::Config config_;
  ServiceOptions options_;
  ServiceContext context_{config_, options_};
  NoQuarantine events_;
  StateDirectory directory_{config_, nullptr};
  PartitionState state_{context_, directory_, records, events_};
  std::unique_ptr<CommitProtocol> protocol_;
  Clock::time_point now_ = Clock::now();
};

inline std::vector<std::int64_t> offsets_of(const TopicPartitions& partitions) {
  std::vector<std::int64_t> offsets;
  for (const TopicPartition& partition : partitions) offsets.push_back(partition.offset);
  return offsets;
}

// What the state topic holds of partition `partition` after `calls`, read back as a restore would.
inline std::variant<connectors::StateTopicCheckpoint, connectors::StateTopicGap> read_back(
    const std::vector<FakeStateTopic::Call>& calls, std::int32_t partition) {
  connectors::StateTopicAssembler assembler({"orders", partition});
  for (const FakeStateTopic::Call& call : calls) {
    if (call.partition != partition) continue;
    for (const connectors::StateTopicRecord& record : call.records) {
      assembler.add(record.key, record.value ? std::optional<std::string_view>(*record.value) : std::nullopt);
    }
  }
  return assembler.finish();
}

}  // namespace bloomgate::app::test_support
