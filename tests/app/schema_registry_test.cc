// The Schema Registry client and the service on registry-framed topics. No Schema Registry server is
// packaged here: support/fake_schema_registry.h serves the registry's documented REST answers on loopback
// (GET /schemas/ids/{id}, GET /subjects/{subject}/versions/{version}), and can go down and come back.
// Records are real Avro (avro-c) and Protobuf (libprotobuf) with Confluent's framing, on the embedded broker.
// The TLS tests serve the same answer over https from tls_schema_registry.py, with openssl's certificates.
#include <gtest/gtest.h>

#include <google/protobuf/reflection.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "../support/fake_schema_registry.h"
#include "../support/http_client.h"
#include "bloomgate/app/key_extractor.h"
#include "bloomgate/app/service_metrics.h"
#include "schema_test_support.h"
#include "service_test_support.h"

namespace bloomgate::app {
namespace {

using namespace test_support;
using bloomgate::test_support::FakeSchemaRegistry;

const std::string kOrderAvro = R"({"type": "record", "name": "Order", "fields": [
  {"name": "id", "type": ["null", "string"], "default": null},
  {"name": "lines", "type": {"type": "array", "items": "string"}}]})";
// The same order with a field added before the key: a schema evolved while the service runs.
const std::string kEvolvedAvro = R"({"type": "record", "name": "Order", "fields": [
  {"name": "note", "type": "string"},
  {"name": "id", "type": ["null", "string"], "default": null},
  {"name": "lines", "type": {"type": "array", "items": "string"}}]})";

std::string avro_order(const std::string& schema, std::optional<std::string> id) {
  return avro_datum(schema, [&](avro_value_t& r) {
    avro_value_t field;
    if (avro_value_get_by_name(&r, "note", &field, nullptr) == 0) avro_value_set_string(&field, "evolved");
    field = avro_field(r, "id");
    avro_value_t branch;
    avro_value_set_branch(&field, id ? 1 : 0, &branch);
    if (id) avro_value_set_string(&branch, id->c_str());
    else avro_value_set_null(&branch);
  });
}

config::SchemaRegistrySettings registry_at(const FakeSchemaRegistry& registry, std::uint64_t cache_size = 100) {
  config::SchemaRegistrySettings settings;
  settings.url = registry.url();
  settings.cache_size = cache_size;
  settings.timeout = std::chrono::seconds(2);
  return settings;
}

std::shared_ptr<SchemaCatalog> catalog_of(const config::SchemaRegistrySettings& registry) {
  config::Config config;
  config.schema_registry = registry;
  return make_schema_catalog(config);
}

bool answered(SchemaCatalog& catalog, std::uint32_t id, SchemaStatus status) {
  return poll_until([&] { return catalog.lookup(id).status == status; }, kWaitLimit, 10ms);
}

// ---- the client ------------------------------------------------------------------------------------

TEST(SchemaRegistryClient, AnUnseenIdIsFetchedOnceOffTheCallersThread) {
  FakeSchemaRegistry registry;
  registry.add_schema(1, "AVRO", kOrderAvro);
  const auto catalog = catalog_of(registry_at(registry));
  EXPECT_EQ(catalog->lookup(1).status, SchemaStatus::kPending);  // never blocks on the request
  ASSERT_TRUE(answered(*catalog, 1, SchemaStatus::kReady));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(catalog->lookup(1).status, SchemaStatus::kReady);
  EXPECT_EQ(registry.requests("/schemas/ids/1"), 1);
}

TEST(SchemaRegistryClient, AnIdTheRegistryDoesNotKnowIsUnknown) {
  FakeSchemaRegistry registry;
  const auto catalog = catalog_of(registry_at(registry));
  catalog->lookup(9);
  ASSERT_TRUE(answered(*catalog, 9, SchemaStatus::kUnknown));
  EXPECT_NE(catalog->lookup(9).problem.find("does not know schema id 9"), std::string::npos) << catalog->lookup(9).problem;
  EXPECT_TRUE(catalog->registry_reachable());
}

