// File: bench/service_bench_setup.cc
//
// service_bench's events (generated in memory, then pre-produced to the input topic), the Kafka client
// settings both sides share, and the measured span of a run (figures_of).
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <thread>

#include "bloomgate/config/config.h"
#include "bench_support.h"
#include "schema_record_writer.h"
#include "service_bench.h"

namespace bloomgate::bench::service_bench {

namespace {

// FNV-1a then a finalizer: the partition of a key. Deliberately not the filters' hash, so a partition's
// keys do not share low hash bits inside its filter.
std::int32_t partition_of(std::string_view key, int partitions) {
  std::uint64_t h = 0xCBF29CE484222325ULL;
  for (const char c : key) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ULL;
  return static_cast<std::int32_t>(splitmix64(h) % static_cast<std::uint64_t>(partitions));
}

}  // namespace

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

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

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

connectors::KafkaConfig client_config(const Setup& setup, bool consumer) {
  // What the service does for its clients: bootstrap servers, earliest for consumers, then the properties
  // of the client's role on top (a `consumer.` or `producer.` prefix sends one to that role only).
  connectors::KafkaConfig kafka;
  kafka.with("bootstrap.servers", setup.broker.bootstrap_servers());
  if (consumer) kafka.with("auto.offset.reset", "earliest");
  config::KafkaSettings settings;
  settings.properties = setup.properties;
  const auto role = consumer ? config::ClientRole::kConsumer : config::ClientRole::kProducer;
  if (connectors::KafkaError error = kafka.set_all(config::properties_for(settings, role)); !error.ok()) {
    throw std::runtime_error("--property: " + error.message());
  }
  return kafka;
}

BenchBroker::BenchBroker(const std::string& brokers) {
  if (!brokers.empty()) {
    bootstrap_ = brokers;
    return;
  }
  connectors::ClientHooks hooks;  // the mock cluster's host handle warns about its own plumbing
  hooks.on_log = [](int, std::string_view, std::string_view) {};
  embedded_ = std::make_unique<connectors::EmbeddedBroker>(1, std::move(hooks));
  bootstrap_ = embedded_->bootstrap_servers();
}

connectors::KafkaError BenchBroker::create_topic(const std::string& name, int partitions,
                                                 const std::map<std::string, std::string>& configs) const {
  if (embedded_) return embedded_->create_topic(name, partitions);
  // The service is started right after: its output reconciler then meets partitions a real broker has not
  // loaded yet, which Admin::watermarks waits out (kafka.service_bench runs this).
  const connectors::Admin admin(connectors::KafkaConfig().with("bootstrap.servers", bootstrap_));
  return admin.create_topic(name, partitions, 1, configs, std::chrono::seconds(30));
}

void create_topic(const Setup& setup, const std::string& topic) {
  if (auto error = setup.broker.create_topic(topic, setup.options.partitions); !error.ok()) {
    throw connectors::KafkaException(std::move(error));
  }
}

void produce_or_throw(connectors::Producer& producer, const std::string& topic, const Event& e,
                      std::span<const connectors::HeaderView> headers) {
  connectors::OutgoingMessage out;
  out.partition = e.partition;
  out.key = e.key;
  out.value = e.value;
  out.headers = headers;
  out.timestamp_ms = e.timestamp_ms;
  if (auto error = producer.produce(topic, out); !error.ok()) throw connectors::KafkaException(std::move(error));
}

connectors::KafkaConfig bulk_producer_config(const Setup& setup) {
  // The mock broker answers a Fetch with ONE record batch per partition, where a real broker returns up
  // to max.partition.fetch.bytes of them: small input batches would make both sides wait on fetch round
  // trips rather than do work. Large input batches (the default) make each fetch return thousands of
  // records per partition, as a real broker would; --input-linger-ms 5 shows the other regime.
  connectors::KafkaConfig kafka = client_config(setup, false);
  kafka.with("linger.ms", std::to_string(setup.options.input_linger_ms))
      .with("batch.num.messages", std::to_string(setup.options.input_batch_messages));
  return kafka;
}

void pre_produce(const Setup& setup) {
  create_topic(setup, kInputTopic);
  DeliveryCounter deliveries;
  connectors::ProducerOptions producer_options;
  producer_options.hooks = setup.hooks;
  producer_options.on_delivery = deliveries.function();
  connectors::Producer producer(bulk_producer_config(setup), std::move(producer_options));
  std::uint64_t since_poll = 0;
  const std::string& format = setup.options.format;
  std::unique_ptr<app::SchemaRecordWriter> writer;
  if (format != "json") {
    const config::SchemaType type = format == "avro" ? config::SchemaType::kAvro : config::SchemaType::kProtobuf;
    writer = std::make_unique<app::SchemaRecordWriter>(type, bench_schema_text(type), kBenchSchemaId);
  }
  Event framed;
  for (const Event& e : setup.workload.events) {
    if (writer) {
      framed = e;
      framed.value = writer->framed(e.value);
    }
    produce_or_throw(producer, kInputTopic, writer ? framed : e);
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

static std::uint64_t warmup_events(const Options& options) {
  return static_cast<std::uint64_t>(options.warmup_share * static_cast<double>(options.events));
}

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

void blank_loop_columns(RunFigures& figures) {
  figures.thread_cpu_ns_per_event = kNaN;
  figures.thread_busy = kNaN;
}

}  // namespace bloomgate::bench::service_bench
