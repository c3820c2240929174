// File: bench/service_bench_rounds.cc
//
// The runs service_bench measures: the passthrough (the baseline), the service (one instance, --members
// instances or --workers workers), the checkpoint A/B pairs and the rebuild from the input history.
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <thread>

#include "bloomgate/app/service_workers.h"
#include "bench_support.h"
#include "service_bench.h"

namespace bloomgate::bench::service_bench {

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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
  config.state.topic = options.state_topic;
  config.shutdown.grace_period = std::chrono::seconds(60);
  config::PipelineSettings pipeline;
  pipeline.name = "bench";
  pipeline.inputs = {kInputTopic};
  pipeline.output = output;
  pipeline.key = config::KeySettings(config::KeySource::kJson, kKeyPointer, "", true);
  if (options.format != "json") {  // the same field of framed records, their schema from a file (cached)
    const bool avro = options.format == "avro";
    const config::SchemaType type = avro ? config::SchemaType::kAvro : config::SchemaType::kProtobuf;
    pipeline.key = config::KeySettings(avro ? config::KeySource::kAvro : config::KeySource::kProtobuf, kKeyPointer, "", true);
    config.schemas = {config::SchemaFile{kBenchSchemaId, type, "(bench)", bench_schema_text(type)}};
  }
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

namespace {

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

}  // namespace

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

std::vector<AbPair> run_checkpoint_ab(const Setup& setup) {
  const Options& o = setup.options;
  std::vector<AbPair> pairs;
  for (int round = 1; round <= o.ab_rounds; ++round) {
    const std::string r = std::to_string(round);
    std::fprintf(stderr, "service_bench: checkpoint A/B %d/%d ...\n", round, o.ab_rounds);
    pairs.push_back(run_alternated(
        round, [&] { return run_service(setup, "bench-ab-on-" + r, "bench-ab-on-out-" + r, o.ab_on_ms); },
        [&] { return run_service(setup, "bench-ab-off-" + r, "bench-ab-off-out-" + r, o.ab_off_ms); }));
  }
  return pairs;
}

AbPair run_alternated(int round, const std::function<RoundResult()>& on, const std::function<RoundResult()>& off) {
  AbPair pair;
  if (round % 2 == 1) {
    pair.on = on();
    pair.off = off();
  } else {
    pair.off = off();
    pair.on = on();
  }
  pair.ratio = pair.on.figures.events_per_second / pair.off.figures.events_per_second;
  return pair;
}

double ab_median(const std::vector<AbPair>& pairs) {
  std::vector<double> ratios;
  for (const AbPair& p : pairs) ratios.push_back(p.ratio);
  return median(ratios);
}

namespace {

constexpr const char* kRebuildGroup = "bench-rebuild";

// The partitions' rebuild reports, once every partition has finished one (empty until then).
std::vector<app::PartitionReport> rebuilt_partitions(const app::ServiceSnapshot& snapshot, std::size_t expected) {
  std::size_t rebuilt = 0;
  for (const app::PartitionReport& p : snapshot.partitions) rebuilt += p.rebuilds > 0 ? 1 : 0;
  return rebuilt >= expected ? snapshot.partitions : std::vector<app::PartitionReport>{};
}

}  // namespace

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

}  // namespace bloomgate::bench::service_bench
