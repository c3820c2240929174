// End-to-end tests of `bloomgate run`: the Service on a thread against an embedded broker over TCP
// loopback, with what it wrote read back and compared with the exact answer computed here (an exact TTL
// map: a key is new when it was not recorded within the TTL; a key is recorded when it is new, since
// refresh_on_duplicate is off). service_lifecycle_test.cc has the start-up checks, the graceful stop and
// the real binary.
//
// Randomized streams use fixed seeds (kClicksSeed and the others below), so every run produces the same
// events. Test data stays small: the embedded broker keeps only the newest 5 MiB of a partition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <random>
#include <set>
#include <unordered_map>

#include "bloomgate/app/partition_deduplicator.h"
#include "bloomgate/filters/options.h"
#include "service_test_support.h"
#include "stream_seeds.h"

namespace bloomgate::app {
namespace {

using namespace test_support;
using std::chrono::milliseconds;

// ---- streams with a known answer ----------------------------------------------------------------------

// How long after the TTL a time-limited filter may still report a key: its last k generations fade out
// one by one, a generation being TTL / l (docs/filters.md). Both answers are right in that band.
milliseconds fade_out(const config::PipelineSettings& pipeline) {
  const filters::FilterStats stats = filters::make_filter(filter_options_for(pipeline))->stats(filters::TimePoint{});
  return stats.l == 0 ? milliseconds(0) : std::chrono::duration_cast<milliseconds>(pipeline.ttl * stats.k / stats.l);
}

struct StreamShape {
  std::uint64_t seed = 0;
  int events = 0;
  milliseconds step{};      // event time between consecutive events
  milliseconds ttl{};
  milliseconds fade_out{};  // fade_out() of the pipeline that will read the stream
};

struct Sighting {
  std::string key;
  std::int64_t timestamp_ms = 0;
};

// A seeded stream where each event repeats a key recorded at most 0.8 TTL ago (~35%), repeats a key
// recorded more than TTL + fade-out + 1 s ago (up to ~10%), or brings a fresh key. No repeat falls near
// the TTL boundary, where the exact answer and a time-limited filter may honestly differ.
std::vector<Sighting> generate_sightings(const StreamShape& shape) {
  std::mt19937_64 random(shape.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::string> keys;                         // every key, in order of creation
  std::unordered_map<std::string, std::int64_t> recorded;  // the exact TTL map
  const std::int64_t start = past_start_ms();
  const std::int64_t recent = shape.ttl.count() * 8 / 10;
  const std::int64_t stale = shape.ttl.count() + shape.fade_out.count() + 1000;
  std::vector<Sighting> stream;
  for (int i = 0; i < shape.events; ++i) {
    const std::int64_t now = start + i * shape.step.count();
    const double draw = unit(random);
    std::string key;
    if (!keys.empty() && draw < 0.45) {
      // Recent repeats come from the newest keys, stale ones from any key; a candidate whose gap is not
      // in the wanted range is replaced by a fresh key.
      const std::size_t window = draw < 0.35 ? std::min<std::size_t>(keys.size(), 40) : keys.size();
      const std::string& candidate = keys[keys.size() - 1 - std::uniform_int_distribution<std::size_t>(0, window - 1)(random)];
      const std::int64_t gap = now - recorded.at(candidate);
      if (draw < 0.35 ? gap <= recent : gap > stale) key = candidate;
    }
    if (key.empty()) {
      key = std::to_string(100'000 + keys.size());
      keys.push_back(key);
    }
    const auto it = recorded.find(key);
    if (it == recorded.end() || now - it->second > shape.ttl.count()) recorded[key] = now;
    stream.push_back({key, now});
  }
  return stream;
}

// Original headers the service must carry over: a plain one, sometimes a null value, sometimes a
// repeated name (order and repeats are kept).
std::vector<Header> original_headers(std::size_t i) {
  std::vector<Header> headers{{"trace-id", "t" + std::to_string(i)}};
  if (i % 5 == 0) headers.emplace_back("tenant", std::nullopt);
  if (i % 7 == 0) {
    headers.emplace_back("hop", "a");
    headers.emplace_back("hop", "b");
  }
  return headers;
}

// The headers a record the service wrote for `input` must carry: the input's own, then the source header
// written out by hand (not by SourceText), so a change of the interface fails here.
std::vector<Header> with_source_headers(const Record& input) {
  std::vector<Header> headers = input.headers;
  headers.emplace_back("bloomgate.source",
                       input.topic + "/" + std::to_string(input.partition) + "/" + std::to_string(input.offset));
  return headers;
}

std::map<Source, const Record*> by_position(const std::vector<Record>& records) {
  std::map<Source, const Record*> index;
  for (const Record& record : records) index[position_of(record)] = &record;
  return index;
}

// Checks that every record written (to an output or duplicates topic) is a copy of the input record its
// source header names: same key, value and timestamp, the input's headers followed by the source
// header, and (same_as_input) the same partition; and that no input record was written twice.
// Returns the input positions written.
std::set<Source> expect_copies_of_input(const std::vector<Record>& written, const std::vector<Record>& input,
                                        bool same_partition) {
  const std::map<Source, const Record*> inputs = by_position(input);
  std::set<Source> sources;
  std::size_t mismatches = 0;
  std::string first_mismatch;
  const auto mismatch = [&](const Record& record, const std::string& what) {
    if (mismatches++ == 0) first_mismatch = record.topic + "/" + std::to_string(record.partition) + "@" +
                                            std::to_string(record.offset) + ": " + what;
  };
  for (const Record& record : written) {
    const Source source = source_of(record);
    const auto it = inputs.find(source);
    if (it == inputs.end()) {
      mismatch(record, "names no input record");
      continue;
    }
    const Record& original = *it->second;
    if (!sources.insert(source).second) mismatch(record, "written twice for one input record");
    if (record.key != original.key || record.value != original.value) mismatch(record, "key or value changed");
    if (record.timestamp_ms != original.timestamp_ms) mismatch(record, "timestamp changed");
    if (record.headers != with_source_headers(original)) mismatch(record, "headers differ");
    if (same_partition && record.partition != original.partition) mismatch(record, "partition differs from input");
  }
  EXPECT_EQ(mismatches, 0U) << "first: " << first_mismatch;
  return sources;
}

// The input offsets a single-partition pipeline forwarded, in order, each checked to be a copy of its input.
std::vector<std::int64_t> forwarded_offsets(const TestBroker& broker, const std::string& input,
                                            const std::string& output) {
  std::vector<std::int64_t> offsets;
  for (const Source& source : expect_copies_of_input(read_topic(broker, output), read_topic(broker, input), true)) {
    offsets.push_back(source.offset);
  }
  return offsets;
}

// ---- the exact answer ------------------------------------------------------------------------------------

using KeyOf = std::function<std::string(const Record&)>;

struct Comparison {
  std::uint64_t events = 0;
  std::uint64_t exact_new = 0;
  std::uint64_t returning = 0;            // new by the exact answer, though the key was seen before the TTL
  std::uint64_t forwarded = 0;
  std::uint64_t false_drops = 0;          // new by the exact answer, not forwarded: false positives
  std::uint64_t repeats_of_dropped = 0;   // a duplicate by the exact answer whose recorded sighting was
                                          // falsely dropped: forwarding it is the false positive's echo
  std::uint64_t forwarded_within_ttl = 0; // forwarded within the TTL of a forwarded sighting: must be 0
};

// `input` in (partition, offset) order: since a key stays on one partition, that is time order per key.
Comparison compare_with_exact(const std::vector<Record>& input, const std::set<Source>& forwarded, const KeyOf& key_of,
                              milliseconds ttl) {
  struct Recorded {
    std::int64_t timestamp_ms;
    bool forwarded;
  };
  std::unordered_map<std::string, Recorded> recorded;      // the exact TTL map
  std::unordered_map<std::string, std::int64_t> last_forwarded;
  Comparison result;
  for (const Record& record : input) {
    const std::string key = key_of(record);
    const bool was_forwarded = forwarded.count(position_of(record)) != 0;
    ++result.events;
    result.forwarded += was_forwarded ? 1U : 0U;
    const auto it = recorded.find(key);
    if (it == recorded.end() || record.timestamp_ms - it->second.timestamp_ms > ttl.count()) {
      ++result.exact_new;
      result.returning += it != recorded.end() ? 1U : 0U;
      result.false_drops += was_forwarded ? 0U : 1U;
      recorded[key] = {record.timestamp_ms, was_forwarded};
    } else if (was_forwarded) {
      ++(it->second.forwarded ? result.forwarded_within_ttl : result.repeats_of_dropped);
    }
    if (!was_forwarded) continue;
    const auto last = last_forwarded.find(key);
    if (last != last_forwarded.end() && record.timestamp_ms - last->second <= ttl.count()) ++result.forwarded_within_ttl;
    last_forwarded[key] = record.timestamp_ms;
  }
  return result;
}

std::string summary(const Comparison& c) {
  std::ostringstream text;
  text << c.events << " events, " << c.exact_new << " new by the exact answer (" << c.returning
       << " of them keys back after the TTL), " << c.forwarded << " forwarded, "
       << c.false_drops << " false drops, " << c.repeats_of_dropped << " repeats of dropped keys forwarded, "
       << c.forwarded_within_ttl << " forwarded within the TTL of a forwarded sighting";
  return text.str();
}

// Reads a pipeline's input and output back and holds them to the exact answer, content and placement.
void expect_pipeline_matches_exact(const TestBroker& broker, const config::PipelineSettings& pipeline,
                                   const KeyOf& key_of) {
  SCOPED_TRACE("pipeline " + pipeline.name);
  const std::vector<Record> input = read_topic(broker, pipeline.inputs.front());
  const std::set<Source> forwarded = expect_copies_of_input(read_topic(broker, pipeline.output), input, true);
  const auto ttl = std::chrono::duration_cast<milliseconds>(pipeline.ttl);
  const Comparison result = compare_with_exact(input, forwarded, key_of, ttl);
  // Zero tolerance: a Bloom filter has no false negatives, so a key is never forwarded twice in a TTL.
  EXPECT_EQ(result.forwarded_within_ttl, 0U) << summary(result);
  // False drops are the filter's false positives: each new event is dropped with probability at most
  // error_rate, so their count is about Binomial(exact_new, error_rate). Three times the mean (at least
  // 5) is far in its tail: exceeding it means the filter missed its configured rate, not bad luck.
  const double expected_false_drops = static_cast<double>(result.exact_new) * pipeline.filter.error_rate;
  EXPECT_LE(static_cast<double>(result.false_drops), std::max(5.0, 3 * expected_false_drops)) << summary(result);
  EXPECT_EQ(result.forwarded, result.exact_new - result.false_drops + result.repeats_of_dropped) << summary(result);
  EXPECT_GT(result.exact_new, result.events / 3) << "the stream should be a mix: " << summary(result);
  EXPECT_GT(result.returning, result.events / 50) << "the stream should bring keys back: " << summary(result);
  EXPECT_LT(result.exact_new, result.events * 9 / 10) << "the stream should be a mix: " << summary(result);
}

// Produces a stream of sightings to `topic` (partitioned by message key), each event built by `make`.
void produce_sightings(const TestBroker& broker, const std::string& topic, const std::vector<Sighting>& stream,
                       const std::function<std::string(const Sighting&, std::size_t)>& make_value) {
  std::vector<Event> events;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    events.push_back({stream[i].key, make_value(stream[i], i), original_headers(i), stream[i].timestamp_ms});
  }
  produce_all(broker, topic, events);
}

std::string json_value_of(const Record& record, std::string_view field) {
  const std::string& value = *record.value;
  const std::size_t at = value.find(field);
  return value.substr(at + field.size(), value.find_first_of(",}", at) - at - field.size());
}

// ---- the tests -------------------------------------------------------------------------------------------

TEST(ServiceEndToEnd, ForwardsOnlyNewKeysPerPipelineAndPreservesEveryRecord) {
  TestBroker broker;
  create_topics(broker, {"clicks", "clicks-unique", "orders", "orders-unique"}, 4);
  config::PipelineSettings clicks = pipeline("clicks", "clicks", "clicks-unique", 10s);
  clicks.filter.error_rate = 0.01;
  clicks.filter.expected_per_ttl = 80;  // per partition: what the streams bring (~320 new keys per TTL over 4)
  config::PipelineSettings orders = pipeline("orders", "orders", "orders-unique", 4s);
  orders.key = {config::KeySource::kJson, "/order/id", "", true};
  orders.filter = clicks.filter;

  const auto click_stream = generate_sightings({kClicksSeed, 2500, 20ms, 10s, fade_out(clicks)});
  const auto order_stream = generate_sightings({kOrdersSeed, 2500, 15ms, 4s, fade_out(orders)});
  produce_sightings(broker, "clicks", click_stream,
                    [](const Sighting&, std::size_t i) { return "click " + std::to_string(i); });
  // The order id is a JSON number (the message key carries the same digits, for partitioning).
  produce_sightings(broker, "orders", order_stream, [](const Sighting& sighting, std::size_t i) {
    return R"({"order":{"id":)" + sighting.key + R"(,"line":)" + std::to_string(i) + R"(},"note":"n"})";
  });

  run_until_consumed(broker, service_config(broker, "two-pipelines", {clicks, orders}), 5000);
  expect_pipeline_matches_exact(broker, clicks, [](const Record& record) { return *record.key; });
  expect_pipeline_matches_exact(broker, orders, [](const Record& record) { return json_value_of(record, "\"id\":"); });
}

// One pipeline per key source, each on its own single-partition topics, in one service.
struct KeySourceCase {
  config::PipelineSettings pipeline;
  std::vector<Event> events;
  std::vector<std::int64_t> forwarded;  // the input offsets that must be forwarded
};

KeySourceCase key_source_case(const std::string& name, config::KeySettings key, std::vector<Event> events,
                              std::vector<std::int64_t> forwarded) {
  config::PipelineSettings settings = pipeline(name, name + "-in", name + "-out", 1h);
  settings.key = std::move(key);
  const std::int64_t start = past_start_ms();
  for (std::size_t i = 0; i < events.size(); ++i) events[i].timestamp_ms = start + static_cast<std::int64_t>(i) * 10;
  return {settings, std::move(events), std::move(forwarded)};
}

TEST(ServiceEndToEnd, DeduplicatesByEachKeySource) {
  const std::vector<KeySourceCase> cases{
      key_source_case("by-message-key", {config::KeySource::kMessageKey, "", "", true},
                      {keyed("user-1", "a"), keyed("user-2", "a"), keyed("user-1", "b"), keyed("user-10", "a")},
                      {0, 1, 3}),
      key_source_case("by-json", {config::KeySource::kJson, "/order/id", "", true},
                      {keyed("m1", R"({"order":{"id":"A-1"},"qty":1})"),
                       keyed("m2", R"({"order":{"id":"A-1"},"qty":2})"),             // other fields differ
                       keyed("m3", R"({"qty":3,"order":{"note":"x","id":"A-1"}})"),  // other order, same key
                       keyed("m4", R"({"order":{"id":42}})"),
                       keyed("m5", R"({"order":{"id":"42"}})"),  // a number and its digits are one key
                       keyed("m6", R"({"order":{"id":42.0}})"),  // "42.0" is another key
                       keyed("m7", R"({"order":{"id":"A-2"}})")},
                      {0, 3, 5, 6}),
      key_source_case("by-header", {config::KeySource::kHeader, "", "event-id", true},
                      {keyed("k1", "v", {{"event-id", "e1"}}), keyed("k2", "v", {{"event-id", "e1"}}),
                       keyed("k1", "v", {{"event-id", "e2"}}),
                       keyed("k3", "w", {{"event-id", "e9"}, {"event-id", "e2"}})},  // the last one counts
                      {0, 2}),
      key_source_case("by-value", {config::KeySource::kValue, "", "", true},
                      {keyed("k1", "payload-1"), keyed("k2", "payload-1"), keyed("k1", "payload-2"),
                       keyed("k1", "payload-1 ")},
                      {0, 2, 3}),
  };
  TestBroker broker;
  std::vector<config::PipelineSettings> pipelines;
  std::uint64_t events = 0;
  // Every topic before the first client: once clients are connected, each embedded-broker operation
  // waits up to a second for the mock cluster's thread.
  for (const KeySourceCase& c : cases) create_topics(broker, {c.pipeline.inputs.front(), c.pipeline.output}, 1);
  for (const KeySourceCase& c : cases) {
    produce_all(broker, c.pipeline.inputs.front(), c.events);
    pipelines.push_back(c.pipeline);
    events += c.events.size();
  }
  run_until_consumed(broker, service_config(broker, "key-sources", pipelines), events);
  for (const KeySourceCase& c : cases) {
    EXPECT_EQ(forwarded_offsets(broker, c.pipeline.inputs.front(), c.pipeline.output), c.forwarded) << c.pipeline.name;
  }
}

TEST(ServiceEndToEnd, SendsEveryEventToExactlyOneOfOutputAndDuplicates) {
  TestBroker broker;
  create_topics(broker, {"views", "views-unique", "views-duplicates"}, 4);
  config::PipelineSettings views = pipeline("views", "views", "views-unique", 5s);
  views.duplicates = "views-duplicates";
  const auto stream = generate_sightings({kDuplicatesSeed, 1500, 10ms, 5s, fade_out(views)});
  produce_sightings(broker, "views", stream, [](const Sighting&, std::size_t i) { return std::to_string(i); });

  run_until_consumed(broker, service_config(broker, "duplicates-topic", {views}), stream.size());
  const std::vector<Record> input = read_topic(broker, "views");
  const std::set<Source> forwarded = expect_copies_of_input(read_topic(broker, "views-unique"), input, true);
  const std::set<Source> dropped = expect_copies_of_input(read_topic(broker, "views-duplicates"), input, false);
  std::size_t in_both = 0;
  std::size_t in_neither = 0;
  for (const Record& record : input) {
    const Source position = position_of(record);
    const bool out = forwarded.count(position) != 0;
    const bool dup = dropped.count(position) != 0;
    in_both += out && dup ? 1 : 0;
    in_neither += !out && !dup ? 1 : 0;
  }
  EXPECT_EQ(in_both, 0U);
  EXPECT_EQ(in_neither, 0U);
  EXPECT_EQ(forwarded.size() + dropped.size(), input.size());
  EXPECT_GT(dropped.size(), input.size() / 5) << "the stream repeats keys";
}

TEST(ServiceEndToEnd, DeadLettersUnkeyableEventsWithTheReasonAndTheSource) {
  TestBroker broker;
  create_topics(broker, {"payments", "payments-unique", "payments-dlq"}, 1);
  config::PipelineSettings payments = pipeline("payments", "payments", "payments-unique", 1h);
  payments.dead_letter = "payments-dlq";
  payments.key = {config::KeySource::kJson, "/id", "", true};
  payments.max_key_bytes = 16;
  payments.max_value_bytes = 200;
  const std::string long_key = "this-key-is-far-too-long";
  const std::vector<std::pair<std::string, std::string>> values{
      {R"({"id":"p-1"})", ""},
      {R"({"id": "p-2")", "malformed_json"},
      {R"({"id":"p-2"})", ""},
      {R"({"amount":5})", "missing_field"},
      {R"({"id":""})", "empty_key"},
      {R"({"id":")" + long_key + R"("})", "key_too_large"},
      {R"({"id":"p-3","pad":")" + std::string(250, 'x') + R"("})", "value_too_large"},
      {R"({"id":"p-3"})", ""},
      {R"({"id":"p-1"})", ""},  // a duplicate: dropped
  };
  std::vector<Event> events;
  for (std::size_t i = 0; i < values.size(); ++i) {
    events.push_back(keyed("m" + std::to_string(i), values[i].first, {{"origin", "test"}}));
  }
  produce_all(broker, "payments", events);

  run_until_consumed(broker, service_config(broker, "dead-letters", {payments}), events.size());
  EXPECT_EQ(forwarded_offsets(broker, "payments", "payments-unique"), (std::vector<std::int64_t>{0, 2, 7}));
  const std::vector<Record> input = read_topic(broker, "payments");

  const std::vector<Record> dead = read_topic(broker, "payments-dlq");
  std::vector<std::string> reasons;
  for (const Record& record : dead) {
    const Source source = source_of(record);
    ASSERT_EQ(source.topic, "payments");
    ASSERT_LT(static_cast<std::size_t>(source.offset), input.size());
    const Record& original = input[static_cast<std::size_t>(source.offset)];
    SCOPED_TRACE("dead letter of input offset " + std::to_string(source.offset));
    EXPECT_EQ(record.key, original.key);
    EXPECT_EQ(record.value, original.value);
    EXPECT_EQ(record.timestamp_ms, original.timestamp_ms);
    std::vector<Header> expected = with_source_headers(original);
    const std::string reason = record.header(headers::kReason).value_or("(none)");
    const std::string error = record.header(headers::kError).value_or("");
    expected.emplace_back(headers::kPipeline, "payments");
    expected.emplace_back(headers::kReason, values[static_cast<std::size_t>(source.offset)].second);
    expected.emplace_back(headers::kError, error);
    EXPECT_EQ(record.headers, expected);
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(error.find(long_key), std::string::npos) << error;
    EXPECT_EQ(error.find("p-3"), std::string::npos) << error;
    reasons.push_back(reason);
  }
  EXPECT_EQ(reasons, (std::vector<std::string>{"malformed_json", "missing_field", "empty_key", "key_too_large",
                                               "value_too_large"}));
}

// A key of parts: (tenant, event_id) from the JSON value and the region header. Stream key n is the tuple
// (tenant n % 5, event n / 10, region (n / 5) % 2), so every part is needed to tell two keys apart. The
// tenant is written in varying case and padding, which the part's trim and lowercase make one key; the
// value carries the event's position, so no other field could stand in for the key.
config::KeySettings tenant_event_region_key() {
  config::KeySettings key;
  key.parts = {{config::KeySource::kJson, "/tenant", "", true, true},
               {config::KeySource::kJson, "/event/id", "", false, false},
               {config::KeySource::kHeader, "", "region", false, false}};
  return key;
}

TEST(ServiceEndToEnd, DeduplicatesByAKeyOfTwoJsonFieldsAndAHeader) {
  TestBroker broker;
  create_topics(broker, {"events", "events-unique"}, 4);
  config::PipelineSettings events = pipeline("events", "events", "events-unique", 4s);
  events.key = tenant_event_region_key();
  events.filter.error_rate = 0.01;
  events.filter.expected_per_ttl = 80;
  const auto stream = generate_sightings({kKeyPartsSeed, 2500, 15ms, 4s, fade_out(events)});
  const std::vector<std::string> tenant_spellings{"Tenant-", "tenant-", " TENANT-", "tenant-"};
  std::vector<Event> produced;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    const long n = std::stol(stream[i].key) - 100'000;
    const std::string tenant = tenant_spellings[i % tenant_spellings.size()] + std::to_string(n % 5) + (i % 3 == 0 ? "  " : "");
    const std::string value = R"({"tenant":")" + tenant + R"(","event":{"id":)" + std::to_string(n / 10) +
                              R"(,"position":)" + std::to_string(i) + "}}";
    std::vector<Header> headers = original_headers(i);
    headers.emplace_back("region", (n / 5) % 2 == 0 ? "eu" : "us");
    produced.push_back({stream[i].key, value, headers, stream[i].timestamp_ms});
  }
  produce_all(broker, "events", produced);

  run_until_consumed(broker, service_config(broker, "key-parts", {events}), produced.size());
  // The exact answer's key: the same three parts, normalised the same way, taken from the record.
  expect_pipeline_matches_exact(broker, events, [](const Record& record) {
    std::string tenant = json_value_of(record, "\"tenant\":");
    std::erase(tenant, ' ');
    std::erase(tenant, '"');
    std::transform(tenant.begin(), tenant.end(), tenant.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return tenant + "|" + json_value_of(record, "\"id\":") + "|" + record.header("region").value_or("?");
  });
}

TEST(ServiceEndToEnd, DeadLettersAnEventMissingAKeyPartNamingThePart) {
  TestBroker broker;
  create_topics(broker, {"visits", "visits-unique", "visits-dlq"}, 1);
  config::PipelineSettings visits = pipeline("visits", "visits", "visits-unique", 1h);
  visits.dead_letter = "visits-dlq";
  visits.key = tenant_event_region_key();
  const std::vector<Event> events{
      keyed("m0", R"({"tenant":"a","event":{"id":1}})", {{"region", "eu"}}),
      keyed("m1", R"({"tenant":"a","event":{"id":1}})", {{"region", "us"}}),  // another region: new
      keyed("m2", R"({"tenant":"a","event":{}})", {{"region", "eu"}}),       // no event id
      keyed("m3", R"({"tenant":"A ","event":{"id":1}})", {{"region", "eu"}}), // m0 again, once normalised
      keyed("m4", R"({"tenant":"a","event":{"id":2}})", {}),                 // no region header
  };
  produce_all(broker, "visits", events);

  run_until_consumed(broker, service_config(broker, "key-part-dead-letters", {visits}), events.size());
  EXPECT_EQ(forwarded_offsets(broker, "visits", "visits-unique"), (std::vector<std::int64_t>{0, 1}));
  std::vector<std::string> dead;
  for (const Record& record : read_topic(broker, "visits-dlq")) {
    dead.push_back(std::to_string(source_of(record).offset) + " " + record.header(headers::kReason).value_or("?") + ": " +
                   record.header(headers::kError).value_or("?"));
  }
  EXPECT_EQ(dead, (std::vector<std::string>{
                      "2 missing_field: key part 2 of 3 (json /event/id): no field at JSON pointer /event/id",
                      "4 missing_header: key part 3 of 3 (header region): no header named \"region\""}));
}

// "sensors" (`partitions` partitions) and its output, keyed by the JSON field /id, with no dead-letter
// topic; 15 events on each partition, of which partition 0's offset kBadOffset is not JSON.
constexpr std::int64_t kBadOffset = 10;

config::PipelineSettings sensors_without_dead_letters(TestBroker& broker, int partitions) {
  create_topics(broker, {"sensors", "sensors-unique"}, partitions);
  config::PipelineSettings sensors = pipeline("sensors", "sensors", "sensors-unique", 1h);
  sensors.key = {config::KeySource::kJson, "/id", "", true};
  std::vector<Event> events;
  for (std::int32_t partition = 0; partition < partitions; ++partition) {
    for (std::int64_t i = 0; i < 15; ++i) {
      const bool bad = partition == 0 && i == kBadOffset;
      const std::string id = "s-" + std::to_string(partition) + "-" + std::to_string(i);
      Event event = keyed("m" + std::to_string(i), bad ? "{not json" : R"({"id":")" + id + R"("})");
      event.partition = partition;
      events.push_back(std::move(event));
    }
  }
  produce_all(broker, "sensors", events);
  return sensors;
}

TEST(ServiceEndToEnd, StopsWithoutLosingAnUnkeyableEventWhenThereIsNoDeadLetterTopic) {
  TestBroker broker;
  const config::PipelineSettings sensors = sensors_without_dead_letters(broker, 1);

  ServiceThread service(service_config(broker, "no-dead-letter", {sensors}), broker);
  const std::optional<RunResult> result = service.wait_for_exit();
  ASSERT_TRUE(result && result->exit_code == kExitServiceFailed) << describe(result);
  EXPECT_NE(result->error.find("sensors/0 offset 10"), std::string::npos) << result->error;
  EXPECT_NE(result->error.find("malformed_json"), std::string::npos) << result->error;

  EXPECT_EQ(forwarded_offsets(broker, "sensors", "sensors-unique"),
            (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_LE(committed_offsets(broker, "no-dead-letter", "sensors").at(0), kBadOffset)
      << "the bad event must be consumed again after a restart";
}

// Two workers, and the one owning partition 0 meets an unkeyable event with no dead-letter topic: it
// stops there without committing it, the other worker stops cleanly, and the process's result is the
// failure.
TEST(ServiceEndToEnd, AWorkerThatFailsStopsTheOtherWorkerCleanly) {
  TestBroker broker;
  const config::PipelineSettings sensors = sensors_without_dead_letters(broker, 2);

  config::Config config = service_config(broker, "worker-fails", {sensors});
  config.workers = 2;
  ServiceThread service(config, broker);
  const std::optional<RunResult> result = service.wait_for_exit();
  ASSERT_TRUE(result && result->exit_code == kExitServiceFailed) << describe(result);
  EXPECT_NE(result->error.find("sensors/0 offset 10"), std::string::npos) << result->error;
  EXPECT_EQ(service.service().count(), 2U);

  // Whichever worker owned partition 1 when the other failed, what it committed was written, once.
  const auto committed = committed_offsets(broker, "worker-fails", "sensors");
  EXPECT_LE(committed.at(0), kBadOffset) << "the bad event must be consumed again after a restart";
  std::map<std::int32_t, std::set<std::int64_t>> forwarded;
  for (const Source& source : expect_copies_of_input(read_topic(broker, "sensors-unique"), read_topic(broker, "sensors"), true)) {
    EXPECT_TRUE(forwarded[source.partition].insert(source.offset).second) << "forwarded twice: " << source.offset;
  }
  for (std::int64_t offset = 0; offset < committed.at(1); ++offset) {
    EXPECT_EQ(forwarded[1].count(offset), 1U) << "committed but not written: sensors/1 offset " << offset;
  }
  for (const std::int64_t offset : forwarded[0]) EXPECT_LT(offset, kBadOffset);
}

TEST(ServiceEndToEnd, EventTimeJudgesByRecordTimestampsProcessingTimeByArrival) {
  TestBroker broker;
  create_topics(broker, {"by-event", "by-event-out", "by-arrival", "by-arrival-out"}, 1);
  config::PipelineSettings event_time = pipeline("event-time", "by-event", "by-event-out", 10s);
  config::PipelineSettings processing_time = pipeline("processing-time", "by-arrival", "by-arrival-out", 10s);
  processing_time.time = config::TimeSource::kProcessing;
  const std::int64_t start = past_start_ms();
  // sensor-1 again 15 minutes of event time later (far beyond TTL and fade-out), sensor-2 within the TTL;
  // all produced within milliseconds.
  const std::vector<Event> events{{"sensor-1", "a", {}, start, 0},
                                  {"sensor-2", "b", {}, start + 1000, 0},
                                  {"sensor-2", "c", {}, start + 2000, 0},
                                  {"sensor-1", "d", {}, start + 15 * 60 * 1000, 0}};
  produce_all(broker, "by-event", events);
  produce_all(broker, "by-arrival", events);

  run_until_consumed(broker, service_config(broker, "time-sources", {event_time, processing_time}), 8);
  EXPECT_EQ(forwarded_offsets(broker, "by-event", "by-event-out"), (std::vector<std::int64_t>{0, 1, 3}));
  EXPECT_EQ(forwarded_offsets(broker, "by-arrival", "by-arrival-out"), (std::vector<std::int64_t>{0, 1}));
}

}  // namespace
}  // namespace bloomgate::app
