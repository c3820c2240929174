#include "bloomgate/config/config.h"

#include <simdjson.h>
#include <yaml-cpp/yaml.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "bloomgate/config/duration.h"
#include "bloomgate/filters/filter_types.h"
#include "schema_config.h"
#include "yaml_reader.h"

namespace bloomgate::config {
namespace {

using detail::Context;
using detail::fail;
using detail::MapReader;

const std::vector<std::string>& filter_type_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const filters::FilterTypeInfo& info : filters::kFilterTypes) out.emplace_back(info.name);
    return out;
  }();
  return names;
}

bool valid_topic(const std::string& topic) {
  return !topic.empty() && topic.size() <= 249 && topic != "." && topic != ".." &&
         std::all_of(topic.begin(), topic.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'; });
}

std::string read_topic(const Context& ctx, const YAML::Node& node, const std::string& key) {
  std::string topic = detail::read_string(ctx, node, key);
  if (!valid_topic(topic)) {
    fail(ctx, node, key, "\"" + topic + "\" is not a valid topic name (1 to 249 of a-z A-Z 0-9 . _ -)");
  }
  return topic;
}

// A replication factor: 1 to 32767 replicas, or -1 for the broker's default.replication.factor.
int read_replication_factor(const Context& ctx, const YAML::Node& node, const std::string& key) {
  const std::string text = detail::read_string(ctx, node, key);
  if (text == "-1") return kBrokerDefaultReplication;
  const std::uint64_t count = detail::read_count(ctx, node, key);
  if (count < 1 || count > 32767) fail(ctx, node, key, "must be 1 to 32767 replicas, or -1 for the broker's default");
  return static_cast<int>(count);
}

// host:port, the host possibly a bracketed IPv6 address.
void check_listen_address(const Context& ctx, const YAML::Node& node, const std::string& key, const std::string& text) {
  const auto colon = text.rfind(':');
  const std::string port = colon == std::string::npos ? "" : text.substr(colon + 1);
  char* end = nullptr;
  const long number = port.empty() ? 0 : std::strtol(port.c_str(), &end, 10);
  if (colon == 0 || colon == std::string::npos || end != port.c_str() + port.size() || number < 0 || number > 65535) {
    fail(ctx, node, key, "\"" + text + "\" is not host:port with a port from 0 (any free port) to 65535");
  }
  // A host of digits and dots is an IPv4 address, not a name: civetweb would read 999 as 999 mod 256.
  const std::string host = text.substr(0, colon);
  in_addr address{};
  if (host.find_first_not_of("0123456789.") == std::string::npos && ::inet_pton(AF_INET, host.c_str(), &address) != 1) {
    fail(ctx, node, key, "\"" + host + "\" is not an IPv4 address: four numbers from 0 to 255, like 127.0.0.1");
  }
}

std::string without_role_prefix(const std::string& name) {
  for (const std::string prefix : {kConsumerPrefix, kProducerPrefix}) {
    if (name.starts_with(prefix)) return name.substr(prefix.size());
  }
  return name;
}

// The librdkafka property a `kafka.properties` name sets (its role prefix removed), refused when bloomgate
// sets that property itself.
std::string check_property_name(const Context& ctx, const YAML::Node& node, const std::string& key,
                                const std::string& name) {
  const std::string property = without_role_prefix(name);
  if (property.empty()) fail(ctx, node, key, "names no property after its role prefix");
  if (property == "bootstrap.servers" || property == "group.id" || property == "group.instance.id") {
    fail(ctx, node, key, "is set by bloomgate: use kafka.brokers, kafka.group_id or kafka.instance_name");
  }
  if (property == "transactional.id") {
    fail(ctx, node, key, "is set by bloomgate: use kafka.guarantee: exactly_once and kafka.instance_name");
  }
  return property;
}

KafkaSettings read_kafka(const Context& ctx, MapReader& root) {
  MapReader kafka(ctx, root.require("kafka"), "kafka");
  KafkaSettings out;
  const YAML::Node brokers = kafka.require("brokers");
  out.brokers = detail::read_string(ctx, brokers, "kafka.brokers");
  if (out.brokers.empty()) fail(ctx, brokers, "kafka.brokers", "must not be empty: host:port,... or embedded");
  if (const YAML::Node n = kafka.take("group_id")) out.group_id = detail::read_string(ctx, n, "kafka.group_id");
  if (out.group_id.empty()) fail(ctx, kafka.node(), "kafka.group_id", "must not be empty");
  if (const YAML::Node n = kafka.take("instance_name")) {
    out.instance_name = detail::read_string(ctx, n, "kafka.instance_name");
  }
  if (const YAML::Node n = kafka.take("guarantee")) {
    out.guarantee = static_cast<Guarantee>(detail::read_choice(ctx, n, "kafka.guarantee", {"at_least_once", "exactly_once"}));
    if (out.guarantee == Guarantee::kExactlyOnce && out.instance_name.empty()) {
      fail(ctx, n, "kafka.guarantee", "exactly_once needs kafka.instance_name: the transactional.id is derived from it");
    }
  }
  if (const YAML::Node n = kafka.take("embedded_partitions")) {
    const auto count = detail::read_count(ctx, n, "kafka.embedded_partitions");
    if (count < 1 || count > 1000) fail(ctx, n, "kafka.embedded_partitions", "must be from 1 to 1000");
    out.embedded_partitions = static_cast<std::uint32_t>(count);
  }
  if (const YAML::Node props = kafka.take("properties"); props && !props.IsNull()) {
    MapReader reader(ctx, props, "kafka.properties");
    for (const auto& entry : props) {
      if (!entry.first.IsScalar()) fail(ctx, entry.first, "kafka.properties", "a property name must be a string");
      const std::string name = entry.first.Scalar();
      const std::string key = "kafka.properties." + name;
      reader.take(name);
      const std::string property = check_property_name(ctx, entry.first, key, name);
      const std::string raw = detail::read_raw_string(ctx, entry.second, key);
      const bool is_reference = raw.find("${") != std::string::npos;
      if (is_secret_property(property) && !is_reference) {
        fail(ctx, entry.second, key, "is a secret and must not be written inline: use ${env:NAME} or ${file:/path}");
      }
      out.properties[name] = detail::substitute_secrets(ctx, entry.second, key, raw);
      if (is_reference) out.property_sources[name] = raw;
    }
    reader.finish();
  }
  kafka.finish();
  return out;
}

Duration read_positive_duration(const Context& ctx, const YAML::Node& node, const std::string& key) {
  const Duration value = detail::read_duration(ctx, node, key);
  if (value <= Duration::zero()) fail(ctx, node, key, "must be positive");
  return value;
}

// The optional top-level mapping `name`: Settings' defaults, with the fields read_fields(section, node, out)
// finds in the mapping when it is there and not null; any other key in it is an error.
template <class Settings, class ReadFields>
Settings read_optional_section(const Context& ctx, MapReader& root, const char* name, ReadFields read_fields) {
  Settings out;
  const YAML::Node node = root.take(name);
  if (!node || node.IsNull()) return out;
  MapReader section(ctx, node, name);
  read_fields(section, node, out);
  section.finish();
  return out;
}

StateSettings read_state(const Context& ctx, MapReader& root) {
  return read_optional_section<StateSettings>(
      ctx, root, "state", [&](MapReader& state, const YAML::Node& node, StateSettings& out) {
        if (const YAML::Node n = state.take("dir")) out.dir = detail::read_string(ctx, n, "state.dir");
        if (out.dir.empty()) fail(ctx, node, "state.dir", "must not be empty");
        if (const YAML::Node n = state.take("checkpoint_interval")) {
          out.checkpoint_interval = read_positive_duration(ctx, n, "state.checkpoint_interval");
        }
        // An empty state.topic (the Helm chart's default) is off, as leaving the key out is.
        const YAML::Node topic = state.take("topic");
        if (topic && !detail::read_string(ctx, topic, "state.topic").empty()) out.topic = read_topic(ctx, topic, "state.topic");
        if (const YAML::Node n = state.take("topic_replication_factor")) {
          out.topic_replication_factor = read_replication_factor(ctx, n, "state.topic_replication_factor");
        }
      });
}

ShutdownSettings read_shutdown(const Context& ctx, MapReader& root) {
  return read_optional_section<ShutdownSettings>(
      ctx, root, "shutdown", [&](MapReader& shutdown, const YAML::Node&, ShutdownSettings& out) {
        if (const YAML::Node n = shutdown.take("grace_period")) {
          out.grace_period = read_positive_duration(ctx, n, "shutdown.grace_period");
        }
      });
}

MetricsSettings read_metrics(const Context& ctx, MapReader& root) {
  return read_optional_section<MetricsSettings>(
      ctx, root, "metrics", [&](MapReader& metrics, const YAML::Node&, MetricsSettings& out) {
        if (const YAML::Node n = metrics.take("listen")) {
          out.listen = detail::read_string(ctx, n, "metrics.listen");
          check_listen_address(ctx, n, "metrics.listen", out.listen);
        }
      });
}

const std::vector<std::string> kKeySourceNames = {"message_key", "json", "header", "value", "avro", "protobuf", "json_schema"};

bool takes_pointer(KeySource source) {
  return source == KeySource::kJson || source == KeySource::kJsonSchema || needs_schema(source);
}

// The fields of one key source, shared by the one-source form of `key` and each entry of `key.parts`.
KeyPart read_key_source(const Context& ctx, MapReader& reader) {
  KeyPart out;
  const YAML::Node from = reader.require("from");
  out.from = static_cast<KeySource>(detail::read_choice(ctx, from, reader.path_of("from"), kKeySourceNames));
  if (takes_pointer(out.from)) {
    const YAML::Node pointer = reader.require("pointer");
    out.pointer = detail::read_string(ctx, pointer, reader.path_of("pointer"));
    if (out.pointer.empty() || out.pointer[0] != '/') {
      fail(ctx, pointer, reader.path_of("pointer"),
           out.from == KeySource::kJson || out.from == KeySource::kJsonSchema
               ? "a JSON pointer starts with /, like /order_id"
               : "a field path is spelled as a JSON pointer: it starts with /, like /order/id");
    }
  }
  if (out.from == KeySource::kHeader) {
    const YAML::Node name = reader.require("name");
    out.header = detail::read_string(ctx, name, reader.path_of("name"));
    if (out.header.empty()) fail(ctx, name, reader.path_of("name"), "a header name must not be empty");
  }
  if (const YAML::Node n = reader.take("trim")) out.trim = detail::read_bool(ctx, n, reader.path_of("trim"));
  if (const YAML::Node n = reader.take("lowercase")) out.lowercase = detail::read_bool(ctx, n, reader.path_of("lowercase"));
  return out;
}

std::vector<KeyPart> read_key_parts(const Context& ctx, const YAML::Node& list, const std::string& path) {
  if (!list.IsSequence() || list.size() == 0) {
    fail(ctx, list, path, "expected a list of at least one part, like [{from: json, pointer: /id}]");
  }
  if (list.size() > kMaxKeyParts) {
    fail(ctx, list, path, std::to_string(list.size()) + " parts, over the limit of " + std::to_string(kMaxKeyParts));
  }
  std::vector<KeyPart> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    MapReader part(ctx, list[i], path + "[" + std::to_string(i) + "]");
    out.push_back(read_key_source(ctx, part));
    part.finish();
  }
  return out;
}

