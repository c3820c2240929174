// File: service_reporting.h
//
// ServiceReporter: what the service shows of itself. It samples each assigned partition (filter
// statistics, the false-positive probe, the input's high watermark), adds up the totals, keeps the
// processing-latency histogram and the readiness flags, and publishes the snapshot that snapshot() returns
// to any thread and on_snapshot receives.
#pragma once

#include <mutex>

#include "bloomgate/app/service.h"
#include "partition_state.h"
#include "service_context.h"

namespace bloomgate::app {

class ServiceReporter {
 public:
  ServiceReporter(ServiceContext& context, PartitionState& state) : context_(context), state_(state) {}

  // Readiness (ServiceSnapshot::running): consuming, the group's first assignment received, not restoring.
  void set_running(bool running) { running_ = running; }
  void set_joined() { joined_ = true; }
  // Inside the rebalance callback of an assignment (not ready, whatever it assigns).
  void set_assigning(bool assigning) { assigning_ = assigning; }
  // Partitions assigned and not restored yet (restore thread, assignment.h): not ready while there is any.
  void set_restoring(std::size_t partitions) { restoring_ = partitions; }

  LatencyHistogram& processing_latency() { return processing_latency_; }

  // On the service thread: samples every assigned partition and publishes the snapshot.
  void publish();
  // From any thread: the snapshot published last.
  ServiceSnapshot snapshot() const;

 private:
  void sample_partition(PartitionWorker& worker, filters::TimePoint now);

  ServiceContext& context_;
  PartitionState& state_;
  LatencyHistogram processing_latency_;
  bool running_ = false;
  bool joined_ = false;     // the group has given this member its first assignment (possibly empty)
  bool assigning_ = false;
  std::size_t restoring_ = 0;  // partitions restoring, rebuilding, reconciling
  mutable std::mutex mutex_;
  ServiceSnapshot published_;
};

}  // namespace bloomgate::app
