// File: bench/service_bench.h
//
// What the parts of service_bench share: its options, the generated events, the Kafka setup of a run,
// and the figures each part produces (rounds, breakdown, checkpoint A/B, rebuild). service_bench.cc
// holds the run and the command line; service_bench_setup.cc the events, the input and the measured
// span; service_bench_rounds.cc the passthrough and service rounds; service_bench_breakdown.cc the
// per-part CPU; service_bench_report.cc the printed and JSON report. See README.md ("bench: service_bench").
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bloomgate/app/service.h"
#include "bloomgate/config/config.h"
#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/admin.h"
#include "bloomgate/connectors/embedded_broker.h"
#include "bloomgate/connectors/kafka_config.h"
#include "bloomgate/connectors/message.h"
#include "bloomgate/connectors/producer.h"
#include "bench_support.h"
#include "progress_plugin.h"

namespace bloomgate::bench::service_bench {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
namespace progress = bench::progress;

constexpr const char* kInputTopic = "bench-input";
constexpr const char* kKeyPointer = "/order_id";

// The events' fields as an Avro record and a Protobuf message (--format, the breakdown's schema rows), under
// schema id kBenchSchemaId.
inline constexpr std::uint32_t kBenchSchemaId = 1;
inline const std::string kBenchAvroSchema = R"({"type": "record", "name": "Order", "fields": [
  {"name": "order_id", "type": "string"}, {"name": "customer", "type": "string"}, {"name": "amount", "type": "double"},
  {"name": "seq", "type": "long"}, {"name": "pad", "type": "string"}]})";
