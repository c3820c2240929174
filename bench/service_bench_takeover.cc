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
// Targets are reported PASS or MISS, never enforced.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>

#include "bloomgate/app/logging.h"
#include "bloomgate/app/temporary_directory.h"
#include "json_writer.h"
#include "output_reconciler.h"
#include "service_bench.h"

namespace bloomgate::bench::service_bench {
namespace {

constexpr auto kTakeoverTtl = std::chrono::hours(1);
// The keys' event times span 50 minutes up to now, so they are all within the TTL when the rebuild reads them
// minutes later; the filter is configured for that rate (keys_per_ttl), so it holds the window at its design load.
constexpr std::int64_t kWindowSpanMs = 50 * 60 * 1000;
constexpr auto kRunLimit = std::chrono::minutes(20);     // one service run longer than this: the bench failed
constexpr milliseconds kTakeoverSnapshot{100};           // snapshot interval: the ready time's resolution
constexpr int kFlowPartitions = 2;
constexpr double kFlowSpanSeconds = 5;  // the "before" span's length at least, once both members are steady
// The model's long TTLs at 5,000 events/s per partition: 1 h and 24 h of new keys.
constexpr std::pair<const char*, double> kModelWindows[] = {{"1 h", 18e6}, {"24 h", 432e6}};

std::uint64_t keys_per_ttl(std::uint64_t window_keys) {
  return window_keys * static_cast<std::uint64_t>(milliseconds(kTakeoverTtl).count()) /
         static_cast<std::uint64_t>(kWindowSpanMs);
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void create_topic_or_throw(const Setup& setup, const std::string& topic, int partitions,
                          const std::map<std::string, std::string>& configs = {}) {
  if (auto error = setup.broker.create_topic(topic, partitions, configs); !error.ok()) {
    throw connectors::KafkaException(std::move(error));
  }
}

// `keys` new keys (numbers first..first+keys-1) to one partition, their event times spread evenly over the
// kWindowSpanMs before now; returns the keys' and values' bytes.
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

// ------------------------------------------------------------------------------------------------------
// The takeover's state topic, compacted as a deployed one is before a fresh instance reads it

// Topic configs under which the broker compacts within seconds: segments roll after 100 ms, a log with 1% of
// superseded records is cleaned, and a later cleaning may drop tombstones 100 ms after one kept them.
const std::map<std::string, std::string> kQuickCompaction = {{"cleanup.policy", "compact"},
                                                             {"segment.ms", "100"},
                                                             {"min.cleanable.dirty.ratio", "0.01"},
                                                             {"delete.retention.ms", "100"}};
constexpr auto kCompactionLimit = std::chrono::seconds(120);  // then the takeover is measured on what is there
// Keys the restore passes over (they lack its bgst1/ prefix); the bench's own records, left out of the counts.
constexpr std::string_view kBenchKeyPrefix = "test/";

// What the state topic's partition 0 holds, read from its low watermark to its high one: the service's
// records, their keys' and values' bytes, and the records whose key a later record holds again (superseded,
// still there until compaction removes them).
struct StateTopicContents {
  std::uint64_t records = 0;
  std::uint64_t superseded = 0;
  double bytes = 0;
};

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

struct Compaction {
  StateTopicContents before;  // as the first instance left it
  StateTopicContents after;   // once no key is held twice, or at the limit
  double seconds = kNaN;      // from the first read to `after`
  bool done = false;          // no superseded record left within kCompactionLimit
};

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

// ------------------------------------------------------------------------------------------------------
// A one-pipeline service on `input`, its filters sized for a window of `window_keys` keys per partition.
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

// ------------------------------------------------------------------------------------------------------
// Takeover

struct TakeoverFigures {
  std::uint64_t keys = 0;
  double produce_seconds = kNaN;
  double input_bytes = kNaN;         // keys and values of the partition's records, as produced
  double fill_seconds = kNaN;        // the first instance: assignment to every key consumed
  double restore_seconds = kNaN;     // last_restore_seconds: state-topic read and filter built
  double restore_ready_seconds = kNaN;  // assignment to the partition ready (reconciliation included)
  double state_read_bytes = kNaN;
  double state_read_seconds = kNaN;
  double rebuild_seconds = kNaN;     // last_rebuild_seconds
  double rebuild_ready_seconds = kNaN;
  std::uint64_t rebuild_events = 0;
  double rebuild_input_bytes = kNaN;  // the input bytes of the records the rebuild read
  double ratio = kNaN;               // rebuild_seconds / restore_seconds
  double filter_bytes = kNaN;        // the restored filter's memory_bytes
  Compaction compaction;             // the state topic between the first instance and the restore
};

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

// ------------------------------------------------------------------------------------------------------
// Others keep flowing

struct FlowFigures {
  double before_events_per_second = kNaN;  // the remaining member's own partition, before the other stops
  double during_events_per_second = kNaN;  // the same partition, from the stop until the taken-over one is ready
  double during_seconds = kNaN;
  double taken_restore_seconds = kNaN;     // the taken-over partition's last_restore_seconds
  bool from_state_topic = false;
  double ratio = kNaN;
};

// Produces `rate` events/s to each partition of `topic` (new keys from `first` on) until `stop`.
void produce_live(const Setup& setup, const std::string& topic, std::uint64_t first, double rate,
                  const std::atomic<bool>& stop) {
  DeliveryCounter deliveries;
  connectors::ProducerOptions producer_options;
  producer_options.hooks = setup.hooks;
  producer_options.on_delivery = deliveries.function();
  connectors::KafkaConfig kafka = client_config(setup, false);
  kafka.with("linger.ms", "5");
  connectors::Producer producer(kafka, std::move(producer_options));
  std::mt19937_64 rng(setup.options.seed + first);
  const auto started = Clock::now();
  std::uint64_t sent = 0;  // per partition
  while (!stop.load()) {
    const auto due = static_cast<std::uint64_t>(seconds_between(started, Clock::now()) * rate);
    for (; sent < due; ++sent) {
      for (std::int32_t partition = 0; partition < kFlowPartitions; ++partition) {
        Event e;
        e.key = make_key(first + sent * kFlowPartitions + static_cast<std::uint64_t>(partition), setup.options.seed);
        e.value = make_value(e.key, sent, rng, setup.options.value_bytes);
        e.partition = partition;
        e.timestamp_ms = now_ms();
        produce_or_throw(producer, topic, e);
      }
    }
    producer.poll(milliseconds(10));
  }
  (void)producer.flush(milliseconds(60'000));
  deliveries.check("the live input");
}

// (time, events consumed on each partition) of one member, from its snapshots.
struct Timeline {
  std::mutex mutex;
  std::vector<std::pair<Clock::time_point, app::ServiceSnapshot>> samples;
  void add(const app::ServiceSnapshot& s) {
    const std::lock_guard lock(mutex);
    samples.emplace_back(Clock::now(), s);
  }
  std::optional<app::ServiceSnapshot> latest() {
    const std::lock_guard lock(mutex);
    if (samples.empty()) return std::nullopt;
    return samples.back().second;
  }
  // Events/s on the partition over [from, to], from the samples nearest inside it.
  double rate(const std::string& topic, std::int32_t partition, Clock::time_point from, Clock::time_point to) {
    const std::lock_guard lock(mutex);
    const std::pair<Clock::time_point, app::ServiceSnapshot>* first = nullptr;
    const std::pair<Clock::time_point, app::ServiceSnapshot>* last = nullptr;
    for (const auto& sample : samples) {
      if (sample.first < from || sample.first > to) continue;
      if (first == nullptr) first = &sample;
      last = &sample;
    }
    if (first == nullptr || first == last) return kNaN;
    const auto consumed = [&](const app::ServiceSnapshot& s) {
      const app::PartitionReport* p = report_of(s, topic, partition);
      return p != nullptr ? static_cast<double>(p->consumed) : kNaN;
    };
    return (consumed(last->second) - consumed(first->second)) / seconds_between(first->first, last->first);
  }
};

// The member's single assigned partition once it is steady (ready, exactly one partition assigned); -1 else.
std::int32_t steady_partition(const std::optional<app::ServiceSnapshot>& s) {
  if (!s || !ready(*s)) return -1;
  std::int32_t partition = -1;
  int assigned = 0;
  for (const app::PartitionReport& p : s->partitions) {
    if (p.assigned) {
      ++assigned;
      partition = p.partition;
    }
  }
  return assigned == 1 ? partition : -1;
}

void wait_until(const std::function<bool()>& condition, const char* what) {
  const auto give_up = Clock::now() + kRunLimit;
  while (!condition()) {
    if (Clock::now() > give_up) throw std::runtime_error(std::string("flow: ") + what + " not within 20 minutes");
    std::this_thread::sleep_for(kTakeoverSnapshot);
  }
}

// Waits until each member is steady on a partition of its own, A's lag under a second of input; A's partition.
std::int32_t wait_steady(Timeline& a_line, Timeline& b_line, const std::string& topic, double rate) {
  std::int32_t mine = -1;
  wait_until([&] {
    mine = steady_partition(a_line.latest());
    const std::int32_t theirs = steady_partition(b_line.latest());
    if (mine < 0 || theirs < 0 || mine == theirs) return false;
    const app::PartitionReport* p = report_of(*a_line.latest(), topic, mine);
    return p->high_watermark >= 0 && p->high_watermark - p->next_offset < static_cast<std::int64_t>(rate);
  }, "both members steady");
  return mine;
}

// Stops B and waits until A has its partition ready; A's events/s on `mine` during that and, over as long a
// span (at least kFlowSpanSeconds, not before `steady`), before it.
FlowFigures take_over(Timeline& a_line, const std::string& topic, std::int32_t mine, Clock::time_point steady,
                      std::atomic<bool>& stop_b) {
  const auto stopped = Clock::now();
  stop_b.store(true);
  const std::int32_t theirs = 1 - mine;
  wait_until([&] {
    const auto s = a_line.latest();
    const app::PartitionReport* p = s ? report_of(*s, topic, theirs) : nullptr;
    return p != nullptr && p->assigned && ready(*s) && p->last_restore_source.has_value();
  }, "the takeover");
  const auto taken = Clock::now();
  const app::PartitionReport* p = report_of(*a_line.latest(), topic, theirs);
  FlowFigures f;
  f.from_state_topic = *p->last_restore_source == app::RestoreSource::kStateTopic;
  f.taken_restore_seconds = p->last_restore_seconds;
  f.during_seconds = seconds_between(stopped, taken);
  const auto span = std::max(taken - stopped, std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(kFlowSpanSeconds)));
  f.before_events_per_second = a_line.rate(topic, mine, std::max(steady, stopped - span), stopped);
  f.during_events_per_second = a_line.rate(topic, mine, stopped, taken);
  f.ratio = f.during_events_per_second / f.before_events_per_second;
  return f;
}

// Two members, A and B, each steady on one partition; B stops; A takes B's partition over.
FlowFigures run_flow(const Setup& setup) {
  const Options& o = setup.options;
  const std::string topic = "bench-flow";
  create_topic_or_throw(setup, topic, kFlowPartitions);
  create_topic_or_throw(setup, topic + "-out", kFlowPartitions);
  std::fprintf(stderr, "service_bench: others keep flowing: producing %s keys per partition ...\n",
               grouped(o.flow_keys).c_str());
  const std::uint64_t base = 1ULL << 40;  // key numbers apart from the takeover's
  for (std::int32_t p = 0; p < kFlowPartitions; ++p) produce_window(setup, topic, p, base + static_cast<std::uint64_t>(p) * o.flow_keys, o.flow_keys);
  std::atomic<bool> stop_input{false};
  std::atomic<bool> stop_a{false};
  std::atomic<bool> stop_b{false};
  Timeline a_line;
  Timeline b_line;
  const auto member = [&](const char* name, std::atomic<bool>& stop, Timeline& line) {
    app::ServiceOptions options;
    options.bootstrap_servers = setup.broker.bootstrap_servers();
    options.stop = &stop;
    options.hooks = setup.hooks;
    options.snapshot_interval = kTakeoverSnapshot;
    options.on_snapshot = [&line](const app::ServiceSnapshot& s) { line.add(s); };
    return std::make_unique<app::Service>(
        takeover_config(setup, "bench-flow-group", topic, o.flow_keys,
                        topic + "-state", std::string("bench-flow-") + name),
        std::move(options));
  };
  auto a = member("a", stop_a, a_line);
  auto b = member("b", stop_b, b_line);
  std::vector<app::RunResult> results(2);
  FlowFigures f;
  {
    std::jthread input([&] { produce_live(setup, topic, base + 2 * o.flow_keys, o.flow_rate, stop_input); });
    std::jthread a_thread([&] { results[0] = a->run(); });
    std::jthread b_thread([&] { results[1] = b->run(); });
    const auto stop_all = [&] {
      stop_b.store(true);
      stop_a.store(true);
      stop_input.store(true);
    };
    try {
      std::fprintf(stderr, "service_bench: others keep flowing: two members, until each is steady on one partition ...\n");
      const std::int32_t mine = wait_steady(a_line, b_line, topic, o.flow_rate);
      const auto steady = Clock::now();
      std::this_thread::sleep_for(std::chrono::duration<double>(kFlowSpanSeconds + 1));
      std::fprintf(stderr, "service_bench: others keep flowing: member B stops; A takes its partition over ...\n");
      f = take_over(a_line, topic, mine, steady, stop_b);
    } catch (...) {
      stop_all();
      throw;
    }
    stop_all();
  }
  for (const app::RunResult& r : results) {
    if (r.exit_code != 0) throw std::runtime_error("flow: service: " + r.error);
  }
  return f;
}

// ------------------------------------------------------------------------------------------------------
// Overhead: the service rounds (run_service) with a state topic and without, alternated.

using OverheadPair = AbPair;  // on: with state.topic; off: without

std::vector<OverheadPair> run_overhead(const Setup& setup) {
  std::vector<OverheadPair> pairs;
  for (int round = 1; round <= setup.options.overhead_rounds; ++round) {
    const std::string r = std::to_string(round);
    Options with_topic = setup.options;
    with_topic.state_topic = "bench-overhead-state-" + r;
    const Setup on_setup{with_topic, setup.workload, setup.broker, setup.hooks, setup.properties, setup.plugin_path,
                         setup.state_root};
    const int checkpoint_ms = setup.options.checkpoint_ms;
    std::fprintf(stderr, "service_bench: overhead %d/%d ...\n", round, setup.options.overhead_rounds);
    pairs.push_back(run_alternated(
        round, [&] { return run_service(on_setup, "bench-overhead-on-" + r, "bench-overhead-on-out-" + r, checkpoint_ms); },
        [&] { return run_service(setup, "bench-overhead-off-" + r, "bench-overhead-off-out-" + r, checkpoint_ms); }));
  }
  return pairs;
}

// ------------------------------------------------------------------------------------------------------
// The report

struct TakeoverReport {
  std::vector<TakeoverFigures> takeovers;
  FlowFigures flow;
  std::vector<OverheadPair> overhead;
  double overhead_ratio = kNaN;
  double total_seconds = kNaN;
};

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

std::vector<double> expected(const TakeoverReport& r) {
  std::vector<double> figures = {r.flow.ratio, r.overhead_ratio};
  for (const TakeoverFigures& t : r.takeovers) {
    figures.insert(figures.end(), {t.ratio, t.restore_seconds, t.rebuild_seconds, t.state_read_bytes});
  }
  return figures;
}

}  // namespace

int run_takeover(const Options& options, const std::map<std::string, std::string>& properties) {
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
