#include "bloomgate/app/demo_command.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bloomgate/app/demo_workload.h"
#include "schema_record_writer.h"
#include "bloomgate/app/filter_command.h"
#include "bloomgate/app/logging.h"
#include "bloomgate/app/run_command.h"
#include "bloomgate/app/service.h"
#include "bloomgate/app/service_metrics.h"
#include "bloomgate/app/stop_signals.h"
#include "bloomgate/app/temporary_directory.h"
#include "bloomgate/connectors/admin.h"
#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/producer.h"

namespace bloomgate::app {
namespace {

using Clock = std::chrono::steady_clock;

// The demo's topics and consumer group. On the embedded broker, which starts empty, they have fixed names;
// on a broker of the user's (--brokers) each run gets names of its own, so an earlier run's records and
// committed offsets never meet this one.
struct DemoNames {
  std::string input = "demo-events";
  std::string output = "demo-unique";
  std::string dead_letter = "demo-dead-letter";
  std::string group = "bloomgate-demo";

  static DemoNames for_run(const DemoOptions& options) {
    DemoNames names;
    if (options.brokers.empty()) return names;
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const std::string run = "-" + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
    for (std::string* name : {&names.input, &names.output, &names.dead_letter, &names.group}) *name += run;
    return names;
  }
};
constexpr const char* kSequenceHeader = "demo.seq";
constexpr std::chrono::seconds kReadBackIdleLimit{20};

// What the exact answer said about one produced event.
struct ExpectedEvent {
  std::string key;
  std::int64_t timestamp_ms = 0;
  bool is_new = false;  // new within the TTL
  bool late = false;    // new, but its key was last recorded within the filter's fade-out slack
  std::int64_t gap_ms = -1;  // new: since its key was last recorded; -1 when it never was
};

// The demo's order (demo_workload.cc) as an Avro record and a Protobuf message, schema id kDemoSchemaId.
constexpr std::uint32_t kDemoSchemaId = 1;
const std::string kDemoAvroSchema = R"({"type": "record", "name": "Order", "fields": [
  {"name": "order_id", "type": "string"}, {"name": "customer", "type": "string"},
  {"name": "amount_cents", "type": "long"}, {"name": "ts", "type": "long"}, {"name": "status", "type": "string"}]})";
const std::string kDemoProtobufSchema = R"(syntax = "proto3";
message Order { string order_id = 1; string customer = 2; int64 amount_cents = 3; int64 ts = 4; string status = 5; })";

std::optional<config::SchemaType> schema_type_of(const DemoOptions& options) {
  if (options.format == "avro") return config::SchemaType::kAvro;
  if (options.format == "protobuf") return config::SchemaType::kProtobuf;
  return std::nullopt;
}

const std::string& demo_schema(config::SchemaType type) {
  return type == config::SchemaType::kAvro ? kDemoAvroSchema : kDemoProtobufSchema;
}

config::Config demo_config(const DemoOptions& options, const DemoNames& names) {
  config::Config config;
  config.kafka.brokers = options.brokers.empty() ? std::string(config::kEmbeddedBrokers) : options.brokers;
  config.kafka.group_id = names.group;
  config.kafka.embedded_partitions = static_cast<std::uint32_t>(options.partitions);
  config.metrics.listen = options.metrics_listen;
  config::PipelineSettings pipeline;
  pipeline.name = "demo";
  pipeline.inputs = {names.input};
  pipeline.output = names.output;
  pipeline.dead_letter = names.dead_letter;
  pipeline.key = config::KeySettings(config::KeySource::kJson, "/order_id", "", true);
  if (const std::optional<config::SchemaType> type = schema_type_of(options)) {
    const auto source = *type == config::SchemaType::kAvro ? config::KeySource::kAvro : config::KeySource::kProtobuf;
    pipeline.key = config::KeySettings(source, "/order_id", "", true);
    config.schemas = {config::SchemaFile{kDemoSchemaId, *type, "(demo)", demo_schema(*type)}};
  }
  pipeline.ttl = options.ttl;
  pipeline.filter.error_rate = options.error_rate;
  // Each partition's filter sees its share of the stream.
  pipeline.filter.expected_per_ttl = static_cast<std::uint64_t>(
      options.events_per_second * std::chrono::duration<double>(options.ttl).count() / options.partitions);
  config.pipelines.push_back(std::move(pipeline));
  return config;
}