inline const std::string kBenchProtobufSchema = R"(syntax = "proto3";
message Order { string order_id = 1; string customer = 2; double amount = 3; int64 seq = 4; string pad = 5; })";
inline const std::string& bench_schema_text(config::SchemaType type) {
  return type == config::SchemaType::kAvro ? kBenchAvroSchema : kBenchProtobufSchema;
}
// As in service.cc: the consumer poll timeout, and a producer poll (delivery reports) every this many
// consumed events or whenever a consumer poll returns nothing.
constexpr milliseconds kPollTimeout{100};
constexpr std::uint64_t kProducerPollEvery = 1024;
constexpr milliseconds kStallLimit{60'000};  // no progress for this long: the run failed
// The embedded broker keeps only the newest 5 MiB of each partition; stay well below it.
constexpr double kMaxInputBytesPerPartition = 4.0 * 1024 * 1024;
constexpr double kRecordOverheadBytes = 20;  // per record in a batch (varints, attributes), roughly

// Consumer settings applied to BOTH sides by default (--no-bench-properties drops them). librdkafka 2.0.2
// stops fetching a partition while the consumer's prefetch queue holds more than queued.min.messages
// (100,000) messages or queued.max.messages.kbytes, and only re-checks on the broker thread's next
// wake-up, up to 1 s later (librdkafka issue #2879; fetch.queue.backoff.ms, which bounds it, came with
// 2.2). Whenever the application is slower than the fetcher, both sides then stall in ~1 s steps and
// the rates measure that, not the work. With these limits above the whole input the fetcher never
// pauses. (The same stall can hit the service in production: see README.md.)
constexpr std::pair<const char*, const char*> kBenchProperties[] = {
    {"queued.min.messages", "1000000"},
    {"queued.max.messages.kbytes", "1048576"},
};

struct Options {
  std::string brokers;  // empty: the embedded broker
  int partitions = 32;
  std::uint64_t events = 640'000;
  std::size_t value_bytes = 100;
  double repeat_share = 0.30;
  std::uint64_t recent_keys = 10'000;  // a repeat picks one of the last this many new keys
  std::uint64_t seed = 42;
  int rounds = 3;
  int sample_ms = 50;       // the progress plugin's sampling interval
  int snapshot_ms = 1'000;  // the service's snapshot_interval (its default)
  double warmup_share = 0.30;  // the measured span starts once this share of the events is consumed
  bool bench_properties = true;  // the consumer settings below, on both sides (see kBenchProperties)
  int checkpoint_ms = 5'000;
  // --checkpoint-ab: extra service-only round pairs, a checkpoint every `ab_on_ms` against every
  // `ab_off_ms` (an hour: effectively off, the only checkpoints are at assignment and at shutdown).
  bool checkpoint_ab = false;
  int ab_rounds = 3;
  int ab_on_ms = 1'000;
  int ab_off_ms = 3'600'000;
  double ab_target = 0.95;
  // --rebuild: the rebuild rate from the input history against the pipeline's normal throughput.
  bool rebuild = false;
  std::string json;  // every printed figure, for scripts/bench
  int breakdown_reps = 5;
  int input_linger_ms = 1'000;          // pre-production only: large input record batches (see pre_produce)
  int input_batch_messages = 10'000;
  bool skip_breakdown = false;
  bool timeline = false;  // print every sample to stderr
  bool service_thread = false;  // run the service on a std::thread rather than on main
  int members = 1;  // instances of the service in this process and group, each on a thread of its own
  int workers = 0;  // > 0: the service as that many workers of ONE process (app::ServiceWorkers)
  std::string perf_control;  // a `perf record --control fifo:PATH` FIFO: enabled during the rounds only
  std::string sides = "both";  // both, passthrough, service or none (for profiling: no ratios)
  double target = 0.75;     // events/s, service / passthrough: at least
  double cpu_target = 1.25; // process CPU per event, service / passthrough: at most
  std::vector<std::string> properties;  // librdkafka key=value, applied to every client of both sides
  // --format: the input's values as JSON (the default) or as Schema Registry framed Avro or Protobuf records
  // of the same fields (schema_records.h), keyed by the same field through a cached schema file.
  std::string format = "json";
  std::string log_level = "error";  // "warn" also shows CONFWARN for consumer properties given to producers
  // --window-keys: only the large-window section (service_bench_window.cc), no broker: one partition with
  // this many keys per TTL, each filter type, `window_reps` timed blocks of `window_events` events each way.
  std::uint64_t window_keys = 0;
  std::size_t window_events = 100'000;
  int window_reps = 5;
  // state.topic of the service rounds (service_config); empty: none. --takeover sets it per round.
  std::string state_topic;
  // --takeover-keys: only the state-topic section (service_bench_takeover.cc), on a real broker (--brokers):
  // the takeover of one partition holding each of these many keys, restore from the state topic against the
  // rebuild from the input; then "others keep flowing" and the state topic's overhead (--events, --partitions).
  std::vector<std::uint64_t> takeover_keys;
  double takeover_target = 20;        // rebuild seconds / restore seconds: at least
  std::uint64_t flow_keys = 1'000'000;  // the window of each partition of the "others keep flowing" run
  double flow_rate = 5'000;           // its live input, events/s per partition
  double flow_target = 0.8;           // events/s during / before the takeover: at least
  int overhead_rounds = 3;            // state.topic on/off round pairs, alternated
  double overhead_target = 0.9;       // events/s, on / off: at least
};

// ------------------------------------------------------------------------------------------------------
// Small helpers (service_bench_setup.cc)

double process_cpu_seconds();
// CPU time of the calling thread: the service thread (on_snapshot runs there) or the passthrough loop.
double thread_cpu_seconds();
double seconds_between(Clock::time_point from, Clock::time_point to);
// The 1-minute load average, as text ("?" when unknown).
std::string load_average();
// 1234567 as "1,234,567".
std::string grouped(std::uint64_t number);

// ------------------------------------------------------------------------------------------------------
// The events

struct Event {
  std::string key;    // the message key, and the value's "order_id" (the dedup key)
  std::string value;  // one JSON object of exactly value_bytes bytes
  std::int64_t timestamp_ms = 0;
  std::int32_t partition = 0;
  std::int64_t offset = 0;  // in the input topic (fresh, so per-partition counters from 0)
  bool repeat = false;      // its key is a repeat of a recent new key
};

struct Workload {
  std::vector<Event> events;           // in production order
  std::vector<std::size_t> by_partition;  // indexes, ordered by (partition, offset)
  std::vector<std::uint64_t> per_partition;
  std::uint64_t new_keys = 0;
  double max_partition_bytes = 0;
};

Workload make_workload(const Options& options);

// ------------------------------------------------------------------------------------------------------
// Kafka plumbing shared by every side

// The broker the bench runs on: the embedded one in this process (the default), or a broker of the user's
// (--brokers), such as a fresh `scripts/kafka start`. That one runs in its own process, so the CPU figures
// leave out the broker's work there, and it must not hold the bench's topics yet: creating one that exists
// is an error, so no earlier run's records are read.
class BenchBroker {
 public:
  explicit BenchBroker(const std::string& brokers);
  [[nodiscard]] const std::string& bootstrap_servers() const noexcept { return bootstrap_; }
  [[nodiscard]] bool embedded() const noexcept { return embedded_ != nullptr; }
  // `configs`: topic-level configs (cleanup.policy, segment.ms, ...) on a real broker; the embedded one has
  // no topic configs and leaves them out.
  [[nodiscard]] connectors::KafkaError create_topic(const std::string& name, int partitions,
                                                    const std::map<std::string, std::string>& configs = {}) const;

 private:
  std::unique_ptr<connectors::EmbeddedBroker> embedded_;
  std::string bootstrap_;
};

struct Setup {
  const Options& options;
  const Workload& workload;
  BenchBroker& broker;
  connectors::ClientHooks hooks;
  std::map<std::string, std::string> properties;  // both sides' clients
  std::string plugin_path;                         // the progress plugin, for plugin.library.paths
  std::string state_root;                          // a temporary directory for the service's state.dir
};

connectors::KafkaConfig client_config(const Setup& setup, bool consumer);
void create_topic(const Setup& setup, const std::string& topic);
void produce_or_throw(connectors::Producer& producer, const std::string& topic, const Event& e,
                      std::span<const connectors::HeaderView> headers = {});
// The workload's key number -> "ord-" and 12 digits (a bijection), and a JSON value of `bytes` bytes for it.
std::string make_key(std::uint64_t key_number, std::uint64_t seed);
std::string make_value(const std::string& key, std::uint64_t seq, std::mt19937_64& rng, std::size_t bytes);
// The pre-production's producer settings: large record batches (see service_bench_setup.cc).
connectors::KafkaConfig bulk_producer_config(const Setup& setup);
// Produces the workload to kInputTopic, in large record batches (see service_bench_setup.cc).
void pre_produce(const Setup& setup);

// Counts failed deliveries; the callback runs on whichever thread polls the producer.
struct DeliveryCounter {
  std::atomic<std::uint64_t> failed{0};
  std::string first_error;
  connectors::DeliveryFunction function() {
    return [this](const connectors::DeliveryReport& report) {
      if (report.error.ok()) return;
      if (failed.fetch_add(1) == 0) first_error = report.error.message();
    };
  }
  void check(const std::string& what) const {
    if (failed.load() != 0) {
      throw std::runtime_error(what + ": " + grouped(failed.load()) + " deliveries failed, first: " + first_error);
    }
  }
};

// ------------------------------------------------------------------------------------------------------
// Measuring a run (service_bench_setup.cc): the same observer on both sides.

struct RunFigures {
  double events_per_second = kNaN;
  double cpu_ns_per_event = kNaN;
  double cores = kNaN;  // process CPU seconds per wall second over the span
  double thread_cpu_ns_per_event = kNaN;  // the polling thread alone (the service thread, or the passthrough's)
  double thread_busy = kNaN;              // its CPU seconds per wall second: 1.0 = it is the bottleneck
  double span_seconds = kNaN;
  std::uint64_t span_events = 0;
};

// Throughput and CPU per event of one side between the first sample after the warm-up and the last
// sample before all events were consumed.
RunFigures figures_of(const std::vector<progress::Sample>& samples, const Options& options, const char* label);
// With several members a sample's thread CPU is that of whichever member's thread took it: no loop figure.
void blank_loop_columns(RunFigures& figures);

struct RoundResult {
  RunFigures figures;
  std::uint64_t consumed = 0;
  std::uint64_t produced = 0;  // records written to the output topic
  std::uint64_t duplicates = 0;
  std::uint64_t commits = 0;   // the service's offset commits, one per checkpoint (shutdown's included)
  double run_seconds = kNaN;   // Service::run() from start to stop, group join and shutdown included
};

// ------------------------------------------------------------------------------------------------------
// The rounds (service_bench_rounds.cc)

// A consume loop with the service's cadence until every input event is consumed; `label` names it in
// messages and the timeline.
RoundResult consume_loop(const Setup& setup, connectors::Consumer& consumer, connectors::Producer* producer,
                         const std::function<void(const connectors::ConsumedMessage&)>& on_message,
                         const char* label);
// A consumer configuration that loads the progress plugin.
connectors::KafkaConfig counted_consumer_config(const Setup& setup);
RoundResult run_passthrough(const Setup& setup, const std::string& group, const std::string& output);
config::Config service_config(const Setup& setup, const std::string& group, const std::string& output,
                              int checkpoint_ms);
RoundResult run_service(const Setup& setup, const std::string& group, const std::string& output, int checkpoint_ms);

// ------------------------------------------------------------------------------------------------------
// --checkpoint-ab: the service with a checkpoint every second against the same service with checkpoints
// effectively off (the durable-state target: at least 0.95 x). Service-only round pairs on the same input; the order within
// a pair alternates, so neither side always runs second. The measured span is the same as the rounds'
// (from --warmup-share of the events to the last sample): give it enough events to hold several
// checkpoints, and read the commits column, which counts them.

struct AbPair {
  RoundResult on;   // checkpoint A/B: a checkpoint every ab_on_ms; overhead: with state.topic
  RoundResult off;  // every ab_off_ms; without state.topic
  double ratio = kNaN;  // on / off, events/s
};

std::vector<AbPair> run_checkpoint_ab(const Setup& setup);
// One pair of service rounds, run in the order the round alternates (odd rounds `on` first), so that a
// drift of the machine's speed over the run weighs on both sides alike; ratio = on / off, events/s.
AbPair run_alternated(int round, const std::function<RoundResult()>& on, const std::function<RoundResult()>& off);
double ab_median(const std::vector<AbPair>& pairs);

// ------------------------------------------------------------------------------------------------------
// --rebuild (docs/state.md, "Rebuild"): a service round over the input, whose events/s is the pipeline's
// normal throughput, then a second service in the same group with an empty state directory. Every
// partition then has a committed offset and no state, so its assignment rebuilds the filter from the
// input history with the service's own code (rebuild_from_input + decide), one partition after another:
// all of the input, since one TTL holds it.

struct RebuildFigures {
  RoundResult pipeline;            // the service round whose commits the rebuild starts from
  std::uint64_t partitions = 0;    // partitions rebuilt
  std::uint64_t events = 0;        // input records inserted by the rebuilds
  double seconds = kNaN;           // the partitions' rebuild times, summed
  double events_per_second = kNaN;
  double ratio = kNaN;             // rebuild events/s / pipeline events/s
};

RebuildFigures run_rebuild(const Setup& setup);

// ------------------------------------------------------------------------------------------------------
// Where the CPU goes: each part alone, in this process, over the same events.

struct PartFigures {
  double cpu_ns_per_event = kNaN;     // process CPU (librdkafka's threads and the broker included)
  double events_per_second = kNaN;    // input events per wall-clock second
  double thread_ns_per_event = kNaN;  // of that, the calling (producing or polling) thread's CPU
};

struct Breakdown {
  double extract_ns = kNaN;         // KeyExtractor::extract
  double extract_parts_ns = kNaN;   // the same with a key of three parts (three_part_key())
  double extract_parts_ratio = kNaN;  // median of the per-rep ratios of those two
  // The configured key's field read from the same events as Avro and Protobuf records (schema_records.h),
  // the schema cached; each ratio is the median of per-rep pairs with the JSON pointer's pass.
  double extract_avro_ns = kNaN;
  double extract_avro_ratio = kNaN;
  double extract_protobuf_ns = kNaN;
  double extract_protobuf_ratio = kNaN;
  double protobuf_reflection_ns = kNaN;  // the same field through libprotobuf's parse and reflection
  double avro_generic_ns = kNaN;         // the same field through avro-c's generic value decoder
  double filter_ns = kNaN;          // hash + test_and_insert
  double decide_ns = kNaN;          // PartitionDeduplicator::decide: extract + event clock + filter
  double header_objects_ns = kNaN;  // rd_kafka_headers_new + rd_kafka_header_add + destroy, alone
  PartFigures consume;              // Consumer::poll of every event
  PartFigures consume_per_call;     // rd_kafka_consumer_poll of every event, no interceptor
  PartFigures consume_batched;      // rd_kafka_consume_batch_queue, kConsumeBatch events per call
  PartFigures produce_plain;        // Producer::produce + flush of every event, no headers
  PartFigures produce_headers;      // the same with the source header
  PartFigures produce_binary_header;  // the same with a 12-byte binary header instead
  PartFigures produce_service;      // the forwarded events with the source header, per INPUT event
  double snapshot_us = kNaN;        // stats() of every partition's filter: the bulk of one snapshot
  double forwarded_share = kNaN;    // of decide(): the share of events forwarded
  std::uint64_t filter_slices = 0;  // partition 0's filter after decide(), for the reader
  double filter_kib = kNaN;
};

// The in-memory parts (key extraction, filter, decide(), snapshot statistics, header objects) over the
// workload; `forwarded` receives which events decide() forwards.
Breakdown measure_breakdown(const Setup& setup, const config::PipelineSettings& pipeline, std::vector<bool>& forwarded);

// Produce alone, into a fresh topic whose metadata the producer has fetched first (librdkafka 2.0.2 would
// otherwise hold the records for up to a second, see "Measuring a run"); CPU from the first produce to
// the end of the flush, per INPUT event.
inline constexpr std::size_t kConsumeBatch = 1024;

enum class ProduceMode {
  kAllPlain,          // every event as it is (what the passthrough writes)
  kAllWithHeaders,    // every event plus the source header
  kAllWithBinaryHeader,  // every event plus a 12-byte binary header (partition, offset) in its place
  kForwardedHeaders,  // the events decide() forwards, plus the source header (what the service writes)
};

PartFigures measure_produce(const Setup& setup, const std::string& topic, ProduceMode mode,
                            const std::vector<bool>& forwarded);
PartFigures measure_consume(const Setup& setup, const std::string& group);
// Consume alone with librdkafka's own calls and no interceptor: one rd_kafka_consumer_poll per event
// (`batch` 1) or rd_kafka_consume_batch_queue of up to `batch` events; timed from the first event.
PartFigures measure_consume_calls(const Setup& setup, const std::string& group, std::size_t batch);

// ------------------------------------------------------------------------------------------------------
// One partition with a large window, per filter type (service_bench_window.cc)

struct WindowSide {
  std::string type;
  double fill_ns = kNaN;       // decide() per new key while the partition filled (thread CPU)
  double decide_ns = kNaN;     // decide() per event once full: the service's work per event (median of reps)
  double batch_ns = kNaN;      // extraction one event at a time, then test_and_insert_batch per kBatchSize
  double single_ns = kNaN;     // the same extracted keys through test_and_insert, one call per key
  double memory_bytes = kNaN;  // FilterStats::memory_bytes at the end: every byte the filter holds
  double bits_per_key = kNaN;  // memory_bytes * 8 / elements
  std::uint64_t elements = 0;  // keys the filter holds within its window
  double resident_growth_bytes = kNaN;  // the process's resident memory growth while the partition filled
  double forwarded_share = kNaN;
};

struct WindowFigures {
  std::uint64_t keys = 0;
  std::size_t events_per_block = 0;
  int reps = 0;
  std::vector<WindowSide> sides;  // time_limited, then aging_fingerprint
};

WindowFigures measure_window(const Options& options);
void print_window(const WindowFigures& w);
bool write_window_json(const Options& o, const WindowFigures& w);

// ------------------------------------------------------------------------------------------------------
// --takeover-keys (service_bench_takeover.cc): the state topic's targets on a real broker; its own report.

// `properties`: the --property settings, for every client.
int run_takeover(const Options& options, const std::map<std::string, std::string>& properties);

// ------------------------------------------------------------------------------------------------------
// The report (service_bench_report.cc)

struct Report {
  std::string load_at_start;
  std::string load_at_end;
  std::map<std::string, std::string> properties;
  double speed_ratio = kNaN;
  double cpu_ratio = kNaN;
  std::vector<double> rate_ratios;
  std::vector<double> cpu_ratios;
  std::vector<RoundResult> passthrough;
  std::vector<RoundResult> service;
  bool breakdown = false;
  Breakdown b;
  double snapshot_ns_per_event = kNaN;
  std::vector<AbPair> ab;
  std::optional<RebuildFigures> rebuild;
  double total_seconds = kNaN;
};

// The median over rounds of one of their figures.
double median_of(const std::vector<RoundResult>& rounds, double RunFigures::*field);
void print_head(const Options& options, const Workload& workload, const Report& r);
void print_rounds(const Options& options, const Report& r);  // the ratios and the rounds' table
void print_breakdown(const Options& options, const Report& r);
void print_rebuild(const RebuildFigures& r);
void print_checkpoint_ab(const Options& o, const std::vector<AbPair>& pairs);
// --json: every figure the program prints, NaN as null; false when the file cannot be written.
bool write_json(const Options& o, const Workload& w, const Report& r);

}  // namespace bloomgate::bench::service_bench
