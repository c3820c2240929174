// libFuzzer target: the configuration loader on any text. A ConfigError is the expected answer to bad
// input; any other exception, a crash or a sanitizer report is a finding. What is accepted must render,
// and the rendering must read back to the same configuration (`bloomgate validate` prints it for reuse).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "bloomgate/config/config.h"

namespace {

bloomgate::config::SecretSources fixed_secrets() {
  bloomgate::config::SecretSources secrets;
  secrets.env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "SET") return "value";
    return std::nullopt;
  };
  secrets.file = [](const std::string& path) -> std::optional<std::string> {
    if (path == "/secret") return "file-value";
    return std::nullopt;
  };
  return secrets;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  static const bloomgate::config::SecretSources secrets = fixed_secrets();
  const std::string text(reinterpret_cast<const char*>(bytes), size);
  std::optional<bloomgate::config::Config> config;
  try {
    config = bloomgate::config::parse_config(text, "<fuzz>", secrets);
  } catch (const bloomgate::config::ConfigError&) {
    return 0;
  }
  const std::string rendered = bloomgate::config::render_effective(*config);
  try {
    const bloomgate::config::Config again = bloomgate::config::parse_config(rendered, "<rendered>", secrets);
    if (bloomgate::config::render_effective(again) != rendered) {
      std::fprintf(stderr, "the rendering reads back differently:\n%s", rendered.c_str());
      std::abort();
    }
  } catch (const bloomgate::config::ConfigError& e) {
    std::fprintf(stderr, "the rendering is refused: %s\n%s", e.what(), rendered.c_str());
    std::abort();
  }
  return 0;
}
