// The YAML configuration: what is accepted, and the exact message for each kind of bad input.
#include "bloomgate/config/config.h"

#include <gtest/gtest.h>

#include <map>

namespace bloomgate::config {
namespace {

using namespace std::chrono_literals;

SecretSources fake_secrets() {
  static const std::map<std::string, std::string> env = {{"KAFKA_PASSWORD", "hunter2"}, {"BROKERS", "b1:9092,b2:9092"}};
  static const std::map<std::string, std::string> files = {{"/run/secrets/jaas", "org.apache.kafka...;"}};
  SecretSources s;
  s.env = [](const std::string& name) -> std::optional<std::string> {
    const auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  s.file = [](const std::string& path) -> std::optional<std::string> {
    const auto it = files.find(path);
    return it == files.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  return s;
}

Config parse(const std::string& yaml) { return parse_config(yaml, "bloomgate.yaml", fake_secrets()); }

std::string error_of(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

const std::string kMinimal =
    "kafka:\n"
    "  brokers: localhost:9092\n"
    "pipelines:\n"
    "  - name: orders\n"
    "    input: [orders]\n"
    "    output: orders-unique\n"
    "    key: { from: message_key }\n"
    "    ttl: 10m\n";

TEST(Config, TheDocumentedExampleIsAccepted) {
  const Config c = load_config(BLOOMGATE_SOURCE_DIR "/config/examples/bloomgate.yaml", fake_secrets());
  EXPECT_EQ(c.kafka.brokers, "localhost:9092");
  EXPECT_EQ(c.kafka.properties.at("security.protocol"), "plaintext");
  EXPECT_EQ(c.state.checkpoint_interval, 5s);
  ASSERT_EQ(c.pipelines.size(), 1U);
  const PipelineSettings& p = c.pipelines[0];
  EXPECT_EQ(p.inputs, std::vector<std::string>{"orders"});
  EXPECT_EQ(p.duplicates, "orders-duplicates");
  EXPECT_EQ(p.dead_letter, "orders-dlq");
  EXPECT_EQ(p.key.from, KeySource::kJson);
  EXPECT_EQ(p.key.pointer, "/order_id");
  EXPECT_EQ(p.ttl, 10min);
  EXPECT_TRUE(p.refresh_on_duplicate);
  EXPECT_EQ(p.filter.error_rate, 0.001);
  EXPECT_EQ(p.filter.expected_per_ttl, 1'000'000U);
}

TEST(Config, DefaultsFillWhatIsLeftOut) {
  const Config c = parse(kMinimal);
  EXPECT_EQ(c.kafka.group_id, "bloomgate");
  EXPECT_EQ(c.state.dir, "./state");
  EXPECT_EQ(c.metrics.listen, "127.0.0.1:9464");
  EXPECT_EQ(c.pipelines[0].time, TimeSource::kEvent);
  EXPECT_EQ(c.pipelines[0].filter.type, "time_limited");
  EXPECT_EQ(c.pipelines[0].output_partitioning, OutputPartitioning::kSameAsInput);
  EXPECT_EQ(c.shutdown.grace_period, 30s);
  EXPECT_EQ(c.kafka.embedded_partitions, 4U);
}

TEST(Config, SecretsAreSubstitutedAndNeverRendered) {
  const Config c = parse(
      "kafka:\n"
      "  brokers: ${env:BROKERS}\n"
      "  properties:\n"
      "    sasl.password: ${env:KAFKA_PASSWORD}\n"
      "    sasl.jaas.config: ${file:/run/secrets/jaas}\n"
      "    security.protocol: sasl_ssl\n" +
      kMinimal.substr(kMinimal.find("pipelines:")));
  EXPECT_EQ(c.kafka.brokers, "b1:9092,b2:9092");
  EXPECT_EQ(c.kafka.properties.at("sasl.password"), "hunter2");
  const std::string rendered = render_effective(c);
  EXPECT_EQ(rendered.find("hunter2"), std::string::npos) << rendered;
  EXPECT_EQ(rendered.find("org.apache"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("sasl.password: ${env:KAFKA_PASSWORD}"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("ttl: 10m"), std::string::npos) << rendered;
  // The rendered configuration is itself a valid configuration.
  EXPECT_EQ(render_effective(parse(rendered)), rendered);
  // An unset level is the filters' default (the fewest bits per key for the error rate): not rendered.
  EXPECT_FALSE(c.pipelines.at(0).filter.level.has_value());
  EXPECT_EQ(rendered.find("level:"), std::string::npos) << rendered;
}

struct BadConfig {
  const char* name;
  std::string yaml;
  std::string message;
};

class MalformedConfig : public ::testing::TestWithParam<BadConfig> {};

TEST_P(MalformedConfig, StopsWithAMessageNamingKeyLineAndColumn) { EXPECT_EQ(error_of(GetParam().yaml), GetParam().message); }

std::string with_pipeline_line(const std::string& line) { return kMinimal + line; }

INSTANTIATE_TEST_SUITE_P(
    Config, MalformedConfig,
    ::testing::Values(
        BadConfig{"empty_file", "", "bloomgate.yaml: the file is empty; expected kafka and pipelines"},
        BadConfig{"syntax_error", "kafka:\n  brokers: [a\npipelines: x\n",
                  "bloomgate.yaml:3:10: YAML syntax error: end of sequence flow not found"},
        BadConfig{"top_level_list", "- a\n- b\n", "bloomgate.yaml:1:1: (top level): expected a mapping of keys to values"},
        BadConfig{"unknown_key", with_pipeline_line("    tll: 5m\n"),
                  "bloomgate.yaml:9:5: pipelines[0].tll: unknown key; expected one of: dead_letter, duplicates, filter, "
                  "input, key, max_key_bytes, max_value_bytes, name, output, output_partitioning, "
                  "refresh_on_duplicate, time, ttl"},
        BadConfig{"wrong_type", with_pipeline_line("    refresh_on_duplicate: sometimes\n"),
                  "bloomgate.yaml:9:27: pipelines[0].refresh_on_duplicate: expected true or false, found \"sometimes\""},
        BadConfig{"missing_output",
                  "kafka: {brokers: k:9092}\npipelines:\n  - name: a\n    input: [x]\n    key: {from: value}\n    ttl: 1m\n",
                  "bloomgate.yaml:3:5: pipelines[0].output: is required"},
        BadConfig{"bad_duration", "kafka: {brokers: k:9092}\npipelines:\n  - {name: a, input: [x], output: y, key: {from: value}, ttl: 10}\n",
                  "bloomgate.yaml:3:63: pipelines[0].ttl: \"10\" has no unit: write ms, s, m, h or d, like 10s"},
        BadConfig{"error_rate_zero", with_pipeline_line("    filter: {error_rate: 0}\n"),
                  "bloomgate.yaml:9:26: pipelines[0].filter.error_rate: must be greater than 0 and less than 1, found 0"},
        BadConfig{"error_rate_too_big", with_pipeline_line("    filter: {error_rate: 1.5}\n"),
                  "bloomgate.yaml:9:26: pipelines[0].filter.error_rate: must be greater than 0 and less than 1, found 1.5"},
        BadConfig{"level_too_big", with_pipeline_line("    filter: {level: 7}\n"),
                  "bloomgate.yaml:9:21: pipelines[0].filter.level: must be 0 to 6, found 7"},
        BadConfig{"deeply_nested", "kafka: " + std::string(5000, '[') + std::string(5000, ']') + "\n",
                  "bloomgate.yaml:1:72: nesting is too deep (more than 64 levels of [ or {)"},
        BadConfig{"deeply_indented", "kafka:\n" + std::string(300, ' ') + "brokers: x\n",
                  "bloomgate.yaml:2:257: nesting is too deep (more than 256 columns of indentation)"},
        BadConfig{"inline_secret", "kafka:\n  brokers: k:9092\n  properties:\n    sasl.password: hunter2\n" +
                                        kMinimal.substr(kMinimal.find("pipelines:")),
                  "bloomgate.yaml:4:20: kafka.properties.sasl.password: is a secret and must not be written inline: "
                  "use ${env:NAME} or ${file:/path}"},
        BadConfig{"missing_env", "kafka:\n  brokers: ${env:NOPE}\n" + kMinimal.substr(kMinimal.find("pipelines:")),
                  "bloomgate.yaml:2:12: kafka.brokers: environment variable NOPE is not set"},
        BadConfig{"duplicate_names",
                  kMinimal + "  - name: orders\n    input: [other]\n    output: o2\n    key: {from: value}\n    ttl: 1m\n",
                  "bloomgate.yaml:9:11: pipelines[1].name: another pipeline is already named orders"},
        BadConfig{"shared_input",
                  kMinimal + "  - name: two\n    input: [orders]\n    output: o2\n    key: {from: value}\n    ttl: 1m\n",
                  "bloomgate.yaml:10:12: pipelines[1].input: topic orders is already an input of another pipeline"},
        BadConfig{"output_is_input", "kafka: {brokers: k:9092}\npipelines:\n  - {name: a, input: [x], output: x, key: {from: value}, ttl: 1m}\n",
                  "bloomgate.yaml:3:35: pipelines[0].output: topic x is also an input of this pipeline"},
        BadConfig{"json_without_pointer", "kafka: {brokers: k:9092}\npipelines:\n  - {name: a, input: [x], output: y, key: {from: json}, ttl: 1m}\n",
                  "bloomgate.yaml:3:43: pipelines[0].key.pointer: is required"},
        BadConfig{"bad_topic", "kafka: {brokers: k:9092}\npipelines:\n  - {name: a, input: [\"bad topic\"], output: y, key: {from: value}, ttl: 1m}\n",
                  "bloomgate.yaml:3:23: pipelines[0].input[0]: \"bad topic\" is not a valid topic name (1 to 249 of a-z A-Z 0-9 . _ -)"},
        BadConfig{"bad_listen", "kafka: {brokers: k:9092}\nmetrics: {listen: localhost}\n" + kMinimal.substr(kMinimal.find("pipelines:")),
                  "bloomgate.yaml:2:19: metrics.listen: \"localhost\" is not host:port with a port from 0 (any free port) to 65535"},
        BadConfig{"zero_grace_period", "shutdown: {grace_period: 0s}\n" + kMinimal,
                  "bloomgate.yaml:1:26: shutdown.grace_period: must be positive"},
        BadConfig{"embedded_partitions_zero", "kafka: {brokers: embedded, embedded_partitions: 0}\n" +
                                                  kMinimal.substr(kMinimal.find("pipelines:")),
                  "bloomgate.yaml:1:49: kafka.embedded_partitions: must be from 1 to 1000"},
        BadConfig{"no_pipelines", "kafka: {brokers: k:9092}\npipelines: []\n",
                  "bloomgate.yaml:2:12: pipelines: expected a list of at least one pipeline"},
        BadConfig{"zero_ttl", "kafka: {brokers: k:9092}\npipelines:\n  - {name: a, input: [x], output: y, key: {from: value}, ttl: 0s}\n",
                  "bloomgate.yaml:3:63: pipelines[0].ttl: must be positive"},
        BadConfig{"bootstrap_property", "kafka:\n  brokers: k:9092\n  properties: {bootstrap.servers: x}\n" +
                                            kMinimal.substr(kMinimal.find("pipelines:")),
                  "bloomgate.yaml:3:16: kafka.properties.bootstrap.servers: is set by bloomgate: use kafka.brokers, "
                  "kafka.group_id or kafka.instance_name"},
        BadConfig{"unknown_guarantee", "kafka:\n  brokers: k:9092\n  guarantee: exactly-once\n" +
                                           kMinimal.substr(kMinimal.find("pipelines:")),
                  "bloomgate.yaml:3:14: kafka.guarantee: \"exactly-once\" is not one of: at_least_once, exactly_once"},
        BadConfig{"exactly_once_without_instance", "kafka:\n  brokers: k:9092\n  guarantee: exactly_once\n" +
                                                       kMinimal.substr(kMinimal.find("pipelines:")),
                  "bloomgate.yaml:3:14: kafka.guarantee: exactly_once needs kafka.instance_name: the transactional.id "
                  "is derived from it"},
        BadConfig{"transactional_id_property", "kafka:\n  brokers: k:9092\n  properties: {transactional.id: x}\n" +
                                                   kMinimal.substr(kMinimal.find("pipelines:")),
                  "bloomgate.yaml:3:16: kafka.properties.transactional.id: is set by bloomgate: use kafka.guarantee: "
                  "exactly_once and kafka.instance_name"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(Config, TheGuaranteeIsAtLeastOnceUnlessExactlyOnceIsAskedFor) {
  EXPECT_EQ(parse(kMinimal).kafka.guarantee, Guarantee::kAtLeastOnce);
  const Config config = parse("kafka:\n  brokers: k:9092\n  group_id: dedup\n  instance_name: node-1\n"
                              "  guarantee: exactly_once\n" + kMinimal.substr(kMinimal.find("pipelines:")));
  EXPECT_EQ(config.kafka.guarantee, Guarantee::kExactlyOnce);
  EXPECT_EQ(transactional_id(config.kafka), "dedup.node-1");
  EXPECT_NE(render_effective(config).find("guarantee: exactly_once"), std::string::npos);
}

TEST(Config, AnUnreadableFileIsAnError) {
  try {
    load_config("/nonexistent/bloomgate.yaml", fake_secrets());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/bloomgate.yaml: cannot read the configuration file");
  }
}

}  // namespace
}  // namespace bloomgate::config
