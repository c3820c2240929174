// File: run_command.h
//
// `bloomgate run --config FILE`: loads and checks the configuration (a bad one stops here, before any
// topic is touched), starts the embedded broker when kafka.brokers is "embedded" (creating every topic
// the pipelines name, and logging its address so kcat and other clients can connect), installs the
// SIGTERM/SIGINT handlers and runs the Service until it is stopped.
#pragma once

#include <memory>
#include <string>

#include "bloomgate/config/config.h"
#include "bloomgate/connectors/client_hooks.h"
#include "bloomgate/connectors/embedded_broker.h"

namespace bloomgate::app {

struct RunCommandOptions {
  std::string config_path;
  std::string log_level = "info";
};

// The process exit code: 0 after a graceful stop, 1 on a runtime failure, 2 on a bad configuration.
int run_service_command(const RunCommandOptions& options);

// Starts the in-process broker and creates the input, output, duplicates and dead-letter topics of
// every pipeline with kafka.embedded_partitions partitions. Throws connectors::KafkaException.
std::unique_ptr<connectors::EmbeddedBroker> start_embedded_kafka(const config::Config& config,
                                                                 const connectors::ClientHooks& hooks);

}  // namespace bloomgate::app
