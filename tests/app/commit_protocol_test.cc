// Both commit protocols (app/src/periodic_checkpoints.h, app/src/transactional_commits.h) against fakes of
// the producer, the consumer, the records in flight and the transactions (app/src/commit_ports.h), over a
// real state store in a temporary directory. No broker, no sleep, no wall-clock pacing: time is what the
// test hands to tick(), and the checkpoint writer's thread is joined through settle().
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

namespace bloomgate::app {
namespace {

using namespace std::chrono_literals;
using connectors::CommitMode;
using connectors::KafkaError;
using connectors::TopicPartition;
using connectors::TopicPartitions;

constexpr std::int64_t kT0 = 1'700'000'000'000;  // event time of offset 0, ms since the epoch

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

config::Config config_for(config::Guarantee guarantee, const std::string& state_dir) {
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

std::vector<std::int64_t> offsets_of(const TopicPartitions& partitions) {
  std::vector<std::int64_t> offsets;
  for (const TopicPartition& partition : partitions) offsets.push_back(partition.offset);
  return offsets;
}

// ---- at_least_once: periodic checkpoints --------------------------------------------------------------

// A checkpoint is written only once every record produced before its capture is acknowledged, and
// committed only once written.
TEST(PeriodicCheckpoints, ACaptureIsWrittenOnlyAfterItsRecordsAreDelivered) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.consume(worker, 1, "b");
  t.interval_passed();  // captured at offset 2, its records in flight
  t.interval_passed();
  // Without a flush the capture is dropped, never written (a writer it was handed to would be joined here).
  t.protocol().settle(/*may_flush=*/false);
  EXPECT_EQ(t.stored_offset(0), -1);
  EXPECT_EQ(worker.progress.checkpointed_offset(), -1);
  EXPECT_TRUE(t.input.commits.empty());

  t.records.deliver_all();
  t.interval_passed();                      // captured again, its records delivered: handed to the writer
  t.protocol().settle(/*may_flush=*/true);  // joins the writer
  EXPECT_EQ(t.stored_offset(0), 2);
  EXPECT_EQ(worker.progress.checkpointed_offset(), 2);
  EXPECT_TRUE(t.input.commits.empty());  // settle writes; the caller's checkpoint commits
}

// Events processed after the capture belong to the next checkpoint, even when their records are
// delivered before the capture is written.
TEST(PeriodicCheckpoints, EventsAfterTheCaptureAreNotInItsCheckpoint) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.consume(worker, 1, "b");
  t.interval_passed();  // captured at 2
  t.consume(worker, 2, "c");
  t.consume(worker, 3, "d");
  t.records.deliver_all();
  t.protocol().settle(/*may_flush=*/true);
  EXPECT_EQ(t.stored_offset(0), 2);
  EXPECT_TRUE(worker.progress.moved_since_checkpoint());

  const CheckpointResult result = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
  EXPECT_TRUE(result.committed);
  EXPECT_EQ(t.stored_offset(0), 4);
  ASSERT_EQ(t.input.commits.size(), 1U);
  EXPECT_EQ(offsets_of(t.input.commits[0]), (std::vector<std::int64_t>{4}));
  EXPECT_EQ(t.input.commits[0][0].metadata, "4");  // the checkpoint's output offset: 4 records acknowledged
}

// A flush that does not finish writes no state and commits nothing.
TEST(PeriodicCheckpoints, AFlushThatFailsWritesAndCommitsNothing) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.output.flush_error = KafkaError::invalid_argument("flush timed out");
  const CheckpointResult result = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
  EXPECT_FALSE(result.flushed);
  EXPECT_FALSE(result.committed);
  EXPECT_EQ(t.stored_offset(0), -1);
  EXPECT_TRUE(t.input.commits.empty());
}

