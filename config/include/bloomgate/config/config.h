// File: config.h
//
// The service's configuration, decoded from YAML into typed structs. Every key is checked: an unknown
// key, a wrong type or an out-of-range value is a ConfigError naming the file, line, column and key, and
// the service stops before it touches any topic. Secrets are never written inline: a value may be
// `${env:NAME}` or `${file:/path}` (whole or embedded), substituted at load time, and the key names that
// hold secrets (passwords, SASL JAAS configs, client secrets) must use one of them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
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
  // Passed to librdkafka as they are. A name starting with `consumer.` or `producer.` is for that client
  // role only (properties_for), as Kafka Streams' prefixes are; the others go to every client.
  std::map<std::string, std::string> properties;
  std::map<std::string, std::string> property_sources;  // key -> the ${...} reference it came from
};

// The sentinel of StateSettings::topic_replication_factor: the broker's default.replication.factor.
inline constexpr int kBrokerDefaultReplication = -1;

struct StateSettings {
  std::string dir = "./state";
  Duration checkpoint_interval = std::chrono::seconds(5);
  // state.topic: a compacted Kafka topic that holds every partition's checkpoint as well (docs/state.md);
  // empty: the checkpoints live in `dir` only. Created at start-up when missing, with
  // topic_replication_factor replicas (kBrokerDefaultReplication: the broker's default).
  std::string topic;
  int topic_replication_factor = kBrokerDefaultReplication;
};

struct ShutdownSettings {
  // SIGTERM/SIGINT: how long the service may take to flush and commit before it gives up (exit 1, and the
  // events not yet committed are consumed again by whoever owns the partitions next).
  Duration grace_period = std::chrono::seconds(30);
};

struct MetricsSettings {
  std::string listen = "127.0.0.1:9464";
};

// avro, protobuf and json_schema read a value in the Schema Registry's wire format (schema_registry below;
// app/include/bloomgate/app/schema_keys.h has the framing and the canonical key bytes).
enum class KeySource { kMessageKey, kJson, kHeader, kValue, kAvro, kProtobuf, kJsonSchema };

// Whether the source reads a Schema Registry framed value whose schema must be known (avro, protobuf);
// json_schema values carry their field names, so only the frame is stripped.
bool needs_schema(KeySource source);
enum class TimeSource { kEvent, kProcessing };
enum class OutputPartitioning { kSameAsInput, kByKey };

// One source of key bytes (`key.parts[i]`), with its optional normalisation. Both normalisations are
// ASCII-only: trim drops leading and trailing space, \t, \n, \v, \f and \r; lowercase maps A-Z to a-z and
// leaves every other byte, UTF-8 sequences included, as it is (docs/decisions/key-normalisation-ascii.md).
struct KeyPart {
  KeySource from = KeySource::kMessageKey;
  std::string pointer;     // json, json_schema: an RFC 6901 JSON pointer, "/order_id"; avro, protobuf: field
                           // names spelled as one ("/order/id")
  std::string header;      // header: the header's name
  bool trim = false;
  bool lowercase = false;
};

// A key of several parts is encoded as 4 bytes of length (unsigned, little-endian) before each part's
// bytes, so max_key_bytes must leave room for those prefixes; see app/include/bloomgate/app/key_extractor.h.
inline constexpr std::size_t kMaxKeyParts = 16;
inline constexpr std::size_t kKeyPartPrefixBytes = 4;

// `key:` is either one source (from, pointer or name, trim, lowercase) or `parts:`, a list of sources. The
// loader turns the one-source form into `parts` with one entry: `parts` is the only form after config.
struct KeySettings {
  KeySettings() = default;
  // One source without normalisation, as code and tests spell it: {KeySource::kJson, "/id", "", true}.
  KeySettings(KeySource source, std::string json_pointer, std::string header_name, bool empty_key_is_error)
      : empty_is_error(empty_key_is_error),
        parts{KeyPart{source, std::move(json_pointer), std::move(header_name), false, false}} {}

  bool empty_is_error = true;  // an empty key (with parts: an empty part) goes to the dead-letter topic
  std::vector<KeyPart> parts{KeyPart{}};  // at least one; a key of one part is that part's bytes
};

// "json /order_id", "header region", "message_key", "value": how errors and dead letters name a part.
std::string describe(const KeyPart& part);

// The (k, l) level of the service and of `bloomgate filter` when none is given, chosen by speed and memory
// together rather than by the fewest bits per key (docs/decisions/default-filter-level.md).
inline constexpr std::uint32_t kDefaultFilterLevel = 5;

