// File: bench/service_bench_report.cc
//
// service_bench's report: the printed tables of the optional runs and every figure as JSON (--json, NaN
// as null, for scripts/bench).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <thread>
#include <utility>

#include "bench_support.h"
#include "json_writer.h"
#include "service_bench.h"

namespace bloomgate::bench::service_bench {

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

double median_of(const std::vector<RoundResult>& rounds, double RunFigures::*field) {
  std::vector<double> values;
  for (const RoundResult& r : rounds) values.push_back(r.figures.*field);
  return median(values);
}

void print_head(const Options& options, const Workload& workload, const Report& r) {
  std::printf("service_bench: %s events on %d partitions (largest %s), %zu-byte JSON values, %.0f%% repeats of the "
              "last %s new keys (seed %llu)\n",
              grouped(options.events).c_str(), options.partitions,
              grouped(*std::max_element(workload.per_partition.begin(), workload.per_partition.end())).c_str(),
              options.value_bytes, options.repeat_share * 100, grouped(options.recent_keys).c_str(),
              static_cast<unsigned long long>(options.seed));
  if (options.brokers.empty()) {
    std::printf("embedded broker: librdkafka mock cluster IN THIS PROCESS, sharing the machine's %u cores with both "
                "sides; CPU figures include its work\n",
                std::thread::hardware_concurrency());
  } else {
    std::printf("broker: %s, in a process of its own sharing the machine's %u cores with both sides; CPU figures "
                "leave out its work\n",
                options.brokers.c_str(), std::thread::hardware_concurrency());
  }
  std::printf("load average (1 min) at start %s, at end %s: other work on the machine competes for the same cores\n",
              r.load_at_start.c_str(), r.load_at_end.c_str());
  std::printf("librdkafka properties (both sides): %s\n\n", [&] {
    std::string text;
    for (const auto& [k, v] : r.properties) text += (text.empty() ? "" : ", ") + k + "=" + v;
    return text.empty() ? std::string("(defaults)") : text;
  }().c_str());
}

void print_rounds(const Options& options, const Report& r) {
  if (r.service.empty()) {  // --sides none runs no rounds: nothing to compare
    std::printf("no passthrough/service rounds (--sides none)\n\n");
    return;
  }
    std::printf("RATIOS service / passthrough (median of %d alternated round pairs)\n", options.rounds);
    std::printf("  %-34s %8.3f   target >= %.2f   %s\n", "input events/s", r.speed_ratio, options.target,
                verdict_at_least(r.speed_ratio, options.target));
    std::printf("  %-34s %8.3f   target <= %.2f   %s   (higher = the service spends more CPU per event)\n\n",
                "process CPU per event", r.cpu_ratio, options.cpu_target,
                verdict_at_most(r.cpu_ratio, options.cpu_target));

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
    for (std::size_t i = 0; i < r.service.size(); ++i) {
      const std::string round = std::to_string(i + 1);
      print_round(round, "passthrough", r.passthrough[i].figures, grouped(r.passthrough[i].produced), "-");
      char dup[16];
      std::snprintf(dup, sizeof dup, "%.2f",
                    100.0 * static_cast<double>(r.service[i].duplicates) /
                        static_cast<double>(std::max<std::uint64_t>(r.service[i].consumed, 1)));
      print_round(round, "service", r.service[i].figures, grouped(r.service[i].produced), dup);
      std::printf("  %-5s %-12s %11.3f %9.3f %7s %11.3f\n", round.c_str(), "ratio", r.rate_ratios[i], r.cpu_ratios[i], "",
                  r.service[i].figures.thread_cpu_ns_per_event / r.passthrough[i].figures.thread_cpu_ns_per_event);
    }
    for (const auto& [name, rounds] : {std::pair<const char*, const std::vector<RoundResult>*>{"passthrough", &r.passthrough},
                                       std::pair<const char*, const std::vector<RoundResult>*>{"service", &r.service}}) {
      RunFigures m;
      m.events_per_second = median_of(*rounds, &RunFigures::events_per_second);
      m.cpu_ns_per_event = median_of(*rounds, &RunFigures::cpu_ns_per_event);
      m.cores = median_of(*rounds, &RunFigures::cores);
      m.thread_cpu_ns_per_event = median_of(*rounds, &RunFigures::thread_cpu_ns_per_event);
      m.thread_busy = median_of(*rounds, &RunFigures::thread_busy);
      m.span_seconds = median_of(*rounds, &RunFigures::span_seconds);
      print_round("med", name, m, "", "");
    }
    std::printf("  (CPU ns/ev: whole process, %s; loop: the thread that polls, i.e. the service thread or\n"
                "   the passthrough loop; loop busy near 100%% means that thread is the bottleneck)\n\n",
                options.brokers.empty() ? "the embedded broker included" : "the broker's process not included");
}

void print_breakdown(const Options& options, const Report& r) {
  const Breakdown& b = r.b;
  const double service_cpu = median_of(r.service, &RunFigures::cpu_ns_per_event);
  const double service_thread = median_of(r.service, &RunFigures::thread_cpu_ns_per_event);
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
  std::snprintf(parts_note, sizeof parts_note, "/order_id of framed Avro, schema walk: %.2fx the JSON pointer (<= 2)",
                b.extract_avro_ratio);
  row("  from Avro records of the same fields", b.extract_avro_ns, b.extract_avro_ns, parts_note);
  std::snprintf(parts_note, sizeof parts_note, "/order_id of framed Protobuf, wire reader: %.2fx the JSON pointer (<= 2)",
                b.extract_protobuf_ratio);
  row("  from Protobuf records of the same fields", b.extract_protobuf_ns, b.extract_protobuf_ns, parts_note);
  row("    avro-c generic value decode instead", b.avro_generic_ns, b.avro_generic_ns,
      "avro_value_read into a reused generic value, field by name (not used)");
  row("    libprotobuf parse + reflection instead", b.protobuf_reflection_ns, b.protobuf_reflection_ns,
      "DynamicMessage::ParseFromArray, GetStringReference (not used)");
  char note[160];
  std::snprintf(note, sizeof note, "time_limited 1e-3, one per partition, each %llu slices in %.0f KiB",
                static_cast<unsigned long long>(b.filter_slices), b.filter_kib);
  row("filter (hash + test_and_insert)", b.filter_ns, b.filter_ns, note);
  row("decide() = extraction + event clock + filter", b.decide_ns, b.decide_ns, "PartitionDeduplicator::decide");
  kafka_row("consume alone (Consumer::poll)", b.consume, "no processing");
  kafka_row("  rd_kafka_consumer_poll per event", b.consume_per_call, "no interceptor");
  kafka_row("  rd_kafka_consume_batch_queue, 1024 per call", b.consume_batched, "no interceptor");
  kafka_row("produce alone: every event, no headers", b.produce_plain, "produce + flush");
  kafka_row("produce alone: every event + the source header", b.produce_headers, "produce + flush");
  kafka_row("  the same with a 12-byte binary header instead", b.produce_binary_header, "produce + flush");
  row("  the header object alone", b.header_objects_ns, b.header_objects_ns,
      "rd_kafka_headers_new + header_add + destroy");
  std::snprintf(note, sizeof note, "the %.1f%% forwarded, + the source header", 100 * b.forwarded_share);
  kafka_row("produce as the service does", b.produce_service, note);
  const double per_second = 1000.0 / options.snapshot_ms;
  const double snapshot_ns = r.snapshot_ns_per_event;
  std::snprintf(note, sizeof note, "%.0f us per snapshot of %d filters, %.0f snapshot(s)/s", b.snapshot_us,
                options.partitions, per_second);
  row("snapshot: filter stats of every partition", snapshot_ns, snapshot_ns, note);
  row("service, measured (median of the rounds)", service_cpu, service_thread, "");
  std::printf("  %-46s %8.0f %7s %8.0f %7s\n", "passthrough, measured (median of the rounds)",
              median_of(r.passthrough, &RunFigures::cpu_ns_per_event), "", median_of(r.passthrough, &RunFigures::thread_cpu_ns_per_event),
              "");
  std::printf("  The Kafka parts alone run librdkafka flat out (the producer queue fills, batches are full), not\n"
              "  at the pace of a consume loop: compare them with each other, do not add them up. Where the\n"
              "  service thread's time goes inside the loop: `perf record` (README.md).\n\n");
}

namespace {

using Numbers = std::initializer_list<std::pair<const char*, double>>;
using Counts = std::initializer_list<std::pair<const char*, std::uint64_t>>;

// Writes the figures, then the counts, as members of the object being written.
void members(Json& j, Numbers numbers, Counts counts = {}) {
  for (const auto& [name, value] : numbers) j.num(name, value);
  for (const auto& [name, value] : counts) j.u64(name, value);
}

void json_figures(Json& j, const char* key, const RunFigures& f) {
  j.open(key, '{');
  members(j,
          {{"events_per_second", f.events_per_second}, {"cpu_ns_per_event", f.cpu_ns_per_event}, {"cores", f.cores},
           {"loop_cpu_ns_per_event", f.thread_cpu_ns_per_event}, {"loop_busy", f.thread_busy},
           {"span_seconds", f.span_seconds}},
          {{"span_events", f.span_events}});
  j.close('}');
}

void json_round(Json& j, const char* key, const RoundResult& r) {
  j.open(key, '{');
  json_figures(j, "figures", r.figures);
  members(j, {}, {{"consumed", r.consumed}, {"produced", r.produced}, {"duplicates", r.duplicates}, {"commits", r.commits}});
  j.num("run_seconds", r.run_seconds);
  j.close('}');
}

void json_part(Json& j, const char* key, const PartFigures& f) {
  j.open(key, '{');
  members(j, {{"process_cpu_ns_per_event", f.cpu_ns_per_event}, {"thread_cpu_ns_per_event", f.thread_ns_per_event},
              {"events_per_second", f.events_per_second}});
  j.close('}');
}

std::string fixed2(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", x);
  return text;
}

void json_breakdown(Json& j, const Breakdown& b, double snapshot_ns) {
  j.open("breakdown", '{');
  members(j,
          {{"extract_ns", b.extract_ns}, {"extract_parts_ns", b.extract_parts_ns},
           {"extract_parts_ratio", b.extract_parts_ratio}, {"extract_avro_ns", b.extract_avro_ns},
           {"extract_avro_ratio", b.extract_avro_ratio}, {"extract_protobuf_ns", b.extract_protobuf_ns},
           {"extract_protobuf_ratio", b.extract_protobuf_ratio}, {"protobuf_reflection_ns", b.protobuf_reflection_ns}, {"avro_generic_ns", b.avro_generic_ns},
           {"filter_ns", b.filter_ns}, {"decide_ns", b.decide_ns},
           {"header_objects_ns", b.header_objects_ns}, {"snapshot_us", b.snapshot_us},
           {"snapshot_ns_per_event", snapshot_ns}, {"forwarded_share", b.forwarded_share}},
          {{"filter_slices", b.filter_slices}});
  j.num("filter_kib", b.filter_kib);
  json_part(j, "consume", b.consume);
  json_part(j, "consume_per_call", b.consume_per_call);
  json_part(j, "consume_batched", b.consume_batched);
  json_part(j, "produce_plain", b.produce_plain);
  json_part(j, "produce_headers", b.produce_headers);
  json_part(j, "produce_binary_header", b.produce_binary_header);
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
  j.str("broker", o.brokers.empty() ? std::string("embedded") : "external");
  members(j, {}, {{"events", o.events}, {"partitions", static_cast<std::uint64_t>(o.partitions)},
                  {"value_bytes", o.value_bytes}});
  j.num("repeat_share", o.repeat_share);
  members(j, {}, {{"new_keys", w.new_keys}, {"seed", o.seed}, {"round_pairs", static_cast<std::uint64_t>(o.rounds)}});
  j.str("sides", o.sides);
  members(j, {}, {{"checkpoint_ms", static_cast<std::uint64_t>(o.checkpoint_ms)},
                  {"hardware_concurrency", std::thread::hardware_concurrency()}});
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
    j.target("service events/s >= " + fixed2(o.target) + " x passthrough", r.speed_ratio, o.target,
             verdict_at_least(r.speed_ratio, o.target));
    j.target("service CPU per event <= " + fixed2(o.cpu_target) + " x passthrough", r.cpu_ratio, o.cpu_target,
             verdict_at_most(r.cpu_ratio, o.cpu_target));
  }
  if (o.checkpoint_ab) {
    const double ab = ab_median(r.ab);
    j.target("checkpoint every second >= 0.95 x checkpoints off, events/s", ab, o.ab_target,
             verdict_at_least(ab, o.ab_target));
  }
  j.close(']');
  j.close('}');
  return j.text() + "\n";
}

}  // namespace

