// File: bench/service_bench_takeover.cc
//
// --takeover-keys N,...: the state topic's three targets (docs/state.md, "Where a partition's state comes
// from"), on a real broker (--brokers), each ratio taken within this run:
//
// - Takeover: for each N, one input partition receives N distinct keys within the TTL; a service with
//   state.topic consumes them and stops cleanly, so its last checkpoint is in the state topic and its offset
//   committed. Its state topic is created by the bench, compacted within seconds (kQuickCompaction), and
//   before the restore the bench waits (at most kCompactionLimit) until compaction has removed every
//   superseded record, as on a deployed topic that is cleaned continuously; the topic's bytes before and
//   after are reported. Then, in the same group, a fresh instance (empty state directory) WITH the state topic takes
//   the partition over, and after it a fresh instance WITHOUT it, which rebuilds the filter from the input
//   history. The restore's seconds and bytes are the service's own (PartitionReport::last_restore_seconds,
//   state_topic_read_bytes and _seconds); the rebuild's seconds are last_rebuild_seconds, its bytes those of
//   the input records it read (keys and values as produced). Ratio: rebuild seconds / restore seconds.
// - Others keep flowing: two instances with the state topic share a topic of two partitions, each holding a
//   window of --flow-keys keys and a live input of --flow-rate events/s; one stops, the other takes its
//   partition over from the state topic. Events/s on the partition the remaining member already had, from
//   the stop until the taken-over partition is ready, against the same span just before the stop.
// - Overhead: service rounds over the pre-produced workload (--events, --partitions) with a state topic and
//   without, a checkpoint every --checkpoint-ms, alternated pair by pair; ratio on / off of events/s.
//
// The projection for long TTLs is a model whose inputs are the largest N's measured figures (struct Model).
// Targets are reported PASS or MISS, never enforced. This file holds the state topic's compaction, the
// service runs and the takeover; service_bench_takeover_flow.cc the others-keep-flowing run and the
// overhead rounds; service_bench_takeover_report.cc the report.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <thread>

#include "bloomgate/app/logging.h"
#include "bloomgate/app/temporary_directory.h"
#include "output_reconciler.h"
#include "service_bench_takeover.h"