// How long after the TTL a time-limited filter may still report a key: its last k generations fade out
// one by one, a generation being TTL / l (docs/filters.md).
std::chrono::milliseconds fade_out_slack(const config::PipelineSettings& pipeline) {
  const auto filter = filters::make_filter(filter_options_for(pipeline));
  const filters::FilterStats stats = filter->stats(filters::TimePoint{});
  if (stats.l == 0) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(pipeline.ttl * stats.k / stats.l);
}

std::string grouped(std::uint64_t number) {
  std::string digits = std::to_string(number);
  for (auto i = static_cast<std::ptrdiff_t>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), ",");
  return digits;
}

// The embedded broker keeps only the newest 5 MiB of each partition (rdkafka_mock.c drops older
// records like retention would), so the stream is produced while the service consumes it, never more
// than about 2 MiB per partition ahead of it.
std::uint64_t max_events_ahead(const DemoOptions& options) {
  constexpr std::uint64_t kBytesPerEvent = 200;  // key, ~110-byte value, header and record overhead
  return static_cast<std::uint64_t>(options.partitions) * (2U << 20U) / kBytesPerEvent;
}

// Produces the workload, computing the exact answer alongside; runs on a thread of its own.
class WorkloadProducer {
 public:
  WorkloadProducer(const DemoOptions& options, std::string topic, std::chrono::milliseconds slack)
      : options_(options), topic_(std::move(topic)), slack_(slack) {
    expected_.reserve(options.events);
    if (const std::optional<config::SchemaType> type = schema_type_of(options)) {
      writer_ = std::make_unique<SchemaRecordWriter>(*type, demo_schema(*type), kDemoSchemaId);
    }
  }

  // `consumed`: how far the service has got. Stops early when `abort` becomes true.
  void run(const std::string& brokers, const connectors::ClientHooks& hooks, const std::atomic<std::uint64_t>& consumed,
           const std::atomic<bool>& abort) {
    connectors::ProducerOptions producer_options;
    producer_options.hooks = hooks;
    producer_options.on_delivery = [this](const connectors::DeliveryReport& report) {
      if (!report.error.ok()) ++failed_deliveries_;
    };
    connectors::Producer producer(connectors::KafkaConfig().with("bootstrap.servers", brokers).with("linger.ms", "5"),
                                  std::move(producer_options));
    Workload workload(workload_options());
    ExactAnswer exact(options_.ttl, /*refresh_on_duplicate=*/false);
    const std::uint64_t ahead = max_events_ahead(options_);
    for (std::uint64_t seq = 0; seq < options_.events && !abort.load(); ++seq) {
      while (seq > consumed.load() + ahead && !abort.load()) producer.poll(std::chrono::milliseconds(5));
      WorkloadEvent event = workload.next();
      const bool is_new = exact.observe(event.key, event.timestamp_ms);
      produce(producer, seq, event);
      expected_.push_back({std::move(event.key), event.timestamp_ms, is_new, is_new && exact.last_new_was_late(slack_), is_new ? exact.last_gap_ms() : -1});
    }
    if (auto error = producer.flush(std::chrono::seconds(60)); !error.ok()) throw connectors::KafkaException(error);
    if (failed_deliveries_ != 0) throw std::runtime_error(grouped(failed_deliveries_) + " demo events were not delivered");
  }

  const std::vector<ExpectedEvent>& expected() const { return expected_; }

