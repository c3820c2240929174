// File: logging.h
//
// The service logs through spdlog's default logger (stderr, one line per event, level set by
// --log-level). librdkafka's own log lines are routed into it through ClientHooks, under the logger
// name "rdkafka", with librdkafka's syslog levels mapped onto spdlog's.
#pragma once

#include <string>

#include "bloomgate/connectors/client_hooks.h"

namespace bloomgate::app {

// trace, debug, info, warn, error, critical or off. Throws std::invalid_argument for anything else.
void configure_logging(const std::string& level);

// Hooks for every Kafka client: librdkafka's log lines and client errors go to spdlog.
connectors::ClientHooks kafka_log_hooks();

}  // namespace bloomgate::app
