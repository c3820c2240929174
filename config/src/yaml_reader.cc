#include "yaml_reader.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "bloomgate/config/duration.h"

namespace bloomgate::config::detail {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

const YAML::Node& require_scalar(const Context& ctx, const YAML::Node& node, const std::string& key,
                                 const char* expected) {
  if (!node.IsScalar()) {
    const char* found = node.IsMap() ? "a mapping" : node.IsSequence() ? "a list" : "nothing";
    fail(ctx, node, key, std::string("expected ") + expected + ", found " + found);
  }
  return node;
}

}  // namespace

std::optional<std::string> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

void fail(const Context& ctx, const YAML::Node& at, const std::string& key, const std::string& message) {
  std::string where = ctx.source;
  const YAML::Mark mark = at.Mark();
  if (!mark.is_null()) where += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  throw ConfigError(where + ": " + key + ": " + message);
}

MapReader::MapReader(const Context& ctx, const YAML::Node& node, std::string path)
    : ctx_(ctx), node_(node), path_(std::move(path)) {
  if (!node.IsMap()) fail(ctx, node, path_.empty() ? "(top level)" : path_, "expected a mapping of keys to values");
}

bool MapReader::has(const std::string& key) const { return static_cast<bool>(node_[key]); }

YAML::Node MapReader::take(const std::string& key) {
  taken_.insert(key);
  // Looked up through a const node: yaml-cpp's non-const operator[] adds a missing key to the mapping,
  // which invalidates any iteration over it in progress (found by fuzz/config_fuzzer).
  const YAML::Node& mapping = node_;
  return mapping[key];
}

YAML::Node MapReader::require(const std::string& key) {
  YAML::Node value = take(key);
  if (!value || value.IsNull()) fail(ctx_, value ? value : node_, path_of(key), "is required");
  return value;
}

void MapReader::finish() const {
  for (const auto& entry : node_) {
    const std::string key = entry.first.Scalar();
    if (taken_.count(key) == 0) {
      std::vector<std::string> known(taken_.begin(), taken_.end());
      fail(ctx_, entry.first, path_of(key), "unknown key; expected one of: " + join(known));
    }
  }
}

std::string substitute_secrets(const Context& ctx, const YAML::Node& node, const std::string& key,
                               const std::string& raw) {
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t open = raw.find("${", pos);
    if (open == std::string::npos) return out + raw.substr(pos);
    const std::size_t close = raw.find('}', open);
    if (close == std::string::npos) fail(ctx, node, key, "unterminated ${ in \"" + raw + "\"");
    out += raw.substr(pos, open - pos);
    const std::string reference = raw.substr(open + 2, close - open - 2);
    std::optional<std::string> value;
    if (reference.rfind("env:", 0) == 0) {
      value = ctx.secrets->env(reference.substr(4));
      if (!value) fail(ctx, node, key, "environment variable " + reference.substr(4) + " is not set");
    } else if (reference.rfind("file:", 0) == 0) {
      value = ctx.secrets->file(reference.substr(5));
      if (!value) fail(ctx, node, key, "cannot read secret file " + reference.substr(5));
    } else {
      fail(ctx, node, key, "unknown reference ${" + reference + "}: use ${env:NAME} or ${file:/path}");
    }
    out += *value;
    pos = close + 1;
  }
}

std::string read_raw_string(const Context& ctx, const YAML::Node& node, const std::string& key) {
  return require_scalar(ctx, node, key, "a string").Scalar();
}

std::string read_string(const Context& ctx, const YAML::Node& node, const std::string& key) {
  return substitute_secrets(ctx, node, key, read_raw_string(ctx, node, key));
}

bool read_bool(const Context& ctx, const YAML::Node& node, const std::string& key) {
  const std::string text = require_scalar(ctx, node, key, "true or false").Scalar();
  if (text == "true") return true;
  if (text == "false") return false;
  fail(ctx, node, key, "expected true or false, found \"" + text + "\"");
}

std::uint64_t read_count(const Context& ctx, const YAML::Node& node, const std::string& key) {
  std::string text = require_scalar(ctx, node, key, "a whole number").Scalar();
  std::erase(text, '_');  // 1_000_000 reads as in YAML 1.1
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    fail(ctx, node, key, "expected a whole number, found \"" + node.Scalar() + "\"");
  }
  return value;
}

double read_double(const Context& ctx, const YAML::Node& node, const std::string& key) {
  const std::string text = require_scalar(ctx, node, key, "a number").Scalar();
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    fail(ctx, node, key, "expected a number, found \"" + text + "\"");
  }
  return value;
}

Duration read_duration(const Context& ctx, const YAML::Node& node, const std::string& key) {
  const auto parsed = parse_duration(require_scalar(ctx, node, key, "a duration like 90s").Scalar());
  if (!parsed.value) fail(ctx, node, key, parsed.error);
  return *parsed.value;
}

std::vector<std::string> read_string_list(const Context& ctx, const YAML::Node& node, const std::string& key) {
  if (node.IsScalar()) return {read_string(ctx, node, key)};
  if (!node.IsSequence()) fail(ctx, node, key, "expected a list of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node.size(); ++i) {
    out.push_back(read_string(ctx, node[i], key + "[" + std::to_string(i) + "]"));
  }
  return out;
}

std::size_t read_choice(const Context& ctx, const YAML::Node& node, const std::string& key,
                        const std::vector<std::string>& choices) {
  const std::string text = require_scalar(ctx, node, key, "a string").Scalar();
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (choices[i] == text) return i;
  }
  fail(ctx, node, key, "\"" + text + "\" is not one of: " + join(choices));
}

}  // namespace bloomgate::config::detail
