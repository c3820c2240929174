// File: service_workers.h
//
// `workers: N`: N services in one process, each on a thread of its own and a member of the consumer group
// with its own partitions, filters, producer and checkpoints. What they share is the process's: one state
// store (partitions are disjoint, and a partition that moves between two workers of the process is
// restored from the other's checkpoint like one moving between processes), one metrics endpoint (the
// snapshot below merges theirs), one readiness answer (ready while every worker is consuming) and one
// shutdown (the stop flag reaches all of them). A worker that fails stops the others gracefully and the
// process exits 1 with its error: what it had not committed is consumed again by whoever owns its
// partitions next, exactly as when a single-worker process fails.
//
// Group identity: worker 0 keeps kafka.instance_name; worker i > 0 is "<instance_name>.worker-<i>", so
// static membership (group.instance.id) and, with exactly_once, the transactional.id stay distinct and
// stable per worker across restarts with the same `workers`.
//
// Thread-safety: run() on one thread; snapshot() from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "bloomgate/app/service.h"
#include "bloomgate/config/config.h"

namespace bloomgate::app {

class StateDirectory;

// The workers of one process, run as `bloomgate run` runs them. With one worker it is the single service,
// which opens its own state directory; with several, the state directory is opened here once and handed to
// each.
class ServiceWorkers {
 public:
  // Validates what can be checked without Kafka, as Service does; throws std::invalid_argument.
  ServiceWorkers(config::Config config, ServiceOptions options);
  ~ServiceWorkers();
  ServiceWorkers(const ServiceWorkers&) = delete;
  ServiceWorkers& operator=(const ServiceWorkers&) = delete;

  // Resolves `workers: auto` (one metadata request), starts the workers, and runs until the stop flag is
  // set or a worker fails, then stops them all; never throws. The failing worker's result, else exit 0.
  RunResult run();

  // The process's snapshot (merge_snapshots); an empty, not-running one before the workers started.
  ServiceSnapshot snapshot() const;

  // Each worker's own snapshot, in worker order (for tests and diagnostics).
  std::vector<ServiceSnapshot> worker_snapshots() const;

  // How many workers run (0 before run() resolved it).
  std::uint32_t count() const;

 private:
  std::uint32_t resolved_count();
  RunResult run_all();

  config::Config config_;
  ServiceOptions options_;
  std::atomic<bool> stop_workers_{false};  // what the workers watch: set by the stop flag or a failure
  std::unique_ptr<StateDirectory> state_;
  mutable std::mutex mutex_;               // guards workers_ (built in run(), read by snapshot())
  std::vector<std::unique_ptr<Service>> workers_;
};

// The cores this process may run on: its CPU affinity, lowered by a cgroup v2 CPU quota (a container's
// CPU limit) when one is set. At least 1.
std::uint32_t usable_cores();

// `workers: auto` resolved: one per usable core, at most one per input partition (a worker beyond that
// would own none), at least one. A number is taken as it is.
std::uint32_t resolve_workers(std::uint32_t configured, std::uint32_t cores, std::uint64_t input_partitions);

// One snapshot of the process from its workers' snapshots: totals and histograms summed; a partition that
// several workers have owned is one report whose counters are the sums (each event was counted by the
// worker that consumed it) and whose gauges (offsets, filter, last durations, restored, rebuilding) come
// from the worker that owns it now, or, when none does, from the one that got furthest in its input.
// `running` only when every worker runs.
ServiceSnapshot merge_snapshots(std::span<const ServiceSnapshot> snapshots);

// The configuration worker `index` of `count` runs with (its instance name, above).
config::Config worker_config(const config::Config& config, std::uint32_t index);

}  // namespace bloomgate::app
