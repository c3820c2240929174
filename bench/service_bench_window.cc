// File: bench/service_bench_window.cc
//
// --window-keys N: the service's work per event on ONE partition whose filter holds N distinct keys within
// its TTL, for each filter type in the same run (time_limited and aging_fingerprint): the CPU per event of
// PartitionDeduplicator::decide() (key extraction, event clock, test_and_insert_with_age: what the service
// loop calls per record), and the filter's memory, as FilterStats::memory_bytes and as the growth of the
// process's resident memory while the partition filled. No broker: one partition's input at 10^7 keys
// per TTL is about a gigabyte, beyond the embedded broker's 5 MiB per partition, and the Kafka work per
// event does not depend on the filter type (the rounds measure it).
//
// Also, for docs/decisions/aging-fingerprint.md: the same filters through a batch of keys at a time
// (extract the keys of kBatchSize events, as the service loop takes them from the consumer, then one
// test_and_insert_batch), against decide() one event at a time, and against the same extracted keys through
// test_and_insert one call per key (what the batch call alone changes).
//
// The events: 100-byte JSON values as the rounds', keys never repeated except by the 30% repeats of one
// of the last 10,000 new keys (std::mt19937_64, seed --seed); new keys arrive at N per TTL (TTL one hour),
// so after the fill the window holds N keys and stays there. Timed blocks alternate the types and the two
// ways, rep by rep, over the same events.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include "bloomgate/app/key_extractor.h"
#include "bloomgate/app/partition_deduplicator.h"
#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/hash.h"
#include "service_bench.h"

namespace bloomgate::bench::service_bench {
namespace {

constexpr std::int64_t kTtlMs = 3'600'000;
constexpr std::size_t kBatchSize = 1024;  // the service loop's records per consumer call (service_loop.cc)
constexpr std::uint64_t kRecentKeys = 10'000;
constexpr double kRepeatShare = 0.30;
constexpr std::int64_t kStartMs = 1'700'000'000'000;

std::uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0;
  std::uint64_t resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

// The stream of events: new keys at `keys_per_ttl` per TTL, and repeats.
class WindowStream {
 public:
  WindowStream(std::uint64_t keys_per_ttl, std::uint64_t seed)
      : ms_per_key_(static_cast<double>(kTtlMs) / static_cast<double>(keys_per_ttl)), rng_(seed) {}

  // The next event's key and timestamp; repeats only once `recent` keys exist and `repeats` is set.
  std::pair<std::uint64_t, std::int64_t> next(bool repeats) {
    const std::int64_t ms = kStartMs + static_cast<std::int64_t>(static_cast<double>(new_keys_) * ms_per_key_);
    if (repeats && new_keys_ >= kRecentKeys && std::uniform_real_distribution<double>(0, 1)(rng_) < kRepeatShare) {
      return {new_keys_ - 1 - rng_() % kRecentKeys, ms};
    }
    return {new_keys_++, ms};
  }