struct FilterSettings {
  std::string type = "time_limited";  // a name of filters::kFilterTypes (filter_types.h)
  double error_rate = 0.001;
  std::uint64_t expected_per_ttl = 1'000'000;
  std::uint64_t window = 0;  // age_partitioned: count window; 0 = expected_per_ttl
  // time_limited / age_partitioned (k, l) level 0..6 (kDefaultFilterLevel unless set).
  std::optional<std::uint32_t> level = kDefaultFilterLevel;
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

// `workers`: how many consumer-group members (each a thread with its own partitions, filters and
// checkpoints) one process runs. kAutoWorkers: one per core the process may use, at most one per input
// partition (resolved at start; docs/deployment.md says how to size it).
inline constexpr std::uint32_t kAutoWorkers = 0;
inline constexpr std::uint32_t kMaxWorkers = 256;

// `schema_registry:` where avro and protobuf keys find their schemas by id (GET /schemas/ids/{id}).
struct SchemaRegistrySettings {
  std::string url;                     // "http://host:8081"; empty: no registry
  std::string username;                // basic_auth.username
  std::string password;                // basic_auth.password: a ${env:...} or ${file:...} reference
  std::string password_source;         // that reference, for render_effective
  std::string tls_ca_file;             // tls.ca_file: the CA bundle a https url is verified against
  std::string tls_cert_file;           // tls.cert_file and tls.key_file: a client certificate
  std::string tls_key_file;
  std::uint64_t cache_size = 1000;     // schemas kept, least recently used dropped first
  Duration timeout = std::chrono::seconds(10);  // one request's
};

// `schemas:` a schema given by file instead of by the registry: {id, type, file}; `text` is the file's
// content, read at load.
enum class SchemaType { kAvro, kProtobuf, kJson };
struct SchemaFile {
  std::uint32_t id = 0;
  SchemaType type = SchemaType::kAvro;
  std::string file;
  std::string text;
};

struct Config {
  std::uint32_t workers = kAutoWorkers;
  SchemaRegistrySettings schema_registry;
  std::vector<SchemaFile> schemas;
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

// A check of one pipeline that this library cannot make itself, such as the filters' sizing (config does
// not depend on filters/): the key under the pipeline that is wrong ("filter.expected_per_ttl") and what is
// wrong with it, or nothing. parse_config reports a problem as every other error, with file, line, column
// and key (the line of the key's mapping when the key is not written, its default being what is wrong).
struct PipelineProblem {
  std::string key;
  std::string problem;
};
using PipelineCheck = std::function<std::optional<PipelineProblem>(const PipelineSettings&)>;

// Parses YAML text; `source` names it in errors (a file path, or "<input>"). A key given twice in one
// mapping is an error (YAML would keep one of them silently).
Config parse_config(const std::string& yaml_text, const std::string& source, const SecretSources& secrets,
                    const PipelineCheck& check = {});

// Reads and parses a file. An unreadable file is a ConfigError too.
Config load_config(const std::string& path, const SecretSources& secrets = SecretSources::from_process(),
                   const PipelineCheck& check = {});

// The effective configuration as YAML, defaults filled in, secrets shown as the reference they came from
// (or "<redacted>"), never as their values.
std::string render_effective(const Config& config);

bool is_secret_property(const std::string& key);

// The librdkafka clients the service creates, by what their properties may hold: the group consumer and the
// service's other readers (reconciliation, rebuild) are consumers; the producer; the admin client.
enum class ClientRole { kConsumer, kProducer, kAdmin };

inline constexpr const char* kConsumerPrefix = "consumer.";
inline constexpr const char* kProducerPrefix = "producer.";

// The properties one client role gets: every unprefixed `kafka.properties` entry, then the entries with the
// role's prefix, the prefix removed (they win over an unprefixed entry of the same name). The admin client
// gets the unprefixed ones only. A consumer-only property written with `consumer.` thus never reaches the
// producer, where librdkafka would warn about it at every start.
std::map<std::string, std::string> properties_for(const KafkaSettings& kafka, ClientRole role);

// The producer's transactional.id with guarantee exactly_once: "<group_id>.<instance_name>", stable across
// restarts of one instance (so a restarted instance fences its predecessor) and distinct between the
// instances of a group.
std::string transactional_id(const KafkaSettings& kafka);

}  // namespace bloomgate::config