TEST(SchemaRegistryClient, WhileTheRegistryIsDownTheIdStaysPendingAndIsAskedAgain) {
  FakeSchemaRegistry registry;
  registry.add_schema(1, "AVRO", kOrderAvro);
  registry.go_down();
  const auto catalog = catalog_of(registry_at(registry));
  EXPECT_EQ(catalog->lookup(1).status, SchemaStatus::kPending);
  ASSERT_TRUE(poll_until([&] { return catalog->failed_requests() >= 2; }, kWaitLimit, 10ms));
  EXPECT_FALSE(catalog->registry_reachable());
  EXPECT_EQ(catalog->lookup(1).status, SchemaStatus::kPending);  // not unknown: the registry never said so
  registry.come_back();
  ASSERT_TRUE(answered(*catalog, 1, SchemaStatus::kReady));
  EXPECT_TRUE(catalog->registry_reachable());
}

// A registry over TLS: tests/app/tls_schema_registry.py (Python's ssl module, since no registry server is
// packaged) with certificates openssl makes for 127.0.0.1, one for the server and one for a client. It runs
// until this object is destroyed, and ends by itself after a minute if the test process dies.
class TlsRegistry {
 public:
  TlsRegistry(const TempDir& dir, bool require_client_certificate) : dir_(dir) {
    for (const char* name : {"server", "client"}) {
      const std::string command = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
                                  "-addext subjectAltName=IP:127.0.0.1 -keyout " + dir.path(std::string(name) + ".key") +
                                  " -out " + dir.path(std::string(name) + ".pem") + " 2>/dev/null";
      if (std::system(command.c_str()) != 0) throw std::runtime_error("openssl failed: " + command);
    }
    std::ofstream(dir.path("order.avsc")) << kOrderAvro;
    std::vector<std::string> args = {"/usr/bin/python3", BLOOMGATE_SOURCE_DIR "/tests/app/tls_schema_registry.py",
                                     "--cert", dir.path("server.pem"), "--key", dir.path("server.key"),
                                     "--schema-file", dir.path("order.avsc"), "--port-file", dir.path("port")};
    if (require_client_certificate) args.insert(args.end(), {"--client-ca", dir.path("client.pem")});
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
      throw std::runtime_error("could not start tls_schema_registry.py");
    }
    if (!poll_until([&] { return std::filesystem::exists(dir.path("port")); }, kWaitLimit)) {
      throw std::runtime_error("tls_schema_registry.py did not listen");
    }
  }
  ~TlsRegistry() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  TlsRegistry(const TlsRegistry&) = delete;
  TlsRegistry& operator=(const TlsRegistry&) = delete;

  config::SchemaRegistrySettings settings() const {
    config::SchemaRegistrySettings settings;
    std::string port;
    std::ifstream(dir_.path("port")) >> port;
    settings.url = "https://127.0.0.1:" + port;
    settings.timeout = std::chrono::seconds(2);
    return settings;
  }
  std::string path(const std::string& name) const { return dir_.path(name); }

 private:
  const TempDir& dir_;
  pid_t pid_ = -1;
};

bool stays_unreachable(SchemaCatalog& catalog) {
  catalog.lookup(1);
  return poll_until([&] { return catalog.failed_requests() >= 2; }, kWaitLimit, 10ms) &&
         catalog.lookup(1).status == SchemaStatus::kPending && !catalog.registry_reachable();
}

TEST(SchemaRegistryClient, AnHttpsRegistryIsVerifiedAgainstTheConfiguredCa) {
  const TempDir dir;
  const TlsRegistry registry(dir, false);
  config::SchemaRegistrySettings verified = registry.settings();
  verified.tls_ca_file = registry.path("server.pem");
  const auto catalog = catalog_of(verified);
  catalog->lookup(1);
  ASSERT_TRUE(answered(*catalog, 1, SchemaStatus::kReady)) << catalog->failed_requests() << " failed requests";
  const auto unverified = catalog_of(registry.settings());  // the system's CAs do not know this certificate
  EXPECT_TRUE(stays_unreachable(*unverified));
}