// Either form becomes `parts`: the one-source form is a list of one part.
KeySettings read_key(const Context& ctx, const YAML::Node& node, const std::string& path) {
  MapReader key(ctx, node, path);
  KeySettings out;
  if (key.has("parts")) {
    if (const YAML::Node from = key.take("from")) fail(ctx, from, key.path_of("from"), "a key has either from or parts, not both");
    out.parts = read_key_parts(ctx, key.take("parts"), key.path_of("parts"));
  } else {
    out.parts = {read_key_source(ctx, key)};
  }
  if (const YAML::Node n = key.take("empty_is_error")) out.empty_is_error = detail::read_bool(ctx, n, key.path_of("empty_is_error"));
  key.finish();
  return out;
}

// A key of two or more parts spends kKeyPartPrefixBytes per part before any content, and each part's length
// must fit in its prefix.
void check_room_for_key_parts(const Context& ctx, const YAML::Node& at, const std::string& key, const PipelineSettings& p) {
  const std::size_t parts = p.key.parts.size();
  if (parts < 2) return;
  const std::uint64_t least = parts * kKeyPartPrefixBytes + 1;
  if (p.max_key_bytes < least) {
    fail(ctx, at, key, std::to_string(p.max_key_bytes) + " cannot hold a key of " + std::to_string(parts) +
                           " parts, whose encoding spends " + std::to_string(kKeyPartPrefixBytes) +
                           " bytes of length per part: must be at least " + std::to_string(least));
  }
  if (p.max_key_bytes > std::numeric_limits<std::uint32_t>::max()) {
    fail(ctx, at, key, "must be at most 4294967295 for a key of parts, whose lengths are written in 4 bytes");
  }
}

