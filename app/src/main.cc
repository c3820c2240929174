// The bloomgate command line: one binary, one subcommand per job.
#include <CLI/CLI.hpp>

#include <iostream>

#include "bloomgate/app/filter_command.h"
#include "bloomgate/config/config.h"
#include "bloomgate/config/duration.h"

namespace {

using bloomgate::app::FilterCommandOptions;
namespace filters = bloomgate::filters;

// A CLI11 validator-and-converter for durations like 90s or 10m.
void add_duration_option(CLI::App& cmd, const std::string& name, filters::Duration& target, const std::string& help) {
  cmd.add_option_function<std::string>(
         name,
         [&target, name](const std::string& text) {
           const auto parsed = bloomgate::config::parse_duration(text);
           if (!parsed.value) throw CLI::ValidationError(name, parsed.error);
           target = *parsed.value;
         },
         help)
      ->default_str(bloomgate::config::format_duration(target));
}

void add_filter_command(CLI::App& app, FilterCommandOptions& options, std::string& type_name) {
  CLI::App* cmd = app.add_subcommand(
      "filter", "Write to stdout only the stdin lines whose key is new within the TTL (like uniq with a time window)");
  cmd->add_option("--type", type_name, "time_limited, age_partitioned, continuous, scalable, bloom or spectral")
      ->capture_default_str();
  add_duration_option(*cmd, "--ttl", options.filter.ttl, "How long a key is remembered, e.g. 90s, 10m, 24h");
  cmd->add_option("--error-rate", options.filter.error_rate, "Target false-positive rate, in (0, 1)")
      ->capture_default_str();
  cmd->add_option("--expected", options.filter.expected_per_ttl, "Keys expected per TTL: a sizing hint")
      ->capture_default_str();
  cmd->add_option("--window", options.filter.window, "age_partitioned: the window in keys (default --expected)");
  cmd->add_option("--level", options.filter.level, "time_limited/age_partitioned: (k, l) level 0..5")
      ->capture_default_str();
  cmd->add_flag("--refresh-on-duplicate", options.filter.refresh_on_duplicate,
                "A duplicate extends its key's lifetime");
  cmd->add_flag("--timestamps", options.timestamps, "Lines are EPOCH_MILLIS<TAB>KEY instead of KEY");
  cmd->add_flag("--stats", options.stats, "Print one JSON object of filter statistics to stderr at the end");
}

int run_filter(FilterCommandOptions& options, const std::string& type_name) {
  const auto type = filters::parse_filter_type(type_name);
  if (!type) {
    std::cerr << "bloomgate filter: --type \"" << type_name
              << "\" is not one of time_limited, age_partitioned, continuous, scalable, bloom, spectral\n";
    return bloomgate::app::kExitUsage;
  }
  options.filter.type = *type;
  try {
    filters::validate(options.filter);
  } catch (const std::invalid_argument& e) {
    std::cerr << "bloomgate filter: " << e.what() << '\n';
    return bloomgate::app::kExitUsage;
  }
  std::ios::sync_with_stdio(false);
  const auto result = bloomgate::app::run_filter_command(options, std::cin, std::cout, std::cerr, [] {
    return std::chrono::time_point_cast<filters::Duration>(std::chrono::system_clock::now());
  });
  return result.malformed == 0 ? bloomgate::app::kExitOk : bloomgate::app::kExitMalformedLines;
}

void add_validate_command(CLI::App& app, std::string& config_path) {
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check a configuration file and print the effective configuration (secrets redacted)");
  cmd->add_option("--config", config_path, "The YAML configuration file")->required();
}

int run_validate(const std::string& config_path) {
  try {
    const auto config = bloomgate::config::load_config(config_path);
    std::cout << bloomgate::config::render_effective(config);
    return bloomgate::app::kExitOk;
  } catch (const bloomgate::config::ConfigError& e) {
    std::cerr << "bloomgate: invalid configuration: " << e.what() << '\n';
    return bloomgate::app::kExitUsage;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bloomgate: deduplicate event streams with time-limited Bloom filters"};
  app.require_subcommand(1);
  FilterCommandOptions filter_options;
  std::string type_name = "time_limited";
  add_filter_command(app, filter_options, type_name);
  std::string config_path;
  add_validate_command(app, config_path);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return e.get_exit_code() == 0 ? app.exit(e) : (app.exit(e), bloomgate::app::kExitUsage);
  }
  if (app.got_subcommand("filter")) return run_filter(filter_options, type_name);
  if (app.got_subcommand("validate")) return run_validate(config_path);
  return bloomgate::app::kExitUsage;
}