// A commit that fails (or that Kafka refuses later) leaves the checkpoint to be committed again, without
// new events.
TEST(PeriodicCheckpoints, ACommitThatFailsIsSentAgainByTheNextCheckpoint) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.input.commit_error = KafkaError::invalid_argument("commit refused");
  CheckpointResult result = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
  EXPECT_TRUE(result.flushed);
  EXPECT_FALSE(result.committed);
  EXPECT_EQ(t.stored_offset(0), 1);  // written: a restart on this directory resumes here
  EXPECT_EQ(worker.progress.committed_offset(), connectors::kNoOffset);

  t.input.commit_error = {};
  result = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
  EXPECT_TRUE(result.committed);
  ASSERT_EQ(t.input.commits.size(), 1U);
  EXPECT_EQ(offsets_of(t.input.commits[0]), (std::vector<std::int64_t>{1}));

  // An asynchronous commit refused afterwards (here for a request that timed out) is sent again by the next
  // interval.
  t.protocol().commit_answered(KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT, "offset commit"), t.input.commits[0]);
  t.interval_passed();  // nothing moved: the capture only commits what Kafka does not have
  ASSERT_EQ(t.input.commits.size(), 2U);
  EXPECT_EQ(offsets_of(t.input.commits[1]), (std::vector<std::int64_t>{1}));
}

// A commit refused because the group rebalances holds the periodic commits back until the member's next
// assignment: one sent with the generation that is ending would be answered ILLEGAL_GENERATION, which makes
// librdkafka drop the whole assignment and rejoin (another rebalance). Commits a revocation or a stop
// makes are sent regardless.
TEST(PeriodicCheckpoints, ACommitRefusedForARebalanceWaitsForTheNextAssignment) {
  for (const rd_kafka_resp_err_t refusal :
       {RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS, RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION}) {
    CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
    PartitionWorker& worker = t.assign(0, 0);
    t.consume(worker, 0, "a");
    t.records.deliver_all();
    t.interval_passed();  // captured and handed to the writer
    t.protocol().settle(/*may_flush=*/true);
    t.interval_passed();  // written: committed
    ASSERT_EQ(t.input.commits.size(), 1U) << rd_kafka_err2name(refusal);
    t.protocol().commit_answered(KafkaError(refusal, "offset commit"), t.input.commits[0]);

    t.consume(worker, 1, "b");
    t.records.deliver_all();
    for (int interval = 0; interval < 3; ++interval) {
      t.interval_passed();
      t.protocol().settle(/*may_flush=*/true);
    }
    EXPECT_EQ(t.stored_offset(0), 2) << rd_kafka_err2name(refusal);  // checkpoints go on being written
    EXPECT_EQ(t.input.commits.size(), 1U) << rd_kafka_err2name(refusal);

    const CheckpointResult stop = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
    EXPECT_TRUE(stop.committed) << rd_kafka_err2name(refusal);
    ASSERT_EQ(t.input.commits.size(), 2U) << rd_kafka_err2name(refusal);
    t.protocol().commit_answered(KafkaError(refusal, "offset commit"), t.input.commits[1]);

    t.protocol().rebalance_done();
    t.interval_passed();
    ASSERT_EQ(t.input.commits.size(), 3U) << rd_kafka_err2name(refusal);
    EXPECT_EQ(offsets_of(t.input.commits[2]), (std::vector<std::int64_t>{2}));
  }
}

// A member that revoked or lost partitions rejoins: its periodic commits wait from then on, before any
// refusal, until its rebalance is done.
TEST(PeriodicCheckpoints, AMemberThatRejoinsHoldsItsCommitsUntilItsRebalanceIsDone) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.records.deliver_all();
  t.protocol().rebalancing();
  for (int interval = 0; interval < 3; ++interval) {
    t.interval_passed();
    t.protocol().settle(/*may_flush=*/true);
  }
  EXPECT_EQ(t.stored_offset(0), 1);
  EXPECT_TRUE(t.input.commits.empty());
  t.protocol().rebalance_done();
  t.interval_passed();
  ASSERT_EQ(t.input.commits.size(), 1U);
  EXPECT_EQ(offsets_of(t.input.commits[0]), (std::vector<std::int64_t>{1}));
}

