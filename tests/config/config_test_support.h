// Shared by the configuration tests: fixed secret sources, parsing a text as "bloomgate.yaml", and the
// parameter of the malformed-input tests.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "bloomgate/config/config.h"

namespace bloomgate::config::test_support {

inline SecretSources fake_secrets() {
  static const std::map<std::string, std::string> env = {{"KAFKA_PASSWORD", "hunter2"}, {"BROKERS", "b1:9092,b2:9092"}};
  static const std::map<std::string, std::string> files = {{"/run/secrets/jaas", "org.apache.kafka...;"}};
  SecretSources s;
  s.env = [](const std::string& name) -> std::optional<std::string> {
    const auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  s.file = [](const std::string& path) -> std::optional<std::string> {
    const auto it = files.find(path);
    return it == files.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  return s;
}

inline Config parse(const std::string& yaml) { return parse_config(yaml, "bloomgate.yaml", fake_secrets()); }

// The ConfigError's message, or "(accepted)".
inline std::string error_of(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

// A parameter of the malformed-input tests: a name for the test, the text, and the exact message expected.
struct BadConfig {
  const char* name;
  std::string yaml;
  std::string message;
};

}  // namespace bloomgate::config::test_support