 private:
  double ms_per_key_;
  std::mt19937_64 rng_;
  std::uint64_t new_keys_ = 0;
};

// A key's JSON value, as make_value writes it (customer, amount and pad fixed: decide() reads only order_id).
std::string value_of(std::uint64_t key) {
  char text[128];
  const int length = std::snprintf(text, sizeof text,
                                   R"({"order_id":"ord-%012llu","customer":"c-00042","amount":12.34,"seq":%llu,"pad":")",
                                   static_cast<unsigned long long>(key), static_cast<unsigned long long>(key));
  std::string value(text, static_cast<std::size_t>(length));
  value.append(value.size() < 98 ? 98 - value.size() : 0, 'x');
  return value + "\"}";
}

struct Block {
  std::vector<std::string> values;
  std::vector<std::int64_t> timestamps_ms;
};

Block next_block(WindowStream& stream, std::size_t events) {
  Block block;
  block.values.reserve(events);
  block.timestamps_ms.reserve(events);
  for (std::size_t i = 0; i < events; ++i) {
    const auto [key, ms] = stream.next(true);
    block.values.push_back(value_of(key));
    block.timestamps_ms.push_back(ms);
  }
  return block;
}

config::PipelineSettings window_pipeline(const std::string& type, std::uint64_t keys) {
  config::PipelineSettings pipeline;
  pipeline.name = "bench-window";
  pipeline.inputs = {kInputTopic};
  pipeline.output = "unused";
  pipeline.key = config::KeySettings(config::KeySource::kJson, kKeyPointer, "", true);
  pipeline.time = config::TimeSource::kEvent;
  pipeline.ttl = milliseconds(kTtlMs);
  pipeline.filter.type = type;
  pipeline.filter.error_rate = 1e-3;
  pipeline.filter.expected_per_ttl = keys;
  return pipeline;
}

// The processing time the event clock caps event times with (now + one minute, event_clock.h): the time of
// the event being decided, as a service keeping up with its input sees it.
std::int64_t g_processing_ms = kStartMs;
filters::TimePoint processing_now() { return filters::from_epoch_millis(g_processing_ms); }

// One filter type's partition: the deduplicator, and the extractor the batched way uses.
struct Side {
  std::string type;
  std::unique_ptr<app::PartitionDeduplicator> deduplicator;
  std::unique_ptr<app::KeyExtractor> extractor;
  WindowSide figures;
  std::vector<double> decide_ns;
  std::vector<double> batch_ns;
  std::vector<double> single_ns;
  std::uint64_t forwarded = 0;
  std::uint64_t decided = 0;
};

double decide_block(Side& side, const Block& block) {
  const double start = thread_cpu_seconds();
  for (std::size_t i = 0; i < block.values.size(); ++i) {
    const app::EventView view{{}, block.values[i], {}};
    g_processing_ms = block.timestamps_ms[i];
    const app::Verdict verdict = side.deduplicator->decide(view, block.timestamps_ms[i]);
    if (verdict.outcome == app::Outcome::kDeadLetter) throw std::runtime_error("decide: an event was dead-lettered");
    side.forwarded += verdict.outcome == app::Outcome::kForward ? 1U : 0U;
  }
  side.decided += block.values.size();
  return (thread_cpu_seconds() - start) * 1e9 / static_cast<double>(block.values.size());
}

// The keys of each kBatchSize events extracted, then one test_and_insert_batch: the filter's batch call in a
// loop over the consumer's batches; with `one_call_per_key`, the same keys through test_and_insert one at a
// time instead (the same work but for the batch call).
double batch_block(Side& side, const Block& block, bool one_call_per_key = false) {
  std::vector<filters::KeyHash> keys(kBatchSize);
  std::vector<filters::TimePoint> times(kBatchSize);
  std::unique_ptr<bool[]> present(new bool[kBatchSize]);
  std::uint64_t duplicates = 0;
  const double start = thread_cpu_seconds();
  for (std::size_t first = 0; first < block.values.size(); first += kBatchSize) {
    const std::size_t n = std::min(kBatchSize, block.values.size() - first);
    for (std::size_t i = 0; i < n; ++i) {
      const app::EventView view{{}, block.values[first + i], {}};
      const app::ExtractionResult extracted = side.extractor->extract(view);
      if (!extracted.has_key()) throw std::runtime_error("batch: a key could not be extracted");
      keys[i] = filters::hash_key(extracted.key().bytes());
      times[i] = filters::from_epoch_millis(block.timestamps_ms[first + i]);
    }
    filters::Filter& filter = side.deduplicator->filter();
    if (one_call_per_key) {
      for (std::size_t i = 0; i < n; ++i) present[i] = filter.test_and_insert(keys[i], times[i]);
    } else {
      filter.test_and_insert_batch(std::span(keys.data(), n), std::span(times.data(), n), std::span(present.get(), n));
    }
    for (std::size_t i = 0; i < n; ++i) duplicates += present[i] ? 1U : 0U;
  }
  const double seconds = thread_cpu_seconds() - start;
  if (duplicates > block.values.size()) throw std::logic_error("batch: more duplicates than events");
  return seconds * 1e9 / static_cast<double>(block.values.size());
}

// Fills the side's partition with `keys` new keys through decide(), measuring the resident memory it took.
void fill(Side& side, std::uint64_t keys, WindowStream& stream) {
  const std::uint64_t resident_before = resident_bytes();
  const config::PipelineSettings pipeline = window_pipeline(side.type, keys);
  side.deduplicator = std::make_unique<app::PartitionDeduplicator>(pipeline, processing_now);
  side.extractor = std::make_unique<app::KeyExtractor>(pipeline.key, pipeline.max_key_bytes, pipeline.max_value_bytes);
  std::string value;
  const double start = thread_cpu_seconds();
  for (std::uint64_t i = 0; i < keys; ++i) {
    const auto [key, ms] = stream.next(false);
    value = value_of(key);
    g_processing_ms = ms;
    (void)side.deduplicator->decide(app::EventView{{}, value, {}}, ms);
  }
  side.figures.fill_ns = (thread_cpu_seconds() - start) * 1e9 / static_cast<double>(keys);
  side.figures.resident_growth_bytes = static_cast<double>(resident_bytes()) - static_cast<double>(resident_before);
}

}  // namespace

