#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "bloomgate/config/config.h"
#include "bloomgate/config/duration.h"

namespace bloomgate::config {
namespace {

const char* name_of(KeySource s) {
  switch (s) {
    case KeySource::kMessageKey: return "message_key";
    case KeySource::kJson: return "json";
    case KeySource::kHeader: return "header";
    case KeySource::kValue: return "value";
    case KeySource::kAvro: return "avro";
    case KeySource::kProtobuf: return "protobuf";
    case KeySource::kJsonSchema: return "json_schema";
  }
  return "?";
}

// A string as the user wrote it. yaml-cpp writes some strings with a control character plain, and they
// read back differently ("k:9092   \r" loses its spaces: found by fuzz/config_fuzzer), so such strings
// are written double-quoted, with escapes. Topic and pipeline names cannot hold one.
struct Text {
  const std::string& value;
};

YAML::Emitter& operator<<(YAML::Emitter& out, const Text& text) {
  const auto is_control = [](unsigned char c) { return c < 0x20 || c == 0x7f; };
  if (std::any_of(text.value.begin(), text.value.end(), is_control)) out << YAML::DoubleQuoted;
  return out << text.value;
}

void emit_kafka(YAML::Emitter& out, const KafkaSettings& k) {
  out << YAML::Key << "kafka" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "brokers" << YAML::Value << Text{k.brokers};
  out << YAML::Key << "group_id" << YAML::Value << Text{k.group_id};
  if (!k.instance_name.empty()) out << YAML::Key << "instance_name" << YAML::Value << Text{k.instance_name};
  out << YAML::Key << "guarantee" << YAML::Value
      << (k.guarantee == Guarantee::kExactlyOnce ? "exactly_once" : "at_least_once");
  if (k.brokers == kEmbeddedBrokers) out << YAML::Key << "embedded_partitions" << YAML::Value << k.embedded_partitions;
  out << YAML::Key << "properties" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, value] : k.properties) {
    const auto source = k.property_sources.find(name);
    // A substituted value is shown as the reference it came from, never as itself.
    const std::string shown = source != k.property_sources.end() ? source->second
                              : is_secret_property(name)          ? std::string("<redacted>")
                                                                  : value;
    out << YAML::Key << Text{name} << YAML::Value << Text{shown};
  }
  out << YAML::EndMap << YAML::EndMap;
}

// The fields of one source; normalisations only when asked for.
void emit_key_source(YAML::Emitter& out, const KeyPart& part) {
  out << YAML::Key << "from" << YAML::Value << name_of(part.from);
  if (!part.pointer.empty()) out << YAML::Key << "pointer" << YAML::Value << Text{part.pointer};
  if (part.from == KeySource::kHeader) out << YAML::Key << "name" << YAML::Value << Text{part.header};
  if (part.trim) out << YAML::Key << "trim" << YAML::Value << true;
  if (part.lowercase) out << YAML::Key << "lowercase" << YAML::Value << true;
}