FilterSettings read_filter(const Context& ctx, const YAML::Node& node, const std::string& path) {
  FilterSettings out;
  if (!node || node.IsNull()) return out;
  MapReader filter(ctx, node, path);
  if (const YAML::Node n = filter.take("type")) out.type = filter_type_names()[detail::read_choice(ctx, n, filter.path_of("type"), filter_type_names())];
  if (const YAML::Node n = filter.take("error_rate")) {
    out.error_rate = detail::read_double(ctx, n, filter.path_of("error_rate"));
    if (!(out.error_rate > 0 && out.error_rate < 1)) {
      fail(ctx, n, filter.path_of("error_rate"), "must be greater than 0 and less than 1, found " + n.Scalar());
    }
  }
  if (const YAML::Node n = filter.take("expected_per_ttl")) {
    out.expected_per_ttl = detail::read_count(ctx, n, filter.path_of("expected_per_ttl"));
    if (out.expected_per_ttl == 0) fail(ctx, n, filter.path_of("expected_per_ttl"), "must be at least 1");
  }
  if (const YAML::Node n = filter.take("window")) out.window = detail::read_count(ctx, n, filter.path_of("window"));
  if (const YAML::Node n = filter.take("level")) {
    const std::uint64_t level = detail::read_count(ctx, n, filter.path_of("level"));
    if (level > filters::kMaxLevel) {
      fail(ctx, n, filter.path_of("level"), "must be 0 to " + std::to_string(filters::kMaxLevel) + ", found " + n.Scalar());
    }
    out.level = static_cast<std::uint32_t>(level);
  }
  filter.finish();
  return out;
}