namespace bloomgate::bench::service_bench {
namespace takeover {
namespace {

constexpr auto kTakeoverTtl = std::chrono::hours(1);
// The keys' event times span 50 minutes up to now, so they are all within the TTL when the rebuild reads them
// minutes later; the filter is configured for that rate (keys_per_ttl), so it holds the window at its design load.
constexpr std::int64_t kWindowSpanMs = 50 * 60 * 1000;

std::uint64_t keys_per_ttl(std::uint64_t window_keys) {
  return window_keys * static_cast<std::uint64_t>(milliseconds(kTakeoverTtl).count()) /
         static_cast<std::uint64_t>(kWindowSpanMs);
}

// ------------------------------------------------------------------------------------------------------
// The takeover's state topic, compacted as a deployed one is before a fresh instance reads it

// Topic configs under which the broker compacts within seconds: segments roll after 100 ms, a log with 1% of
// superseded records is cleaned, and a later cleaning may drop tombstones 100 ms after one kept them.
const std::map<std::string, std::string> kQuickCompaction = {{"cleanup.policy", "compact"},
                                                             {"segment.ms", "100"},
                                                             {"min.cleanable.dirty.ratio", "0.01"},
                                                             {"delete.retention.ms", "100"}};
// Keys the restore passes over (they lack its bgst1/ prefix); the bench's own records, left out of the counts.
constexpr std::string_view kBenchKeyPrefix = "test/";


}  // namespace

std::int64_t now_ms() {
  return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void create_topic_or_throw(const Setup& setup, const std::string& topic, int partitions,
                          const std::map<std::string, std::string>& configs) {
  if (auto error = setup.broker.create_topic(topic, partitions, configs); !error.ok()) {
    throw connectors::KafkaException(std::move(error));
  }
}

double produce_window(const Setup& setup, const std::string& topic, std::int32_t partition, std::uint64_t first,
                      std::uint64_t keys) {
  DeliveryCounter deliveries;
  connectors::ProducerOptions producer_options;
  producer_options.hooks = setup.hooks;
  producer_options.on_delivery = deliveries.function();
  connectors::Producer producer(bulk_producer_config(setup), std::move(producer_options));
  std::mt19937_64 rng(setup.options.seed + first);
  const std::int64_t start_ms = now_ms() - kWindowSpanMs;
  double bytes = 0;
  for (std::uint64_t i = 0; i < keys; ++i) {
    Event e;
    e.key = make_key(first + i, setup.options.seed);
    e.value = make_value(e.key, first + i, rng, setup.options.value_bytes);
    e.partition = partition;
    e.timestamp_ms = start_ms + static_cast<std::int64_t>(static_cast<double>(i) * kWindowSpanMs / static_cast<double>(keys));
    bytes += static_cast<double>(e.key.size() + e.value.size());
    produce_or_throw(producer, topic, e);
    if (i % kProducerPollEvery == 0) producer.poll(milliseconds(0));
  }
  if (auto error = producer.flush(milliseconds(600'000)); !error.ok()) throw connectors::KafkaException(std::move(error));
  deliveries.check("producing the window");
  return bytes;
}


config::Config takeover_config(const Setup& setup, const std::string& group, const std::string& input,
                               std::uint64_t window_keys, const std::string& state_topic,
                               const std::string& state_dir) {
  config::Config config = service_config(setup, group, input + "-out", setup.options.checkpoint_ms);
  config.kafka.properties.erase("plugin.library.paths");  // nothing is sampled here
  config.state.dir = setup.state_root + "/" + state_dir;
  config.state.topic = state_topic;
  config::PipelineSettings& pipeline = config.pipelines.front();
  pipeline.inputs = {input};
  pipeline.ttl = kTakeoverTtl;
  pipeline.filter.expected_per_ttl = keys_per_ttl(window_keys);
  return config;
}

const app::PartitionReport* report_of(const app::ServiceSnapshot& snapshot, const std::string& topic,
                                      std::int32_t partition) {
  for (const app::PartitionReport& p : snapshot.partitions) {
    if (p.topic == topic && p.partition == partition) return &p;
  }
  return nullptr;
}

bool ready(const app::ServiceSnapshot& snapshot) { return snapshot.running && snapshot.partitions_restoring == 0; }

namespace {

StateTopicContents read_state_topic(const Setup& setup, const std::string& topic) {
  const connectors::Admin admin(connectors::KafkaConfig().with("bootstrap.servers", setup.broker.bootstrap_servers()));
  const auto marks = admin.watermarks(topic, 0, std::chrono::seconds(30));
  if (!marks.ok()) throw connectors::KafkaException(marks.error());
  StateTopicContents contents;
  std::int64_t next = marks.value().low;
  const std::int64_t end = marks.value().high;
  if (next >= end) return contents;
  app::SideReaderOptions options;
  options.config = client_config(setup, true);
  options.hooks = setup.hooks;
  options.group_id = topic + "-bench-reader";
  const std::unique_ptr<connectors::Consumer> reader = app::open_side_reader(options);
  if (auto error = reader->assign({{topic, 0, next, {}, {}}}); !error.ok()) throw connectors::KafkaException(std::move(error));
  std::set<std::string, std::less<>> keys;
  auto idle_deadline = Clock::now() + options.idle_timeout;
  while (next < end) {
    if (Clock::now() > idle_deadline) throw std::runtime_error("reading state topic " + topic + ": no record in time");
    const auto message = reader->poll(milliseconds(100));
    if (!message) continue;
    if (message->is_partition_eof()) break;  // at the partition's end as it is now: past `end`
    if (connectors::KafkaError error = message->error(); !error.ok()) {
      if (error.is_fatal()) throw connectors::KafkaException(std::move(error));
      continue;
    }
    if (message->offset() >= end) break;
    next = message->offset() + 1;
    idle_deadline = Clock::now() + options.idle_timeout;
    const std::optional<std::string_view> key = message->key();
    if (!key || key->starts_with(kBenchKeyPrefix)) continue;
    ++contents.records;
    contents.bytes += static_cast<double>(key->size() + message->value().value_or(std::string_view{}).size());
    contents.superseded += keys.emplace(*key).second ? 0U : 1U;
  }
  (void)reader->close();
  return contents;
}

// Produces one record under a key the restore ignores: the broker never cleans a partition's active segment,
// and a record arriving after segment.ms rolls it, so the checkpoints' records become cleanable.
void roll_segment(const Setup& setup, const std::string& topic, int round) {
  connectors::ProducerOptions producer_options;
  producer_options.hooks = setup.hooks;
  connectors::Producer producer(client_config(setup, false), std::move(producer_options));
  Event e;
  e.key = std::string(kBenchKeyPrefix) + "segment-roll-0";
  e.value = std::to_string(round);
  e.timestamp_ms = now_ms();
  produce_or_throw(producer, topic, e);
  if (auto error = producer.flush(milliseconds(30'000)); !error.ok()) throw connectors::KafkaException(std::move(error));
}

// Waits (at most kCompactionLimit) until compaction has removed every superseded record of the state topic,
// rolling its active segment each second. Tombstones are not waited for: the restore reads them, as it
// would on a deployed topic between two cleanings.
Compaction wait_until_compacted(const Setup& setup, const std::string& topic) {
  Compaction c;
  int round = 0;
  roll_segment(setup, topic, round++);
  c.before = read_state_topic(setup, topic);
  const auto started = Clock::now();
  c.after = c.before;
  while (c.after.superseded > 0 && Clock::now() - started < kCompactionLimit) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    roll_segment(setup, topic, round++);
    c.after = read_state_topic(setup, topic);
  }
  c.seconds = seconds_between(started, Clock::now());
  c.done = c.after.superseded == 0;
  return c;
}

// A service run until `done` holds for a snapshot (then stopped cleanly): its last snapshot, and the time
// from its first assignment's start (ServiceOptions::on_restore) to the first snapshot where `done` held.
struct Watched {
  app::ServiceSnapshot last;
  double ready_seconds = kNaN;
};

Watched run_until(const Setup& setup, config::Config config,
                  const std::function<bool(const app::ServiceSnapshot&)>& done, const char* what) {
  std::atomic<bool> stop{false};
  Watched w;
  std::optional<Clock::time_point> assigned;
  const auto give_up = Clock::now() + kRunLimit;
  app::ServiceOptions options;
  options.bootstrap_servers = setup.broker.bootstrap_servers();
  options.stop = &stop;
  options.hooks = setup.hooks;
  options.snapshot_interval = kTakeoverSnapshot;
  options.on_restore = [&] {
    if (!assigned) assigned = Clock::now();
  };
  options.on_snapshot = [&](const app::ServiceSnapshot& snapshot) {
    if (stop.load()) return;
    w.last = snapshot;
    if (done(snapshot)) {
      w.ready_seconds = assigned ? seconds_between(*assigned, Clock::now()) : kNaN;
      stop.store(true);
    } else if (Clock::now() > give_up) {
      stop.store(true);
    }
  };
  app::Service service(std::move(config), std::move(options));
  if (const app::RunResult run = service.run(); run.exit_code != 0) throw std::runtime_error(std::string(what) + ": " + run.error);
  if (!std::isfinite(w.ready_seconds)) throw std::runtime_error(std::string(what) + ": not done within 20 minutes");
  return w;
}

// Done once the input partition's assignment has taken its state from somewhere and every partition is ready.
bool restored(const app::ServiceSnapshot& s, const std::string& topic) {
  const app::PartitionReport* p = report_of(s, topic, 0);
  return p != nullptr && ready(s) && p->last_restore_source.has_value();
}

// The partition's report of a run that waited for `restored`; throws unless its state came from `source`.
const app::PartitionReport& restored_report(const Watched& w, const std::string& topic, app::RestoreSource source) {
  const app::PartitionReport& p = *report_of(w.last, topic, 0);
  if (*p.last_restore_source != source) {
    throw std::runtime_error(topic + ": restored from " + std::string(app::restore_source_name(*p.last_restore_source)) +
                             ", expected " + std::string(app::restore_source_name(source)));
  }
  return p;
}

TakeoverFigures run_one_takeover(const Setup& setup, std::uint64_t keys) {
  TakeoverFigures t;
  t.keys = keys;
  const std::string input = "bench-takeover-" + std::to_string(keys);
  const std::string state = input + "-state";
  const std::string group = input + "-group";
  create_topic_or_throw(setup, input, 1);
  create_topic_or_throw(setup, input + "-out", 1);
  create_topic_or_throw(setup, state, 1, kQuickCompaction);
  std::fprintf(stderr, "service_bench: takeover %s keys: producing ...\n", grouped(keys).c_str());
  auto started = Clock::now();
  t.input_bytes = produce_window(setup, input, 0, 0, keys);
  t.produce_seconds = seconds_between(started, Clock::now());
  std::fprintf(stderr, "service_bench: takeover: produced in %.1f s; the first instance consumes them ...\n",
               t.produce_seconds);
  const Watched fill = run_until(setup, takeover_config(setup, group, input, keys, state, input + "-first"),
                                 [keys](const app::ServiceSnapshot& s) { return s.consumed >= keys; }, "fill");
  t.fill_seconds = fill.ready_seconds;
  std::fprintf(stderr, "service_bench: takeover: consumed in %.1f s; waiting for the state topic's compaction ...\n",
               t.fill_seconds);
  t.compaction = wait_until_compacted(setup, state);
  std::fprintf(stderr, "service_bench: takeover: state topic %.1f MiB -> %.1f MiB in %.1f s%s; a fresh instance "
               "restores from it ...\n", t.compaction.before.bytes / kMiB, t.compaction.after.bytes / kMiB,
               t.compaction.seconds, t.compaction.done ? "" : " (compaction not finished: measured anyway)");
  const Watched restore = run_until(setup, takeover_config(setup, group, input, keys, state, input + "-restore"),
                                    [&input](const app::ServiceSnapshot& s) { return restored(s, input); }, "restore");
  const app::PartitionReport& r = restored_report(restore, input, app::RestoreSource::kStateTopic);
  t.restore_seconds = r.last_restore_seconds;
  t.restore_ready_seconds = restore.ready_seconds;
  t.state_read_bytes = static_cast<double>(r.state_topic_read_bytes);
  t.state_read_seconds = r.state_topic_read_seconds;
  t.filter_bytes = static_cast<double>(r.filter.memory_bytes);
  std::fprintf(stderr, "service_bench: takeover: restored in %.2f s; a fresh instance without it rebuilds ...\n",
               t.restore_seconds);
  const Watched rebuild = run_until(setup, takeover_config(setup, group, input, keys, "", input + "-rebuild"),
                                    [&input](const app::ServiceSnapshot& s) { return restored(s, input); }, "rebuild");
  const app::PartitionReport& b = restored_report(rebuild, input, app::RestoreSource::kRebuild);
  t.rebuild_seconds = b.last_rebuild_seconds;
  t.rebuild_ready_seconds = rebuild.ready_seconds;
  t.rebuild_events = b.rebuild_events;
  t.rebuild_input_bytes = t.input_bytes * static_cast<double>(b.rebuild_events) / static_cast<double>(keys);
  t.ratio = t.rebuild_seconds / t.restore_seconds;
  std::fprintf(stderr, "service_bench: takeover: rebuilt in %.2f s\n", t.rebuild_seconds);
  return t;
}

std::vector<double> expected(const TakeoverReport& r) {
  std::vector<double> figures = {r.flow.ratio, r.overhead_ratio};
  for (const TakeoverFigures& t : r.takeovers) {
    figures.insert(figures.end(), {t.ratio, t.restore_seconds, t.rebuild_seconds, t.state_read_bytes});
  }
  return figures;
}

}  // namespace
}  // namespace takeover

int run_takeover(const Options& options, const std::map<std::string, std::string>& properties) {
  using namespace takeover;
  if (options.brokers.empty()) throw std::invalid_argument("--takeover-keys needs a real broker (--brokers)");
  const auto started = Clock::now();
  TakeoverReport report;
  std::fprintf(stderr, "service_bench: generating %s events for the overhead rounds ...\n", grouped(options.events).c_str());
  const Workload workload = make_workload(options);
  BenchBroker broker(options.brokers);
  const std::string plugin_path = progress::library_path();
  if (plugin_path.empty()) throw std::runtime_error("cannot find the progress plugin's file");
  const app::TemporaryDirectory state_root("service_bench");
  const Setup setup{options, workload, broker, app::kafka_log_hooks(), properties, plugin_path,
                    state_root.path()};
  for (const std::uint64_t keys : options.takeover_keys) report.takeovers.push_back(run_one_takeover(setup, keys));
  report.flow = run_flow(setup);
  pre_produce(setup);
  report.overhead = run_overhead(setup);
  std::vector<double> ratios;
  for (const OverheadPair& p : report.overhead) ratios.push_back(p.ratio);
  report.overhead_ratio = median(ratios);
  report.total_seconds = seconds_between(started, Clock::now());
  print_report(options, report);
  if (!options.json.empty() && !write_report_json(options, report)) return 2;
  for (const double v : expected(report)) {
    if (!std::isfinite(v)) {
      std::fprintf(stderr, "service_bench: a --takeover-keys figure is missing or not a number\n");
      return 1;
    }
  }
  return 0;
}

}  // namespace bloomgate::bench::service_bench