TEST(SchemaRegistryClient, AClientCertificateIsPresentedWhenTheRegistryAsksForOne) {
  const TempDir dir;
  const TlsRegistry registry(dir, true);
  config::SchemaRegistrySettings with_certificate = registry.settings();
  with_certificate.tls_ca_file = registry.path("server.pem");
  with_certificate.tls_cert_file = registry.path("client.pem");
  with_certificate.tls_key_file = registry.path("client.key");
  const auto catalog = catalog_of(with_certificate);
  catalog->lookup(1);
  ASSERT_TRUE(answered(*catalog, 1, SchemaStatus::kReady)) << catalog->failed_requests() << " failed requests";
  config::SchemaRegistrySettings without = with_certificate;
  without.tls_cert_file.clear();
  without.tls_key_file.clear();
  EXPECT_TRUE(stays_unreachable(*catalog_of(without)));
}

TEST(SchemaRegistryClient, ProtobufReferencesAreFetchedAndBuiltFirst) {
  FakeSchemaRegistry registry;
  const std::string money = "syntax = \"proto3\";\npackage common;\nmessage Money { int64 cents = 1; }\n";
  const std::string order = "syntax = \"proto3\";\npackage shop;\nimport \"common/money.proto\";\n"
                            "message Order { string id = 1; common.Money total = 2; }\n";
  registry.add_subject_version("money-value", 3, 20, "PROTOBUF", money);
  registry.add_schema(21, "PROTOBUF", order, R"([{"name": "common/money.proto", "subject": "money-value", "version": 3}])");
  const auto catalog = catalog_of(registry_at(registry));
  catalog->lookup(21);
  ASSERT_TRUE(answered(*catalog, 21, SchemaStatus::kReady)) << catalog->lookup(21).problem;
  EXPECT_EQ(registry.requests("/subjects/money-value/versions/3"), 1);
  // A key through the imported message.
  const auto schema = catalog->lookup(21).schema;
  const std::string value = framed(21, std::string(1, '\0') + protobuf_message(*schema, "shop.Order", [](auto& m) {
    const auto* total = m.GetDescriptor()->FindFieldByName("total");
    auto* money_message = m.GetReflection()->MutableMessage(&m, total);
    money_message->GetReflection()->SetInt64(money_message, money_message->GetDescriptor()->FindFieldByName("cents"), 1250);
  }));
  KeyExtractor extractor(config::KeySettings(config::KeySource::kProtobuf, "/total/cents", "", true), 4096, 1 << 20, catalog);
  const ExtractionResult result = extractor.extract({std::nullopt, value, {}});
  ASSERT_TRUE(result.has_key()) << (result.is_pending() ? "pending" : result.rejection().message);
  EXPECT_EQ(result.key().bytes(), "1250");
}

TEST(SchemaRegistryClient, TheCacheKeepsAtMostCacheSizeSchemas) {
  FakeSchemaRegistry registry;
  registry.add_schema(1, "AVRO", kOrderAvro);
  registry.add_schema(2, "AVRO", kEvolvedAvro);
  const auto catalog = catalog_of(registry_at(registry, /*cache_size=*/1));
  catalog->lookup(1);
  ASSERT_TRUE(answered(*catalog, 1, SchemaStatus::kReady));
  catalog->lookup(2);
  ASSERT_TRUE(answered(*catalog, 2, SchemaStatus::kReady));
  EXPECT_EQ(catalog->lookup(1).status, SchemaStatus::kPending);  // dropped for 2: fetched again
  ASSERT_TRUE(answered(*catalog, 1, SchemaStatus::kReady));
  EXPECT_EQ(registry.requests("/schemas/ids/1"), 2);
}

TEST(SchemaRegistryClient, BasicAuthSendsTheCredentials) {
  FakeSchemaRegistry registry;
  registry.add_schema(1, "AVRO", kOrderAvro);
  config::SchemaRegistrySettings settings = registry_at(registry);
  settings.username = "svc";
  settings.password = "hunter2";
  const auto catalog = catalog_of(settings);
  catalog->lookup(1);
  ASSERT_TRUE(answered(*catalog, 1, SchemaStatus::kReady));
  EXPECT_EQ(registry.last_authorization(), "Basic c3ZjOmh1bnRlcjI=");  // base64("svc:hunter2")
}