void read_pipeline_topics(const Context& ctx, MapReader& p, PipelineSettings& out) {
  const YAML::Node input = p.require("input");
  for (std::size_t i = 0; i < (input.IsSequence() ? input.size() : 1); ++i) {
    const YAML::Node item = input.IsSequence() ? input[i] : input;
    out.inputs.push_back(read_topic(ctx, item, p.path_of("input") + (input.IsSequence() ? "[" + std::to_string(i) + "]" : "")));
    if (std::count(out.inputs.begin(), out.inputs.end(), out.inputs.back()) > 1) {
      fail(ctx, item, p.path_of("input"), "topic " + out.inputs.back() + " is listed twice");
    }
  }
  if (out.inputs.empty()) fail(ctx, input, p.path_of("input"), "must name at least one topic");
  const YAML::Node output = p.require("output");
  out.output = read_topic(ctx, output, p.path_of("output"));
  auto check_not_input = [&](const YAML::Node& node, const std::string& key, const std::string& topic) {
    if (std::find(out.inputs.begin(), out.inputs.end(), topic) != out.inputs.end()) {
      fail(ctx, node, key, "topic " + topic + " is also an input of this pipeline");
    }
  };
  check_not_input(output, p.path_of("output"), out.output);
  for (const auto& [field, target] : {std::pair<const char*, std::string*>{"duplicates", &out.duplicates},
                                      std::pair<const char*, std::string*>{"dead_letter", &out.dead_letter}}) {
    const YAML::Node n = p.take(field);
    if (!n || n.IsNull()) continue;
    *target = read_topic(ctx, n, p.path_of(field));
    check_not_input(n, p.path_of(field), *target);
    if (*target == out.output) fail(ctx, n, p.path_of(field), "topic " + *target + " is also the output");
  }
}

