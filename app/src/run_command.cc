#include "bloomgate/app/run_command.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <set>

#include "bloomgate/app/build_info.h"
#include "bloomgate/app/filter_command.h"
#include "bloomgate/app/logging.h"
#include "bloomgate/app/partition_deduplicator.h"
#include "bloomgate/app/service.h"
#include "bloomgate/app/service_metrics.h"
#include "bloomgate/app/service_workers.h"
#include "bloomgate/app/stop_signals.h"
#include "bloomgate/filters/vector_query.h"
#include "shutdown_deadline.h"

namespace bloomgate::app {

std::unique_ptr<connectors::EmbeddedBroker> start_embedded_kafka(const config::Config& config,
                                                                 const connectors::ClientHooks& hooks) {
  // The broker's host handle has no bootstrap servers of its own and says so at warning level: its
  // lines are about the embedded cluster's plumbing, so they go to debug.
  connectors::ClientHooks broker_hooks = hooks;
  broker_hooks.on_log = [](int, std::string_view facility, std::string_view message) {
    spdlog::debug("embedded broker: {}: {}", facility, message);
  };
  auto broker = std::make_unique<connectors::EmbeddedBroker>(1, std::move(broker_hooks));
  std::set<std::string> topics;
  for (const auto& pipeline : config.pipelines) {
    topics.insert(pipeline.inputs.begin(), pipeline.inputs.end());
    for (const auto* topic : {&pipeline.output, &pipeline.duplicates, &pipeline.dead_letter}) {
      if (!topic->empty()) topics.insert(*topic);
    }
  }
  // The state topic too: the embedded broker has no CreateTopics for the service's start-up check to use.
  if (!config.state.topic.empty()) topics.insert(config.state.topic);
  for (const auto& topic : topics) {
    if (auto error = broker->create_topic(topic, static_cast<int>(config.kafka.embedded_partitions)); !error.ok()) {
      throw connectors::KafkaException(std::move(error));
    }
  }
  spdlog::info("embedded Kafka broker at {} with {} topic(s) of {} partition(s); connect with kcat -b {} -L",
               broker->bootstrap_servers(), topics.size(), config.kafka.embedded_partitions,
               broker->bootstrap_servers());
  return broker;
}

namespace {

// state.dir as the service opens it: a relative one is relative to the working directory of the process.
void log_state_directory(const std::string& dir) {
  const std::filesystem::path path(dir);
  if (path.is_absolute()) {
    spdlog::info("state directory {}", dir);
  } else {
    spdlog::info("state directory {} (state.dir \"{}\", relative to the working directory)",
                 std::filesystem::absolute(path).lexically_normal().string(), dir);
  }
}

}  // namespace

int run_service_command(const RunCommandOptions& options) {
  try {
    configure_logging(options.log_level);
  } catch (const std::invalid_argument& e) {
    std::cerr << "bloomgate run: " << e.what() << '\n';
    return kExitUsage;
  }
  config::Config config;
  try {
    config = config::load_config(options.config_path, config::SecretSources::from_process(), filter_problem);
  } catch (const config::ConfigError& e) {
    std::cerr << "bloomgate: invalid configuration: " << e.what() << '\n';
    return kExitUsage;
  }
  try {
    const StopSignals signals;
    const connectors::ClientHooks hooks = kafka_log_hooks();
    std::unique_ptr<connectors::EmbeddedBroker> embedded;
    std::string brokers = config.kafka.brokers;
    if (brokers == config::kEmbeddedBrokers) {
      embedded = start_embedded_kafka(config, hooks);
      brokers = embedded->bootstrap_servers();
      // On stdout too, where nothing else is written: a port chosen at start is what a user needs first.
      std::cout << "bloomgate: embedded Kafka broker at " << brokers << " for as long as this process runs; "
                << "connect with kcat -b " << brokers << " -L" << std::endl;
    }
    log_state_directory(config.state.dir);
    ServiceOptions service_options;
    service_options.bootstrap_servers = brokers;
    service_options.stop = &signals.requested();
    service_options.hooks = hooks;
    const config::Config effective = config;
    const ShutdownDeadline deadline(signals.requested(),
                                    std::chrono::duration_cast<std::chrono::milliseconds>(config.shutdown.grace_period));
    ServiceWorkers workers(std::move(config), std::move(service_options));
    const ServiceEndpoints endpoints(workers, effective, effective.metrics.listen);
    spdlog::info("metrics, health and readiness at http://{}/metrics, /healthz, /readyz; malloc: {}; {}",
                 endpoints.address(), allocator_name(), filters::describe_vector_query());
    const RunResult result = workers.run();
    const ServiceSnapshot totals = workers.snapshot();
    const std::string signal = StopSignals::received_name();
    spdlog::info("stopped: consumed {}, forwarded {}, duplicates {}, dead-lettered {}{}", totals.consumed,
                 totals.forwarded, totals.duplicates, totals.dead_lettered, signal.empty() ? "" : "; on " + signal);
    return result.exit_code;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return kExitServiceFailed;
  }
}

}  // namespace bloomgate::app