bool write_json(const Options& o, const Workload& w, const Report& r) {
  return write_json_file(o.json, to_json(o, w, r), "service_bench");
}

void print_window(const WindowFigures& w) {
  std::printf("ONE PARTITION WITH %s KEYS PER TTL (no broker; %d reps of %s events each way, medians; thread CPU)\n",
              grouped(w.keys).c_str(), w.reps, grouped(w.events_per_block).c_str());
  std::printf("  %-18s %10s %10s %10s %10s %12s %10s %10s %12s %8s\n", "filter", "decide ns", "single ns", "batch ns",
              "batch/sgl", "memory MiB", "bits/key", "RSS MiB", "elements", "fwd%");
  for (const WindowSide& s : w.sides) {
    std::printf("  %-18s %10.1f %10.1f %10.1f %10.3f %12.2f %10.2f %10.2f %12s %8.2f\n", s.type.c_str(), s.decide_ns,
                s.single_ns, s.batch_ns, s.batch_ns / s.single_ns, s.memory_bytes / kMiB, s.bits_per_key,
                s.resident_growth_bytes / kMiB, grouped(s.elements).c_str(), 100 * s.forwarded_share);
  }
  if (w.sides.size() == 2) {
    const WindowSide& tl = w.sides[0];
    const WindowSide& af = w.sides[1];
    std::printf("  %s / %s: decide %.3f, memory %.3f, resident growth %.3f\n", af.type.c_str(), tl.type.c_str(),
                af.decide_ns / tl.decide_ns, af.memory_bytes / tl.memory_bytes,
                af.resident_growth_bytes / tl.resident_growth_bytes);
  }
  std::printf("decide = PartitionDeduplicator::decide() per event (key extraction, event clock, "
              "test_and_insert_with_age); single = each key extracted, then test_and_insert (no age, no clock); batch = "
              "the keys of 1,024 events extracted, then one test_and_insert_batch (no age); memory = "
              "FilterStats::memory_bytes; RSS = resident growth while filling\n");
}

bool write_window_json(const Options& o, const WindowFigures& w) {
  Json j;
  j.open(nullptr, '{');
  j.str("benchmark", "service_bench --window-keys");
  members(j, {}, {{"keys_per_ttl", w.keys}, {"events_per_block", w.events_per_block},
                  {"reps", static_cast<std::uint64_t>(w.reps)}, {"seed", o.seed}});
  j.open("filters", '[');
  for (const WindowSide& s : w.sides) {
    j.open(nullptr, '{');
    j.str("type", s.type);
    members(j,
            {{"fill_ns", s.fill_ns}, {"decide_ns", s.decide_ns}, {"batch_ns", s.batch_ns}, {"single_ns", s.single_ns},
             {"memory_bytes", s.memory_bytes}, {"bits_per_key", s.bits_per_key},
             {"resident_growth_bytes", s.resident_growth_bytes}, {"forwarded_share", s.forwarded_share}},
            {{"elements", s.elements}});
    j.close('}');
  }
  j.close(']');
  j.close('}');
  return write_json_file(o.json, j.text() + "\n", "service_bench");
}

}  // namespace bloomgate::bench::service_bench
