#include "bloomgate/app/service_workers.h"

#include <sched.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <fstream>
#include <map>
#include <thread>
#include <utility>

#include "bloomgate/app/schema_catalog.h"
#include "bloomgate/connectors/admin.h"
#include "state_directory.h"

namespace bloomgate::app {
namespace {

// The cgroup v2 quota of the process's own cgroup ("200000 100000" is two cores; "max" none), in cores
// rounded up; 0 when there is none or it cannot be read.
std::uint32_t cgroup_quota_cores() {
  std::ifstream limit("/sys/fs/cgroup/cpu.max");
  std::string quota;
  std::uint64_t period = 0;
  if (!(limit >> quota >> period) || quota == "max" || period == 0) return 0;
  try {
    const std::uint64_t micros = std::stoull(quota);
    return static_cast<std::uint32_t>(std::max<std::uint64_t>(1, (micros + period - 1) / period));
  } catch (const std::exception&) {
    return 0;
  }
}

void add(std::uint64_t& into, std::uint64_t from) { into += from; }
void add(double& into, double from) { into += from; }

template <std::size_t N>
void add(std::array<std::uint64_t, N>& into, const std::array<std::uint64_t, N>& from) {
  for (std::size_t i = 0; i < N; ++i) into[i] += from[i];
}

template <std::size_t Bounds>
void add(BucketCounts<Bounds>& into, const BucketCounts<Bounds>& from) {
  add(into.counts, from.counts);
  into.sum += from.sum;
}

// Applies op(into.field, from.field) to every counter of a partition report (what only grows); the other
// fields are gauges.
template <typename Op>
void for_each_counter(PartitionReport& into, const PartitionReport& from, Op op) {
#define BLOOMGATE_MERGE_COUNTER(field, name, help) op(into.field, from.field);
  BLOOMGATE_PARTITION_COUNTERS(BLOOMGATE_MERGE_COUNTER)
#undef BLOOMGATE_MERGE_COUNTER
  op(into.counters.forwarded, from.counters.forwarded);
  op(into.counters.duplicates, from.counters.duplicates);
  op(into.counters.dead_lettered, from.counters.dead_lettered);
  op(into.dead_letters_by_reason, from.dead_letters_by_reason);
  op(into.duplicate_ages, from.duplicate_ages);
  op(into.restores_by_source, from.restores_by_source);
  op(into.state_topic_read_seconds, from.state_topic_read_seconds);
}

// Whose gauges a merged report shows: the owner's, else the report furthest in the input.
bool shows_gauges_over(const PartitionReport& candidate, const PartitionReport& current) {
  if (candidate.assigned != current.assigned) return candidate.assigned;
  return candidate.next_offset > current.next_offset;
}

PartitionReport merge_partition(const std::vector<const PartitionReport*>& reports) {
  const PartitionReport* gauges = reports.front();
  for (const PartitionReport* report : reports) {
    if (shows_gauges_over(*report, *gauges)) gauges = report;
  }
  PartitionReport merged = *gauges;
  for_each_counter(merged, PartitionReport{}, [](auto& into, const auto& zero) { into = zero; });
  for (const PartitionReport* report : reports) {
    for_each_counter(merged, *report, [](auto& into, const auto& from) { add(into, from); });
  }
  return merged;
}

}  // namespace

std::uint32_t usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::uint32_t cores = 1;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cores = static_cast<std::uint32_t>(std::max(1, CPU_COUNT(&set)));
  if (const std::uint32_t quota = cgroup_quota_cores(); quota != 0) cores = std::min(cores, quota);
  return cores;
}

std::uint32_t resolve_workers(std::uint32_t configured, std::uint32_t cores, std::uint64_t input_partitions) {
  if (configured != config::kAutoWorkers) return configured;
  const std::uint64_t workers = std::min<std::uint64_t>(cores, input_partitions);
  return static_cast<std::uint32_t>(std::max<std::uint64_t>(1, workers));
}

ServiceSnapshot merge_snapshots(std::span<const ServiceSnapshot> snapshots) {
  ServiceSnapshot merged;
  merged.running = !snapshots.empty();
  std::map<std::pair<std::string, std::int32_t>, std::vector<const PartitionReport*>> by_partition;
  for (const ServiceSnapshot& snapshot : snapshots) {
    for (const PartitionReport& report : snapshot.partitions) {
      by_partition[{report.topic, report.partition}].push_back(&report);
    }
    merged.consumed += snapshot.consumed;
    merged.forwarded += snapshot.forwarded;
    merged.duplicates += snapshot.duplicates;
    merged.dead_lettered += snapshot.dead_lettered;
    merged.commits += snapshot.commits;
    merged.transactions_committed += snapshot.transactions_committed;
    merged.transactions_aborted += snapshot.transactions_aborted;
    merged.producer_queue += snapshot.producer_queue;
    merged.partitions_waiting_for_schema += snapshot.partitions_waiting_for_schema;
    merged.partitions_restoring += snapshot.partitions_restoring;
    merged.schema_registry_failures = std::max(merged.schema_registry_failures, snapshot.schema_registry_failures);
    merged.schema_registry_reachable = merged.schema_registry_reachable && snapshot.schema_registry_reachable;
    add(merged.processing_latency, snapshot.processing_latency);
    merged.running = merged.running && snapshot.running;
  }
  for (const auto& [key, reports] : by_partition) merged.partitions.push_back(merge_partition(reports));
  return merged;
}