 private:
  WorkloadOptions workload_options() const {
    WorkloadOptions workload;
    workload.events = options_.events;
    workload.events_per_second = options_.events_per_second;
    workload.repeat_share = options_.duplicate_share;
    workload.beyond_ttl_share = options_.beyond_ttl_share;
    workload.ttl = options_.ttl;
    workload.seed = options_.seed;
    // A real broker deletes records older than the topics' retention (7 days by default) as soon as it
    // can, so there the stream's event time ends now instead of at the fixed start's end. The exact
    // answer depends only on the gaps between timestamps: the report is the same.
    if (!options_.brokers.empty()) {
      const auto now = std::chrono::system_clock::now().time_since_epoch();
      const auto span_ms = static_cast<std::int64_t>(static_cast<double>(options_.events) / options_.events_per_second * 1000);
      workload.start_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count() - span_ms;
    }
    return workload;
  }

  void produce(connectors::Producer& producer, std::uint64_t seq, const WorkloadEvent& event) const {
    char sequence_text[24];
    const auto end = std::to_chars(sequence_text, sequence_text + sizeof sequence_text, seq).ptr;
    const connectors::HeaderView header{kSequenceHeader,
                                        std::string_view(sequence_text, static_cast<std::size_t>(end - sequence_text))};
    connectors::OutgoingMessage message;
    message.key = event.key;  // the partitioner keeps a key on one partition, so it meets one filter
    std::string framed;
    if (writer_) framed = writer_->framed(event.value);
    message.value = writer_ ? std::string_view(framed) : std::string_view(event.value);
    message.headers = std::span(&header, 1);
    message.timestamp_ms = event.timestamp_ms;
    if (auto error = producer.produce(topic_, message); !error.ok()) throw connectors::KafkaException(error);
  }

  const DemoOptions& options_;
  std::string topic_;
  std::chrono::milliseconds slack_;
  std::vector<ExpectedEvent> expected_;
  std::uint64_t failed_deliveries_ = 0;  // written by delivery reports, served on the producing thread
  std::unique_ptr<SchemaRecordWriter> writer_;  // --format avro or protobuf
};

// The live progress line: a carriage return keeps it on one line in a terminal; elsewhere (CI logs) a
// line every few seconds.
class ProgressLine {
 public:
  explicit ProgressLine(std::uint64_t total) : total_(total), terminal_(isatty(STDERR_FILENO) == 1) {}

  void update(const ServiceSnapshot& snapshot) {
    const auto now = Clock::now();
    // A stream consumed whole between two snapshots is timed from the one before, an upper bound on its
    // time, rather than as 0 s.
    if (snapshot.consumed > 0 && !first_consumed_) first_consumed_ = snapshot.consumed >= total_ ? previous_update_ : now;
    if (snapshot.consumed >= total_ && !last_consumed_) last_consumed_ = now;
    previous_update_ = now;
    const auto print_every = terminal_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(2000);
    if (now - last_printed_ < print_every && !last_consumed_) return;
    const double interval = std::chrono::duration<double>(now - last_printed_).count();
    const double rate = static_cast<double>(snapshot.consumed - last_consumed_count_) / interval;
    last_printed_ = now;
    last_consumed_count_ = snapshot.consumed;
    std::cerr << (terminal_ ? "\r" : "") << "  consumed " << grouped(snapshot.consumed) << " / " << grouped(total_)
              << "  " << grouped(static_cast<std::uint64_t>(rate)) << " events/s  forwarded "
              << grouped(snapshot.forwarded) << "  dropped " << grouped(snapshot.duplicates) << "      "
              << (terminal_ ? "" : "\n") << std::flush;
  }

  void finish() const {
    if (terminal_) std::cerr << '\n';
  }

  double seconds() const {
    if (!first_consumed_ || !last_consumed_) return 0;
    return std::chrono::duration<double>(*last_consumed_ - *first_consumed_).count();
  }

 private:
  std::uint64_t total_;
  bool terminal_;
  Clock::time_point last_printed_ = Clock::now();
  Clock::time_point previous_update_ = last_printed_;
  std::uint64_t last_consumed_count_ = 0;
  std::optional<Clock::time_point> first_consumed_;
  std::optional<Clock::time_point> last_consumed_;
};

// Reads the output topic while the service writes it (with a consumer group of its own), noting the
// demo.seq of every record and any offsets the embedded broker discarded before they could be read.
class OutputVerifier {
 public:
  OutputVerifier(std::uint64_t events, std::string topic, std::string group)
      : forwarded_(events, false), topic_(std::move(topic)), group_(std::move(group)) {}