// ---- records from Python producers -------------------------------------------------------------------

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// schema_producers.py writes one order with python3-avro and with python3-protobuf (its module compiled
// by protoc): each keys, part by part, to the bytes the JSON pointer gives the same order.
TEST(SchemaProducers, PythonAvroAndProtobufRecordsKeyAsTheSameJson) {
  const TempDir dir;
  const std::string command = std::string(BLOOMGATE_SOURCE_DIR) + "/tests/app/schema_producers.py " + dir.path();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const auto catalog = std::make_shared<FakeSchemaCatalog>();
  catalog->add(1, config::SchemaType::kAvro, file_text(dir.path("order.avsc")));
  catalog->add(2, config::SchemaType::kProtobuf, file_text(dir.path("order.proto")));
  const std::vector<std::string> pointers = {"/id", "/count", "/total", "/price", "/paid", "/customer/id"};
  const auto key_from = [&](config::KeySource from, const std::string& value) {
    config::KeySettings settings;
    settings.parts.clear();
    for (const std::string& pointer : pointers) settings.parts.push_back({from, pointer, "", false, false});
    KeyExtractor extractor(settings, 4096, 1 << 20, catalog);
    const ExtractionResult result = extractor.extract({std::nullopt, value, {}});
    return result.has_key() ? std::string(result.key().bytes())
                            : "rejected: " + (result.is_pending() ? std::string("pending") : result.rejection().message);
  };
  const std::string json = R"({"id": "o-1", "count": -7, "total": 18000000000, "price": 42.0, "paid": true, "customer": {"id": 99}})";
  const std::string expected = key_from(config::KeySource::kJson, json);
  EXPECT_EQ(key_from(config::KeySource::kAvro, file_text(dir.path("order.avro"))), expected);
  EXPECT_EQ(key_from(config::KeySource::kProtobuf, file_text(dir.path("order.protobuf"))), expected);
}

// ---- the service -----------------------------------------------------------------------------------

config::Config avro_service(const TestBroker& broker, const FakeSchemaRegistry& registry, const std::string& name) {
  config::PipelineSettings p = pipeline(name, name, name + "-unique", std::chrono::minutes(10));
  p.dead_letter = name + "-dead";
  p.key = config::KeySettings(config::KeySource::kAvro, "/id", "", true);
  config::Config config = service_config(broker, name, {p});
  config.schema_registry = registry_at(registry);
  return config;
}

// Each forwarded input offset, from its bloomgate.source header.
std::multiset<std::int64_t> forwarded_offsets(const TestBroker& broker, const std::string& topic) {
  std::multiset<std::int64_t> out;
  for (const Record& record : read_topic(broker, topic)) out.insert(source_of(record).offset);
  return out;
}

// `count` framed Avro orders (schema 1) with the ids o-0 .. o-24 over and over, from o-`first`.
std::vector<Event> avro_orders(int first, int count) {
  std::vector<Event> events;
  for (int i = first; i < first + count; ++i) {
    events.push_back(keyed("k", framed(1, avro_order(kOrderAvro, "o-" + std::to_string(i % 25)))));
  }
  return events;
}

// Stops the service gracefully, then checks the output: `forwarded` records, each input offset once, and no
// dead letters.
void expect_stopped_with_forwarded(ServiceThread& service, const TestBroker& broker, const std::string& name,
                                   std::size_t forwarded) {
  const std::optional<RunResult> result = service.stop();
  ASSERT_TRUE(result && result->exit_code == 0) << describe(result);
  const std::multiset<std::int64_t> offsets = forwarded_offsets(broker, name + "-unique");
  EXPECT_EQ(offsets.size(), forwarded);
  EXPECT_EQ(std::set<std::int64_t>(offsets.begin(), offsets.end()).size(), offsets.size()) << "forwarded twice";
  EXPECT_TRUE(read_topic(broker, name + "-dead").empty());
}

// The value of an unlabelled series in a scrape of /metrics; -1 when the scrape has none.
double metric_value(std::uint16_t port, const std::string& name) {
  std::istringstream lines(bloomgate::testing::http_request(port, "/metrics").body);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(name + " ")) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