PipelineSettings read_pipeline(const Context& ctx, const YAML::Node& node, const std::string& path) {
  MapReader p(ctx, node, path);
  PipelineSettings out;
  const YAML::Node name = p.require("name");
  out.name = detail::read_string(ctx, name, p.path_of("name"));
  if (out.name.empty() || out.name.size() > 64 ||
      !std::all_of(out.name.begin(), out.name.end(),
                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; })) {
    fail(ctx, name, p.path_of("name"), "\"" + out.name + "\" must be 1 to 64 of a-z A-Z 0-9 _ -");
  }
  read_pipeline_topics(ctx, p, out);
  out.key = read_key(ctx, p.require("key"), p.path_of("key"));
  const YAML::Node ttl = p.require("ttl");
  out.ttl = read_positive_duration(ctx, ttl, p.path_of("ttl"));
  if (const YAML::Node n = p.take("time")) {
    out.time = static_cast<TimeSource>(detail::read_choice(ctx, n, p.path_of("time"), {"event", "processing"}));
  }
  if (const YAML::Node n = p.take("refresh_on_duplicate")) {
    out.refresh_on_duplicate = detail::read_bool(ctx, n, p.path_of("refresh_on_duplicate"));
  }
  if (const YAML::Node n = p.take("output_partitioning")) {
    out.output_partitioning = static_cast<OutputPartitioning>(
        detail::read_choice(ctx, n, p.path_of("output_partitioning"), {"same_as_input", "by_key"}));
  }
  const YAML::Node max_key_bytes = p.take("max_key_bytes");
  if (max_key_bytes) out.max_key_bytes = detail::read_count(ctx, max_key_bytes, p.path_of("max_key_bytes"));
  check_room_for_key_parts(ctx, max_key_bytes ? max_key_bytes : p.node()["key"], p.path_of("max_key_bytes"), out);
  if (const YAML::Node n = p.take("max_value_bytes")) {
    out.max_value_bytes = detail::read_count(ctx, n, p.path_of("max_value_bytes"));
  }
  out.filter = read_filter(ctx, p.take("filter"), p.path_of("filter"));
  p.finish();
  return out;
}

// The node of `key` ("filter.error_rate") under `node`, or the deepest mapping on its way that is written.
YAML::Node node_of_key(const YAML::Node& node, const std::string& key) {
  YAML::Node at = node;
  std::size_t start = 0;
  while (start <= key.size()) {
    const std::size_t dot = std::min(key.find('.', start), key.size());
    if (!at.IsMap()) return at;
    const YAML::Node& mapping = at;  // const: operator[] would add a missing key
    const YAML::Node next = mapping[key.substr(start, dot - start)];
    if (!next) return at;
    at = next;
    start = dot + 1;
  }
  return at;
}

