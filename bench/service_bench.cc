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
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bloomgate/app/logging.h"
#include "bloomgate/app/temporary_directory.h"
#include "bench_support.h"
#include "service_bench.h"

namespace bloomgate::bench::service_bench {
namespace {

// The librdkafka properties of both sides: kBenchProperties (unless --no-bench-properties), then --property.
std::map<std::string, std::string> client_properties(const Options& options) {
  std::map<std::string, std::string> properties;
  if (options.bench_properties) {
    for (const auto& [key, value] : kBenchProperties) properties[key] = value;
  }
  for (const std::string& property : options.properties) {
    const auto eq = property.find('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("--property " + property + ": expected key=value");
    properties[property.substr(0, eq)] = property.substr(eq + 1);
  }
  return properties;
}

// The figures every run must produce, with their names: a missing or non-finite one fails the run.
std::vector<std::pair<std::string, double>> expected_figures(const Options& options, const Report& r) {
  std::vector<std::pair<std::string, double>> figures;
  // The ratios exist only when both sides ran (--sides both, the default).
  if (options.sides == "both") figures = {{"events/s ratio", r.speed_ratio}, {"CPU/event ratio", r.cpu_ratio}};
  if (!options.skip_breakdown) {
    const Breakdown& b = r.b;
    for (const auto& [name, value] : std::initializer_list<std::pair<std::string, double>>{
             {"extract", b.extract_ns},
             {"filter", b.filter_ns},
             {"decide", b.decide_ns},
             {"header objects", b.header_objects_ns},
             {"consume", b.consume.cpu_ns_per_event},
             {"consume per call", b.consume_per_call.cpu_ns_per_event},
             {"consume in batches", b.consume_batched.cpu_ns_per_event},
             {"produce", b.produce_plain.cpu_ns_per_event},
             {"produce with headers", b.produce_headers.cpu_ns_per_event},
             {"produce with a binary header", b.produce_binary_header.cpu_ns_per_event},
             {"produce as service", b.produce_service.cpu_ns_per_event},
             {"snapshot", b.snapshot_us}}) {
      figures.emplace_back(name, value);
    }
  }
  if (options.checkpoint_ab) figures.emplace_back("checkpoint A/B events/s ratio", ab_median(r.ab));
  if (r.rebuild) figures.emplace_back("rebuild events/s ratio", r.rebuild->ratio);
  return figures;
}

// The alternated passthrough and service rounds, into the report with their per-pair ratios.
void run_rounds(const Setup& setup, Report& report) {
  const Options& options = setup.options;
  for (int round = 1; round <= options.rounds && options.sides != "none"; ++round) {
    const std::string r = std::to_string(round);
    std::fprintf(stderr, "service_bench: round %d/%d: passthrough (joining the group takes ~3 s) ...\n", round,
                 options.rounds);
    report.passthrough.push_back(options.sides == "service"
                                     ? RoundResult{}
                                     : run_passthrough(setup, "bench-passthrough-" + r, "bench-passthrough-out-" + r));
    std::fprintf(stderr, "service_bench: round %d/%d: service ...\n", round, options.rounds);
    report.service.push_back(options.sides == "passthrough"
                                 ? RoundResult{}
                                 : run_service(setup, "bench-service-" + r, "bench-service-out-" + r,
                                               options.checkpoint_ms));
    report.rate_ratios.push_back(report.service.back().figures.events_per_second /
                                 report.passthrough.back().figures.events_per_second);
    report.cpu_ratios.push_back(report.service.back().figures.cpu_ns_per_event /
                                report.passthrough.back().figures.cpu_ns_per_event);
  }
  report.speed_ratio = median(report.rate_ratios);
  report.cpu_ratio = median(report.cpu_ratios);
}

Breakdown run_breakdown(const Setup& setup) {
  std::fprintf(stderr, "service_bench: CPU breakdown ...\n");
  const config::Config config = service_config(setup, "unused", "unused", setup.options.checkpoint_ms);
  std::vector<bool> forwarded;
  Breakdown b = measure_breakdown(setup, config.pipelines.front(), forwarded);
  b.consume = measure_consume(setup, "bench-consume-only");
  b.consume_per_call = measure_consume_calls(setup, "bench-consume-per-call", 1);
  b.consume_batched = measure_consume_calls(setup, "bench-consume-batched", kConsumeBatch);
  b.produce_plain = measure_produce(setup, "bench-produce-plain", ProduceMode::kAllPlain, forwarded);
  b.produce_headers = measure_produce(setup, "bench-produce-headers", ProduceMode::kAllWithHeaders, forwarded);
  b.produce_binary_header =
      measure_produce(setup, "bench-produce-binary-header", ProduceMode::kAllWithBinaryHeader, forwarded);
  b.produce_service = measure_produce(setup, "bench-produce-as-service", ProduceMode::kForwardedHeaders, forwarded);
  return b;
}

// --window-keys: the large-window section alone; a missing figure fails the run.
int run_window(const Options& options) {
  const auto started = Clock::now();
  const WindowFigures w = measure_window(options);
  print_window(w);
  std::printf("total time %.1f s\n", seconds_between(started, Clock::now()));
  if (!options.json.empty() && !write_window_json(options, w)) return 2;
  for (const WindowSide& s : w.sides) {
    for (const double v : {s.decide_ns, s.batch_ns, s.single_ns, s.memory_bytes, s.bits_per_key, s.resident_growth_bytes}) {
      if (!std::isfinite(v)) {
        std::fprintf(stderr, "service_bench: a --window-keys figure of %s is missing or not a number\n", s.type.c_str());
        return 1;
      }
    }
  }
  return 0;
}

int run(const Options& options) {
  app::configure_logging(options.log_level);
  if (options.window_keys > 0) return run_window(options);
  if (!options.takeover_keys.empty()) return run_takeover(options, client_properties(options));
  const auto started = Clock::now();
  Report report;
  report.load_at_start = load_average();
  std::fprintf(stderr, "service_bench: generating %s events ...\n", grouped(options.events).c_str());
  const Workload workload = make_workload(options);
  if (options.brokers.empty() && workload.max_partition_bytes > kMaxInputBytesPerPartition) {
    throw std::invalid_argument("the input would need " + std::to_string(workload.max_partition_bytes / (1 << 20)) +
                                " MiB in its fullest partition; the embedded broker keeps only 5 MiB per partition "
                                "(use more --partitions or fewer --events)");
  }
  report.properties = client_properties(options);

  BenchBroker broker(options.brokers);
  const std::string plugin_path = progress::library_path();
  if (plugin_path.empty()) throw std::runtime_error("cannot find the progress plugin's file");
  // The service's state directories (one per round) live in a temporary directory removed at exit.
  const app::TemporaryDirectory state_root("service_bench");
  const Setup setup{options, workload, broker, app::kafka_log_hooks(), report.properties, plugin_path,
                    state_root.path()};

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
  run_rounds(setup, report);
  if (options.checkpoint_ab) report.ab = run_checkpoint_ab(setup);
  if (options.rebuild) report.rebuild = run_rebuild(setup);
  perf_command("disable\n");
  report.breakdown = !options.skip_breakdown;
  if (report.breakdown) {
    report.b = run_breakdown(setup);
    const double snapshots_per_second = 1000.0 / options.snapshot_ms;
    report.snapshot_ns_per_event = report.b.snapshot_us * 1e3 * snapshots_per_second /
                                   median_of(report.service, &RunFigures::events_per_second);
  }

  report.load_at_end = load_average();
  print_head(options, workload, report);
  print_rounds(options, report);
  if (report.breakdown) print_breakdown(options, report);
  if (options.checkpoint_ab) print_checkpoint_ab(options, report.ab);
  if (report.rebuild) print_rebuild(*report.rebuild);
  std::printf("total time %.1f s\n", seconds_between(started, Clock::now()));
  report.total_seconds = seconds_between(started, Clock::now());
  if (!options.json.empty() && !write_json(options, workload, report)) return 2;

  std::vector<std::string> missing;
  for (const auto& [name, value] : expected_figures(options, report)) {
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
}  // namespace bloomgate::bench::service_bench

int main(int argc, char** argv) {
  bloomgate::bench::service_bench::Options options;
  CLI::App app{"service_bench: events/s and CPU per event of the bloomgate service against a raw consume-and-produce "
               "passthrough on the embedded broker"};
  const auto positive = [&app](const char* name, auto& value, const char* description) {
    app.add_option(name, value, description)->check(CLI::PositiveNumber);
  };
  app.add_option("--brokers", options.brokers,
                 "a Kafka broker of its own to run on (host:port; none of the bench's topics may exist there) "
                 "instead of the embedded one");
  app.add_option("--partitions", options.partitions, "partitions of the input and output topics")
      ->check(CLI::Range(1, 1024));
  positive("--events", options.events, "input events, pre-produced (at most ~4 MiB per partition)");
  app.add_option("--value-bytes", options.value_bytes, "bytes of each JSON value")->check(CLI::Range(96, 4096));
  app.add_option("--repeat-share", options.repeat_share, "share of events repeating a recent key")
      ->check(CLI::Range(0.0, 0.95));
  positive("--recent-keys", options.recent_keys, "a repeat picks one of the last this many new keys");
  app.add_option("--seed", options.seed, "seed of the event stream");
  positive("--rounds", options.rounds, "alternated passthrough/service round pairs (median reported)");
  positive("--sample-ms", options.sample_ms, "sampling interval of the progress plugin");
  positive("--snapshot-ms", options.snapshot_ms, "the service's snapshot_interval (default: its default, 1 s)");
  app.add_option("--warmup-share", options.warmup_share,
                 "the measured span starts once this share of the events is consumed")
      ->check(CLI::Range(0.0, 0.9));
  app.add_flag("!--no-bench-properties", options.bench_properties,
               "do not raise queued.min.messages / queued.max.messages.kbytes (librdkafka defaults)");
  positive("--checkpoint-ms", options.checkpoint_ms, "the service's state.checkpoint_interval (flush + commit)");
  positive("--breakdown-reps", options.breakdown_reps, "runs of each in-memory breakdown part (median)");
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
  app.add_option("--format", options.format, "the input values: json, or framed avro or protobuf records of the same fields")
      ->check(CLI::IsMember({"json", "avro", "protobuf"}));
  app.add_flag("--checkpoint-ab", options.checkpoint_ab,
               "also run service-only round pairs: a checkpoint every --ab-on-ms against every --ab-off-ms");
  positive("--ab-rounds", options.ab_rounds, "round pairs of --checkpoint-ab (median reported)");
  positive("--ab-on-ms", options.ab_on_ms, "checkpoint interval of the A side (every second)");
  positive("--ab-off-ms", options.ab_off_ms, "checkpoint interval of the B side (an hour: effectively off)");
  app.add_flag("--rebuild", options.rebuild,
               "also measure the rebuild rate from the input history against the pipeline's events/s (docs/state.md)");
  app.add_option("--ab-target", options.ab_target, "the A/B events/s ratio reported as PASS or MISS");
  app.add_option("--json", options.json, "also write every figure as JSON to this file");
  app.add_option("--window-keys", options.window_keys,
                 "run only the large-window section: one partition holding this many keys per TTL, time_limited "
                 "against aging_fingerprint, decide() and the batch call, no broker")
      ->check(CLI::Range(std::uint64_t{20'000}, std::uint64_t{100'000'000}));
  positive("--window-events", options.window_events, "events of each timed block of --window-keys");
  positive("--window-reps", options.window_reps, "timed blocks of --window-keys per filter type and way (median)");
  app.add_option("--takeover-keys", options.takeover_keys,
                 "run only the state-topic section on a real broker (--brokers): the takeover of one partition "
                 "holding each of these many keys (comma-separated), others keep flowing, and the overhead rounds")
      ->delimiter(',')
      ->check(CLI::Range(std::uint64_t{1'000}, std::uint64_t{100'000'000}));
  app.add_option("--takeover-target", options.takeover_target, "rebuild s / restore s reported as PASS or MISS (at least)");
  positive("--flow-keys", options.flow_keys, "keys of each partition's window in the \"others keep flowing\" run");
  positive("--flow-rate", options.flow_rate, "its live input, events/s per partition");
  app.add_option("--flow-target", options.flow_target, "events/s during / before the takeover reported as PASS or MISS");
  positive("--overhead-rounds", options.overhead_rounds, "state.topic on/off round pairs of --takeover-keys");
  app.add_option("--overhead-target", options.overhead_target, "events/s on / off reported as PASS or MISS (at least)");
  CLI11_PARSE(app, argc, argv);
  if (options.workers > 0) options.members = options.workers;  // as many passthrough members
  try {
    return bloomgate::bench::service_bench::run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "service_bench: %s\n", e.what());
    return 2;
  }
}
