// File: config.h
//
// The service's configuration, decoded from YAML into typed structs. Every key is checked: an unknown
// key, a wrong type or an out-of-range value is a ConfigError naming the file, line, column and key, and
// the service stops before it touches any topic. Secrets are never written inline: a value may be
// `${env:NAME}` or `${file:/path}` (whole or embedded), substituted at load time, and the key names that
// hold secrets (passwords, SASL JAAS configs, client secrets) must use one of them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace bloomgate::config {

using Duration = std::chrono::nanoseconds;

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `kafka.brokers: embedded` starts librdkafka's mock cluster inside the process.
inline constexpr const char* kEmbeddedBrokers = "embedded";

// What a crash may do to the output (docs/state.md):
//   at_least_once  checkpoint, commit and reconcile against the output tail: no duplicates for same_as_input
//                  pipelines, without broker transactions (the default);
//   exactly_once   every checkpoint interval is one Kafka transaction (records and input offsets), for
//                  readers with isolation.level=read_committed. Needs instance_name: the transactional.id
//                  is derived from it.
enum class Guarantee { kAtLeastOnce, kExactlyOnce };

struct KafkaSettings {
  std::string brokers;                            // "host:port,..." or kEmbeddedBrokers
  std::string group_id = "bloomgate";
  std::string instance_name;                      // optional: static membership (group.instance.id)
  Guarantee guarantee = Guarantee::kAtLeastOnce;
  std::uint32_t embedded_partitions = 4;          // brokers == embedded: partitions of each created topic
  std::map<std::string, std::string> properties;  // passed to librdkafka as they are
  std::map<std::string, std::string> property_sources;  // key -> the ${...} reference it came from
};

struct StateSettings {
  std::string dir = "./state";
  Duration checkpoint_interval = std::chrono::seconds(5);
};

struct ShutdownSettings {
  // SIGTERM/SIGINT: how long the service may take to flush and commit before it gives up (exit 1, and the
  // events not yet committed are consumed again by whoever owns the partitions next).
  Duration grace_period = std::chrono::seconds(30);
};

struct MetricsSettings {
  std::string listen = "127.0.0.1:9464";
};

enum class KeySource { kMessageKey, kJson, kHeader, kValue };
enum class TimeSource { kEvent, kProcessing };
enum class OutputPartitioning { kSameAsInput, kByKey };

struct KeySettings {
  KeySource from = KeySource::kMessageKey;
  std::string pointer;       // json: an RFC 6901 JSON pointer, "/order_id"
  std::string header;        // header: the header's name
  bool empty_is_error = true;  // an empty key goes to the dead-letter topic
};

struct FilterSettings {
  std::string type = "time_limited";  // time_limited | age_partitioned | continuous | scalable | bloom
  double error_rate = 0.001;
  std::uint64_t expected_per_ttl = 1'000'000;
  std::uint64_t window = 0;  // age_partitioned: count window; 0 = expected_per_ttl
  // time_limited / age_partitioned (k, l) level 0..6; unset: the filters' default, the level with the fewest
  // bits per key for the error rate (6 at 1e-3 and 1e-4, 5 at 1e-2), also the CLI's (docs/performance.md,
  // "Choosing the level").
  std::optional<std::uint32_t> level;
};

struct PipelineSettings {
  std::string name;
  std::vector<std::string> inputs;
  std::string output;
  std::string duplicates;   // optional: empty when duplicates are dropped
  std::string dead_letter;  // optional: empty means an unkeyable event stops the service
  KeySettings key;
  Duration ttl{};
  TimeSource time = TimeSource::kEvent;
  bool refresh_on_duplicate = false;
  OutputPartitioning output_partitioning = OutputPartitioning::kSameAsInput;
  std::uint64_t max_key_bytes = 4096;
  std::uint64_t max_value_bytes = 1 << 20;
  FilterSettings filter;
};

struct Config {
  KafkaSettings kafka;
  StateSettings state;
  MetricsSettings metrics;
  ShutdownSettings shutdown;
  std::vector<PipelineSettings> pipelines;
};

// Where ${env:NAME} and ${file:/path} come from; replaceable in tests.
struct SecretSources {
  std::function<std::optional<std::string>(const std::string& name)> env;
  std::function<std::optional<std::string>(const std::string& path)> file;
  static SecretSources from_process();
};

// Parses YAML text; `source` names it in errors (a file path, or "<input>").
Config parse_config(const std::string& yaml_text, const std::string& source, const SecretSources& secrets);

// Reads and parses a file. An unreadable file is a ConfigError too.
Config load_config(const std::string& path, const SecretSources& secrets = SecretSources::from_process());

// The effective configuration as YAML, defaults filled in, secrets shown as the reference they came from
// (or "<redacted>"), never as their values.
std::string render_effective(const Config& config);

bool is_secret_property(const std::string& key);

// The producer's transactional.id with guarantee exactly_once: "<group_id>.<instance_name>", stable across
// restarts of one instance (so a restarted instance fences its predecessor) and distinct between the
// instances of a group.
std::string transactional_id(const KafkaSettings& kafka);

}  // namespace bloomgate::config