  // Returns once `service_done` is true and `expected_records` have been accounted for, or nothing has
  // arrived for kReadBackIdleLimit.
  void run(const std::string& brokers, const connectors::ClientHooks& hooks, const std::atomic<bool>& service_done,
           const std::atomic<std::uint64_t>& expected_records) {
    connectors::ConsumerOptions options;
    options.group_id = group_ + "-verify";
    options.hooks = hooks;
    connectors::Consumer consumer(
        connectors::KafkaConfig().with("bootstrap.servers", brokers).with("auto.offset.reset", "earliest"),
        std::move(options));
    if (auto error = consumer.subscribe({topic_}); !error.ok()) throw connectors::KafkaException(error);
    auto last_message = Clock::now();
    while (!(service_done.load() && (records_ + discarded_ >= expected_records.load() ||
                                     Clock::now() - last_message > kReadBackIdleLimit))) {
      const auto message = consumer.poll(std::chrono::milliseconds(100));
      if (!message || !message->error().ok()) continue;
      last_message = Clock::now();
      note(*message);
    }
    (void)consumer.close();
  }

  const std::vector<bool>& forwarded() const { return forwarded_; }
  std::uint64_t records() const { return records_; }
  std::uint64_t discarded() const { return discarded_; }

 private:
  void note(const connectors::ConsumedMessage& message) {
    std::int64_t& next = next_offset_[message.partition()];
    if (message.offset() > next) discarded_ += static_cast<std::uint64_t>(message.offset() - next);
    next = message.offset() + 1;
    const auto header = message.header(kSequenceHeader);
    std::uint64_t seq = 0;
    if (!header || !*header) return;
    const std::string_view text = **header;
    if (std::from_chars(text.data(), text.data() + text.size(), seq).ec != std::errc() || seq >= forwarded_.size()) {
      return;
    }
    forwarded_[seq] = true;
    ++records_;
  }

  std::vector<bool> forwarded_;
  std::unordered_map<std::int32_t, std::int64_t> next_offset_;
  std::uint64_t records_ = 0;
  std::uint64_t discarded_ = 0;
  std::string topic_;
  std::string group_;
};

// The value below which `share` of `values` lie (nearest rank); 0 for none. Reorders `values`.
std::int64_t quantile(std::vector<std::int64_t>& values, double share) {
  if (values.empty()) return 0;
  const auto rank = static_cast<std::size_t>(share * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank), values.end());
  return values[rank];
}

void compare(const std::vector<ExpectedEvent>& expected, const std::vector<bool>& forwarded,
             std::chrono::milliseconds ttl, DemoReport& report) {
  std::unordered_map<std::string_view, std::int64_t> last_forwarded_ms;
  std::vector<std::int64_t> late_ms;  // of each late forget: how long after the TTL its key was last seen
  for (std::size_t seq = 0; seq < expected.size(); ++seq) {
    const ExpectedEvent& event = expected[seq];
    if (event.is_new) ++report.exact_new;
    if (!forwarded[seq]) {
      if (event.is_new) ++(event.late ? report.late_forgets : report.false_positives);
      if (event.late) late_ms.push_back(event.gap_ms - ttl.count());
      continue;
    }
    if (!event.is_new) ++report.repeats_of_dropped;
    const auto [it, first] = last_forwarded_ms.try_emplace(event.key, event.timestamp_ms);
    if (!first) {
      if (event.timestamp_ms - it->second < ttl.count()) ++report.forwarded_twice;
      it->second = event.timestamp_ms;
    }
  }
  report.late_median = std::chrono::milliseconds(quantile(late_ms, 0.5));
  report.late_p99 = std::chrono::milliseconds(quantile(late_ms, 0.99));
}

// The demo's default port may be taken (by a running bloomgate, say): then any free port will do.
std::unique_ptr<ServiceEndpoints> serve_metrics(const Service& service, const config::Config& config,
                                                const std::string& listen) {
  try {
    return std::make_unique<ServiceEndpoints>(service, config, listen);
  } catch (const std::runtime_error& e) {
    spdlog::warn("{}; serving metrics on a free port instead", e.what());
    return std::make_unique<ServiceEndpoints>(service, config, listen.substr(0, listen.rfind(':')) + ":0");
  }
}

