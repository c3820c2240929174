// File: bench/service_bench_takeover_flow.cc
//
// --takeover-keys: others keep flowing (two instances share a topic; one stops, the other takes its
// partition over from the state topic) and the state topic's overhead rounds. What each measures is in
// service_bench_takeover.cc.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "service_bench_takeover.h"

namespace bloomgate::bench::service_bench::takeover {
namespace {

constexpr int kFlowPartitions = 2;
constexpr double kFlowSpanSeconds = 5;  // the "before" span's length at least, once both members are steady

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

}  // namespace

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

}  // namespace bloomgate::bench::service_bench::takeover
