// The bloomgate command line: one binary, one subcommand per job.
#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <iostream>
#include <limits>
#include <stdexcept>

#include "bloomgate/app/build_info.h"
#include "bloomgate/app/demo_command.h"
#include "bloomgate/app/filter_command.h"
#include "bloomgate/app/inspect_command.h"
#include "bloomgate/app/partition_deduplicator.h"
#include "bloomgate/app/run_command.h"
#include "bloomgate/config/config.h"
#include "bloomgate/config/duration.h"
#include "bloomgate/filters/vector_query.h"

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

// A CLI11 option for a count of keys, 1 or more: "-5" and "0" are refused by name (CLI11's own unsigned
// conversion wraps "-5" to 18446744073709551611).
void add_count_option(CLI::App& cmd, const std::string& name, std::uint64_t& target, const std::string& help) {
  cmd.add_option_function<std::string>(
         name,
         [&target, name](const std::string& text) {
           std::uint64_t count = 0;
           const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
           if (text.empty() || error != std::errc{} || end != text.data() + text.size() || count == 0) {
             throw CLI::ValidationError(name, "\"" + text + "\" is not a count of keys: expected a whole number from 1 to " +
                                                  std::to_string(std::numeric_limits<std::uint64_t>::max()));
           }
           target = count;
         },
         help)
      ->default_str(target == 0 ? std::string() : std::to_string(target));
}

// The flag of `bloomgate filter` that sets a FilterOptions field, for validate()'s errors.
std::string flag_of(const std::string& option) {
  if (option == "expected_per_ttl") return "--expected";
  if (option == "error_rate") return "--error-rate";
  return "--" + option;
}

void add_filter_command(CLI::App& app, FilterCommandOptions& options, std::string& type_name) {
  CLI::App* cmd = app.add_subcommand(
      "filter", "Write to stdout only the stdin lines whose key is new within the TTL (like uniq with a time window)");
  cmd->add_option("--type", type_name, filters::filter_type_list())
      ->capture_default_str();
  add_duration_option(*cmd, "--ttl", options.filter.ttl, "How long a key is remembered, e.g. 90s, 10m, 24h");
  cmd->add_option("--error-rate", options.filter.error_rate, "Target false-positive rate, in (0, 1)")
      ->capture_default_str();
  add_count_option(*cmd, "--expected", options.filter.expected_per_ttl, "Keys expected per TTL: a sizing hint");
  add_count_option(*cmd, "--window", options.filter.window, "age_partitioned: the window in keys (default --expected)");
  options.filter.level = bloomgate::config::kDefaultFilterLevel;
  cmd->add_option("--level", options.filter.level,
                  "time_limited/age_partitioned: (k, l) level 0..6 (default: 5, as the service's filter.level)");
  cmd->add_flag("--refresh-on-duplicate", options.filter.refresh_on_duplicate,
                "A duplicate extends its key's lifetime");
  cmd->add_flag("--timestamps", options.timestamps, "Lines are EPOCH_MILLIS<TAB>KEY instead of KEY");
  cmd->add_option("--fields", options.fields,
                  "KEY is a TSV/CSV record keyed by these fields, numbered from 1, e.g. 1,3 (default: the whole KEY)")
      ->delimiter(',')
      ->check(CLI::Validator(
          [](const std::string& text) {
            return text.find_first_not_of("0123456789") == std::string::npos && text.find_first_not_of('0') != std::string::npos
                       ? std::string()
                       : "\"" + text + "\" is not a field number: fields are numbered from 1";
          },
          "FIELD"));
  cmd->add_option_function<std::string>(
         "--delimiter",
         [&options](const std::string& text) {
           if (text == "\\t" || text == "tab") {
             options.delimiter = '\t';
           } else if (text.size() == 1) {
             options.delimiter = text[0];
           } else {
             throw CLI::ValidationError("--delimiter", "expected one character, \\t or tab, found \"" + text + "\"");
           }
         },
         "Between the fields of KEY: one character, or \\t or tab")
      ->default_str("tab");
  cmd->add_flag("--stats", options.stats, "Print one JSON object of filter statistics to stderr at the end");
}

int run_filter(FilterCommandOptions& options, const std::string& type_name) {
  const auto type = filters::parse_filter_type(type_name);
  if (!type) {
    std::cerr << "bloomgate filter: --type \"" << type_name
              << "\" is not one of " << filters::filter_type_list() << "\n";
    return bloomgate::app::kExitUsage;
  }
  options.filter.type = *type;
  try {
    filters::validate(options.filter);
  } catch (const filters::OptionError& e) {
    std::cerr << "bloomgate filter: " << flag_of(e.option()) << ": " << e.problem() << '\n';
    return bloomgate::app::kExitUsage;
  }
  std::ios::sync_with_stdio(false);
  bloomgate::app::FilterCommandResult result;
  try {
    result = bloomgate::app::run_filter_command(options, std::cin, std::cout, std::cerr, [] {
      return std::chrono::time_point_cast<filters::Duration>(std::chrono::system_clock::now());
    });
  } catch (const std::invalid_argument& e) {  // a filter type's own cap, checked when it is made
    std::cerr << "bloomgate filter: " << e.what() << '\n';
    return bloomgate::app::kExitUsage;
  }
  if (!result.io_error.empty()) {
    std::cerr << "bloomgate filter: " << result.io_error << '\n';
    return bloomgate::app::kExitIoError;
  }
  return result.malformed == 0 ? bloomgate::app::kExitOk : bloomgate::app::kExitMalformedLines;
}

void add_validate_command(CLI::App& app, std::string& config_path) {
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check a configuration file and print the effective configuration (secrets redacted)");
  cmd->add_option("--config", config_path, "The YAML configuration file")->required();
}

