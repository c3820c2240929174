// File: bench/service_bench_takeover_report.cc
//
// --takeover-keys' report: the printed tables with their PASS or MISS verdicts, the long-TTL model's
// projection, and the JSON that scripts/bench renders.
#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <utility>

#include "json_writer.h"
#include "service_bench_takeover.h"

namespace bloomgate::bench::service_bench::takeover {
namespace {

// The model's long TTLs at 5,000 events/s per partition: 1 h and 24 h of new keys.
constexpr std::pair<const char*, double> kModelWindows[] = {{"1 h", 18e6}, {"24 h", 432e6}};

// The model's inputs, from the largest window: state bytes per key (as read), state-topic read bytes/s,
// the restore's other work per key (filter built), and the rebuild's events/s.
struct Model {
  double state_bytes_per_key = kNaN;
  double read_bytes_per_second = kNaN;
  double build_seconds_per_key = kNaN;
  double rebuild_events_per_second = kNaN;
  double restore_seconds(double keys) const {
    return keys * state_bytes_per_key / read_bytes_per_second + keys * build_seconds_per_key;
  }
  double rebuild_seconds(double keys) const { return keys / rebuild_events_per_second; }
};

Model model_of(const TakeoverFigures& t) {
  const auto keys = static_cast<double>(t.keys);
  return {t.state_read_bytes / keys, t.state_read_bytes / t.state_read_seconds,
          std::max(0.0, t.restore_seconds - t.state_read_seconds) / keys,
          static_cast<double>(t.rebuild_events) / t.rebuild_seconds};
}

}  // namespace

void print_report(const Options& o, const TakeoverReport& r) {
  std::printf("service_bench --takeover-keys on %s (a real broker), value %zu bytes, checkpoint every %d ms\n\n",
              o.brokers.c_str(), o.value_bytes, o.checkpoint_ms);
  std::printf("Takeover of one partition by an instance with no local state (same partition, same run):\n");
  std::printf("  %11s %9s %9s %9s %11s %9s %9s %11s %8s %s\n", "keys", "restore s", "ready s", "state MiB",
              "state MiB/s", "rebuild s", "ready s", "input MiB", "ratio", "target");
  for (const TakeoverFigures& t : r.takeovers) {
    std::printf("  %11s %9.2f %9.2f %9.1f %11.1f %9.2f %9.2f %11.1f %8.1f %s (>= %.0fx)\n", grouped(t.keys).c_str(),
                t.restore_seconds, t.restore_ready_seconds, t.state_read_bytes / kMiB,
                t.state_read_bytes / kMiB / t.state_read_seconds, t.rebuild_seconds, t.rebuild_ready_seconds,
                t.rebuild_input_bytes / kMiB, t.ratio, verdict_at_least(t.ratio, o.takeover_target), o.takeover_target);
  }
  std::printf("  (restore s: last_restore_seconds, state-topic read and filter built; ready s: assignment to the\n"
              "  partition ready, reconciliation included; state MiB: bytes read from the state topic; input MiB:\n"
              "  keys and values of the input records the rebuild read; ratio: rebuild s / restore s)\n");
  for (const TakeoverFigures& t : r.takeovers) {
    const Compaction& c = t.compaction;
    std::printf("  %s keys: state topic before compaction %.1f MiB (%s records, %s superseded), after %.1f MiB "
                "(%s records) in %.1f s%s\n", grouped(t.keys).c_str(), c.before.bytes / kMiB,
                grouped(c.before.records).c_str(), grouped(c.before.superseded).c_str(), c.after.bytes / kMiB,
                grouped(c.after.records).c_str(), c.seconds,
                c.done ? "" : ": NOT FINISHED within the limit, superseded records left and read (measured anyway)");
  }
  for (const TakeoverFigures& t : r.takeovers) {
    std::printf("  %s keys: produced in %.1f s, consumed by the first instance in %.1f s; restored filter %.1f MiB (%.1f bits/key); state read %.1f bytes/key\n",
                grouped(t.keys).c_str(), t.produce_seconds, t.fill_seconds,
                t.filter_bytes / kMiB, t.filter_bytes * 8 / static_cast<double>(t.keys),
                t.state_read_bytes / static_cast<double>(t.keys));
  }
  if (!r.takeovers.empty()) {
    const Model m = model_of(r.takeovers.back());
    std::printf("\nModel (not measured): takeover of one partition at 5,000 events/s of new keys, its inputs measured "
                "above at %s keys:\n  restore s = keys x %.1f state bytes/key / %.1f MiB/s read + keys x %.3g s/key "
                "built; rebuild s = keys / %.0f events/s\n",
                grouped(r.takeovers.back().keys).c_str(), m.state_bytes_per_key, m.read_bytes_per_second / kMiB,
                m.build_seconds_per_key, m.rebuild_events_per_second);
    for (const auto& [ttl, keys] : kModelWindows) {
      std::printf("  TTL %-4s (%4.0f M keys): restore %8.1f s, rebuild %8.1f s, ratio %.1f\n", ttl, keys / 1e6,
                  m.restore_seconds(keys), m.rebuild_seconds(keys), m.rebuild_seconds(keys) / m.restore_seconds(keys));
    }
  }
  const FlowFigures& f = r.flow;
  std::printf("\nOthers keep flowing (%s keys per partition, %.0f events/s per partition live): events/s on the "
              "remaining member's own partition\n  before %.0f, during the takeover %.0f (%.2f s, the taken partition "
              "restored from %s in %.2f s): ratio %.2f %s (>= %.1f)\n",
              grouped(o.flow_keys).c_str(), o.flow_rate, f.before_events_per_second, f.during_events_per_second,
              f.during_seconds, f.from_state_topic ? "the state topic" : "elsewhere", f.taken_restore_seconds, f.ratio,
              verdict_at_least(f.ratio, o.flow_target), o.flow_target);
  std::printf("\nOverhead (%s events, %d partitions, checkpoint every %d ms): events/s with state.topic / without\n",
              grouped(o.events).c_str(), o.partitions, o.checkpoint_ms);
  for (const OverheadPair& p : r.overhead) {
    std::printf("  on %.0f  off %.0f  ratio %.3f  (commits %llu / %llu)\n", p.on.figures.events_per_second,
                p.off.figures.events_per_second, p.ratio, static_cast<unsigned long long>(p.on.commits),
                static_cast<unsigned long long>(p.off.commits));
  }
  std::printf("  median ratio %.3f %s (>= %.2f)\n", r.overhead_ratio, verdict_at_least(r.overhead_ratio, o.overhead_target),
              o.overhead_target);
  std::printf("\ntotal time %.1f s\n", r.total_seconds);
}

namespace {

void json_takeover(Json& j, const TakeoverFigures& t) {
  j.open(nullptr, '{');
  j.u64("keys", t.keys);
  for (const auto& [name, value] : std::initializer_list<std::pair<const char*, double>>{
           {"produce_seconds", t.produce_seconds}, {"input_bytes", t.input_bytes}, {"fill_seconds", t.fill_seconds},
           {"restore_seconds", t.restore_seconds},
           {"restore_ready_seconds", t.restore_ready_seconds}, {"state_read_bytes", t.state_read_bytes},
           {"state_read_seconds", t.state_read_seconds}, {"rebuild_seconds", t.rebuild_seconds},
           {"rebuild_ready_seconds", t.rebuild_ready_seconds}, {"rebuild_input_bytes", t.rebuild_input_bytes},
           {"filter_bytes", t.filter_bytes}, {"ratio", t.ratio}}) {
    j.num(name, value);
  }
  j.u64("rebuild_events", t.rebuild_events);
  const Compaction& c = t.compaction;
  j.open("compaction", '{');
  j.num("state_bytes_before", c.before.bytes);
  j.u64("state_records_before", c.before.records);
  j.u64("superseded_before", c.before.superseded);
  j.num("state_bytes_after", c.after.bytes);
  j.u64("state_records_after", c.after.records);
  j.u64("superseded_after", c.after.superseded);
  j.num("seconds", c.seconds);
  j.num("limit_seconds", static_cast<double>(kCompactionLimit.count()));
  j.boolean("done", c.done);
  j.close('}');
  j.close('}');
}

}  // namespace

bool write_report_json(const Options& o, const TakeoverReport& r) {
  Json j;
  j.open(nullptr, '{');
  j.str("broker", "external");
  j.u64("seed", o.seed);
  j.num("checkpoint_ms", o.checkpoint_ms);
  j.open("takeovers", '[');
  for (const TakeoverFigures& t : r.takeovers) json_takeover(j, t);
  j.close(']');
  const Model m = r.takeovers.empty() ? Model{} : model_of(r.takeovers.back());
  j.open("model", '{');
  j.num("state_bytes_per_key", m.state_bytes_per_key);
  j.num("read_bytes_per_second", m.read_bytes_per_second);
  j.num("build_seconds_per_key", m.build_seconds_per_key);
  j.num("rebuild_events_per_second", m.rebuild_events_per_second);
  j.open("windows", '[');
  for (const auto& [ttl, keys] : kModelWindows) {
    j.open(nullptr, '{');
    j.str("ttl", ttl);
    j.num("keys", keys);
    j.num("restore_seconds", m.restore_seconds(keys));
    j.num("rebuild_seconds", m.rebuild_seconds(keys));
    j.close('}');
  }
  j.close(']');
  j.close('}');
  j.open("flow", '{');
  j.u64("keys_per_partition", o.flow_keys);
  j.num("rate_per_partition", o.flow_rate);
  j.num("before_events_per_second", r.flow.before_events_per_second);
  j.num("during_events_per_second", r.flow.during_events_per_second);
  j.num("during_seconds", r.flow.during_seconds);
  j.num("taken_restore_seconds", r.flow.taken_restore_seconds);
  j.boolean("from_state_topic", r.flow.from_state_topic);
  j.num("ratio", r.flow.ratio);
  j.close('}');
  j.open("overhead", '{');
  j.u64("events", o.events);
  j.num("partitions", o.partitions);
  j.open("pairs", '[');
  for (const OverheadPair& p : r.overhead) {
    j.open(nullptr, '{');
    j.num("on_events_per_second", p.on.figures.events_per_second);
    j.num("off_events_per_second", p.off.figures.events_per_second);
    j.u64("on_commits", p.on.commits);
    j.u64("off_commits", p.off.commits);
    j.num("ratio", p.ratio);
    j.close('}');
  }
  j.close(']');
  j.num("ratio", r.overhead_ratio);
  j.close('}');
  j.open("targets", '[');
  for (const TakeoverFigures& t : r.takeovers) {
    j.target("takeover of " + grouped(t.keys) + " keys: rebuild s / state-topic restore s (at least)", t.ratio,
             o.takeover_target, verdict_at_least(t.ratio, o.takeover_target));
  }
  j.target("others keep flowing: own partition's events/s during / before a takeover (at least)", r.flow.ratio,
           o.flow_target, verdict_at_least(r.flow.ratio, o.flow_target));
  j.target("state topic overhead: events/s with state.topic / without (at least)", r.overhead_ratio, o.overhead_target,
           verdict_at_least(r.overhead_ratio, o.overhead_target));
  j.close(']');
  j.num("total_seconds", r.total_seconds);
  j.close('}');
  return write_json_file(o.json, j.text(), "service_bench");
}

}  // namespace bloomgate::bench::service_bench::takeover