// Without an assignment (a member whose rebalance ended in a way it did not see), the hold ends after
// kRebalanceCommitHold and the commit is sent.
TEST(PeriodicCheckpoints, AHeldCommitIsSentWhenTheHoldEndsWithoutAnAssignment) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  const CheckpointResult result = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
  ASSERT_TRUE(result.committed);
  t.protocol().commit_answered(KafkaError(RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS, "offset commit"),
                               t.input.commits[0]);
  std::size_t intervals = 0;
  while (t.input.commits.size() == 1 && intervals < 20) {
    t.interval_passed();  // 2 s each
    ++intervals;
  }
  ASSERT_EQ(t.input.commits.size(), 2U);
  EXPECT_EQ(offsets_of(t.input.commits[1]), (std::vector<std::int64_t>{1}));
  EXPECT_GE(intervals * 2, 10U) << "sent before the hold of 10 s ended";
}

// A revocation during a capture: the capture is flushed for and written, then the leaving partition is
// checkpointed and committed; the partition that stays is written but not committed.
TEST(PeriodicCheckpoints, ARevocationInTheMiddleOfACheckpointCommitsTheLeavingPartition) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& leaving = t.assign(0, 0);
  PartitionWorker& staying = t.assign(1, 0);
  t.consume(leaving, 0, "a");
  t.consume(staying, 0, "b");
  t.interval_passed();  // captured, records in flight
  t.consume(leaving, 1, "c");

  t.protocol().settle(/*may_flush=*/true);  // Assignment::revoked's order: settle, then checkpoint
  EXPECT_EQ(t.output.flushes, 1);
  EXPECT_EQ(t.stored_offset(0), 1);
  EXPECT_EQ(t.stored_offset(1), 1);
  const CheckpointResult result = t.protocol().checkpoint_now({&leaving}, CommitMode::kSync, Clock::now() + 1s);
  EXPECT_TRUE(result.committed);
  EXPECT_EQ(t.stored_offset(0), 2);
  ASSERT_EQ(t.input.commits.size(), 1U);
  ASSERT_EQ(t.input.commits[0].size(), 1U);
  EXPECT_EQ(t.input.commits[0][0].partition, 0);
  EXPECT_EQ(t.input.commits[0][0].offset, 2);
  EXPECT_EQ(staying.progress.committed_offset(), connectors::kNoOffset);
}

// A lost partition: no waiting on the brokers, and a capture whose records are in flight is dropped
// (its partitions write whole next time), never written without them.
TEST(PeriodicCheckpoints, ALostPartitionDropsACaptureWithRecordsInFlight) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.interval_passed();  // captured: its changes count as persisted
  ASSERT_FALSE(worker.progress.full_image_next());

  t.protocol().settle(/*may_flush=*/false);
  t.protocol().partitions_lost({{"orders", 0, connectors::kNoOffset, {}, {}}});
  EXPECT_EQ(t.output.flushes, 0);
  EXPECT_EQ(t.stored_offset(0), -1);
  EXPECT_TRUE(worker.progress.full_image_next());
  EXPECT_TRUE(t.input.commits.empty());
}

// ---- at_least_once with state.topic ----------------------------------------------------------------

// What the state topic holds of partition `partition` after `calls`, read back as a restore would.
std::variant<connectors::StateTopicCheckpoint, connectors::StateTopicGap> read_back(
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

// A synchronous checkpoint: the state topic acknowledges the checkpoint before its offset is committed, and
// what it holds reads back as that checkpoint.
TEST(PeriodicCheckpointsWithStateTopic, TheOffsetIsCommittedOnlyAfterTheStateTopicAcknowledgedItsCheckpoint) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce, /*state_topic=*/true);
  PartitionWorker& worker = t.assign(1, 0);
  ASSERT_NE(t.state_topic_sink, nullptr);
  t.consume(worker, 0, "a");
  t.consume(worker, 1, "b");
  const CheckpointResult result = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
  EXPECT_TRUE(result.committed);
  ASSERT_EQ(t.input.commits.size(), 1U);
  EXPECT_EQ(offsets_of(t.input.commits[0]), (std::vector<std::int64_t>{2}));
  ASSERT_FALSE(t.state_topic_sink->calls.empty());
  EXPECT_EQ(t.state_topic_sink->calls[0].partition, 1);  // the input partition's number
  EXPECT_EQ(t.state_topic_sink->calls[0].commits_before, 0U) << "committed before the state topic acknowledged";

  const auto read = read_back(t.state_topic_sink->calls, 1);
  ASSERT_TRUE(std::holds_alternative<connectors::StateTopicCheckpoint>(read)) << std::get<connectors::StateTopicGap>(read).reason;
  EXPECT_EQ(std::get<connectors::StateTopicCheckpoint>(read).manifest.checkpoint.next_offset, 2);
  EXPECT_GT(worker.report->state_topic_produced_bytes, 0U);
  EXPECT_EQ(worker.report->state_topic_produce_failures, 0U);
}

