// File: restore_runner.h
//
// RestoreJob and RestoreRunner: a newly assigned partition's restore (checkpoint read or start point,
// rebuild, reconciliation: assignment.h) runs on one thread of its own, so that the rebalance callback
// returns at once and the loop keeps polling, heartbeating and consuming its other partitions.
//
// Ownership. A job is shared by the loop and the restore thread:
// - the loop fills in what it knows before submit() (key, pipeline, a copy of the partition's report, whether
//   its state went with a quarantine) and, after the runner reports the job finished, reads the rest;
// - the restore thread alone writes everything else (the worker, its own report copy, the start offset, the
//   failure) until the job is finished, and touches nothing of the loop's: no PartitionState map, no
//   report of PartitionState, no commit protocol, no reporter;
// - `cancelled` and the live progress (`rebuilding`, `rebuild_progress`, `quarantine_wanted`) are atomics
//   either side may read at any time.
// The runner's mutex orders a job's results before the job is listed finished: the loop reads them only
// after take_finished() returned the job.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "bloomgate/app/service.h"
#include "bloomgate/config/config.h"
#include "partition_worker.h"

namespace bloomgate::app {

struct RestoreJob {
  RestoreJob(PartitionKey partition, const config::PipelineSettings& settings, const PartitionReport& current)
      : key(std::move(partition)), pipeline(settings), report(current) {}

  // Set by the loop before submit().
  const PartitionKey key;
  const config::PipelineSettings& pipeline;
  bool lost_with_quarantine = false;  // its state went with a quarantined directory
  PartitionReport* live_report = nullptr;  // loop thread only: PartitionState's report of the partition

  // Written by the restore thread until the job is finished.
  PartitionReport report;                   // the thread's copy; the loop copies it back when it applies the job
  std::unique_ptr<PartitionWorker> worker;  // its report points at `report` until the loop applies the job
  std::int64_t start_offset = connectors::kNoOffset;  // where consumption starts; unknown: librdkafka decides
  bool first_checkpoint = false;            // no usable checkpoint: the loop writes the first one
  std::optional<std::string> failure;       // what failed; the loop fails the service with it

  // Either side, any time.
  std::atomic<bool> cancelled{false};         // revoked, lost or stopping: stop, and nothing of it is used
  std::atomic<bool> rebuilding{false};        // for the gauges while the thread works on it
  std::atomic<double> rebuild_progress{0.0};
  std::atomic<bool> quarantine_wanted{false};  // the store is corrupt: the loop quarantines it (state.md)
};

class RestoreRunner {
 public:
  using Work = std::function<void(RestoreJob&)>;  // must not throw

  explicit RestoreRunner(Work work);
  ~RestoreRunner() { stop(); }
  RestoreRunner(const RestoreRunner&) = delete;
  RestoreRunner& operator=(const RestoreRunner&) = delete;

  // Queues the job; the thread runs the jobs one after another, in order. Starts the thread on first use.
  // After stop(), the job is finished at once, cancelled.
  void submit(std::shared_ptr<RestoreJob> job);
  // The jobs finished since the last call (cancelled ones included), in the order they finished.
  std::vector<std::shared_ptr<RestoreJob>> take_finished();
  // Waits until `job` is finished, at most until `deadline`; true when it is.
  bool wait_finished(const RestoreJob& job, std::chrono::steady_clock::time_point deadline);
  // Cancels every job, queued or running, and joins the thread. A cancelled rebuild or reconciliation stops
  // at its next poll (the side readers' kPollTimeout); a single request in flight (a watermark or committed-offset question) ends
  // within its own timeout (kMetadataTimeout). Idempotent.
  void stop();

 private:
  void run(std::stop_token stop);

  Work work_;
  mutable std::mutex mutex_;
  std::condition_variable_any changed_;
  std::deque<std::shared_ptr<RestoreJob>> queued_;
  std::shared_ptr<RestoreJob> running_;
  std::vector<std::shared_ptr<RestoreJob>> finished_;
  bool stopped_ = false;
  std::jthread thread_;
};

}  // namespace bloomgate::app