// A key of one part in the one-source form, on one line; a key of parts as one line per part, in the order
// they are encoded.
void emit_key(YAML::Emitter& out, const KeySettings& key) {
  out << YAML::Key << "key" << YAML::Value;
  if (key.parts.size() == 1) {
    out << YAML::Flow << YAML::BeginMap;
    emit_key_source(out, key.parts.front());
  } else {
    out << YAML::BeginMap << YAML::Key << "parts" << YAML::Value << YAML::BeginSeq;
    for (const KeyPart& part : key.parts) {
      out << YAML::Flow << YAML::BeginMap;
      emit_key_source(out, part);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::Key << "empty_is_error" << YAML::Value << key.empty_is_error << YAML::EndMap;
}

void emit_pipeline(YAML::Emitter& out, const PipelineSettings& p) {
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << p.name;
  out << YAML::Key << "input" << YAML::Value << YAML::Flow << p.inputs;
  out << YAML::Key << "output" << YAML::Value << p.output;
  if (!p.duplicates.empty()) out << YAML::Key << "duplicates" << YAML::Value << p.duplicates;
  if (!p.dead_letter.empty()) out << YAML::Key << "dead_letter" << YAML::Value << p.dead_letter;
  emit_key(out, p.key);
  out << YAML::Key << "ttl" << YAML::Value << format_duration(p.ttl);
  out << YAML::Key << "time" << YAML::Value << (p.time == TimeSource::kEvent ? "event" : "processing");
  out << YAML::Key << "refresh_on_duplicate" << YAML::Value << p.refresh_on_duplicate;
  out << YAML::Key << "output_partitioning" << YAML::Value
      << (p.output_partitioning == OutputPartitioning::kSameAsInput ? "same_as_input" : "by_key");
  out << YAML::Key << "max_key_bytes" << YAML::Value << p.max_key_bytes;
  out << YAML::Key << "max_value_bytes" << YAML::Value << p.max_value_bytes;
  out << YAML::Key << "filter" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "type" << YAML::Value << p.filter.type;
  out << YAML::Key << "error_rate" << YAML::Value << p.filter.error_rate;
  out << YAML::Key << "expected_per_ttl" << YAML::Value << p.filter.expected_per_ttl;
  if (p.filter.window != 0) out << YAML::Key << "window" << YAML::Value << p.filter.window;
  if (p.filter.level) out << YAML::Key << "level" << YAML::Value << *p.filter.level;
  out << YAML::EndMap << YAML::EndMap;
}

void emit_schema_registry(YAML::Emitter& out, const SchemaRegistrySettings& r) {
  if (r.url.empty()) return;
  out << YAML::Key << "schema_registry" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "url" << YAML::Value << Text{r.url};
  if (!r.username.empty()) {
    out << YAML::Key << "basic_auth" << YAML::Value << YAML::BeginMap << YAML::Key << "username" << YAML::Value
        << Text{r.username} << YAML::Key << "password" << YAML::Value << Text{r.password_source} << YAML::EndMap;
  }
  if (!r.tls_ca_file.empty() || !r.tls_cert_file.empty()) {
    out << YAML::Key << "tls" << YAML::Value << YAML::BeginMap;
    if (!r.tls_ca_file.empty()) out << YAML::Key << "ca_file" << YAML::Value << Text{r.tls_ca_file};
    if (!r.tls_cert_file.empty()) {
      out << YAML::Key << "cert_file" << YAML::Value << Text{r.tls_cert_file} << YAML::Key << "key_file"
          << YAML::Value << Text{r.tls_key_file};
    }
    out << YAML::EndMap;
  }
  out << YAML::Key << "cache_size" << YAML::Value << r.cache_size;
  out << YAML::Key << "timeout" << YAML::Value << format_duration(r.timeout) << YAML::EndMap;
}

void emit_schema_files(YAML::Emitter& out, const std::vector<SchemaFile>& schemas) {
  if (schemas.empty()) return;
  static const char* const kTypes[] = {"avro", "protobuf", "json"};
  out << YAML::Key << "schemas" << YAML::Value << YAML::BeginSeq;
  for (const SchemaFile& s : schemas) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "id" << YAML::Value << s.id << YAML::Key << "type"
        << YAML::Value << kTypes[static_cast<int>(s.type)] << YAML::Key << "file" << YAML::Value << Text{s.file}
        << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

}  // namespace

std::string render_effective(const Config& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "workers" << YAML::Value;
  if (c.workers == kAutoWorkers) {
    out << "auto";
  } else {
    out << c.workers;
  }
  emit_kafka(out, c.kafka);
  out << YAML::Key << "state" << YAML::Value << YAML::BeginMap << YAML::Key << "dir" << YAML::Value << Text{c.state.dir}
      << YAML::Key << "checkpoint_interval" << YAML::Value << format_duration(c.state.checkpoint_interval);
  if (!c.state.topic.empty()) {
    out << YAML::Key << "topic" << YAML::Value << Text{c.state.topic} << YAML::Key << "topic_replication_factor"
        << YAML::Value << c.state.topic_replication_factor;
  }
  out << YAML::EndMap;
  out << YAML::Key << "metrics" << YAML::Value << YAML::BeginMap << YAML::Key << "listen" << YAML::Value
      << Text{c.metrics.listen} << YAML::EndMap;
  out << YAML::Key << "shutdown" << YAML::Value << YAML::BeginMap << YAML::Key << "grace_period" << YAML::Value
      << format_duration(c.shutdown.grace_period) << YAML::EndMap;
  emit_schema_registry(out, c.schema_registry);
  emit_schema_files(out, c.schemas);
  out << YAML::Key << "pipelines" << YAML::Value << YAML::BeginSeq;
  for (const auto& p : c.pipelines) emit_pipeline(out, p);
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace bloomgate::config