TEST(SchemaRegistryService, RecordsWaitWhileTheRegistryIsDownAndNothingIsLostOrForwardedTwice) {
  TestBroker broker;
  create_topics(broker, {"down", "down-unique", "down-dead"}, 1);
  FakeSchemaRegistry registry;
  registry.add_schema(1, "AVRO", kOrderAvro);
  registry.go_down();
  produce_all(broker, "down", avro_orders(0, 40));
  const config::Config config = avro_service(broker, registry, "down");
  const auto catalog = catalog_of(config.schema_registry);
  ServiceThread service(config, broker, [&](ServiceOptions& options) { options.schemas = catalog; });
  const ServiceEndpoints endpoints(service.service(), config, config.metrics.listen);
  const std::string address = endpoints.address();
  const auto port = static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
  // Held back, not dead-lettered, while the registry refuses connections (asked again after each backoff).
  ASSERT_TRUE(poll_until([&] { return catalog->failed_requests() >= 3; }, kWaitLimit));
  EXPECT_EQ(service.snapshot().consumed, 0U);
  ASSERT_TRUE(poll_until([&] { return metric_value(port, "bloomgate_partitions_waiting_for_schema") == 1; }, kWaitLimit));
  EXPECT_EQ(metric_value(port, "bloomgate_schema_registry_up"), 0);
  EXPECT_TRUE(poll_until([&] { return metric_value(port, "bloomgate_schema_registry_failed_requests_total") >= 3; },
                         kWaitLimit));
  registry.come_back();
  ASSERT_TRUE(service.wait_until_consumed(40)) << service.snapshot().consumed;
  ASSERT_TRUE(poll_until([&] { return metric_value(port, "bloomgate_partitions_waiting_for_schema") == 0; }, kWaitLimit));
  EXPECT_EQ(metric_value(port, "bloomgate_schema_registry_up"), 1);
  expect_stopped_with_forwarded(service, broker, "down", 25);  // o-0 .. o-24, each once: offsets 0..24
  EXPECT_EQ(*forwarded_offsets(broker, "down-unique").rbegin(), 24);
}

// A member without the partition's state rebuilds its filter from the input history; a record there whose
// schema cannot be fetched yet waits for it, so its key is in the filter when consumption starts.
TEST(SchemaRegistryService, ARebuildWaitsForTheSchemaSoItsKeysAreRemembered) {
  TestBroker broker;
  create_topics(broker, {"rebuild", "rebuild-unique", "rebuild-dead"}, 1);
  FakeSchemaRegistry registry;
  registry.add_schema(1, "AVRO", kOrderAvro);
  produce_all(broker, "rebuild", avro_orders(0, 25));
  {  // The first member forwards o-0 .. o-24 and commits offset 25.
    const config::Config config = avro_service(broker, registry, "rebuild");
    ServiceThread first(config, broker);
    ASSERT_TRUE(first.wait_until_consumed(25));
    const std::optional<RunResult> result = first.stop();
    ASSERT_TRUE(result && result->exit_code == 0) << describe(result);
  }
  // The next member has a fresh state directory and a catalog that has not seen schema 1, and the
  // registry is down when it rebuilds.
  registry.go_down();
  produce_all(broker, "rebuild", avro_orders(25, 25));  // the same 25 keys again
  const config::Config config = avro_service(broker, registry, "rebuild");
  const auto catalog = catalog_of(config.schema_registry);
  ServiceThread second(config, broker, [&](ServiceOptions& options) { options.schemas = catalog; });
  ASSERT_TRUE(poll_until([&] { return catalog->failed_requests() >= 3; }, kWaitLimit));
  registry.come_back();
  ASSERT_TRUE(second.wait_until_consumed(25)) << second.snapshot().consumed;
  expect_stopped_with_forwarded(second, broker, "rebuild", 25);  // not 50: the rebuilt filter has every key
}