config::Config worker_config(const config::Config& config, std::uint32_t index) {
  config::Config worker = config;
  if (index != 0 && !worker.kafka.instance_name.empty()) {
    worker.kafka.instance_name += ".worker-" + std::to_string(index);
  }
  return worker;
}

namespace {

constexpr std::chrono::milliseconds kPartitionCountTimeout{10'000};
constexpr std::chrono::milliseconds kWatchInterval{20};

// The input partitions of every pipeline; topics that cannot be counted (missing, the brokers out of
// reach) count as none: the workers' start-up checks then report them.
std::uint64_t count_input_partitions(const config::Config& config, const ServiceOptions& options) {
  try {
    connectors::KafkaConfig kafka;
    kafka.with("bootstrap.servers", options.bootstrap_servers);
    if (const auto error = kafka.set_all(config::properties_for(config.kafka, config::ClientRole::kAdmin)); !error.ok()) {
      return 0;
    }
    const connectors::Admin admin(kafka, options.hooks);
    std::uint64_t partitions = 0;
    for (const auto& pipeline : config.pipelines) {
      for (const std::string& topic : pipeline.inputs) {
        const auto count = admin.partition_count(topic, kPartitionCountTimeout);
        if (count.ok()) partitions += static_cast<std::uint64_t>(count.value());
      }
    }
    return partitions;
  } catch (const std::exception& e) {
    spdlog::warn("workers: could not count the input partitions ({}); starting one worker", e.what());
    return 0;
  }
}

}  // namespace

ServiceWorkers::ServiceWorkers(config::Config config, ServiceOptions options)
    : config_(std::move(config)), options_(std::move(options)) {
  for (const auto& pipeline : config_.pipelines) {
    filter_options_for(pipeline);  // throws std::invalid_argument, as each worker's Service would
  }
}

ServiceWorkers::~ServiceWorkers() = default;

std::uint32_t ServiceWorkers::resolved_count() {
  if (config_.workers != config::kAutoWorkers) return config_.workers;
  const std::uint32_t cores = usable_cores();
  const std::uint64_t partitions = count_input_partitions(config_, options_);
  const std::uint32_t count = resolve_workers(config_.workers, cores, partitions);
  spdlog::info("workers: auto is {} ({} usable cores, {} input partitions)", count, cores, partitions);
  return count;
}

RunResult ServiceWorkers::run() {
  try {
    const std::uint32_t count = resolved_count();
    ServiceOptions worker_options = options_;
    worker_options.stop = &stop_workers_;
    if (!worker_options.schemas) worker_options.schemas = make_schema_catalog(config_);  // one for every worker
    if (count > 1) {
      state_ = std::make_unique<StateDirectory>(config_, options_.state_environment);
      state_->open();
      worker_options.state_directory = state_.get();
    }
    std::lock_guard lock(mutex_);
    for (std::uint32_t i = 0; i < count; ++i) {
      workers_.push_back(std::make_unique<Service>(worker_config(config_, i), worker_options));
    }
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return {kExitServiceFailed, e.what()};
  }
  return run_all();
}

RunResult ServiceWorkers::run_all() {
  const std::size_t count = workers_.size();
  std::vector<RunResult> results(count);
  std::vector<std::atomic<bool>> done(count);
  std::vector<std::jthread> threads;
  for (std::size_t i = 0; i < count; ++i) {
    threads.emplace_back([this, i, &results, &done] {
      results[i] = workers_[i]->run();
      done[i].store(true);
    });
  }
  spdlog::info("{} worker(s) started", count);
  for (;;) {
    bool all_done = true;
    bool failed = false;
    for (std::size_t i = 0; i < count; ++i) {
      all_done = all_done && done[i].load();
      failed = failed || (done[i].load() && results[i].exit_code != 0);
    }
    if (all_done) break;
    // A worker that failed, or the process's stop flag: every worker stops, each as it would alone.
    if (failed || (options_.stop != nullptr && options_.stop->load())) stop_workers_.store(true);
    std::this_thread::sleep_for(kWatchInterval);
  }
  threads.clear();
  for (const RunResult& result : results) {
    if (result.exit_code != 0) return result;
  }
  return {};
}

ServiceSnapshot ServiceWorkers::snapshot() const { return merge_snapshots(worker_snapshots()); }

std::vector<ServiceSnapshot> ServiceWorkers::worker_snapshots() const {
  std::vector<ServiceSnapshot> snapshots;
  std::lock_guard lock(mutex_);
  for (const auto& worker : workers_) snapshots.push_back(worker->snapshot());
  return snapshots;
}

std::uint32_t ServiceWorkers::count() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::uint32_t>(workers_.size());
}

}  // namespace bloomgate::app
