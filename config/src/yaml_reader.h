// Internal: strict, position-aware reading of a yaml-cpp node tree. Every error names the source, the
// 1-based line and column, and the key path ("pipelines[0].filter.error_rate").
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bloomgate/config/config.h"

namespace bloomgate::config::detail {

struct Context {
  std::string source;
  const SecretSources* secrets;
};

[[noreturn]] void fail(const Context& ctx, const YAML::Node& at, const std::string& key, const std::string& message);

// A mapping whose keys are taken one by one; finish() rejects every key nobody took.
class MapReader {
 public:
  MapReader(const Context& ctx, const YAML::Node& node, std::string path);

  bool has(const std::string& key) const;
  YAML::Node take(const std::string& key);     // an undefined node when absent
  YAML::Node require(const std::string& key);  // fails when absent or null
  std::string path_of(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const YAML::Node& node() const { return node_; }
  void finish() const;

 private:
  const Context& ctx_;
  YAML::Node node_;
  std::string path_;
  std::set<std::string> taken_;
};

// Scalar decoders: `key` is the full key path used in errors.
std::string read_string(const Context& ctx, const YAML::Node& node, const std::string& key);
std::string read_raw_string(const Context& ctx, const YAML::Node& node, const std::string& key);
bool read_bool(const Context& ctx, const YAML::Node& node, const std::string& key);
std::uint64_t read_count(const Context& ctx, const YAML::Node& node, const std::string& key);
double read_double(const Context& ctx, const YAML::Node& node, const std::string& key);
Duration read_duration(const Context& ctx, const YAML::Node& node, const std::string& key);
std::vector<std::string> read_string_list(const Context& ctx, const YAML::Node& node, const std::string& key);
// One of `choices`; returns its index.
std::size_t read_choice(const Context& ctx, const YAML::Node& node, const std::string& key,
                        const std::vector<std::string>& choices);

// A file's bytes, or nothing when it cannot be read.
std::optional<std::string> read_whole_file(const std::string& path);

// Replaces every ${env:NAME} and ${file:/path} in `raw`.
std::string substitute_secrets(const Context& ctx, const YAML::Node& node, const std::string& key,
                               const std::string& raw);

}  // namespace bloomgate::config::detail
