// File: service_context.h
//
// ServiceContext: what the parts of one service loop share (ServiceLoop builds them around it): the
// configuration, the options, the loop's Kafka clients, its failure, its stop deadline and its commit
// counters. One per loop: the process-wide pieces (the state directory, the metrics registry, the stop
// flag) are passed to the loop from outside it.
#pragma once

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "bloomgate/app/service.h"
#include "bloomgate/config/config.h"
#include "bloomgate/connectors/admin.h"
#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/producer.h"

namespace bloomgate::app {

using Clock = std::chrono::steady_clock;

inline constexpr std::chrono::milliseconds kMetadataTimeout{10'000};
inline constexpr std::chrono::milliseconds kCheckpointFlushTimeout{30'000};

// Offset commits and transactions, for the snapshot.
struct CommitCounters {
  std::uint64_t commits = 0;
  std::uint64_t transactions_committed = 0;
  std::uint64_t transactions_aborted = 0;
};

class ServiceContext {
 public:
  ServiceContext(const config::Config& service_config, const ServiceOptions& service_options)
      : config(service_config), options(service_options) {}

  const config::Config& config;
  const ServiceOptions& options;
  std::unique_ptr<connectors::Admin> admin;
  std::unique_ptr<connectors::Producer> producer;
  std::unique_ptr<connectors::Consumer> consumer;  // reset first: its close() may flush and commit
  std::optional<Clock::time_point> stop_deadline;  // set when a graceful stop begins
  CommitCounters counters;
  std::uint64_t partitions_waiting_for_schema = 0;  // SchemaWaits::held(), for the snapshot

  bool failed() const noexcept { return failure_.has_value(); }
  const std::optional<std::string>& failure() const noexcept { return failure_; }
  int failure_exit_code() const noexcept { return failure_exit_code_; }
  // The first failure stops the loop, with `exit_code` (kExitUsage: a start-up check the configuration does
  // not pass); later ones are not logged again.
  void fail(const std::string& why, int exit_code = kExitServiceFailed) noexcept {
    if (failure_) return;
    failure_ = why;
    failure_exit_code_ = exit_code;
    spdlog::error("{}", why);
  }

  // How long a flush may take now: what is left of the grace period while stopping.
  std::chrono::milliseconds flush_budget() const {
    if (!stop_deadline) return kCheckpointFlushTimeout;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*stop_deadline - Clock::now());
    return std::max(left, std::chrono::milliseconds(0));
  }

  bool stop_requested() const { return options.stop != nullptr && options.stop->load(std::memory_order_relaxed); }

 private:
  std::optional<std::string> failure_;
  int failure_exit_code_ = kExitServiceFailed;
};

// Milliseconds from now to `deadline`, never negative.
inline std::chrono::milliseconds time_left(Clock::time_point deadline) {
  return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                  std::chrono::milliseconds(0));
}

}  // namespace bloomgate::app