std::vector<PipelineSettings> read_pipelines(const Context& ctx, MapReader& root, const PipelineCheck& check,
                                             bool schemas_known) {
  const YAML::Node list = root.require("pipelines");
  if (!list.IsSequence() || list.size() == 0) fail(ctx, list, "pipelines", "expected a list of at least one pipeline");
  std::vector<PipelineSettings> out;
  std::set<std::string> names;
  std::set<std::string> inputs;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = "pipelines[" + std::to_string(i) + "]";
    out.push_back(read_pipeline(ctx, list[i], path));
    if (!schemas_known) detail::check_schema_sources(ctx, list[i]["key"], path + ".key", out.back().key);
    if (check) {
      if (const std::optional<PipelineProblem> problem = check(out.back())) {
        fail(ctx, node_of_key(list[i], problem->key), path + "." + problem->key, problem->problem);
      }
    }
    if (!names.insert(out.back().name).second) {
      fail(ctx, list[i]["name"], path + ".name", "another pipeline is already named " + out.back().name);
    }
    for (const std::string& topic : out.back().inputs) {
      if (!inputs.insert(topic).second) {
        fail(ctx, list[i]["input"], path + ".input", "topic " + topic + " is already an input of another pipeline");
      }
    }
  }
  return out;
}

// The schema nests four levels deep. Far deeper input is refused before yaml-cpp sees it, whose own
// messages for it are "bad file" or a misplaced syntax error.
constexpr int kMaxFlowDepth = 64;
constexpr std::size_t kMaxIndent = 256;

void check_nesting(const std::string& text, const std::string& source) {
  int depth = 0;
  std::size_t line = 1;
  std::size_t column = 1;
  bool at_line_start = true;
  char quote = 0;
  for (char c : text) {
    if (c == '\n') {
      ++line;
      column = 1;
      at_line_start = true;
      continue;
    }
    if (at_line_start && c != ' ') at_line_start = false;
    if (at_line_start && column > kMaxIndent) {
      throw ConfigError(source + ":" + std::to_string(line) + ":" + std::to_string(column) +
                        ": nesting is too deep (more than " + std::to_string(kMaxIndent) + " columns of indentation)");
    }
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxFlowDepth) {
        throw ConfigError(source + ":" + std::to_string(line) + ":" + std::to_string(column) +
                          ": nesting is too deep (more than " + std::to_string(kMaxFlowDepth) + " levels of [ or {)");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
    ++column;
  }
}

// YAML is UTF-8 text. yaml-cpp reads other bytes as they are but writes them back as U+FFFD, so a name
// that is not UTF-8 would not survive `bloomgate validate` (found by fuzz/config_fuzzer). Each line is
// checked alone: a newline never sits inside a UTF-8 sequence. The column is where the longest valid
// prefix of the line ends.
void check_utf8(const std::string& text, const std::string& source) {
  std::size_t line = 1;
  for (std::size_t start = 0; start <= text.size(); ++line) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view content(text.data() + start, end - start);
    if (!simdjson::validate_utf8(content.data(), content.size())) {
      std::size_t valid = content.size();
      while (valid > 0 && !simdjson::validate_utf8(content.data(), valid)) --valid;
      throw ConfigError(source + ":" + std::to_string(line) + ":" + std::to_string(valid + 1) +
                        ": the file is not UTF-8 text (YAML must be)");
    }
    start = end + 1;
  }
}

}  // namespace

bool is_secret_property(const std::string& key) {
  std::string lower = key;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* marker : {"password", "secret", "jaas", "private.key", "key.pem", "token"}) {
    if (lower.find(marker) != std::string::npos) return true;
  }
  return false;
}

std::map<std::string, std::string> properties_for(const KafkaSettings& kafka, ClientRole role) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : kafka.properties) {
    if (without_role_prefix(name) == name) out[name] = value;
  }
  if (role == ClientRole::kAdmin) return out;
  const std::string prefix = role == ClientRole::kConsumer ? kConsumerPrefix : kProducerPrefix;
  for (const auto& [name, value] : kafka.properties) {
    if (name.starts_with(prefix)) out[name.substr(prefix.size())] = value;
  }
  return out;
}

bool needs_schema(KeySource source) { return source == KeySource::kAvro || source == KeySource::kProtobuf; }