int run_validate(const std::string& config_path) {
  try {
    const auto config = bloomgate::config::load_config(config_path, bloomgate::config::SecretSources::from_process(),
                                                       bloomgate::app::filter_problem);
    std::cout << bloomgate::config::render_effective(config);
    return bloomgate::app::kExitOk;
  } catch (const bloomgate::config::ConfigError& e) {
    std::cerr << "bloomgate: invalid configuration: " << e.what() << '\n';
    return bloomgate::app::kExitUsage;
  }
}

void add_run_command(CLI::App& app, bloomgate::app::RunCommandOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "run", "Run the deduplication service: consume the pipelines' inputs, forward what is new within the TTL");
  cmd->add_option("--config", options.config_path, "The YAML configuration file")->required();
  cmd->add_option("--log-level", options.log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();
}

void add_demo_command(CLI::App& app, bloomgate::app::DemoOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "demo", "Run the service on an embedded broker with a generated stream and compare with the exact answer");
  cmd->add_option("--events", options.events, "Events to produce")->capture_default_str()->check(CLI::Range(1, 100'000'000));
  cmd->add_option("--rate", options.events_per_second, "Events per second of event time (timestamp spacing)")
      ->capture_default_str()->check(CLI::Range(1.0, 1e9));
  cmd->add_option("--duplicates", options.duplicate_share, "Share of events repeating a key seen within the TTL")
      ->capture_default_str()->check(CLI::Range(0.0, 0.95));
  cmd->add_option("--beyond-ttl", options.beyond_ttl_share, "Share of events repeating a key last seen beyond the TTL")
      ->capture_default_str()->check(CLI::Range(0.0, 0.5));
  cmd->add_option_function<std::string>(
         "--ttl",
         [&options](const std::string& text) {
           const auto parsed = bloomgate::config::parse_duration(text);
           if (!parsed.value || *parsed.value < std::chrono::milliseconds(1)) {
             throw CLI::ValidationError("--ttl", parsed.value ? "must be at least 1ms" : parsed.error);
           }
           options.ttl = std::chrono::duration_cast<std::chrono::milliseconds>(*parsed.value);
         },
         "How long a key is remembered, e.g. 10s")
      ->default_str("10s");
  cmd->add_option("--brokers", options.brokers,
                  "A Kafka broker to run on instead of the embedded one (host:port,...); the run creates topics of its own there");
  cmd->add_option("--partitions", options.partitions, "Partitions of the input topic")
      ->capture_default_str()->check(CLI::Range(1, 64));
  cmd->add_option("--error-rate", options.error_rate, "Target false-positive rate")
      ->capture_default_str()->check(CLI::Range(1e-9, 0.5));
  cmd->add_option("--seed", options.seed, "Seed of the generated stream")->capture_default_str();
  cmd->add_option("--metrics-listen", options.metrics_listen, "Where /metrics is served (port 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--log-level", options.log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();
}

void add_inspect_command(CLI::App& app, bloomgate::app::InspectOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Print what a state directory holds, per input partition: offsets, checkpoint time, filter, fill, FPR");
  cmd->add_option("--state-dir", options.state_dir, "The state directory (state.dir of the configuration)")->required();
  cmd->add_option_function<std::string>(
         "--format",
         [&options](const std::string& name) {
           options.format = name == "json" ? bloomgate::app::InspectFormat::kJson : bloomgate::app::InspectFormat::kText;
         },
         "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_str("text");
}

// CLI11 answers a word that is no subcommand with "A subcommand is required"; this names it and the
// subcommands there are. Empty when argv[1] is a subcommand or a flag.
std::string unknown_subcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return {};
  const std::string word = argv[1];
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == word) return {};
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return "bloomgate: \"" + word + "\" is not a command; the commands are " + names +
         " (bloomgate --help, or bloomgate COMMAND --help)";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bloomgate: deduplicate event streams with time-limited Bloom filters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] {
    return "bloomgate " + bloomgate::app::version() + " (malloc: " + bloomgate::app::allocator_name() + ")";
  });
  FilterCommandOptions filter_options;
  std::string type_name = "time_limited";
  add_filter_command(app, filter_options, type_name);
  std::string config_path;
  add_validate_command(app, config_path);
  bloomgate::app::RunCommandOptions run_options;
  add_run_command(app, run_options);
  bloomgate::app::DemoOptions demo_options;
  add_demo_command(app, demo_options);
  bloomgate::app::InspectOptions inspect_options;
  add_inspect_command(app, inspect_options);
  if (const std::string unknown = unknown_subcommand(app, argc, argv); !unknown.empty()) {
    std::cerr << unknown << '\n';
    return bloomgate::app::kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return e.get_exit_code() == 0 ? app.exit(e) : (app.exit(e), bloomgate::app::kExitUsage);
  }
  try {
    bloomgate::filters::vector_query_in_use();  // its environment variable, refused before any subcommand starts
  } catch (const std::invalid_argument& e) {
    std::cerr << "bloomgate: " << e.what() << '\n';
    return bloomgate::app::kExitUsage;
  }
  if (app.got_subcommand("filter")) return run_filter(filter_options, type_name);
  if (app.got_subcommand("validate")) return run_validate(config_path);
  if (app.got_subcommand("run")) return bloomgate::app::run_service_command(run_options);
  if (app.got_subcommand("inspect")) return bloomgate::app::run_inspect_command(inspect_options, std::cout, std::cerr);
  if (app.got_subcommand("demo")) return bloomgate::app::run_demo_command(demo_options, std::cout);
  return bloomgate::app::kExitUsage;
}