// A checkpoint the state topic does not acknowledge is not committed, even though the store wrote it, and
// the next one is a full image: every slice its manifest lists is written at its own epoch.
TEST(PeriodicCheckpointsWithStateTopic, AFailedProduceCommitsNothingAndTheNextCheckpointIsAFullImage) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce, /*state_topic=*/true);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  ASSERT_TRUE(t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s).committed);
  ASSERT_EQ(t.input.commits.size(), 1U);

  t.consume(worker, 1, "b");
  t.state_topic_sink->error = KafkaError(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, "scripted");
  const CheckpointResult failed = t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s);
  EXPECT_FALSE(t.context().failed()) << "a state-topic failure is not the service's";
  EXPECT_EQ(failed.state_failures, 1U);
  EXPECT_EQ(t.stored_offset(0), 2);  // the store has it: a restart on this directory resumes there
  EXPECT_EQ(worker.progress.checkpointed_offset(), 1);
  EXPECT_EQ(t.input.commits.size(), 1U) << "an offset committed without the state topic's acknowledgement";
  EXPECT_EQ(worker.report->state_topic_produce_failures, 1U);

  t.state_topic_sink->error = {};
  t.consume(worker, 2, "c");
  t.state_topic_sink->calls.clear();
  ASSERT_TRUE(t.protocol().checkpoint_now({&worker}, CommitMode::kSync, Clock::now() + 1s).committed);
  ASSERT_EQ(t.input.commits.size(), 2U);
  EXPECT_EQ(offsets_of(t.input.commits[1]), (std::vector<std::int64_t>{3}));
  const auto read = read_back(t.state_topic_sink->calls, 0);
  ASSERT_TRUE(std::holds_alternative<connectors::StateTopicCheckpoint>(read)) << std::get<connectors::StateTopicGap>(read).reason;
  const connectors::StateManifest& manifest = std::get<connectors::StateTopicCheckpoint>(read).manifest;
  EXPECT_EQ(manifest.checkpoint.next_offset, 3);
  std::size_t slices = 0;
  for (const connectors::ManifestEntry& entry : manifest.entries) {
    EXPECT_EQ(entry.epoch, manifest.epoch) << "a record of an earlier checkpoint in what follows a failure";
    slices += entry.name.kind == 's' ? 1 : 0;
  }
  EXPECT_GT(slices, 0U);
}

// The periodic checkpoint produces on the writer's thread; a capture the state topic did not acknowledge is
// written to the store but not committed.
TEST(PeriodicCheckpointsWithStateTopic, ABackgroundCheckpointIsCommittedOnlyOnceAcknowledged) {
  CommitProtocolTest t(config::Guarantee::kAtLeastOnce, /*state_topic=*/true);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.records.deliver_all();
  t.state_topic_sink->error = KafkaError(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, "scripted");
  t.interval_passed();                      // captured and handed to the writer
  t.protocol().settle(/*may_flush=*/true);  // joins it
  EXPECT_EQ(t.stored_offset(0), 1);
  EXPECT_EQ(worker.progress.checkpointed_offset(), -1);
  EXPECT_TRUE(t.input.commits.empty());
  EXPECT_FALSE(worker.state_topic_writer->has_baseline()) << "the next checkpoint must be a full image";

  t.state_topic_sink->error = {};  // the writer's thread is joined: no job reads it now
  t.consume(worker, 1, "b");
  t.records.deliver_all();
  t.interval_passed();  // captured and handed to the writer
  t.protocol().settle(/*may_flush=*/true);
  EXPECT_EQ(worker.progress.checkpointed_offset(), 2);
  t.interval_passed();  // nothing moved since: commits what was written
  ASSERT_EQ(t.input.commits.size(), 1U);
  EXPECT_EQ(offsets_of(t.input.commits[0]), (std::vector<std::int64_t>{2}));
}