WindowFigures measure_window(const Options& options) {
  WindowFigures w;
  w.keys = options.window_keys;
  w.events_per_block = options.window_events;
  w.reps = options.window_reps;
  std::vector<Side> sides;
  for (const char* type : {"time_limited", "aging_fingerprint"}) {
    Side side;
    side.type = type;
    sides.push_back(std::move(side));
  }
  // Each side gets the same stream: a fresh copy of it from the same seed.
  std::vector<WindowStream> streams(sides.size(), WindowStream(options.window_keys, options.seed));
  for (std::size_t s = 0; s < sides.size(); ++s) {
    std::fprintf(stderr, "service_bench: filling a %s partition with %s keys ...\n", sides[s].type.c_str(),
                 grouped(options.window_keys).c_str());
    fill(sides[s], options.window_keys, streams[s]);
  }
  WindowStream& stream = streams.front();  // the blocks, after the fill's keys: the same events for every side
  for (int rep = 0; rep < options.window_reps; ++rep) {
    const Block decided = next_block(stream, options.window_events);
    const Block batched = next_block(stream, options.window_events);
    const Block single = next_block(stream, options.window_events);
    for (std::size_t i = 0; i < sides.size(); ++i) {
      Side& side = sides[(i + static_cast<std::size_t>(rep)) % sides.size()];  // the order alternates
      const std::function<void()> ways[] = {[&] { side.decide_ns.push_back(decide_block(side, decided)); },
                                            [&] { side.batch_ns.push_back(batch_block(side, batched)); },
                                            [&] { side.single_ns.push_back(batch_block(side, single, true)); }};
      for (std::size_t way = 0; way < 3; ++way) ways[(way + static_cast<std::size_t>(rep)) % 3]();  // and the ways
    }
  }
  for (Side& side : sides) {
    const filters::FilterStats stats = side.deduplicator->filter().stats(side.deduplicator->filter_time(processing_now()));
    WindowSide& f = side.figures;
    f.type = side.type;
    f.decide_ns = median(side.decide_ns);
    f.batch_ns = median(side.batch_ns);
    f.single_ns = median(side.single_ns);
    f.memory_bytes = static_cast<double>(stats.memory_bytes);
    f.elements = stats.elements;
    f.bits_per_key = stats.bits_per_element;
    f.forwarded_share = static_cast<double>(side.forwarded) / static_cast<double>(side.decided);
    w.sides.push_back(f);
    side.deduplicator.reset();
  }
  return w;
}

}  // namespace bloomgate::bench::service_bench
