// File: bench/service_bench.cc
//
// The service benchmark: input events per second and process CPU per event of the deduplication
// service (bloomgate::app::Service: JSON key extraction, one time-limited filter per partition, source
// headers, idempotent producer, checkpoint-then-commit) against a raw consume-and-produce passthrough (the
// same connectors::Consumer and connectors::Producer, no key extraction, no filter), both reading the
// same pre-produced events from the same embedded broker in the same run, alternated round by round.
// Then, in the same process, where the CPU goes: key extraction alone, the filter alone,
// PartitionDeduplicator::decide() (both, plus the event clock), produce alone and consume alone.
//
// The embedded broker is librdkafka's mock cluster and runs in THIS process, on the same cores: every
// CPU figure includes the broker's work for the requests, and the service and passthrough compete with
// it for the same 2 cores. Ratios measured in the same run are the figures to compare; see README.md.
//
// This is a benchmark, not a test: the targets (events/s at least 0.75 x, CPU per event at most 1.25 x the
// passthrough) are reported (PASS/MISS), never enforced. The program exits non-zero only when a run fails
// or a figure it should have produced is missing or not a number.

#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "bloomgate/app/key_extractor.h"
#include "bloomgate/app/logging.h"
#include "bloomgate/app/partition_deduplicator.h"
#include "bloomgate/app/service.h"
#include "bloomgate/app/service_workers.h"
#include "bloomgate/app/source_header.h"
#include "bloomgate/app/temporary_directory.h"
#include "bloomgate/config/config.h"
#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/embedded_broker.h"
#include "bloomgate/connectors/kafka_config.h"
#include "bloomgate/connectors/message.h"
#include "bloomgate/connectors/producer.h"
#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"
#include "bloomgate/filters/time.h"
#include "bench_support.h"
#include "json_writer.h"
#include "progress_plugin.h"

namespace bloomgate::bench {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
namespace progress = bench::progress;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr const char* kInputTopic = "bench-input";
constexpr const char* kKeyPointer = "/order_id";
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
  std::string log_level = "error";  // "warn" also shows CONFWARN for consumer properties given to producers
};

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// CPU time of the calling thread: the service thread (on_snapshot runs there) or the passthrough loop.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// The 1-minute load average, as text ("?" when unknown).
std::string load_average() {
  FILE* file = std::fopen("/proc/loadavg", "r");
  if (file == nullptr) return "?";
  char text[32] = "?";
  const bool read = std::fscanf(file, "%31s", text) == 1;
  std::fclose(file);
  return read ? std::string(text) : std::string("?");
}

std::string grouped(std::uint64_t number) {
  const std::string digits = std::to_string(number);
  std::string text;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return text;
}

// FNV-1a then a finalizer: the partition of a key. Deliberately not the filters' hash, so a partition's
// keys do not share low hash bits inside its filter.
std::int32_t partition_of(std::string_view key, int partitions) {
  std::uint64_t h = 0xCBF29CE484222325ULL;
  for (const char c : key) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ULL;
  return static_cast<std::int32_t>(splitmix64(h) % static_cast<std::uint64_t>(partitions));
}

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