// A producer that takes less than the default chunk (producer.message.max.bytes) gets chunks that fit it,
// with room for the key and the framing; never less than 1 KiB.
TEST(StateChunkBytes, FitTheProducersMessageMaxBytes) {
  EXPECT_EQ(state_chunk_bytes(1'000'000), connectors::kDefaultStateChunkBytes);  // librdkafka's default
  EXPECT_EQ(state_chunk_bytes(100'000), 100'000U - 4096U);
  EXPECT_EQ(state_chunk_bytes(2'000), 1024U);
}

// ---- exactly_once: transactional commits --------------------------------------------------------------

// The transaction carries every partition's next offset and its output offset; the state is written
// after the commit, at the committed offset.
TEST(TransactionalCommits, ACommitCarriesTheOffsetsAndWritesTheStateAfterIt) {
  CommitProtocolTest t(config::Guarantee::kExactlyOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.consume(worker, 1, "b");
  t.interval_passed();
  ASSERT_EQ(t.transactions.committed_offsets.size(), 1U);
  EXPECT_EQ(offsets_of(t.transactions.committed_offsets[0]), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(t.transactions.committed_offsets[0][0].metadata, "2");
  EXPECT_EQ(worker.progress.committed_offset(), 2);
  EXPECT_EQ(t.stored_offset(0), 2);
  EXPECT_EQ(t.context().counters.transactions_committed, 1U);
}

// A commit that fails for good stops the service and writes no state past the last commit.
TEST(TransactionalCommits, ACommitThatFailsWritesNoState) {
  CommitProtocolTest t(config::Guarantee::kExactlyOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.transactions.outcomes.push_back(TransactionOutcome::kFailed);
  t.interval_passed();
  EXPECT_TRUE(t.context().failed());
  EXPECT_EQ(t.stored_offset(0), -1);
  EXPECT_EQ(worker.progress.committed_offset(), connectors::kNoOffset);
}

// An aborted transaction: the partition goes back to the last commit, its consumer position and its
// filter (restored from the checkpoint written after that commit), so its events are decided again.
TEST(TransactionalCommits, AnAbortedTransactionRewindsToTheLastCommit) {
  CommitProtocolTest t(config::Guarantee::kExactlyOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.interval_passed();  // committed at 1
  EXPECT_EQ(t.consume(worker, 1, "b"), Outcome::kForward);
  t.transactions.outcomes.push_back(TransactionOutcome::kAborted);
  t.interval_passed();

  EXPECT_EQ(t.context().counters.transactions_aborted, 1U);
  EXPECT_FALSE(t.context().failed());
  ASSERT_EQ(t.input.seeks.size(), 1U);
  EXPECT_EQ(offsets_of(t.input.seeks[0]), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(worker.progress.next_offset(), 1);
  EXPECT_FALSE(worker.progress.decided_since_commit());
  // The rewound filter holds what was committed, not what the aborted transaction decided.
  EXPECT_EQ(CommitProtocolTest::decide_again(worker, 1, "b"), Outcome::kForward);
  EXPECT_EQ(CommitProtocolTest::decide_again(worker, 2, "a"), Outcome::kDuplicate);
}

// A delivery that failed dooms the open transaction: the next tick aborts and rewinds, before its interval.
TEST(TransactionalCommits, AFailedDeliveryAbortsAtTheNextTick) {
  CommitProtocolTest t(config::Guarantee::kExactlyOnce);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.interval_passed();
  t.consume(worker, 1, "b");
  EXPECT_TRUE(t.protocol().absorb_delivery_failure(KafkaError::invalid_argument("delivery failed")));
  t.protocol().tick(Clock::now());  // before the interval
  EXPECT_EQ(t.transactions.aborts, 1);
  EXPECT_EQ(worker.progress.next_offset(), 1);
  EXPECT_EQ(t.transactions.committed_offsets.size(), 1U);
}

// A lost partition may already belong to another member: the open transaction (which holds its records)
// is aborted, and the partitions kept go back to the last commit.
TEST(TransactionalCommits, ALostPartitionAbortsTheOpenTransaction) {
  CommitProtocolTest t(config::Guarantee::kExactlyOnce);
  PartitionWorker& kept = t.assign(0, 0);
  for (const std::int32_t partition : {0, 1}) {
    PartitionWorker& worker = partition == 0 ? kept : t.assign(partition, 0);
    t.consume(worker, 0, "a" + std::to_string(partition));
  }
  t.interval_passed();  // both committed at 1
  for (PartitionWorker* worker : t.state().all_workers()) t.consume(*worker, 1, "b");
  t.state().remove({"orders", 1});
  t.protocol().partitions_lost({{"orders", 1, connectors::kNoOffset, {}, {}}});
  EXPECT_EQ(t.transactions.aborts, 1);
  ASSERT_EQ(t.input.seeks.size(), 1U);
  ASSERT_EQ(t.input.seeks[0].size(), 1U);
  EXPECT_EQ(t.input.seeks[0][0].partition, 0);
  EXPECT_EQ(kept.progress.next_offset(), 1);
}

// exactly_once with state.topic: the checkpoint at the commit is produced inside the transaction, before
// its commit, and reads back as the committed position.
TEST(TransactionalCommitsWithStateTopic, TheCheckpointIsInTheTransactionThatCommitsItsOffsets) {
  CommitProtocolTest t(config::Guarantee::kExactlyOnce, /*state_topic=*/true);
  PartitionWorker& worker = t.assign(1, 0);
  t.consume(worker, 0, "a");
  t.consume(worker, 1, "b");
  t.interval_passed();
  ASSERT_EQ(t.transactions.committed_offsets.size(), 1U);
  ASSERT_FALSE(t.state_records.produced.empty());
  for (const FakeStateTopic::Call& call : t.state_records.produced) {
    EXPECT_EQ(call.partition, 1);
    EXPECT_EQ(call.commits_before, 0U) << "a state record produced after its transaction committed";
  }
  const auto read = read_back(t.state_records.produced, 1);
  ASSERT_TRUE(std::holds_alternative<connectors::StateTopicCheckpoint>(read)) << std::get<connectors::StateTopicGap>(read).reason;
  EXPECT_EQ(std::get<connectors::StateTopicCheckpoint>(read).manifest.checkpoint.next_offset,
            worker.progress.committed_offset());
  EXPECT_EQ(t.stored_offset(1), 2);
  EXPECT_GT(worker.report->state_topic_produced_bytes, 0U);
}

// An aborted transaction takes its state records with it: the partition's next checkpoint is a full image,
// and what a read_committed reader of the state topic sees reads back as the committed checkpoint.
TEST(TransactionalCommitsWithStateTopic, AnAbortedTransactionMakesTheNextCheckpointAFullImage) {
  CommitProtocolTest t(config::Guarantee::kExactlyOnce, /*state_topic=*/true);
  PartitionWorker& worker = t.assign(0, 0);
  t.consume(worker, 0, "a");
  t.interval_passed();  // committed at 1
  std::vector<FakeStateTopic::Call> committed = t.state_records.produced;
  t.state_records.produced.clear();
  t.consume(worker, 1, "b");
  t.transactions.outcomes.push_back(TransactionOutcome::kAborted);
  t.interval_passed();  // aborted: what it produced is not in the topic
  EXPECT_FALSE(t.context().failed());
  EXPECT_FALSE(worker.state_topic_writer->has_baseline());
  t.state_records.produced.clear();

  t.consume(worker, 1, "b");
  t.interval_passed();  // committed at 2
  ASSERT_EQ(t.transactions.committed_offsets.size(), 2U);
  committed.insert(committed.end(), t.state_records.produced.begin(), t.state_records.produced.end());
  const auto read = read_back(committed, 0);
  ASSERT_TRUE(std::holds_alternative<connectors::StateTopicCheckpoint>(read)) << std::get<connectors::StateTopicGap>(read).reason;
  const connectors::StateManifest& manifest = std::get<connectors::StateTopicCheckpoint>(read).manifest;
  EXPECT_EQ(manifest.checkpoint.next_offset, 2);
  for (const connectors::ManifestEntry& entry : manifest.entries) {
    EXPECT_EQ(entry.epoch, manifest.epoch) << "a record of a checkpoint before the abort";
  }
}

}  // namespace
}  // namespace bloomgate::app