std::string describe(const KeyPart& part) {
  switch (part.from) {
    case KeySource::kMessageKey: return "message_key";
    case KeySource::kJson: return "json " + part.pointer;
    case KeySource::kHeader: return "header " + part.header;
    case KeySource::kValue: return "value";
    case KeySource::kAvro: return "avro " + part.pointer;
    case KeySource::kProtobuf: return "protobuf " + part.pointer;
    case KeySource::kJsonSchema: return "json_schema " + part.pointer;
  }
  return "unknown source";
}

std::string transactional_id(const KafkaSettings& kafka) { return kafka.group_id + "." + kafka.instance_name; }

SecretSources SecretSources::from_process() {
  SecretSources s;
  s.env = [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    return value == nullptr ? std::nullopt : std::optional<std::string>(value);
  };
  s.file = [](const std::string& path) -> std::optional<std::string> {
    auto text = detail::read_whole_file(path);
    while (text && !text->empty() && (text->back() == '\n' || text->back() == '\r')) text->pop_back();
    return text;
  };
  return s;
}

namespace {

std::uint32_t read_workers(const Context& ctx, MapReader& root) {
  const YAML::Node node = root.take("workers");
  if (!node || node.IsNull()) return kAutoWorkers;
  if (node.IsScalar() && node.Scalar() == "auto") return kAutoWorkers;
  if (!node.IsScalar() || node.Scalar().find_first_not_of("0123456789_") != std::string::npos) {
    fail(ctx, node, "workers", "expected auto or a number of workers from 1 to " + std::to_string(kMaxWorkers));
  }
  const std::uint64_t count = detail::read_count(ctx, node, "workers");
  if (count < 1 || count > kMaxWorkers) {
    fail(ctx, node, "workers", "must be auto or from 1 to " + std::to_string(kMaxWorkers) + ", found " +
                                   std::to_string(count));
  }
  return static_cast<std::uint32_t>(count);
}

}  // namespace

// Every mapping of the document, with no key twice: yaml-cpp keeps both entries and looks up the first.
void check_duplicate_keys(const Context& ctx, const YAML::Node& node, const std::string& path) {
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) check_duplicate_keys(ctx, node[i], path + "[" + std::to_string(i) + "]");
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, YAML::Mark> seen;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) continue;  // refused by the reader of that mapping
    const std::string key = entry.first.Scalar();
    const std::string key_path = path.empty() ? key : path + "." + key;
    const auto [first, inserted] = seen.emplace(key, entry.first.Mark());
    if (!inserted) {
      fail(ctx, entry.first, key_path,
           "is given twice in one mapping, first at line " + std::to_string(first->second.line + 1) + ", column " +
               std::to_string(first->second.column + 1) + "; remove one of them");
    }
    check_duplicate_keys(ctx, entry.second, key_path);
  }
}

Config parse_config(const std::string& yaml_text, const std::string& source, const SecretSources& secrets,
                    const PipelineCheck& check) {
  const Context ctx{source, &secrets};
  check_utf8(yaml_text, source);
  check_nesting(yaml_text, source);
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw ConfigError(source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                      ": YAML syntax error: " + e.msg);
  }
  if (!root || root.IsNull()) throw ConfigError(source + ": the file is empty; expected kafka and pipelines");
  check_duplicate_keys(ctx, root, "");
  MapReader top(ctx, root, "");
  Config config;
  config.workers = read_workers(ctx, top);
  config.kafka = read_kafka(ctx, top);
  config.state = read_state(ctx, top);
  config.metrics = read_metrics(ctx, top);
  config.shutdown = read_shutdown(ctx, top);
  config.schema_registry = detail::read_schema_registry(ctx, top);
  config.schemas = detail::read_schema_files(ctx, top);
  config.pipelines = read_pipelines(ctx, top, check, !config.schema_registry.url.empty() || !config.schemas.empty());
  top.finish();
  return config;
}

Config load_config(const std::string& path, const SecretSources& secrets, const PipelineCheck& check) {
  const auto text = detail::read_whole_file(path);
  if (!text) throw ConfigError(path + ": cannot read the configuration file");
  return parse_config(*text, path, secrets, check);
}

}  // namespace bloomgate::config
