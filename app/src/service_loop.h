// File: service_loop.h
//
// ServiceLoop: one consumer-group member of the service: its consumer and producer (in its ServiceContext),
// its partitions (PartitionState), output routing, assignment, commit protocol and reporter, and the loop
// that polls, decides and delivers. What a process shares is handed in: the configuration and options (the
// stop flag among them) and the StateDirectory, opened before the loop starts and closed after it ends.
// Its snapshot is what the metrics endpoint and /readyz answer from (service_metrics.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "assignment.h"
#include "bloomgate/app/service.h"
#include "commit_protocol.h"
#include "output_router.h"
#include "partition_state.h"
#include "service_context.h"
#include "schema_waits.h"
#include "service_reporting.h"
#include "startup_checks.h"

namespace bloomgate::app {

class ServiceLoop final : private ProduceEvents, private StateEvents {
 public:
  // `config`, `options` and `directory` must outlive the loop; the directory is opened before run().
  ServiceLoop(const config::Config& config, const ServiceOptions& options, StateDirectory& directory);
  ServiceLoop(const ServiceLoop&) = delete;
  ServiceLoop& operator=(const ServiceLoop&) = delete;

  // Runs until a stop is requested or a fatal error, then closes its clients; never throws.
  RunResult run() noexcept;
  // The loop cannot start (its state directory did not open): fails with `why` and publishes that.
  RunResult fail_before_start(const std::string& why) noexcept;

  ServiceSnapshot snapshot() const { return reporter_.snapshot(); }

 private:
  void start();
  connectors::ConsumerOptions consumer_options();
  void loop();
  void handle(connectors::ConsumedMessage& message);
  Verdict decide(PartitionWorker& worker, const connectors::ConsumedMessage& message, const EventView& event);
  void hold_for_schema(const connectors::ConsumedMessage& message, std::uint32_t schema_id);
  void seek_back(const PartitionWorker& worker, const connectors::ConsumedMessage& message);
  void after_event();
  void check_timers();
  void stop_at_unkeyable(const PartitionWorker& worker, const connectors::ConsumedMessage& message,
                         const Verdict& verdict);
  void shut_down();
  void close_clients() noexcept;
  RunResult result() const;

  // What the parts report, answered from the commit protocol.
  bool before_produce() override { return protocol_->before_produce(); }
  bool produce_refused(const connectors::KafkaError& error) override { return protocol_->absorb_produce_error(error); }
  bool delivery_failed(const connectors::KafkaError& error) override { return protocol_->absorb_delivery_failure(error); }
  void before_quarantine() override { protocol_->settle(/*may_flush=*/true); }

  const config::Config& config_;
  const ServiceOptions& options_;
  ServiceContext context_{config_, options_};
  OutputRouter router_{context_, *this};
  PartitionState state_;
  ServiceReporter reporter_{context_, state_};
  KafkaCommitPorts ports_{context_, router_, router_};
  std::unique_ptr<CommitProtocol> protocol_ = make_commit_protocol(context_, state_, ports_.ports());
  Assignment assignment_{context_, state_, *protocol_, reporter_};
  RetentionCheck retention_;
  SchemaWaits schema_waits_;

  std::vector<connectors::ConsumedMessage> batch_;     // the records of one poll_batch(), reused
  std::vector<connectors::HeaderView> header_views_;  // event_of()'s storage, reused event after event
  std::uint64_t consumed_since_producer_poll_ = 0;
  std::uint64_t events_since_timing_ = 0;
  std::uint32_t events_since_timer_check_ = 0;
  Clock::time_point next_snapshot_;
};

}  // namespace bloomgate::app