std::string make_key(std::uint64_t key_number, std::uint64_t seed) {
  // key_number -> 12 decimal digits, a bijection (the multiplier is coprime to 10^12): never a collision.
  constexpr std::uint64_t kModulus = 1'000'000'000'000ULL;
  const std::uint64_t digits = (key_number * 789'012'345'679ULL + seed) % kModulus;
  char text[32];
  const int length = std::snprintf(text, sizeof text, "ord-%012llu", static_cast<unsigned long long>(digits));
  return std::string(text, static_cast<std::size_t>(length));
}

std::string make_value(const std::string& key, std::uint64_t seq, std::mt19937_64& rng, std::size_t bytes) {
  char head[160];
  const int length = std::snprintf(head, sizeof head,
                                   R"({"order_id":"%s","customer":"c-%05u","amount":%u.%02u,"seq":%llu,"pad":")",
                                   key.c_str(), static_cast<unsigned>(rng() % 100'000),
                                   static_cast<unsigned>(rng() % 10'000), static_cast<unsigned>(rng() % 100),
                                   static_cast<unsigned long long>(seq));
  std::string value(head, static_cast<std::size_t>(length));
  const std::size_t tail = 2;  // "}
  if (value.size() + tail > bytes) throw std::invalid_argument("--value-bytes is too small for the event's fields");
  value.append(bytes - value.size() - tail, 'x');
  value += "\"}";
  return value;
}

Workload make_workload(const Options& options) {
  Workload w;
  w.events.reserve(options.events);
  w.per_partition.assign(static_cast<std::size_t>(options.partitions), 0);
  std::vector<double> partition_bytes(static_cast<std::size_t>(options.partitions), 0);
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> coin(0, 1);
  std::vector<std::string> recent;  // the newest new keys, a ring of recent_keys
  recent.reserve(options.recent_keys);
  // One event per millisecond, the last one a few seconds ago: increasing, never in the future (the
  // event clock caps timestamps at processing time + 1 minute).
  const std::int64_t now_ms =
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::int64_t base_ms = now_ms - static_cast<std::int64_t>(options.events) - 5'000;
  for (std::uint64_t seq = 0; seq < options.events; ++seq) {
    Event e;
    const std::uint64_t seen = std::min<std::uint64_t>(w.new_keys, options.recent_keys);
    if (seen > 0 && coin(rng) < options.repeat_share) {
      e.key = recent[static_cast<std::size_t>(rng() % seen)];
      e.repeat = true;
    } else {
      e.key = make_key(w.new_keys, options.seed);
      if (recent.size() < options.recent_keys) recent.push_back(e.key);
      else recent[static_cast<std::size_t>(w.new_keys % options.recent_keys)] = e.key;
      ++w.new_keys;
    }
    e.value = make_value(e.key, seq, rng, options.value_bytes);
    e.timestamp_ms = base_ms + static_cast<std::int64_t>(seq);
    e.partition = partition_of(e.key, options.partitions);
    const auto p = static_cast<std::size_t>(e.partition);
    e.offset = static_cast<std::int64_t>(w.per_partition[p]++);
    partition_bytes[p] += static_cast<double>(e.key.size() + e.value.size()) + kRecordOverheadBytes;
    w.events.push_back(std::move(e));
  }
  w.by_partition.resize(w.events.size());
  for (std::size_t i = 0; i < w.by_partition.size(); ++i) w.by_partition[i] = i;
  std::stable_sort(w.by_partition.begin(), w.by_partition.end(),
                   [&](std::size_t a, std::size_t b) { return w.events[a].partition < w.events[b].partition; });
  w.max_partition_bytes = *std::max_element(partition_bytes.begin(), partition_bytes.end());
  return w;
}

// ------------------------------------------------------------------------------------------------------
// Kafka plumbing shared by every side

struct Setup {
  const Options& options;
  const Workload& workload;
  connectors::EmbeddedBroker& broker;
  connectors::ClientHooks hooks;
  std::map<std::string, std::string> properties;  // both sides' clients
  std::string plugin_path;                         // the progress plugin, for plugin.library.paths
  std::string state_root;                          // a temporary directory for the service's state.dir
};

connectors::KafkaConfig client_config(const Setup& setup, bool consumer) {
  // What Service::Impl::client_config does: bootstrap servers, earliest for consumers, then the
  // properties on top.
  connectors::KafkaConfig kafka;
  kafka.with("bootstrap.servers", setup.broker.bootstrap_servers());
  if (consumer) kafka.with("auto.offset.reset", "earliest");
  if (connectors::KafkaError error = kafka.set_all(setup.properties); !error.ok()) {
    throw std::runtime_error("--property: " + error.message());
  }
  return kafka;
}

void create_topic(const Setup& setup, const std::string& topic) {
  if (auto error = setup.broker.create_topic(topic, setup.options.partitions); !error.ok()) {
    throw connectors::KafkaException(std::move(error));
  }
}

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

void produce_or_throw(connectors::Producer& producer, const std::string& topic, const Event& e,
                      std::span<const connectors::HeaderView> headers = {}) {
  connectors::OutgoingMessage out;
  out.partition = e.partition;
  out.key = e.key;
  out.value = e.value;
  out.headers = headers;
  out.timestamp_ms = e.timestamp_ms;
  if (auto error = producer.produce(topic, out); !error.ok()) throw connectors::KafkaException(std::move(error));
}

void pre_produce(const Setup& setup) {
  create_topic(setup, kInputTopic);
  DeliveryCounter deliveries;
  connectors::ProducerOptions producer_options;
  producer_options.hooks = setup.hooks;
  producer_options.on_delivery = deliveries.function();
  // The mock broker answers a Fetch with ONE record batch per partition, where a real broker returns up
  // to max.partition.fetch.bytes of them: small input batches would make both sides wait on fetch round
  // trips rather than do work. Large input batches (the default) make each fetch return thousands of
  // records per partition, as a real broker would; --input-linger-ms 5 shows the other regime.
  connectors::KafkaConfig kafka = client_config(setup, false);
  kafka.with("linger.ms", std::to_string(setup.options.input_linger_ms))
      .with("batch.num.messages", std::to_string(setup.options.input_batch_messages));
  connectors::Producer producer(kafka, std::move(producer_options));
  std::uint64_t since_poll = 0;
  for (const Event& e : setup.workload.events) {
    produce_or_throw(producer, kInputTopic, e);
    if (++since_poll >= kProducerPollEvery) {
      since_poll = 0;
      producer.poll(milliseconds(0));
    }
  }
  if (auto error = producer.flush(milliseconds(120'000)); !error.ok()) throw connectors::KafkaException(std::move(error));
  deliveries.check("pre-producing the input");
}

// ------------------------------------------------------------------------------------------------------
// Measuring a run: the same observer on both sides.
//
// Every consumer of a round loads the progress plugin (progress_plugin.h), whose on_consume interceptor
// counts the messages Consumer::poll hands out and samples (time, process CPU, polling-thread CPU,
// count) every --sample-ms: the passthrough and the service are observed at the same point and at the
// same cost, and the service keeps its default snapshot interval. Throughput and CPU per event are
// taken between the first sample with at least --warmup-share of the events consumed and the last
// sample before all were consumed (the final sample is used only when there is no other).
//
// The warm-up skips start-up transients that have nothing to do with the work per event: librdkafka
// 2.0.2 learns a NEW output topic's partitions only on its 1 s topic scan, so for up to a second after
// the first produce nothing is sent, the producer's queue (queue.buffering.max.messages, 100,000)
// fills, and produce() blocks. Both sides hit it once per round, at 100,000 records produced (the
// passthrough after 100,000 input events, the service after ~143,000); 30% of 640,000 is past both.

std::uint64_t warmup_events(const Options& options) {
  return static_cast<std::uint64_t>(options.warmup_share * static_cast<double>(options.events));
}

struct RunFigures {
  double events_per_second = kNaN;
  double cpu_ns_per_event = kNaN;
  double cores = kNaN;  // process CPU seconds per wall second over the span
  double thread_cpu_ns_per_event = kNaN;  // the polling thread alone (the service thread, or the passthrough's)
  double thread_busy = kNaN;              // its CPU seconds per wall second: 1.0 = it is the bottleneck
  double span_seconds = kNaN;
  std::uint64_t span_events = 0;
};

RunFigures figures_of(const std::vector<progress::Sample>& samples, const Options& options, const char* label) {
  const std::uint64_t total = options.events;
  const std::uint64_t warmup = std::max<std::uint64_t>(warmup_events(options), 1);
  const progress::Sample* first = nullptr;
  const progress::Sample* last = nullptr;   // the last sample before all events were consumed
  const progress::Sample* final = nullptr;  // the sample at the last event
  for (const progress::Sample& s : samples) {
    if (s.consumed < warmup) continue;
    if (first == nullptr) first = &s;
    else if (s.consumed < total) last = &s;
    else if (final == nullptr) final = &s;
  }
  if (options.timeline) {
    for (const progress::Sample& s : samples) {
      const progress::Sample& from = first != nullptr ? *first : samples.front();
      std::fprintf(stderr, "  %-11s %8.3f s %8.3f cpu-s %8.3f thread-cpu-s %9llu events%s\n", label,
                   seconds_between(from.time, s.time), s.process_cpu - from.process_cpu,
                   s.thread_cpu - from.thread_cpu, static_cast<unsigned long long>(s.consumed),
                   &s == first ? "  <- span starts" : &s == (last != nullptr ? last : final) ? "  <- span ends" : "");
    }
  }
  RunFigures f;
  const progress::Sample* end = last != nullptr ? last : final;
  if ((first == nullptr || end == nullptr || end->consumed <= first->consumed) && samples.size() >= 2) {
    // A run so short that no sample fell between the warm-up and the end (a smoke run consumes 8,000
    // events in a few ms): measure from the first event to the last rather than report nothing.
    std::fprintf(stderr, "service_bench: %s: no sample after the warm-up; measured from the first event to the last\n",
                 label);
    first = &samples.front();
    end = &samples.back();
  }
  if (first == nullptr || end == nullptr || end->consumed <= first->consumed) return f;
  f.span_events = end->consumed - first->consumed;
  f.span_seconds = seconds_between(first->time, end->time);
  if (f.span_seconds <= 0) return f;
  const auto events = static_cast<double>(f.span_events);
  const double cpu = end->process_cpu - first->process_cpu;
  const double thread_cpu = end->thread_cpu - first->thread_cpu;
  f.events_per_second = events / f.span_seconds;
  f.cpu_ns_per_event = cpu * 1e9 / events;
  f.cores = cpu / f.span_seconds;
  f.thread_cpu_ns_per_event = thread_cpu * 1e9 / events;
  f.thread_busy = thread_cpu / f.span_seconds;
  return f;
}

// With several members a sample's thread CPU is that of whichever member's thread took it: no loop figure.
void blank_loop_columns(RunFigures& figures) {
  figures.thread_cpu_ns_per_event = kNaN;
  figures.thread_busy = kNaN;
}

struct RoundResult {
  RunFigures figures;
  std::uint64_t consumed = 0;
  std::uint64_t produced = 0;  // records written to the output topic
  std::uint64_t duplicates = 0;
  std::uint64_t commits = 0;   // the service's offset commits, one per checkpoint (shutdown's included)
  double run_seconds = kNaN;   // Service::run() from start to stop, group join and shutdown included
};

// A consume loop with the service's cadence (consumer poll 100 ms; producer poll every 1024 events or on
// an empty poll) that runs until the progress plugin has counted every input event, whichever consumer of
// the process consumed it (--members). `on_message` handles one data message.
void pump(const Setup& setup, connectors::Consumer& consumer, connectors::Producer* producer,
          const std::function<void(const connectors::ConsumedMessage&)>& on_message) {
  const std::uint64_t total = setup.options.events;
  std::uint64_t since_producer_poll = 0;
  std::uint64_t consumed_at_last_check = 0;
  auto last_progress = Clock::now();
  while (progress::consumed() < total) {
    if (auto message = consumer.poll(kPollTimeout)) {
      if (connectors::KafkaError error = message->error(); !error.ok()) {
        if (error.is_fatal()) throw std::runtime_error("consumer: " + error.message());
        continue;
      }
      on_message(*message);
      if (producer != nullptr && ++since_producer_poll >= kProducerPollEvery) {
        since_producer_poll = 0;
        producer->poll(milliseconds(0));
      }
      continue;
    }
    if (producer != nullptr) producer->poll(milliseconds(0));
    const auto now = Clock::now();  // only after an empty poll: the passthrough reads no clock per event
    if (const std::uint64_t consumed = progress::consumed(); consumed != consumed_at_last_check) {
      consumed_at_last_check = consumed;
      last_progress = now;
    } else if (now - last_progress > kStallLimit) {
      throw std::runtime_error("no progress for 60 s after " + grouped(consumed) + " of " + grouped(total) +
                               " events (did the embedded broker drop input records?)");
    }
  }
}

RoundResult consume_loop(const Setup& setup, connectors::Consumer& consumer, connectors::Producer* producer,
                         const std::function<void(const connectors::ConsumedMessage&)>& on_message,
                         const char* label) {
  progress::start(setup.options.events, milliseconds(setup.options.sample_ms), nullptr);
  try {
    pump(setup, consumer, producer, on_message);
  } catch (...) {
    progress::stop();
    throw;
  }
  RoundResult result;
  result.figures = figures_of(progress::stop(), setup.options, label);
  result.consumed = setup.options.events;
  return result;
}

connectors::KafkaConfig counted_consumer_config(const Setup& setup) {
  connectors::KafkaConfig kafka = client_config(setup, true);
  kafka.with("plugin.library.paths", setup.plugin_path);
  return kafka;
}

// The baseline: consume every input event and produce it unchanged (key, value, headers, timestamp,
// same partition) to `output`; no key extraction, no filter, no commits. With --members N, N consumer and
// producer pairs in the group, each pumping on a thread of its own, as the service's members do.
class PassthroughMember {
 public:
  PassthroughMember(const Setup& setup, const std::string& group, std::string output)
      : setup_(setup), output_(std::move(output)), producer_(client_config(setup, false), producer_options(setup)),
        consumer_(counted_consumer_config(setup), consumer_options(setup, group)) {
    if (auto error = consumer_.subscribe({kInputTopic}); !error.ok()) throw connectors::KafkaException(std::move(error));
  }

  void run() {
    pump(setup_, consumer_, &producer_, [&](const connectors::ConsumedMessage& message) {
      headers_ = message.headers();
      connectors::OutgoingMessage out;
      out.partition = message.partition();
      out.key = message.key();
      out.value = message.value();
      out.headers = headers_;
      out.timestamp_ms = message.timestamp_ms().value_or(0);
      if (auto error = producer_.produce(output_, out); !error.ok()) throw connectors::KafkaException(std::move(error));
    });
  }

  void finish() {
    if (auto error = producer_.flush(milliseconds(60'000)); !error.ok()) throw connectors::KafkaException(std::move(error));
    deliveries_.check("passthrough");
    (void)consumer_.close();
  }

 private:
  connectors::ProducerOptions producer_options(const Setup& setup) {
    connectors::ProducerOptions options;
    options.hooks = setup.hooks;
    options.on_delivery = deliveries_.function();
    return options;
  }

  static connectors::ConsumerOptions consumer_options(const Setup& setup, const std::string& group) {
    connectors::ConsumerOptions options;
    options.group_id = group;
    options.hooks = setup.hooks;
    return options;
  }

  const Setup& setup_;
  const std::string output_;
  DeliveryCounter deliveries_;  // before producer_, whose delivery reports it counts
  std::vector<connectors::HeaderView> headers_;
  connectors::Producer producer_;
  connectors::Consumer consumer_;
};

// Runs `members` bodies, the first on the calling thread and the rest on threads of their own; rethrows
// the first failure once all have returned.
void run_members(std::size_t members, const std::function<void(std::size_t)>& body) {
  std::vector<std::exception_ptr> failures(members);
  {
    std::vector<std::jthread> threads;
    const auto guarded = [&](std::size_t i) {
      try {
        body(i);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    };
    for (std::size_t i = 1; i < members; ++i) threads.emplace_back(guarded, i);
    guarded(0);
  }
  for (const auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

RoundResult run_passthrough(const Setup& setup, const std::string& group, const std::string& output) {
  create_topic(setup, output);
  const auto count = static_cast<std::size_t>(setup.options.members);
  std::vector<std::unique_ptr<PassthroughMember>> members;
  for (std::size_t i = 0; i < count; ++i) members.push_back(std::make_unique<PassthroughMember>(setup, group, output));
  progress::start(setup.options.events, milliseconds(setup.options.sample_ms), nullptr, count > 1);
  try {
    run_members(count, [&](std::size_t i) { members[i]->run(); });
  } catch (...) {
    progress::stop();
    throw;
  }
  RoundResult result;
  result.figures = figures_of(progress::stop(), setup.options, "passthrough");
  if (count > 1) blank_loop_columns(result.figures);
  result.consumed = result.produced = setup.options.events;
  for (const auto& member : members) member->finish();
  return result;
}

config::Config service_config(const Setup& setup, const std::string& group, const std::string& output,
                              int checkpoint_ms) {
  const Options& options = setup.options;
  config::Config config;
  config.kafka.brokers = setup.broker.bootstrap_servers();
  config.kafka.group_id = group;
  config.kafka.properties = setup.properties;
  // Every client of the service loads the progress plugin; only its consumer gets the interceptor.
  config.kafka.properties["plugin.library.paths"] = setup.plugin_path;
  config.state.checkpoint_interval = milliseconds(checkpoint_ms);
  config.state.dir = setup.state_root + "/" + group;  // fresh per round: no state carried between rounds
  config.shutdown.grace_period = std::chrono::seconds(60);
  config::PipelineSettings pipeline;
  pipeline.name = "bench";
  pipeline.inputs = {kInputTopic};
  pipeline.output = output;
  pipeline.key.from = config::KeySource::kJson;
  pipeline.key.pointer = kKeyPointer;
  pipeline.time = config::TimeSource::kEvent;
  // Every event within one TTL: the data spans one millisecond per event.
  pipeline.ttl = std::max<config::Duration>(std::chrono::hours(1),
                                            milliseconds(2 * static_cast<std::int64_t>(options.events)));
  pipeline.filter.type = "time_limited";
  pipeline.filter.error_rate = 1e-3;
  // Each partition's filter sees its share of the new keys, all within one TTL.
  const auto partitions = static_cast<std::uint64_t>(options.partitions);
  pipeline.filter.expected_per_ttl = std::max<std::uint64_t>(1, (setup.workload.new_keys + partitions - 1) / partitions);
  config.pipelines.push_back(std::move(pipeline));
  return config;
}

// The options of every member of the service; `stop` is set by the progress plugin at the last event,
// whichever member consumed it.
app::ServiceOptions member_options(const Setup& setup, std::atomic<bool>& stop) {
  app::ServiceOptions options;
  options.bootstrap_servers = setup.broker.bootstrap_servers();
  options.stop = &stop;
  options.hooks = setup.hooks;
  options.snapshot_interval = milliseconds(setup.options.snapshot_ms);
  return options;
}

// --workers N: the service as `bloomgate run` runs it with `workers: N`, N group members on threads of one
// process sharing one state directory; run on the calling thread until the progress plugin sets `stop`.
RoundResult run_service_workers(const Setup& setup, const std::string& group, const std::string& output,
                                int checkpoint_ms) {
  create_topic(setup, output);
  const std::uint64_t total = setup.options.events;
  std::atomic<bool> stop{false};
  config::Config config = service_config(setup, group, output, checkpoint_ms);
  config.workers = static_cast<std::uint32_t>(setup.options.workers);
  app::ServiceWorkers workers(std::move(config), member_options(setup, stop));
  const auto run_started = Clock::now();
  progress::start(total, milliseconds(setup.options.sample_ms), &stop, setup.options.workers > 1);
  const app::RunResult run_result = workers.run();
  const double run_seconds = seconds_between(run_started, Clock::now());
  const std::vector<progress::Sample> samples = progress::stop();
  if (run_result.exit_code != 0) throw std::runtime_error("service: " + run_result.error);
  const app::ServiceSnapshot final_state = workers.snapshot();
  RoundResult result;
  result.commits = final_state.commits;
  result.consumed = final_state.consumed;
  result.produced = final_state.forwarded;
  result.duplicates = final_state.duplicates;
  if (result.consumed != total) {
    throw std::runtime_error("service consumed " + grouped(result.consumed) + " of " + grouped(total) + " events");
  }
  result.figures = figures_of(samples, setup.options, "service");
  if (setup.options.workers > 1) blank_loop_columns(result.figures);
  result.run_seconds = run_seconds;
  return result;
}

// The service, and with --members N, N-1 more instances of it in this process and group, each with a state
// directory of its own, that the group's assignment gives a share of the partitions.
RoundResult run_service(const Setup& setup, const std::string& group, const std::string& output, int checkpoint_ms) {
  if (setup.options.workers > 0) return run_service_workers(setup, group, output, checkpoint_ms);
  create_topic(setup, output);
  const std::uint64_t total = setup.options.events;
  std::atomic<bool> stop{false};
  std::string stall;
  auto last_progress = Clock::now();
  std::uint64_t last_consumed = 0;
  app::ServiceOptions first_options = member_options(setup, stop);
  first_options.on_snapshot = [&](const app::ServiceSnapshot& snapshot) {
    const auto now = Clock::now();
    if (snapshot.consumed != last_consumed || snapshot.consumed == 0) {
      last_consumed = snapshot.consumed;
      last_progress = now;
    }
    if (snapshot.consumed >= total) stop.store(true);
    if (now - last_progress > kStallLimit) {
      stall = "no progress for 60 s after " + grouped(snapshot.consumed) + " of " + grouped(total) + " events";
      stop.store(true);
    }
  };
  std::vector<std::unique_ptr<app::Service>> members;
  members.push_back(
      std::make_unique<app::Service>(service_config(setup, group, output, checkpoint_ms), std::move(first_options)));
  for (int i = 1; i < setup.options.members; ++i) {
    config::Config config = service_config(setup, group, output, checkpoint_ms);
    config.state.dir += "-member-" + std::to_string(i);
    members.push_back(std::make_unique<app::Service>(std::move(config), member_options(setup, stop)));
  }
  const auto run_started = Clock::now();
  std::vector<app::RunResult> run_results(members.size());
  progress::start(total, milliseconds(setup.options.sample_ms), &stop, members.size() > 1);
  run_members(members.size(), [&](std::size_t i) {
    // Service::run() runs on the calling thread, as `bloomgate run` runs it (on main), and as the
    // passthrough loop runs. --service-thread runs it on a std::thread instead (glibc then serves its
    // allocations from a secondary malloc arena).
    if (i == 0 && setup.options.service_thread) std::jthread([&] { run_results[0] = members[0]->run(); }).join();
    else run_results[i] = members[i]->run();
  });
  const double run_seconds = seconds_between(run_started, Clock::now());
  const std::vector<progress::Sample> samples = progress::stop();
  for (const app::RunResult& run_result : run_results) {
    if (run_result.exit_code != 0) throw std::runtime_error("service: " + run_result.error);
  }
  if (!stall.empty()) throw std::runtime_error("service: " + stall);
  RoundResult result;
  result.commits = members.front()->snapshot().commits;  // the first member's: one commit per checkpoint
  for (const auto& member : members) {
    const app::ServiceSnapshot final_state = member->snapshot();
    result.consumed += final_state.consumed;
    result.produced += final_state.forwarded;
    result.duplicates += final_state.duplicates;
  }
  if (result.consumed != total) {
    throw std::runtime_error("service consumed " + grouped(result.consumed) + " of " + grouped(total) + " events");
  }
  result.figures = figures_of(samples, setup.options, "service");
  if (members.size() > 1) blank_loop_columns(result.figures);
  result.run_seconds = run_seconds;
  return result;
}

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
  double filter_ns = kNaN;          // hash + test_and_insert
  double decide_ns = kNaN;          // PartitionDeduplicator::decide: extract + event clock + filter
  double header_objects_ns = kNaN;  // rd_kafka_headers_new + rd_kafka_header_add + destroy, alone
  PartFigures consume;              // Consumer::poll of every event
  PartFigures produce_plain;        // Producer::produce + flush of every event, no headers
  PartFigures produce_headers;      // the same with the source header
  PartFigures produce_service;      // the forwarded events with the source header, per INPUT event
  double snapshot_us = kNaN;        // stats() of every partition's filter: the bulk of one snapshot
  double forwarded_share = kNaN;    // of decide(): the share of events forwarded
  std::uint64_t filter_slices = 0;  // partition 0's filter after decide(), for the reader
  double filter_kib = kNaN;
};

// Median CPU seconds of this thread over `reps` runs of `body`; `prepare` (untimed) runs before each.
// Thread CPU: the in-memory parts run on this thread alone, and the idle librdkafka threads' wake-ups
// are not theirs.
double median_cpu(int reps, const std::function<void()>& prepare, const std::function<void()>& body) {
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) {
    prepare();
    const double start = thread_cpu_seconds();
    body();
    seconds.push_back(thread_cpu_seconds() - start);
  }
  return median(seconds);
}

filters::TimePoint wall_clock_now() {
  return std::chrono::time_point_cast<filters::Duration>(std::chrono::system_clock::now());
}

// (order_id, customer) from the JSON value and the region header: what the configured key's cost is
// compared with.
config::KeySettings three_part_key() {
  config::KeySettings key;
  key.parts = {{config::KeySource::kJson, kKeyPointer, "", false, false},
               {config::KeySource::kJson, "/customer", "", false, false},
               {config::KeySource::kHeader, "", "region", false, false}};
  return key;
}

Breakdown measure_breakdown(const Setup& setup, const config::PipelineSettings& pipeline, std::vector<bool>& forwarded) {
  const Workload& w = setup.workload;
  const auto n = static_cast<double>(w.events.size());
  const auto partitions = static_cast<std::size_t>(setup.options.partitions);
  const int reps = setup.options.breakdown_reps;
  Breakdown b;
  volatile std::uint64_t sink = 0;

  // (a) key extraction: one extractor per partition, as the service has; the configured key, and a key
  // of three parts over the same events, each given a region header. The two alternate rep by rep, and
  // the ratio is the median of each rep's pair, so a burst of load on the shared machine hits both.
  const auto extraction_pass = [&](std::vector<app::KeyExtractor>& extractors, std::span<const app::EventHeader> headers) {
    const double start = thread_cpu_seconds();
    std::uint64_t bytes = 0;
    for (const std::size_t i : w.by_partition) {
      const Event& e = w.events[i];
      const app::EventView view{e.key, e.value, headers};
      const app::ExtractionResult result = extractors[static_cast<std::size_t>(e.partition)].extract(view);
      if (!result.has_key()) throw std::runtime_error("key extraction failed: " + result.rejection().message);
      bytes += result.key().bytes().size();
    }
    sink = sink + bytes;
    return (thread_cpu_seconds() - start) * 1e9 / n;
  };
  {
    std::vector<app::KeyExtractor> configured;
    std::vector<app::KeyExtractor> three_parts;
    for (std::size_t p = 0; p < partitions; ++p) {
      configured.emplace_back(pipeline.key, pipeline.max_key_bytes, pipeline.max_value_bytes);
      three_parts.emplace_back(three_part_key(), pipeline.max_key_bytes, pipeline.max_value_bytes);
    }
    const std::vector<app::EventHeader> region_headers{{"trace-id", "t-0001"}, {"region", "eu-west"}};
    std::vector<double> one_pointer;
    std::vector<double> parts;
    std::vector<double> ratios;
    for (int r = 0; r < reps; ++r) {
      one_pointer.push_back(extraction_pass(configured, {}));
      parts.push_back(extraction_pass(three_parts, region_headers));
      ratios.push_back(parts.back() / one_pointer.back());
    }
    b.extract_ns = median(one_pointer);
    b.extract_parts_ns = median(parts);
    b.extract_parts_ratio = median(ratios);
  }

  {  // (b) the filter alone: fresh filters per rep, built as the service builds them
    std::vector<std::unique_ptr<filters::Filter>> filter_set;
    const filters::FilterOptions filter_options = app::filter_options_for(pipeline);
    b.filter_ns = median_cpu(reps, [&] {
      filter_set.clear();
      for (std::size_t p = 0; p < partitions; ++p) filter_set.push_back(filters::make_filter(filter_options));
    }, [&] {
      std::uint64_t duplicates = 0;
      for (const std::size_t i : w.by_partition) {
        const Event& e = w.events[i];
        duplicates += filter_set[static_cast<std::size_t>(e.partition)]->test_and_insert(
            std::string_view(e.key), filters::from_epoch_millis(e.timestamp_ms)) ? 1U : 0U;
      }
      sink = sink + duplicates;
    }) * 1e9 / n;
  }

  {  // (c) decide(): what the service does per event without Kafka; also which events it forwards
    std::vector<std::unique_ptr<app::PartitionDeduplicator>> deduplicators;
    std::vector<bool> verdicts(w.events.size(), false);
    b.decide_ns = median_cpu(reps, [&] {
      deduplicators.clear();
      for (std::size_t p = 0; p < partitions; ++p) {
        deduplicators.push_back(std::make_unique<app::PartitionDeduplicator>(pipeline, wall_clock_now));
      }
    }, [&] {
      for (const std::size_t i : w.by_partition) {
        const Event& e = w.events[i];
        const app::EventView view{e.key, e.value, {}};
        const app::Verdict verdict = deduplicators[static_cast<std::size_t>(e.partition)]->decide(view, e.timestamp_ms);
        if (verdict.outcome == app::Outcome::kDeadLetter) throw std::runtime_error("decide: an event was dead-lettered");
        verdicts[i] = verdict.outcome == app::Outcome::kForward;
      }
    }) * 1e9 / n;
    forwarded = verdicts;
    b.forwarded_share = static_cast<double>(std::count(verdicts.begin(), verdicts.end(), true)) / n;

    // (d) one snapshot's filter statistics (publish_snapshot calls stats() on every partition's filter)
    constexpr int kSnapshots = 20;
    const auto now = wall_clock_now();
    const double cpu = median_cpu(reps, [] {}, [&] {
      for (int s = 0; s < kSnapshots; ++s) {
        for (const auto& d : deduplicators) sink = sink + d->filter().stats(d->filter_time(now)).bits;
      }
    });
    b.snapshot_us = cpu * 1e6 / kSnapshots;
    const filters::FilterStats stats = deduplicators.front()->filter().stats(deduplicators.front()->filter_time(now));
    b.filter_slices = stats.slices;
    b.filter_kib = static_cast<double>(stats.bits) / 8 / 1024;
  }

  {  // (e) the header object Producer::produce builds for a record with the source header
    b.header_objects_ns = median_cpu(reps, [] {}, [&] {
      for (const std::size_t i : w.by_partition) {
        const Event& e = w.events[i];
        const app::SourceText source(kInputTopic, e.partition, e.offset);
        rd_kafka_headers_t* headers = rd_kafka_headers_new(1);
        rd_kafka_header_add(headers, app::headers::kSource, -1, source.view().data(),
                            static_cast<ssize_t>(source.view().size()));
        sink = sink + rd_kafka_header_cnt(headers);
        rd_kafka_headers_destroy(headers);
      }
    }) * 1e9 / n;
  }
  return b;
}

// Produce alone, into a fresh topic whose metadata the producer has fetched first (librdkafka 2.0.2 would
// otherwise hold the records for up to a second, see "Measuring a run"); CPU from the first produce to
// the end of the flush, per INPUT event.
enum class ProduceMode {
  kAllPlain,          // every event as it is (what the passthrough writes)
  kAllWithHeaders,    // every event plus the source header
  kForwardedHeaders,  // the events decide() forwards, plus the source header (what the service writes)
};

PartFigures measure_produce(const Setup& setup, const std::string& topic, ProduceMode mode,
                            const std::vector<bool>& forwarded) {
  create_topic(setup, topic);
  DeliveryCounter deliveries;
  connectors::ProducerOptions producer_options;
  producer_options.hooks = setup.hooks;
  producer_options.on_delivery = deliveries.function();
  connectors::Producer producer(client_config(setup, false), std::move(producer_options));
  rd_kafka_topic_t* topic_handle = rd_kafka_topic_new(producer.native_handle(), topic.c_str(), nullptr);
  const rd_kafka_metadata_t* metadata = nullptr;
  if (rd_kafka_metadata(producer.native_handle(), 0, topic_handle, &metadata, 10'000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_metadata_destroy(metadata);
  }
  const Workload& w = setup.workload;
  std::vector<connectors::HeaderView> headers;
  std::uint64_t since_poll = 0;
  const double start = process_cpu_seconds();
  const double thread_start = thread_cpu_seconds();
  const auto wall_start = Clock::now();
  for (std::size_t i = 0; i < w.events.size(); ++i) {
    const Event& e = w.events[i];
    if (mode == ProduceMode::kForwardedHeaders && !forwarded[i]) continue;
    std::optional<app::SourceText> source;
    if (mode != ProduceMode::kAllPlain) {  // as OutputHeaders::with_source
      source.emplace(kInputTopic, e.partition, e.offset);
      headers.assign({{app::headers::kSource, source->view()}});
    }
    produce_or_throw(producer, topic, e, headers);
    if (++since_poll >= kProducerPollEvery) {
      since_poll = 0;
      producer.poll(milliseconds(0));
    }
  }
  if (auto error = producer.flush(milliseconds(120'000)); !error.ok()) throw connectors::KafkaException(std::move(error));
  const double cpu = process_cpu_seconds() - start;
  const double thread_cpu = thread_cpu_seconds() - thread_start;
  const double wall = seconds_between(wall_start, Clock::now());
  rd_kafka_topic_destroy(topic_handle);
  deliveries.check("produce alone");
  const auto n = static_cast<double>(w.events.size());
  return {cpu * 1e9 / n, n / wall, thread_cpu * 1e9 / n};
}

PartFigures measure_consume(const Setup& setup, const std::string& group) {
  connectors::ConsumerOptions consumer_options;
  consumer_options.group_id = group;
  consumer_options.hooks = setup.hooks;
  connectors::Consumer consumer(counted_consumer_config(setup), std::move(consumer_options));
  if (auto error = consumer.subscribe({kInputTopic}); !error.ok()) throw connectors::KafkaException(std::move(error));
  std::uint64_t bytes = 0;
  const RoundResult result = consume_loop(
      setup, consumer, nullptr,
      [&](const connectors::ConsumedMessage& message) { bytes += message.value().value_or(std::string_view{}).size(); },
      "consume");
  (void)consumer.close();
  return {result.figures.cpu_ns_per_event, result.figures.events_per_second, result.figures.thread_cpu_ns_per_event};
}

// ------------------------------------------------------------------------------------------------------
// --checkpoint-ab: the service with a checkpoint every second against the same service with checkpoints
// effectively off (the durable-state target: at least 0.95 x). Service-only round pairs on the same input; the order within
// a pair alternates, so neither side always runs second. The measured span is the same as the rounds'
// (from --warmup-share of the events to the last sample): give it enough events to hold several
// checkpoints, and read the commits column, which counts them.

struct AbPair {
  RoundResult on;   // a checkpoint every ab_on_ms
  RoundResult off;  // every ab_off_ms
  double ratio = kNaN;  // on / off, events/s
};

std::vector<AbPair> run_checkpoint_ab(const Setup& setup) {
  const Options& o = setup.options;
  std::vector<AbPair> pairs;
  for (int round = 1; round <= o.ab_rounds; ++round) {
    const std::string r = std::to_string(round);
    AbPair pair;
    const auto run_on = [&] { pair.on = run_service(setup, "bench-ab-on-" + r, "bench-ab-on-out-" + r, o.ab_on_ms); };
    const auto run_off = [&] { pair.off = run_service(setup, "bench-ab-off-" + r, "bench-ab-off-out-" + r, o.ab_off_ms); };
    std::fprintf(stderr, "service_bench: checkpoint A/B %d/%d ...\n", round, o.ab_rounds);
    if (round % 2 == 1) {
      run_on();
      run_off();
    } else {
      run_off();
      run_on();
    }
    pair.ratio = pair.on.figures.events_per_second / pair.off.figures.events_per_second;
    pairs.push_back(pair);
  }
  return pairs;
}

double ab_median(const std::vector<AbPair>& pairs) {
  std::vector<double> ratios;
  for (const AbPair& p : pairs) ratios.push_back(p.ratio);
  return median(ratios);
}

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

constexpr const char* kRebuildGroup = "bench-rebuild";

// The partitions' rebuild reports, once every partition has finished one (empty until then).
std::vector<app::PartitionReport> rebuilt_partitions(const app::ServiceSnapshot& snapshot, std::size_t expected) {
  std::size_t rebuilt = 0;
  for (const app::PartitionReport& p : snapshot.partitions) rebuilt += p.rebuilds > 0 ? 1 : 0;
  return rebuilt >= expected ? snapshot.partitions : std::vector<app::PartitionReport>{};
}

RebuildFigures run_rebuild(const Setup& setup) {
  const Options& o = setup.options;
  RebuildFigures r;
  std::fprintf(stderr, "service_bench: rebuild: the pipeline's round ...\n");
  r.pipeline = run_service(setup, kRebuildGroup, "bench-rebuild-out", o.checkpoint_ms);
  std::fprintf(stderr, "service_bench: rebuild: a service with an empty state directory in the same group ...\n");
  std::atomic<bool> stop{false};
  std::vector<app::PartitionReport> reports;
  const auto give_up = Clock::now() + kStallLimit;
  app::ServiceOptions service_options;
  service_options.bootstrap_servers = setup.broker.bootstrap_servers();
  service_options.stop = &stop;
  service_options.hooks = setup.hooks;
  service_options.snapshot_interval = milliseconds(o.snapshot_ms);
  service_options.on_snapshot = [&](const app::ServiceSnapshot& snapshot) {
    if (reports.empty()) reports = rebuilt_partitions(snapshot, static_cast<std::size_t>(o.partitions));
    if (!reports.empty() || Clock::now() > give_up) stop.store(true);
  };
  config::Config config = service_config(setup, kRebuildGroup, "bench-rebuild-out", o.checkpoint_ms);
  config.state.dir += "-lost";  // the state is gone, the group's commits remain
  app::Service service(std::move(config), std::move(service_options));
  if (const app::RunResult run = service.run(); run.exit_code != 0) throw std::runtime_error("rebuild: " + run.error);
  if (reports.empty()) throw std::runtime_error("rebuild: not every partition was rebuilt within 60 s");
  r.seconds = 0;
  for (const app::PartitionReport& p : reports) {
    ++r.partitions;
    r.events += p.rebuild_events;
    r.seconds += p.last_rebuild_seconds;
  }
  if (r.events != o.events) {
    throw std::runtime_error("rebuild: inserted " + grouped(r.events) + " of " + grouped(o.events) + " events");
  }
  r.events_per_second = static_cast<double>(r.events) / r.seconds;
  r.ratio = r.events_per_second / r.pipeline.figures.events_per_second;
  return r;
}

void print_rebuild(const RebuildFigures& r) {
  std::printf("REBUILD from input history: a service with an empty state directory in the group of a service round over\n"
              "the same input, so every partition is rebuilt from its input (app/src/input_rebuilder.cc, one partition\n"
              "after another); baseline: that round's input events/s (the pipeline's normal throughput)\n");
  std::printf("  %-34s %11s   (%s events, %llu partitions, %.3f s summed)\n", "rebuild events/s",
              grouped(static_cast<std::uint64_t>(r.events_per_second)).c_str(), grouped(r.events).c_str(),
              static_cast<unsigned long long>(r.partitions), r.seconds);
  std::printf("  %-34s %11s\n", "pipeline events/s (same input)",
              grouped(static_cast<std::uint64_t>(r.pipeline.figures.events_per_second)).c_str());
  std::printf("  %-34s %11.2f   (no target: higher is faster)\n\n", "ratio rebuild / pipeline", r.ratio);
}

void print_checkpoint_ab(const Options& o, const std::vector<AbPair>& pairs) {
  const double ratio = ab_median(pairs);
  std::printf("CHECKPOINT A/B: the service with a checkpoint every %d ms / every %d ms (effectively off), median of %zu "
              "pairs\n",
              o.ab_on_ms, o.ab_off_ms, pairs.size());
  std::printf("  %-34s %8.3f   target >= %.2f   %s\n", "input events/s", ratio, o.ab_target,
              std::isnan(ratio) ? "n/a" : ratio >= o.ab_target ? "PASS" : "MISS");
  std::printf("  %-5s %-14s %11s %9s %11s %8s %8s\n", "round", "checkpoints", "events/s", "CPU ns/ev", "loop ns/ev",
              "commits", "run s");
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    for (const auto& [name, r] : {std::pair<const char*, const RoundResult*>{"every 1 s", &pairs[i].on},
                                  std::pair<const char*, const RoundResult*>{"off", &pairs[i].off}}) {
      std::printf("  %-5zu %-14s %11s %9.0f %11.0f %8llu %8.2f\n", i + 1, name,
                  grouped(static_cast<std::uint64_t>(std::isnan(r->figures.events_per_second) ? 0 : r->figures.events_per_second)).c_str(),
                  r->figures.cpu_ns_per_event, r->figures.thread_cpu_ns_per_event,
                  static_cast<unsigned long long>(r->commits), r->run_seconds);
    }
    std::printf("  %-5zu %-14s %11.3f\n", i + 1, "ratio", pairs[i].ratio);
  }
  std::printf("  (commits: the service's offset commits, one per checkpoint, the one at shutdown included; run s: the\n"
              "   whole Service::run(), ~3 s of group join included; the measured span is the rounds' span)\n\n");
}

// ------------------------------------------------------------------------------------------------------
// --json: every figure the program prints, NaN as null.

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

void json_figures(Json& j, const char* key, const RunFigures& f) {
  j.open(key, '{');
  j.num("events_per_second", f.events_per_second);
  j.num("cpu_ns_per_event", f.cpu_ns_per_event);
  j.num("cores", f.cores);
  j.num("loop_cpu_ns_per_event", f.thread_cpu_ns_per_event);
  j.num("loop_busy", f.thread_busy);
  j.num("span_seconds", f.span_seconds);
  j.u64("span_events", f.span_events);
  j.close('}');
}

void json_round(Json& j, const char* key, const RoundResult& r) {
  j.open(key, '{');
  json_figures(j, "figures", r.figures);
  j.u64("consumed", r.consumed);
  j.u64("produced", r.produced);
  j.u64("duplicates", r.duplicates);
  j.u64("commits", r.commits);
  j.num("run_seconds", r.run_seconds);
  j.close('}');
}

void json_part(Json& j, const char* key, const PartFigures& f) {
  j.open(key, '{');
  j.num("process_cpu_ns_per_event", f.cpu_ns_per_event);
  j.num("thread_cpu_ns_per_event", f.thread_ns_per_event);
  j.num("events_per_second", f.events_per_second);
  j.close('}');
}

std::string fixed2(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", x);
  return text;
}

// PASS when `reached` is at least `limit`, or with `at_most` at most `limit`.
const char* verdict(double reached, double limit, bool at_most = false) {
  if (std::isnan(reached)) return "n/a";
  return (at_most ? reached <= limit : reached >= limit) ? "PASS" : "MISS";
}

void json_target(Json& j, const std::string& name, double reached, double limit, bool at_most = false) {
  j.open(nullptr, '{');
  j.str("target", name);
  j.num("reached", reached);
  j.num("limit", limit);
  j.str("result", verdict(reached, limit, at_most));
  j.close('}');
}

void json_breakdown(Json& j, const Breakdown& b, double snapshot_ns) {
  j.open("breakdown", '{');
  j.num("extract_ns", b.extract_ns);
  j.num("extract_parts_ns", b.extract_parts_ns);
  j.num("extract_parts_ratio", b.extract_parts_ratio);
  j.num("filter_ns", b.filter_ns);
  j.num("decide_ns", b.decide_ns);
  j.num("header_objects_ns", b.header_objects_ns);
  j.num("snapshot_us", b.snapshot_us);
  j.num("snapshot_ns_per_event", snapshot_ns);
  j.num("forwarded_share", b.forwarded_share);
  j.u64("filter_slices", b.filter_slices);
  j.num("filter_kib", b.filter_kib);
  json_part(j, "consume", b.consume);
  json_part(j, "produce_plain", b.produce_plain);
  json_part(j, "produce_headers", b.produce_headers);
  json_part(j, "produce_service", b.produce_service);
  j.close('}');
}

void json_ab(Json& j, const Options& o, const std::vector<AbPair>& pairs) {
  j.open("checkpoint_ab", '{');
  j.u64("on_interval_ms", static_cast<std::uint64_t>(o.ab_on_ms));
  j.u64("off_interval_ms", static_cast<std::uint64_t>(o.ab_off_ms));
  j.num("events_per_second_ratio", ab_median(pairs));
  j.num("target", o.ab_target);
  j.open("rounds", '[');
  for (const AbPair& p : pairs) {
    j.open(nullptr, '{');
    json_round(j, "on", p.on);
    json_round(j, "off", p.off);
    j.num("ratio", p.ratio);
    j.close('}');
  }
  j.close(']');
  j.close('}');
}

void json_rebuild(Json& j, const RebuildFigures& r) {
  j.open("rebuild", '{');
  j.num("events_per_second", r.events_per_second);
  j.num("pipeline_events_per_second", r.pipeline.figures.events_per_second);
  j.num("ratio_over_pipeline", r.ratio);
  j.u64("partitions", r.partitions);
  j.u64("events", r.events);
  j.num("seconds", r.seconds);
  json_round(j, "pipeline", r.pipeline);
  j.close('}');
}

void json_head(Json& j, const Options& o, const Workload& w, const Report& r) {
  j.str("benchmark", "service_bench");
  j.u64("events", o.events);
  j.u64("partitions", static_cast<std::uint64_t>(o.partitions));
  j.u64("value_bytes", o.value_bytes);
  j.num("repeat_share", o.repeat_share);
  j.u64("new_keys", w.new_keys);
  j.u64("seed", o.seed);
  j.u64("round_pairs", static_cast<std::uint64_t>(o.rounds));
  j.str("sides", o.sides);
  j.u64("checkpoint_ms", static_cast<std::uint64_t>(o.checkpoint_ms));
  j.u64("hardware_concurrency", std::thread::hardware_concurrency());
  j.str("load_average_start", r.load_at_start);
  j.str("load_average_end", r.load_at_end);
  j.open("librdkafka_properties", '{');
  for (const auto& [k, v] : r.properties) j.str(k.c_str(), v);
  j.close('}');
  j.num("total_seconds", r.total_seconds);
}

std::string to_json(const Options& o, const Workload& w, const Report& r) {
  Json j;
  j.open(nullptr, '{');
  json_head(j, o, w, r);
  j.num("events_per_second_ratio", r.speed_ratio);
  j.num("cpu_per_event_ratio", r.cpu_ratio);
  j.open("rounds", '[');
  for (std::size_t i = 0; i < r.service.size(); ++i) {
    j.open(nullptr, '{');
    json_round(j, "passthrough", r.passthrough[i]);
    json_round(j, "service", r.service[i]);
    j.num("events_per_second_ratio", r.rate_ratios[i]);
    j.num("cpu_per_event_ratio", r.cpu_ratios[i]);
    j.close('}');
  }
  j.close(']');
  if (r.breakdown) json_breakdown(j, r.b, r.snapshot_ns_per_event);
  if (o.checkpoint_ab) json_ab(j, o, r.ab);
  if (r.rebuild) json_rebuild(j, *r.rebuild);
  j.open("targets", '[');
  if (!r.service.empty()) {
    json_target(j, "service events/s >= " + fixed2(o.target) + " x passthrough", r.speed_ratio, o.target);
    json_target(j, "service CPU per event <= " + fixed2(o.cpu_target) + " x passthrough", r.cpu_ratio, o.cpu_target,
                /*at_most=*/true);
  }
  if (o.checkpoint_ab) {
    json_target(j, "checkpoint every second >= 0.95 x checkpoints off, events/s", ab_median(r.ab), o.ab_target);
  }
  j.close(']');
  j.close('}');
  return j.text() + "\n";
}

bool write_json(const Options& o, const Workload& w, const Report& r) {
  std::ofstream out(o.json);
  out << to_json(o, w, r);
  if (!out) std::fprintf(stderr, "service_bench: cannot write %s\n", o.json.c_str());
  return static_cast<bool>(out);
}

// ------------------------------------------------------------------------------------------------------
// The run

int run(const Options& options) {
  app::configure_logging(options.log_level);
  const auto started = Clock::now();
  const std::string load_at_start = load_average();
  std::fprintf(stderr, "service_bench: generating %s events ...\n", grouped(options.events).c_str());
  const Workload workload = make_workload(options);
  if (workload.max_partition_bytes > kMaxInputBytesPerPartition) {
    throw std::invalid_argument("the input would need " + std::to_string(workload.max_partition_bytes / (1 << 20)) +
                                " MiB in its fullest partition; the embedded broker keeps only 5 MiB per partition "
                                "(use more --partitions or fewer --events)");
  }
  std::map<std::string, std::string> properties;
  if (options.bench_properties) {
    for (const auto& [key, value] : kBenchProperties) properties[key] = value;
  }
  for (const std::string& property : options.properties) {
    const auto eq = property.find('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("--property " + property + ": expected key=value");
    properties[property.substr(0, eq)] = property.substr(eq + 1);
  }

  connectors::ClientHooks broker_hooks;  // the mock cluster's host handle warns about its own plumbing
  broker_hooks.on_log = [](int, std::string_view, std::string_view) {};
  connectors::EmbeddedBroker broker(1, broker_hooks);
  const std::string plugin_path = progress::library_path();
  if (plugin_path.empty()) throw std::runtime_error("cannot find the progress plugin's file");
  // The service's state directories (one per round) live in a temporary directory removed at exit.
  const app::TemporaryDirectory state_root("service_bench");
  const Setup setup{options, workload, broker, app::kafka_log_hooks(), properties, plugin_path, state_root.path()};

  std::fprintf(stderr, "service_bench: pre-producing to %s (%d partitions, fullest %.2f MiB) ...\n", kInputTopic,
               options.partitions, workload.max_partition_bytes / (1 << 20));
  pre_produce(setup);

  // perf record -D -1 --control fifo:PATH: profile the rounds only, not the event generation.
  const auto perf_command = [&](const char* command) {
    if (options.perf_control.empty()) return;
    if (FILE* fifo = std::fopen(options.perf_control.c_str(), "w")) {
      std::fputs(command, fifo);
      std::fclose(fifo);
    }
  };
  perf_command("enable\n");
  std::vector<RoundResult> passthrough;
  std::vector<RoundResult> service;
  for (int round = 1; round <= options.rounds && options.sides != "none"; ++round) {
    const std::string r = std::to_string(round);
    std::fprintf(stderr, "service_bench: round %d/%d: passthrough (joining the group takes ~3 s) ...\n", round,
                 options.rounds);
    passthrough.push_back(options.sides == "service"
                              ? RoundResult{}
                              : run_passthrough(setup, "bench-passthrough-" + r, "bench-passthrough-out-" + r));
    std::fprintf(stderr, "service_bench: round %d/%d: service ...\n", round, options.rounds);
    service.push_back(options.sides == "passthrough"
                          ? RoundResult{}
                          : run_service(setup, "bench-service-" + r, "bench-service-out-" + r, options.checkpoint_ms));
  }

  std::vector<AbPair> ab;
  if (options.checkpoint_ab) ab = run_checkpoint_ab(setup);
  std::optional<RebuildFigures> rebuild;
  if (options.rebuild) rebuild = run_rebuild(setup);
  perf_command("disable\n");

  Breakdown b;
  if (!options.skip_breakdown) {
    std::fprintf(stderr, "service_bench: CPU breakdown ...\n");
    const config::Config config = service_config(setup, "unused", "unused", options.checkpoint_ms);
    std::vector<bool> forwarded;
    b = measure_breakdown(setup, config.pipelines.front(), forwarded);
    b.consume = measure_consume(setup, "bench-consume-only");
    b.produce_plain = measure_produce(setup, "bench-produce-plain", ProduceMode::kAllPlain, forwarded);
    b.produce_headers = measure_produce(setup, "bench-produce-headers", ProduceMode::kAllWithHeaders, forwarded);
    b.produce_service = measure_produce(setup, "bench-produce-as-service", ProduceMode::kForwardedHeaders, forwarded);
  }

  // ---- the report ----
  std::vector<double> rate_ratio;
  std::vector<double> cpu_ratio;
  for (std::size_t i = 0; i < service.size(); ++i) {
    rate_ratio.push_back(service[i].figures.events_per_second / passthrough[i].figures.events_per_second);
    cpu_ratio.push_back(service[i].figures.cpu_ns_per_event / passthrough[i].figures.cpu_ns_per_event);
  }
  const auto med = [](const std::vector<RoundResult>& rounds, double RunFigures::*field) {
    std::vector<double> values;
    for (const RoundResult& r : rounds) values.push_back(r.figures.*field);
    return median(values);
  };
  const double speed_ratio = median(rate_ratio);
  const double cpu_per_event_ratio = median(cpu_ratio);
  const double service_cpu = med(service, &RunFigures::cpu_ns_per_event);
  const double service_rate = med(service, &RunFigures::events_per_second);

  std::printf("service_bench: %s events on %d partitions (largest %s), %zu-byte JSON values, %.0f%% repeats of the "
              "last %s new keys (seed %llu)\n",
              grouped(options.events).c_str(), options.partitions,
              grouped(*std::max_element(workload.per_partition.begin(), workload.per_partition.end())).c_str(),
              options.value_bytes, options.repeat_share * 100, grouped(options.recent_keys).c_str(),
              static_cast<unsigned long long>(options.seed));
  std::printf("embedded broker: librdkafka mock cluster IN THIS PROCESS, sharing the machine's %u cores with both "
              "sides; CPU figures include its work\n",
              std::thread::hardware_concurrency());
  std::printf("load average (1 min) at start %s, at end %s: other work on the machine competes for the same cores\n",
              load_at_start.c_str(), load_average().c_str());
  std::printf("librdkafka properties (both sides): %s\n\n", [&] {
    std::string text;
    for (const auto& [k, v] : properties) text += (text.empty() ? "" : ", ") + k + "=" + v;
    return text.empty() ? std::string("(defaults)") : text;
  }().c_str());

  if (!service.empty()) {  // --sides none runs no rounds: nothing to compare
    std::printf("RATIOS service / passthrough (median of %d alternated round pairs)\n", options.rounds);
    std::printf("  %-34s %8.3f   target >= %.2f   %s\n", "input events/s", speed_ratio, options.target,
                verdict(speed_ratio, options.target));
    std::printf("  %-34s %8.3f   target <= %.2f   %s   (higher = the service spends more CPU per event)\n\n",
                "process CPU per event", cpu_per_event_ratio, options.cpu_target,
                verdict(cpu_per_event_ratio, options.cpu_target, /*at_most=*/true));

    std::printf("ROUNDS (from %.0f%% of the events consumed to the last sample before all; samples every %d ms)\n",
                options.warmup_share * 100, options.sample_ms);
    std::printf("  %-5s %-12s %11s %9s %7s %11s %8s %7s %10s %6s\n", "round", "side", "events/s", "CPU ns/ev", "cores",
                "loop ns/ev", "loop busy", "span s", "produced", "dup%");
    const auto print_round = [&](const std::string& round, const char* name, const RunFigures& f, const std::string& produced,
                                 const std::string& dup) {
      std::printf("  %-5s %-12s %11s %9.0f %7.2f %11.0f %8.0f%% %7.2f %10s %6s\n", round.c_str(), name,
                  grouped(static_cast<std::uint64_t>(std::isnan(f.events_per_second) ? 0 : f.events_per_second)).c_str(),
                  f.cpu_ns_per_event, f.cores, f.thread_cpu_ns_per_event, 100 * f.thread_busy, f.span_seconds,
                  produced.c_str(), dup.c_str());
    };
    for (std::size_t i = 0; i < service.size(); ++i) {
      const std::string round = std::to_string(i + 1);
      print_round(round, "passthrough", passthrough[i].figures, grouped(passthrough[i].produced), "-");
      char dup[16];
      std::snprintf(dup, sizeof dup, "%.2f",
                    100.0 * static_cast<double>(service[i].duplicates) /
                        static_cast<double>(std::max<std::uint64_t>(service[i].consumed, 1)));
      print_round(round, "service", service[i].figures, grouped(service[i].produced), dup);
      std::printf("  %-5s %-12s %11.3f %9.3f %7s %11.3f\n", round.c_str(), "ratio", rate_ratio[i], cpu_ratio[i], "",
                  service[i].figures.thread_cpu_ns_per_event / passthrough[i].figures.thread_cpu_ns_per_event);
    }
    for (const auto& [name, rounds] : {std::pair<const char*, const std::vector<RoundResult>*>{"passthrough", &passthrough},
                                       std::pair<const char*, const std::vector<RoundResult>*>{"service", &service}}) {
      RunFigures m;
      m.events_per_second = med(*rounds, &RunFigures::events_per_second);
      m.cpu_ns_per_event = med(*rounds, &RunFigures::cpu_ns_per_event);
      m.cores = med(*rounds, &RunFigures::cores);
      m.thread_cpu_ns_per_event = med(*rounds, &RunFigures::thread_cpu_ns_per_event);
      m.thread_busy = med(*rounds, &RunFigures::thread_busy);
      m.span_seconds = med(*rounds, &RunFigures::span_seconds);
      print_round("med", name, m, "", "");
    }
    std::printf("  (CPU ns/ev: whole process, broker included; loop: the thread that polls, i.e. the service thread or\n"
                "   the passthrough loop; loop busy near 100%% means that thread is the bottleneck)\n\n");
  } else {
    std::printf("no passthrough/service rounds (--sides none)\n\n");
  }

  // The ratios exist only when both sides ran (--sides both, the default).
  std::vector<std::pair<std::string, double>> missing_check;
  if (options.sides == "both") {
    missing_check = {{"events/s ratio", speed_ratio}, {"CPU/event ratio", cpu_per_event_ratio}};
  }
  double snapshot_ns_per_event = kNaN;
  if (!options.skip_breakdown) {
    const double service_thread = med(service, &RunFigures::thread_cpu_ns_per_event);
    std::printf("CPU BREAKDOWN: each part alone over the same events, in ns of CPU per input event; \"process\" includes\n"
                "librdkafka's threads and the broker, \"thread\" is the calling thread's share. The service measured\n"
                "%.0f ns/event of process CPU, %.0f ns/event on its one thread: the shares are of those.\n",
                service_cpu, service_thread);
    std::printf("  %-46s %8s %7s %8s %7s   %s\n", "part", "process", "share", "thread", "share", "note");
    const auto row = [&](const std::string& name, double process_ns, double thread_ns, const std::string& note) {
      std::printf("  %-46s %8.0f %6.1f%% %8.0f %6.1f%%   %s\n", name.c_str(), process_ns, 100 * process_ns / service_cpu,
                  thread_ns, 100 * thread_ns / service_thread, note.c_str());
    };
    const auto kafka_row = [&](const std::string& name, const PartFigures& f, const std::string& note) {
      row(name, f.cpu_ns_per_event, f.thread_ns_per_event,
          note + (std::isnan(f.events_per_second)
                      ? std::string()
                      : "; " + grouped(static_cast<std::uint64_t>(f.events_per_second)) + " events/s alone"));
    };
    row("key extraction (KeyExtractor::extract)", b.extract_ns, b.extract_ns, "simdjson parse + JSON pointer");
    char parts_note[96];
    std::snprintf(parts_note, sizeof parts_note, "/order_id, /customer, header region: %.2fx one pointer (median of pairs)",
                  b.extract_parts_ratio);
    row("  with a key of three parts instead", b.extract_parts_ns, b.extract_parts_ns, parts_note);
    char note[160];
    std::snprintf(note, sizeof note, "time_limited 1e-3, one per partition, each %llu slices in %.0f KiB",
                  static_cast<unsigned long long>(b.filter_slices), b.filter_kib);
    row("filter (hash + test_and_insert)", b.filter_ns, b.filter_ns, note);
    row("decide() = extraction + event clock + filter", b.decide_ns, b.decide_ns, "PartitionDeduplicator::decide");
    kafka_row("consume alone (Consumer::poll)", b.consume, "no processing");
    kafka_row("produce alone: every event, no headers", b.produce_plain, "produce + flush");
    kafka_row("produce alone: every event + the source header", b.produce_headers, "produce + flush");
    row("  the header object alone", b.header_objects_ns, b.header_objects_ns,
        "rd_kafka_headers_new + header_add + destroy");
    std::snprintf(note, sizeof note, "the %.1f%% forwarded, + the source header", 100 * b.forwarded_share);
    kafka_row("produce as the service does", b.produce_service, note);
    const double per_second = 1000.0 / options.snapshot_ms;
    const double snapshot_ns = b.snapshot_us * 1e3 * per_second / service_rate;
    snapshot_ns_per_event = snapshot_ns;
    std::snprintf(note, sizeof note, "%.0f us per snapshot of %d filters, %.0f snapshot(s)/s", b.snapshot_us,
                  options.partitions, per_second);
    row("snapshot: filter stats of every partition", snapshot_ns, snapshot_ns, note);
    row("service, measured (median of the rounds)", service_cpu, service_thread, "");
    std::printf("  %-46s %8.0f %7s %8.0f %7s\n", "passthrough, measured (median of the rounds)",
                med(passthrough, &RunFigures::cpu_ns_per_event), "", med(passthrough, &RunFigures::thread_cpu_ns_per_event),
                "");
    std::printf("  The Kafka parts alone run librdkafka flat out (the producer queue fills, batches are full), not\n"
                "  at the pace of a consume loop: compare them with each other, do not add them up. Where the\n"
                "  service thread's time goes inside the loop: `perf record` (README.md).\n\n");
    for (const auto& [name, value] : std::initializer_list<std::pair<std::string, double>>{
             {"extract", b.extract_ns},
             {"filter", b.filter_ns},
             {"decide", b.decide_ns},
             {"header objects", b.header_objects_ns},
             {"consume", b.consume.cpu_ns_per_event},
             {"produce", b.produce_plain.cpu_ns_per_event},
             {"produce with headers", b.produce_headers.cpu_ns_per_event},
             {"produce as service", b.produce_service.cpu_ns_per_event},
             {"snapshot", b.snapshot_us}}) {
      missing_check.emplace_back(name, value);
    }
  }
  if (options.checkpoint_ab) {
    print_checkpoint_ab(options, ab);
    missing_check.emplace_back("checkpoint A/B events/s ratio", ab_median(ab));
  }
  if (rebuild) {
    print_rebuild(*rebuild);
    missing_check.emplace_back("rebuild events/s ratio", rebuild->ratio);
  }
  std::printf("total time %.1f s\n", seconds_between(started, Clock::now()));

  if (!options.json.empty()) {
    Report report{load_at_start, load_average(), properties, speed_ratio, cpu_per_event_ratio, rate_ratio, cpu_ratio,
                  passthrough, service, !options.skip_breakdown, b, snapshot_ns_per_event, ab, rebuild,
                  seconds_between(started, Clock::now())};
    if (!write_json(options, workload, report)) return 2;
  }

  std::vector<std::string> missing;
  for (const auto& [name, value] : missing_check) {
    if (!std::isfinite(value)) missing.push_back(name);
  }
  if (!missing.empty()) {
    std::fprintf(stderr, "service_bench: %zu figure(s) missing or not a number:", missing.size());
    for (const std::string& m : missing) std::fprintf(stderr, " %s;", m.c_str());
    std::fprintf(stderr, "\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace bloomgate::bench

int main(int argc, char** argv) {
  bloomgate::bench::Options options;
  CLI::App app{"service_bench: events/s and CPU per event of the bloomgate service against a raw consume-and-produce "
               "passthrough on the embedded broker"};
  app.add_option("--partitions", options.partitions, "partitions of the input and output topics")
      ->check(CLI::Range(1, 1024));
  app.add_option("--events", options.events, "input events, pre-produced (at most ~4 MiB per partition)")
      ->check(CLI::PositiveNumber);
  app.add_option("--value-bytes", options.value_bytes, "bytes of each JSON value")->check(CLI::Range(96, 4096));
  app.add_option("--repeat-share", options.repeat_share, "share of events repeating a recent key")
      ->check(CLI::Range(0.0, 0.95));
  app.add_option("--recent-keys", options.recent_keys, "a repeat picks one of the last this many new keys")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", options.seed, "seed of the event stream");
  app.add_option("--rounds", options.rounds, "alternated passthrough/service round pairs (median reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--sample-ms", options.sample_ms, "sampling interval of the progress plugin")
      ->check(CLI::PositiveNumber);
  app.add_option("--snapshot-ms", options.snapshot_ms, "the service's snapshot_interval (default: its default, 1 s)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup-share", options.warmup_share,
                 "the measured span starts once this share of the events is consumed")
      ->check(CLI::Range(0.0, 0.9));
  app.add_flag("!--no-bench-properties", options.bench_properties,
               "do not raise queued.min.messages / queued.max.messages.kbytes (librdkafka defaults)");
  app.add_option("--checkpoint-ms", options.checkpoint_ms, "the service's state.checkpoint_interval (flush + commit)")
      ->check(CLI::PositiveNumber);
  app.add_option("--breakdown-reps", options.breakdown_reps, "runs of each in-memory breakdown part (median)")
      ->check(CLI::PositiveNumber);
  app.add_option("--input-linger-ms", options.input_linger_ms,
                 "linger.ms of the pre-production: the mock broker returns one input batch per partition per fetch")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--input-batch-messages", options.input_batch_messages, "batch.num.messages of the pre-production")
      ->check(CLI::Range(1, 1'000'000));
  app.add_flag("--skip-breakdown", options.skip_breakdown, "only the alternated rounds");
  app.add_option("--sides", options.sides,
                 "run both sides, only one, or none (only the breakdown); for profiling, the ratios are then n/a")
      ->check(CLI::IsMember({"both", "passthrough", "service", "none"}));
  app.add_option("--perf-control", options.perf_control,
                 "FIFO of `perf record -D -1 --control fifo:FIFO`: profile only the rounds");
  app.add_flag("--service-thread", options.service_thread,
               "run Service::run() on a std::thread (a secondary malloc arena) instead of the main thread");
  app.add_option("--members", options.members,
                 "instances of the service in this process and consumer group, each on its own thread with its "
                 "own state directory, sharing the partitions, against as many passthrough members (the loop "
                 "columns then read nan: a sample's thread is whichever member's took it)")
      ->check(CLI::Range(1, 8));
  app.add_option("--workers", options.workers,
                 "the service as N workers of one process (workers: N, one shared state directory), against N "
                 "passthrough members; the loop columns then read nan as with --members")
      ->check(CLI::Range(1, 8))
      ->excludes("--members");
  app.add_flag("--timeline", options.timeline, "print every sample (time, CPU, events consumed) to stderr");
  app.add_option("--target", options.target, "the events/s ratio reported as PASS or MISS (at least)");
  app.add_option("--cpu-target", options.cpu_target, "the CPU-per-event ratio reported as PASS or MISS (at most)");
  app.add_option("--property", options.properties,
                 "librdkafka property key=value for every client of both sides (repeatable)");
  app.add_option("--log-level", options.log_level, "service and librdkafka log level");
  app.add_flag("--checkpoint-ab", options.checkpoint_ab,
               "also run service-only round pairs: a checkpoint every --ab-on-ms against every --ab-off-ms");
  app.add_option("--ab-rounds", options.ab_rounds, "round pairs of --checkpoint-ab (median reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--ab-on-ms", options.ab_on_ms, "checkpoint interval of the A side (every second)")
      ->check(CLI::PositiveNumber);
  app.add_option("--ab-off-ms", options.ab_off_ms, "checkpoint interval of the B side (an hour: effectively off)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--rebuild", options.rebuild,
               "also measure the rebuild rate from the input history against the pipeline's events/s (docs/state.md)");
  app.add_option("--ab-target", options.ab_target, "the A/B events/s ratio reported as PASS or MISS");
  app.add_option("--json", options.json, "also write every figure as JSON to this file");
  CLI11_PARSE(app, argc, argv);
  if (options.workers > 0) options.members = options.workers;  // as many passthrough members
  try {
    return bloomgate::bench::run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "service_bench: %s\n", e.what());
    return 2;
  }
}