DemoReport summarize(const DemoOptions& options, const ServiceSnapshot& final_state, double seconds) {
  DemoReport report;
  report.produced = options.events;
  report.consumed = final_state.consumed;
  report.forwarded = final_state.forwarded;
  report.seconds = seconds;
  std::uint64_t filter_elements = 0;
  for (const auto& partition : final_state.partitions) {
    report.filter_bytes += static_cast<double>(partition.filter.memory_bytes);  // every byte, padding included
    filter_elements += partition.filter.elements;
    report.estimated_fpr = std::max(report.estimated_fpr, partition.filter.estimated_fpr);
  }
  if (filter_elements != 0) report.filter_bits_per_key = report.filter_bytes * 8 / static_cast<double>(filter_elements);
  return report;
}

void print_report(const DemoOptions& options, const DemoNames& names, const DemoReport& r,
                  std::chrono::milliseconds slack, std::ostream& out) {
  const auto line = [&out](std::string_view label, std::uint64_t value, const std::string& note) {
    out << fmt::format("  {:<24}{:>12}   {}\n", label, grouped(value), note);
  };
  const double new_events = static_cast<double>(std::max<std::uint64_t>(r.exact_new, 1));
  out << fmt::format("bloomgate demo: {} events on {} partitions, TTL {} s, target FPR {:.0e}\n", grouped(r.produced),
                     options.partitions, std::chrono::duration<double>(options.ttl).count(), options.error_rate);
  line("consumed", r.consumed, "");
  line("forwarded", r.forwarded, "exact answer: " + grouped(r.exact_new) + " new within the TTL");
  line("duplicates dropped", r.consumed - r.forwarded, "exact answer: " + grouped(r.produced - r.exact_new));
  line("false positives", r.false_positives,
       fmt::format("= {:.2e} of new events: the measured FPR (configured {:.0e}, filter estimate {:.2e})",
                   static_cast<double>(r.false_positives) / new_events, options.error_rate, r.estimated_fpr));
  line("late forgets", r.late_forgets,
       fmt::format("key last seen between TTL and TTL + {:.1f} s: the filter's fade-out slack (half within TTL + "
                   "{:.2f} s, 99% within TTL + {:.2f} s)",
                   std::chrono::duration<double>(slack).count(), std::chrono::duration<double>(r.late_median).count(),
                   std::chrono::duration<double>(r.late_p99).count()));
  line("repeats of dropped keys", r.repeats_of_dropped, "forwarded repeats of a key whose earlier sighting was dropped");
  line("forwarded twice", r.forwarded_twice, "within the TTL of the same key's forwarded record (must be 0)");
  line("read back", r.read_back, "records read from " + names.output + " (must equal forwarded)");
  if (r.discarded != 0) line("discarded by the broker", r.discarded, "output records the embedded broker dropped before they were read");
  out << fmt::format("  {:<24}{:>12}   events/s through Kafka, one service thread ({:.2f} s)\n", "throughput",
                     grouped(static_cast<std::uint64_t>(r.seconds > 0 ? static_cast<double>(r.consumed) / r.seconds : 0)),
                     r.seconds);
  out << fmt::format("  {:<24}{:>12.1f}   bits per key in the window ({:.2f} MiB of filters)\n", "filter memory",
                     r.filter_bits_per_key, r.filter_bytes / (1 << 20));
  out << (r.correct() ? "result: correct\n" : "result: INCORRECT (see the lines marked must)\n");
}

// The run's topics on the user's broker (--brokers): the input with --partitions partitions, the output and
// the dead letters with as many (the output keeps each input partition's number).
void create_demo_topics(const DemoOptions& options, const DemoNames& names) {
  const connectors::Admin admin(connectors::KafkaConfig().with("bootstrap.servers", options.brokers));
  for (const std::string* topic : {&names.input, &names.output, &names.dead_letter}) {
    if (auto error = admin.create_topic(*topic, options.partitions, 1, {}, std::chrono::seconds(30)); !error.ok()) {
      throw connectors::KafkaException(std::move(error));
    }
  }
}

}  // namespace

