#include <yaml-cpp/yaml.h>

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
  }
  return "?";
}

void emit_kafka(YAML::Emitter& out, const KafkaSettings& k) {
  out << YAML::Key << "kafka" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "brokers" << YAML::Value << k.brokers;
  out << YAML::Key << "group_id" << YAML::Value << k.group_id;
  if (!k.instance_name.empty()) out << YAML::Key << "instance_name" << YAML::Value << k.instance_name;
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
    out << YAML::Key << name << YAML::Value << shown;
  }
  out << YAML::EndMap << YAML::EndMap;
}

void emit_pipeline(YAML::Emitter& out, const PipelineSettings& p) {
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << p.name;
  out << YAML::Key << "input" << YAML::Value << YAML::Flow << p.inputs;
  out << YAML::Key << "output" << YAML::Value << p.output;
  if (!p.duplicates.empty()) out << YAML::Key << "duplicates" << YAML::Value << p.duplicates;
  if (!p.dead_letter.empty()) out << YAML::Key << "dead_letter" << YAML::Value << p.dead_letter;
  out << YAML::Key << "key" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "from" << YAML::Value
      << name_of(p.key.from);
  if (p.key.from == KeySource::kJson) out << YAML::Key << "pointer" << YAML::Value << p.key.pointer;
  if (p.key.from == KeySource::kHeader) out << YAML::Key << "name" << YAML::Value << p.key.header;
  out << YAML::Key << "empty_is_error" << YAML::Value << p.key.empty_is_error << YAML::EndMap;
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

}  // namespace

std::string render_effective(const Config& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  emit_kafka(out, c.kafka);
  out << YAML::Key << "state" << YAML::Value << YAML::BeginMap << YAML::Key << "dir" << YAML::Value << c.state.dir
      << YAML::Key << "checkpoint_interval" << YAML::Value << format_duration(c.state.checkpoint_interval)
      << YAML::EndMap;
  out << YAML::Key << "metrics" << YAML::Value << YAML::BeginMap << YAML::Key << "listen" << YAML::Value
      << c.metrics.listen << YAML::EndMap;
  out << YAML::Key << "shutdown" << YAML::Value << YAML::BeginMap << YAML::Key << "grace_period" << YAML::Value
      << format_duration(c.shutdown.grace_period) << YAML::EndMap;
  out << YAML::Key << "pipelines" << YAML::Value << YAML::BeginSeq;
  for (const auto& p : c.pipelines) emit_pipeline(out, p);
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace bloomgate::config
