#include "bloomgate/app/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

namespace bloomgate::app {
namespace {

spdlog::level::level_enum from_syslog(int level) {
  if (level <= 3) return spdlog::level::err;
  if (level == 4) return spdlog::level::warn;
  if (level <= 6) return spdlog::level::info;
  return spdlog::level::debug;
}

std::shared_ptr<spdlog::logger> rdkafka_logger() {
  if (auto existing = spdlog::get("rdkafka")) return existing;
  auto logger = spdlog::default_logger()->clone("rdkafka");
  spdlog::register_logger(logger);
  return logger;
}

}  // namespace

void configure_logging(const std::string& level) {
  const auto parsed = spdlog::level::from_str(level);
  // from_str answers "off" for anything it does not know, so a typo would silence the service.
  if (parsed == spdlog::level::off && level != "off") {
    throw std::invalid_argument("log level \"" + level + "\" is not one of trace, debug, info, warn, error, critical, off");
  }
  spdlog::drop("bloomgate");
  auto logger = spdlog::stderr_color_mt("bloomgate");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%-5l%$ [%n] %v");
  logger->set_level(parsed);
  spdlog::set_default_logger(logger);
  spdlog::drop("rdkafka");
}

connectors::ClientHooks kafka_log_hooks() {
  connectors::ClientHooks hooks;
  auto logger = rdkafka_logger();
  hooks.on_log = [logger](int level, std::string_view facility, std::string_view message) {
    logger->log(from_syslog(level), "{}: {}", facility, message);
  };
  hooks.on_error = [logger](const connectors::KafkaError& error) {
    logger->log(error.is_fatal() ? spdlog::level::err : spdlog::level::warn, "{}", error.describe());
  };
  return hooks;
}

}  // namespace bloomgate::app
