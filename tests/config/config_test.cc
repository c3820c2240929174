// The YAML configuration: what is accepted, and the exact message for each kind of bad input.
#include "bloomgate/config/config.h"

#include <gtest/gtest.h>

#include "bloomgate/filters/filter_types.h"
#include "config_test_support.h"

namespace bloomgate::config {
namespace {

using namespace std::chrono_literals;
using namespace test_support;

const std::string kMinimal =
    "kafka:\n"
    "  brokers: localhost:9092\n"
    "pipelines:\n"
    "  - name: orders\n"
    "    input: [orders]\n"
    "    output: orders-unique\n"
    "    key: { from: message_key }\n"
    "    ttl: 10m\n";
// Its pipelines, for a test that writes its own kafka section before them.
const std::string kMinimalPipelines = kMinimal.substr(kMinimal.find("pipelines:"));

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
  ASSERT_EQ(p.key.parts.size(), 1U);
  EXPECT_EQ(p.key.parts[0].from, KeySource::kJson);
  EXPECT_EQ(p.key.parts[0].pointer, "/order_id");
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
      kMinimalPipelines);
  EXPECT_EQ(c.kafka.brokers, "b1:9092,b2:9092");
  EXPECT_EQ(c.kafka.properties.at("sasl.password"), "hunter2");
  const std::string rendered = render_effective(c);
  EXPECT_EQ(rendered.find("hunter2"), std::string::npos) << rendered;
  EXPECT_EQ(rendered.find("org.apache"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("sasl.password: ${env:KAFKA_PASSWORD}"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("ttl: 10m"), std::string::npos) << rendered;
  // The rendered configuration is itself a valid configuration.
  EXPECT_EQ(render_effective(parse(rendered)), rendered);
  // An unset level is the service's default, chosen by speed and memory together.
  EXPECT_EQ(c.pipelines.at(0).filter.level, std::optional<std::uint32_t>(kDefaultFilterLevel));
  EXPECT_NE(rendered.find("level: 5"), std::string::npos) << rendered;
}

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
        BadConfig{"unknown_filter_type", with_pipeline_line("    filter: {type: cuckoo}\n"),
                  "bloomgate.yaml:9:20: pipelines[0].filter.type: \"cuckoo\" is not one of: time_limited, age_partitioned, "
                  "continuous, scalable, bloom, spectral, aging_fingerprint"},
        BadConfig{"level_too_big", with_pipeline_line("    filter: {level: 7}\n"),
                  "bloomgate.yaml:9:21: pipelines[0].filter.level: must be 0 to 6, found 7"},
        BadConfig{"deeply_nested", "kafka: " + std::string(5000, '[') + std::string(5000, ']') + "\n",
                  "bloomgate.yaml:1:72: nesting is too deep (more than 64 levels of [ or {)"},
        BadConfig{"deeply_indented", "kafka:\n" + std::string(300, ' ') + "brokers: x\n",
                  "bloomgate.yaml:2:257: nesting is too deep (more than 256 columns of indentation)"},
        BadConfig{"inline_secret", "kafka:\n  brokers: k:9092\n  properties:\n    sasl.password: hunter2\n" +
                                        kMinimalPipelines,
                  "bloomgate.yaml:4:20: kafka.properties.sasl.password: is a secret and must not be written inline: "
                  "use ${env:NAME} or ${file:/path}"},
        BadConfig{"missing_env", "kafka:\n  brokers: ${env:NOPE}\n" + kMinimalPipelines,
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
        BadConfig{"bad_listen", "kafka: {brokers: k:9092}\nmetrics: {listen: localhost}\n" + kMinimalPipelines,
                  "bloomgate.yaml:2:19: metrics.listen: \"localhost\" is not host:port with a port from 0 (any free port) to 65535"},
        // A YAML mapping with a key twice is read by yaml-cpp as if the second were not there.
        BadConfig{"duplicate_key", with_pipeline_line("    ttl: 5m\n"),
                  "bloomgate.yaml:9:5: pipelines[0].ttl: is given twice in one mapping, first at line 8, column 5; "
                  "remove one of them"},
        BadConfig{"duplicate_property", "kafka:\n  brokers: k:9092\n  properties: {linger.ms: 5, linger.ms: 6}\n" +
                                            kMinimalPipelines,
                  "bloomgate.yaml:3:30: kafka.properties.linger.ms: is given twice in one mapping, first at line 3, "
                  "column 16; remove one of them"},
        // civetweb reads each number of an IPv4 address modulo 256: 999.1.1.1 would bind 231.1.1.1.
        BadConfig{"listen_not_ipv4", "kafka: {brokers: k:9092}\nmetrics: {listen: \"999.1.1.1:80\"}\n" + kMinimalPipelines,
                  "bloomgate.yaml:2:19: metrics.listen: \"999.1.1.1\" is not an IPv4 address: four numbers from 0 to 255, "
                  "like 127.0.0.1"},
        BadConfig{"bad_state_topic", "state: {topic: \"state topic\"}\n" + kMinimal,
                  "bloomgate.yaml:1:16: state.topic: \"state topic\" is not a valid topic name (1 to 249 of a-z A-Z 0-9 . _ -)"},
        BadConfig{"zero_state_replicas", "state: {topic: s, topic_replication_factor: 0}\n" + kMinimal,
                  "bloomgate.yaml:1:45: state.topic_replication_factor: must be 1 to 32767 replicas, or -1 for the "
                  "broker's default"},
        BadConfig{"zero_grace_period", "shutdown: {grace_period: 0s}\n" + kMinimal,
                  "bloomgate.yaml:1:26: shutdown.grace_period: must be positive"},
        BadConfig{"embedded_partitions_zero", "kafka: {brokers: embedded, embedded_partitions: 0}\n" +
                                                  kMinimalPipelines,
                  "bloomgate.yaml:1:49: kafka.embedded_partitions: must be from 1 to 1000"},
        BadConfig{"no_pipelines", "kafka: {brokers: k:9092}\npipelines: []\n",
                  "bloomgate.yaml:2:12: pipelines: expected a list of at least one pipeline"},
        BadConfig{"zero_ttl", "kafka: {brokers: k:9092}\npipelines:\n  - {name: a, input: [x], output: y, key: {from: value}, ttl: 0s}\n",
                  "bloomgate.yaml:3:63: pipelines[0].ttl: must be positive"},
        BadConfig{"bootstrap_property", "kafka:\n  brokers: k:9092\n  properties: {bootstrap.servers: x}\n" +
                                            kMinimalPipelines,
                  "bloomgate.yaml:3:16: kafka.properties.bootstrap.servers: is set by bloomgate: use kafka.brokers, "
                  "kafka.group_id or kafka.instance_name"},
        BadConfig{"unknown_guarantee", "kafka:\n  brokers: k:9092\n  guarantee: exactly-once\n" +
                                           kMinimalPipelines,
                  "bloomgate.yaml:3:14: kafka.guarantee: \"exactly-once\" is not one of: at_least_once, exactly_once"},
        BadConfig{"exactly_once_without_instance", "kafka:\n  brokers: k:9092\n  guarantee: exactly_once\n" +
                                                       kMinimalPipelines,
                  "bloomgate.yaml:3:14: kafka.guarantee: exactly_once needs kafka.instance_name: the transactional.id "
                  "is derived from it"},
        // Found by fuzz/config_fuzzer (a use after free while the properties were read); kept as a regression case.
        BadConfig{"null_property_name", "kafka:\n  brokers: a\n  properties:\n    : m\n    da: x\n" +
                                            kMinimalPipelines,
                  "bloomgate.yaml:4:5: kafka.properties: a property name must be a string"},
        BadConfig{"list_as_property_name", "kafka:\n  brokers: a\n  properties:\n    ? [a]\n    : b\n    c: d\n" +
                                               kMinimalPipelines,
                  "bloomgate.yaml:4:7: kafka.properties: a property name must be a string"},
        // Found by fuzz/config_fuzzer: yaml-cpp writes a byte that is not UTF-8 back as U+FFFD.
        BadConfig{"not_utf8", "kafka:\n  brokers: k\xa0:9092\n" + kMinimalPipelines,
                  "bloomgate.yaml:2:13: the file is not UTF-8 text (YAML must be)"},
        BadConfig{"truncated_utf8_sequence", "kafka:\n  brokers: \xc3\n" + kMinimalPipelines,
                  "bloomgate.yaml:2:12: the file is not UTF-8 text (YAML must be)"},
        BadConfig{"transactional_id_property", "kafka:\n  brokers: k:9092\n  properties: {transactional.id: x}\n" +
                                                   kMinimalPipelines,
                  "bloomgate.yaml:3:16: kafka.properties.transactional.id: is set by bloomgate: use kafka.guarantee: "
                  "exactly_once and kafka.instance_name"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(Config, AStateTopicIsOffUnlessNamedAndItsReplicasDefaultToTheBrokers) {
  EXPECT_EQ(parse(kMinimal).state.topic, "");
  EXPECT_EQ(parse("state: {topic: \"\"}\n" + kMinimal).state.topic, "");
  const Config c = parse("state: {topic: bloomgate-state}\n" + kMinimal);
  EXPECT_EQ(c.state.topic, "bloomgate-state");
  EXPECT_EQ(c.state.topic_replication_factor, kBrokerDefaultReplication);
  const Config three = parse("state: {topic: s, topic_replication_factor: 3}\n" + kMinimal);
  EXPECT_EQ(three.state.topic_replication_factor, 3);
  const std::string rendered = render_effective(three);
  EXPECT_NE(rendered.find("topic_replication_factor: 3"), std::string::npos) << rendered;
  EXPECT_EQ(render_effective(parse(rendered)), rendered);
}

TEST(Config, EveryFilterTypeTheFiltersKnowIsAccepted) {
  for (const filters::FilterTypeInfo& info : filters::kFilterTypes) {
    const std::string name(info.name);
    EXPECT_EQ(parse(with_pipeline_line("    filter: {type: " + name + "}\n")).pipelines[0].filter.type, name);
  }
  EXPECT_EQ(parse(with_pipeline_line("    filter: {level: 6}\n")).pipelines[0].filter.level, filters::kMaxLevel);
}

TEST(Config, TheGuaranteeIsAtLeastOnceUnlessExactlyOnceIsAskedFor) {
  EXPECT_EQ(parse(kMinimal).kafka.guarantee, Guarantee::kAtLeastOnce);
  const Config config = parse("kafka:\n  brokers: k:9092\n  group_id: dedup\n  instance_name: node-1\n"
                              "  guarantee: exactly_once\n" + kMinimalPipelines);
  EXPECT_EQ(config.kafka.guarantee, Guarantee::kExactlyOnce);
  EXPECT_EQ(transactional_id(config.kafka), "dedup.node-1");
  EXPECT_NE(render_effective(config).find("guarantee: exactly_once"), std::string::npos);
}

TEST(Config, RolePrefixedPropertiesReachOnlyTheirRole) {
  const Config c = parse("kafka:\n  brokers: k:9092\n  properties:\n    socket.timeout.ms: 30000\n"
                         "    consumer.fetch.wait.max.ms: 50\n    consumer.socket.timeout.ms: 45000\n"
                         "    producer.linger.ms: 20\n    producer.sasl.password: ${env:KAFKA_PASSWORD}\n" +
                         kMinimalPipelines);
  using Map = std::map<std::string, std::string>;
  EXPECT_EQ(properties_for(c.kafka, ClientRole::kConsumer),
            (Map{{"fetch.wait.max.ms", "50"}, {"socket.timeout.ms", "45000"}}));
  EXPECT_EQ(properties_for(c.kafka, ClientRole::kProducer),
            (Map{{"linger.ms", "20"}, {"sasl.password", "hunter2"}, {"socket.timeout.ms", "30000"}}));
  EXPECT_EQ(properties_for(c.kafka, ClientRole::kAdmin), (Map{{"socket.timeout.ms", "30000"}}));
  const std::string rendered = render_effective(c);
  EXPECT_NE(rendered.find("consumer.fetch.wait.max.ms: 50"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("producer.sasl.password: ${env:KAFKA_PASSWORD}"), std::string::npos) << rendered;
  EXPECT_EQ(rendered.find("hunter2"), std::string::npos) << rendered;
}

TEST(Config, RolePrefixedPropertiesFollowTheRulesOfThePropertyTheyName) {
  EXPECT_EQ(error_of("kafka:\n  brokers: k:9092\n  properties: {consumer.group.id: x}\n" + kMinimalPipelines),
            "bloomgate.yaml:3:16: kafka.properties.consumer.group.id: is set by bloomgate: use kafka.brokers, "
            "kafka.group_id or kafka.instance_name");
  EXPECT_EQ(error_of("kafka:\n  brokers: k:9092\n  properties: {producer.transactional.id: x}\n" + kMinimalPipelines),
            "bloomgate.yaml:3:16: kafka.properties.producer.transactional.id: is set by bloomgate: use "
            "kafka.guarantee: exactly_once and kafka.instance_name");
  EXPECT_EQ(error_of("kafka:\n  brokers: k:9092\n  properties:\n    producer.: x\n" + kMinimalPipelines),
            "bloomgate.yaml:4:5: kafka.properties.producer.: names no property after its role prefix");
  EXPECT_EQ(error_of("kafka:\n  brokers: k:9092\n  properties:\n    producer.ssl.key.password: secret\n" + kMinimalPipelines),
            "bloomgate.yaml:4:32: kafka.properties.producer.ssl.key.password: is a secret and must not be written "
            "inline: use ${env:NAME} or ${file:/path}");
}

TEST(Config, WorkersAreAutoUnlessCounted) {
  EXPECT_EQ(parse(kMinimal).workers, kAutoWorkers);
  EXPECT_EQ(parse("workers: auto\n" + kMinimal).workers, kAutoWorkers);
  const Config two = parse("workers: 2\n" + kMinimal);
  EXPECT_EQ(two.workers, 2U);
  EXPECT_NE(render_effective(two).find("workers: 2\n"), std::string::npos);
  EXPECT_NE(render_effective(parse(kMinimal)).find("workers: auto\n"), std::string::npos);
  EXPECT_EQ(error_of("workers: 0\n" + kMinimal), "bloomgate.yaml:1:10: workers: must be auto or from 1 to 256, found 0");
  EXPECT_EQ(error_of("workers: 1000\n" + kMinimal),
            "bloomgate.yaml:1:10: workers: must be auto or from 1 to 256, found 1000");
  EXPECT_EQ(error_of("workers: many\n" + kMinimal),
            "bloomgate.yaml:1:10: workers: expected auto or a number of workers from 1 to 256");
  EXPECT_EQ(error_of("workers: -1\n" + kMinimal),
            "bloomgate.yaml:1:10: workers: expected auto or a number of workers from 1 to 256");
}

TEST(Config, Utf8TextIsReadAndRenderedAsItIs) {
  const Config c = parse("kafka:\n  brokers: k:9092\n  properties: {client.rack: \"gr\xc3\xbc\xc3\x9f\xe2\x82\xac\"}\n" +
                         kMinimalPipelines);
  EXPECT_EQ(c.kafka.properties.at("client.rack"), "gr\xc3\xbc\xc3\x9f\xe2\x82\xac");
  EXPECT_EQ(render_effective(parse(render_effective(c))), render_effective(c));
}

// Found by fuzz/config_fuzzer: yaml-cpp wrote "k:9092   \r" plain, and it read back without its spaces.
TEST(Config, StringsWithControlCharactersRenderQuotedAndReadBack) {
  const Config c = parse("kafka:\n  brokers: \"k:9092   \\r\"\n  properties: {\"client.\\tid\": \"a\\u0001b\"}\n" +
                         kMinimalPipelines);
  EXPECT_EQ(c.kafka.brokers, "k:9092   \r");
  EXPECT_EQ(c.kafka.properties.at("client.\tid"), "a\x01" "b");
  const std::string rendered = render_effective(c);
  EXPECT_NE(rendered.find("brokers: \"k:9092   \\r\""), std::string::npos) << rendered;
  EXPECT_EQ(parse(rendered).kafka.brokers, c.kafka.brokers);
  EXPECT_EQ(render_effective(parse(rendered)), rendered);
}

// A check config cannot make itself (app's filter_problem: the filters' sizing) is reported as config's
// own errors are: at the key's line and column, or at its mapping's when the key is not written.
TEST(Config, APipelineCheckNamesTheKeyLineAndColumn) {
  const PipelineCheck check = [](const PipelineSettings& p) -> std::optional<PipelineProblem> {
    if (p.filter.error_rate < 0.01) return PipelineProblem{"filter.error_rate", "is too small for this test"};
    return std::nullopt;
  };
  const auto error_with = [&](const std::string& yaml) {
    try {
      parse_config(yaml, "bloomgate.yaml", fake_secrets(), check);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_with(with_pipeline_line("    filter:\n      error_rate: 0.001\n")),
            "bloomgate.yaml:10:19: pipelines[0].filter.error_rate: is too small for this test");
  EXPECT_EQ(error_with(with_pipeline_line("    filter: {level: 5}\n")),
            "bloomgate.yaml:9:13: pipelines[0].filter.error_rate: is too small for this test")
      << "not written: the filter mapping's position";
  EXPECT_EQ(error_with(kMinimal), "bloomgate.yaml:4:5: pipelines[0].filter.error_rate: is too small for this test")
      << "no filter mapping: the pipeline's position";
  EXPECT_EQ(error_with(with_pipeline_line("    filter: {error_rate: 0.01}\n")), "no error");
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