TEST(SchemaRegistryService, EveryDeadLetterReasonAnEvolvedSchemaAndAMissingId) {
  TestBroker broker;
  create_topics(broker, {"mixed", "mixed-unique", "mixed-dead"}, 1);
  FakeSchemaRegistry registry;
  registry.add_schema(1, "AVRO", kOrderAvro);
  registry.add_schema(2, "AVRO", kEvolvedAvro);
  const std::string good = framed(1, avro_order(kOrderAvro, "o-1"));
  produce_all(broker, "mixed", {
      keyed("k", good),                                               // 0 forwarded
      keyed("k", framed(2, avro_order(kEvolvedAvro, "o-1"))),         // 1 a duplicate under the evolved schema
      keyed("k", framed(2, avro_order(kEvolvedAvro, "o-2"))),         // 2 forwarded
      keyed("k", framed(77, avro_order(kOrderAvro, "o-3"))),          // 3 unknown_schema: the registry has no 77
      keyed("k", R"({"id": "o-4"})"),                                 // 4 not_schema_framed
      keyed("k", good.substr(0, good.size() - 2)),                    // 5 malformed_avro
      keyed("k", framed(1, avro_order(kOrderAvro, std::nullopt))),    // 6 missing_field: the null branch
  });
  ServiceThread service(avro_service(broker, registry, "mixed"), broker);
  ASSERT_TRUE(service.wait_until_consumed(7)) << service.snapshot().consumed;
  ASSERT_TRUE(service.stop());
  std::map<std::int64_t, std::string> reasons;
  for (const Record& record : read_topic(broker, "mixed-dead")) {
    reasons[source_of(record).offset] = record.header("bloomgate.reason").value_or("?");
  }
  const std::map<std::int64_t, std::string> expected = {
      {3, "unknown_schema"}, {4, "not_schema_framed"}, {5, "malformed_avro"}, {6, "missing_field"}};
  EXPECT_EQ(reasons, expected);
  EXPECT_EQ(forwarded_offsets(broker, "mixed-unique"), (std::multiset<std::int64_t>{0, 2}));
}

TEST(SchemaRegistryService, ProtobufKeysDeadLetterNotAScalarAndMalformedProtobuf) {
  TestBroker broker;
  create_topics(broker, {"proto", "proto-unique", "proto-lines-unique", "proto-dead"}, 1);
  FakeSchemaRegistry registry;
  const std::string schema_text = "syntax = \"proto3\";\nmessage Order { string id = 1; repeated string lines = 2; }\n";
  registry.add_schema(5, "PROTOBUF", schema_text);
  const auto schema = CompiledSchema::compile(config::SchemaType::kProtobuf, schema_text);
  const auto order = [&](const std::string& id) {
    return framed(5, std::string(1, '\0') + protobuf_message(*schema, "Order", [&](auto& m) {
      m.GetReflection()->SetString(&m, m.GetDescriptor()->FindFieldByName("id"), id);
    }));
  };
  config::Config config = avro_service(broker, registry, "proto");
  config.pipelines[0].key.parts = {config::KeyPart{config::KeySource::kProtobuf, "/id", "", false, false},
                                   config::KeyPart{config::KeySource::kProtobuf, "/lines", "", false, false}};
  config::Config by_id = config;
  by_id.pipelines[0].key = config::KeySettings(config::KeySource::kProtobuf, "/id", "", true);
  produce_all(broker, "proto", {keyed("k", order("p-1")), keyed("k", order("p-1")), keyed("k", order("p-2")),
                                keyed("k", order("p-3").substr(0, 8))});
  {
    ServiceThread service(by_id, broker);
    ASSERT_TRUE(service.wait_until_consumed(4)) << service.snapshot().consumed;
    ASSERT_TRUE(service.stop());
  }
  EXPECT_EQ(forwarded_offsets(broker, "proto-unique"), (std::multiset<std::int64_t>{0, 2}));
  std::vector<std::string> reasons;
  for (const Record& record : read_topic(broker, "proto-dead")) reasons.push_back(record.header("bloomgate.reason").value_or("?"));
  EXPECT_EQ(reasons, std::vector<std::string>{"malformed_protobuf"});
  // A key on a repeated field: every record is not_a_scalar. Another output: the first one already holds
  // offsets 0 and 2, which reconciliation would not write again.
  config.kafka.group_id = "proto-lines";
  config.pipelines[0].output = "proto-lines-unique";
  config.state.dir = TestDirectories::instance().fresh("state");
  {
    ServiceThread service(config, broker);
    ASSERT_TRUE(service.wait_until_consumed(4)) << service.snapshot().consumed;
    ASSERT_TRUE(service.stop());
  }
  std::map<std::string, int> counts;
  for (const Record& record : read_topic(broker, "proto-dead")) ++counts[record.header("bloomgate.reason").value_or("?")];
  EXPECT_EQ(counts["not_a_scalar"], 3);
  EXPECT_EQ(counts["malformed_protobuf"], 2);
}

}  // namespace
}  // namespace bloomgate::app
