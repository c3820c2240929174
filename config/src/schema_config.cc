#include "schema_config.h"

#include <set>

namespace bloomgate::config::detail {
namespace {

void read_basic_auth(const Context& ctx, const YAML::Node& node, const std::string& path, SchemaRegistrySettings& out) {
  MapReader auth(ctx, node, path);
  out.username = read_string(ctx, auth.require("username"), auth.path_of("username"));
  const YAML::Node password = auth.require("password");
  const std::string raw = read_raw_string(ctx, password, auth.path_of("password"));
  if (raw.find("${") == std::string::npos) {
    fail(ctx, password, auth.path_of("password"), "is a secret and must not be written inline: use ${env:NAME} or ${file:/path}");
  }
  out.password = substitute_secrets(ctx, password, auth.path_of("password"), raw);
  out.password_source = raw;
  auth.finish();
}

void read_tls(const Context& ctx, const YAML::Node& node, const std::string& path, SchemaRegistrySettings& out) {
  MapReader tls(ctx, node, path);
  if (const YAML::Node n = tls.take("ca_file")) out.tls_ca_file = read_string(ctx, n, tls.path_of("ca_file"));
  if (const YAML::Node n = tls.take("cert_file")) out.tls_cert_file = read_string(ctx, n, tls.path_of("cert_file"));
  if (const YAML::Node n = tls.take("key_file")) out.tls_key_file = read_string(ctx, n, tls.path_of("key_file"));
  if (out.tls_cert_file.empty() != out.tls_key_file.empty()) {
    fail(ctx, node, path, "a client certificate needs both cert_file and key_file");
  }
  tls.finish();
}

std::string read_url(const Context& ctx, const YAML::Node& node, const std::string& key) {
  std::string url = read_string(ctx, node, key);
  const bool http = url.starts_with("http://") || url.starts_with("https://");
  const std::size_t host = url.find("://") + 3;
  if (!http || url.size() <= host) fail(ctx, node, key, "\"" + url + "\" is not an http:// or https:// URL with a host");
  while (url.ends_with("/")) url.pop_back();
  return url;
}

SchemaFile read_schema_file(const Context& ctx, const YAML::Node& node, const std::string& path) {
  MapReader entry(ctx, node, path);
  SchemaFile out;
  const YAML::Node id = entry.require("id");
  const std::uint64_t number = read_count(ctx, id, entry.path_of("id"));
  if (number > 0x7FFFFFFFU) fail(ctx, id, entry.path_of("id"), "must be from 0 to 2147483647, as a registry's ids are");
  out.id = static_cast<std::uint32_t>(number);
  out.type = static_cast<SchemaType>(read_choice(ctx, entry.require("type"), entry.path_of("type"), {"avro", "protobuf", "json"}));
  const YAML::Node file = entry.require("file");
  out.file = read_string(ctx, file, entry.path_of("file"));
  const std::optional<std::string> text = read_whole_file(out.file);
  if (!text) fail(ctx, file, entry.path_of("file"), "cannot read the schema file " + out.file);
  out.text = *text;
  entry.finish();
  return out;
}

}  // namespace

SchemaRegistrySettings read_schema_registry(const Context& ctx, MapReader& root) {
  SchemaRegistrySettings out;
  const YAML::Node node = root.take("schema_registry");
  if (!node || node.IsNull()) return out;
  MapReader registry(ctx, node, "schema_registry");
  out.url = read_url(ctx, registry.require("url"), "schema_registry.url");
  if (const YAML::Node n = registry.take("basic_auth")) read_basic_auth(ctx, n, "schema_registry.basic_auth", out);
  if (const YAML::Node n = registry.take("tls")) read_tls(ctx, n, "schema_registry.tls", out);
  if (const YAML::Node n = registry.take("cache_size")) {
    out.cache_size = read_count(ctx, n, "schema_registry.cache_size");
    if (out.cache_size < 1 || out.cache_size > 1'000'000) fail(ctx, n, "schema_registry.cache_size", "must be from 1 to 1000000");
  }
  if (const YAML::Node n = registry.take("timeout")) {
    out.timeout = read_duration(ctx, n, "schema_registry.timeout");
    if (out.timeout <= Duration::zero()) fail(ctx, n, "schema_registry.timeout", "must be positive");
  }
  registry.finish();
  return out;
}

std::vector<SchemaFile> read_schema_files(const Context& ctx, MapReader& root) {
  std::vector<SchemaFile> out;
  const YAML::Node list = root.take("schemas");
  if (!list || list.IsNull()) return out;
  if (!list.IsSequence()) fail(ctx, list, "schemas", "expected a list of {id, type, file}");
  std::set<std::uint32_t> ids;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = "schemas[" + std::to_string(i) + "]";
    out.push_back(read_schema_file(ctx, list[i], path));
    if (!ids.insert(out.back().id).second) {
      fail(ctx, list[i]["id"], path + ".id", "schema id " + std::to_string(out.back().id) + " is given twice");
    }
  }
  return out;
}

void check_schema_sources(const Context& ctx, const YAML::Node& key_node, const std::string& path,
                          const KeySettings& key) {
  for (std::size_t i = 0; i < key.parts.size(); ++i) {
    if (!needs_schema(key.parts[i].from)) continue;
    const YAML::Node& key_map = key_node;  // const: operator[] would add a missing key
    const YAML::Node part = key_map["parts"] ? YAML::Node(key_map["parts"][i]) : key_node;
    const YAML::Node& part_map = part;
    fail(ctx, part_map["from"], key_map["parts"] ? path + ".parts[" + std::to_string(i) + "].from" : path + ".from",
         describe(key.parts[i]) + " needs the schemas of its records: add a schema_registry (url) or schemas (files by id)");
  }
}

}  // namespace bloomgate::config::detail