int run_demo_command(const DemoOptions& options, std::ostream& out) {
  try {
    configure_logging(options.log_level);
    const DemoNames names = DemoNames::for_run(options);
    config::Config config = demo_config(options, names);
    // A fresh state directory, removed at the end: the embedded broker starts empty every run, so there
    // is no state worth keeping, and two demos at once must not share one.
    const TemporaryDirectory state_dir("bloomgate-demo-state");
    config.state.dir = state_dir.path();
    const auto slack = fade_out_slack(config.pipelines.front());
    const connectors::ClientHooks hooks = kafka_log_hooks();
    const StopSignals signals;
    const auto broker = options.brokers.empty() ? start_embedded_kafka(config, hooks) : nullptr;
    if (!broker) create_demo_topics(options, names);
    const std::string brokers = broker ? broker->bootstrap_servers() : options.brokers;

    std::atomic<std::uint64_t> consumed{0};
    std::atomic<bool> stop{false};
    ProgressLine progress(options.events);
    ServiceOptions service_options;
    service_options.bootstrap_servers = brokers;
    service_options.stop = &stop;
    service_options.hooks = hooks;
    service_options.snapshot_interval = std::chrono::milliseconds(200);
    service_options.on_snapshot = [&](const ServiceSnapshot& snapshot) {
      consumed.store(snapshot.consumed);
      progress.update(snapshot);
      if (snapshot.consumed >= options.events || signals.requested().load()) stop.store(true);
    };
    const config::Config effective = config;
    Service service(std::move(config), std::move(service_options));
    const auto endpoints = serve_metrics(service, effective, options.metrics_listen);
    out << "metrics at http://" << endpoints->address() << "/metrics while the demo runs" << std::endl;

    out << (broker ? "embedded Kafka broker at " : "Kafka broker at ") << brokers << "; producing " << grouped(options.events)
        << " events while the service deduplicates them (joining the group takes a few seconds) ..." << std::endl;
    WorkloadProducer producer(options, names.input, slack);
    OutputVerifier verifier(options.events, names.output, names.group);
    std::atomic<bool> service_done{false};
    std::atomic<std::uint64_t> forwarded_total{0};
    std::string producer_error;
    std::string verifier_error;
    std::thread producing([&] {
      try {
        producer.run(brokers, hooks, consumed, stop);
      } catch (const std::exception& e) {
        producer_error = e.what();
        stop.store(true);
      }
    });
    std::thread verifying([&] {
      try {
        verifier.run(brokers, hooks, service_done, forwarded_total);
      } catch (const std::exception& e) {
        verifier_error = e.what();
      }
    });
    const RunResult result = service.run();  // never throws, so both threads are always joined
    progress.finish();
    const ServiceSnapshot final_state = service.snapshot();
    forwarded_total.store(final_state.forwarded);
    service_done.store(true);
    stop.store(true);
    producing.join();
    verifying.join();
    for (const std::string* error : std::initializer_list<const std::string*>{&result.error, &producer_error, &verifier_error}) {
      if (!error->empty()) {
        out << "bloomgate demo: " << *error << '\n';
        return kExitServiceFailed;
      }
    }
    if (signals.requested().load()) {
      out << "bloomgate demo: interrupted after " << grouped(final_state.consumed) << " of " << grouped(options.events)
          << " events; the comparison with the exact answer needs the whole stream, so there is no report\n";
      return kExitInterrupted;
    }
    DemoReport report = summarize(options, final_state, progress.seconds());
    report.read_back = verifier.records();
    report.discarded = verifier.discarded();
    compare(producer.expected(), verifier.forwarded(), options.ttl, report);
    print_report(options, names, report, slack, out);
    return report.correct() ? kExitOk : kExitServiceFailed;
  } catch (const std::exception& e) {
    out << "bloomgate demo: " << e.what() << '\n';
    return kExitServiceFailed;
  }
}

}  // namespace bloomgate::app
