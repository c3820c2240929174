// File: bench/filter_bench.cc
//
// The filter benchmark: for every filter type make_filter() builds and every error rate, ns per
// test_and_insert in cache (about 1 MiB) and out of cache (256 MiB by default), bits per element over the
// window at steady state, and the measured false-positive rate; in the same run, on the same key stream,
// two baselines: a split-block Bloom filter (the speed limit of any Bloom filter) and an exact TTL set
// (std::unordered_map, what people write by hand). Speed is reported as a ratio against the split-block
// filter measured in the same run and memory as a ratio against the exact TTL set; absolute figures are
// printed too but mean little on a shared machine. See bench/README.md.
//
// This is a benchmark, not a test: it never judges timings by its exit code. It exits non-zero only when a
// figure it should have produced is missing or not a number (the smoke test checks that).

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "bloomgate/filters/bit_slice.h"
#include "bloomgate/filters/column_segment.h"
#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/fpr.h"
#include "bloomgate/filters/hash.h"
#include "bloomgate/filters/options.h"
#include "bloomgate/filters/time.h"
#include "exact_ttl_set.h"
#include "json_writer.h"
#include "k_line_bloom.h"
#include "key_stream.h"
#include "split_block_bloom.h"
#include "tlbf_ramp.h"
#include "tlbf_sweep.h"

namespace bloomgate::bench {
namespace {

using filters::Duration;
using filters::Filter;
using filters::FilterOptions;
using filters::FilterType;
using filters::KeyHash;
using filters::TimePoint;

constexpr double kMiB = 1024.0 * 1024.0;

// ------------------------------------------------------------------------------------------------------
// The filter table: one row per filter type, all built through make_filter(). A type make_filter() does
// not build yet (std::invalid_argument) prints as "n/a" and is picked up automatically once it exists.

enum class OutOfCacheSize {
  kFull,     // the --out-of-cache-mib stream (256 MiB of time-limited filter by default)
  kReduced,  // the --slow-out-of-cache-mib stream: for types too slow or too large for the full size
};

struct FilterEntry {
  const char* name;  // as filters::filter_type_name()
  FilterType type;
  OutOfCacheSize out_of_cache;
};

constexpr FilterEntry kFilterTable[] = {
    {"time_limited", FilterType::kTimeLimited, OutOfCacheSize::kFull},
    {"age_partitioned", FilterType::kAgePartitioned, OutOfCacheSize::kReduced},
    {"continuous", FilterType::kContinuous, OutOfCacheSize::kReduced},
    {"bloom", FilterType::kBloom, OutOfCacheSize::kReduced},
    {"scalable", FilterType::kScalable, OutOfCacheSize::kReduced},
    {"spectral", FilterType::kSpectral, OutOfCacheSize::kReduced},
};

// ------------------------------------------------------------------------------------------------------
// Settings and results.

struct Config {
  bool quick = false;
  std::vector<std::string> filters;
  std::vector<double> rates = {1e-2, 1e-3, 1e-4};
  double in_cache_mib = 1;
  double out_of_cache_mib = 256;
  double slow_out_of_cache_mib = 32;
  double exact_max_mib = 2048;  // the exact TTL set runs out of cache only when its estimate fits
  std::string json;
  std::uint64_t seed = 0x5eed'b100'6a7eULL;
  double warmup_ttls = 3;              // in cache: bits per element and FPR are sampled after it
  double out_of_cache_warmup_ttls = 1.25;  // out of cache: enough to replace every slice of the creation state
  int repetitions = 5;
  std::uint64_t block_in_cache = 200'000;
  std::uint64_t block_out_of_cache = 400'000;
  std::uint64_t min_fpr_probes = 1'000'000;  // at least 10 / error rate in any case
};

// One stream size: keys per TTL and what the stream is for.
struct StreamPlan {
  std::string label;  // "in cache", "out of cache", "out of cache (reduced)"
  std::uint64_t keys_per_ttl = 0;
  double target_mib = 0;
  bool measure_quality = false;  // bits per element and FPR (done on the in-cache stream)
  std::uint64_t block_events = 0;  // per timed block; all blocks together span at most half a TTL
  double warmup_ttls = 0;
  // Out of cache only: the warm-up skips the repeats. A repeat is of a key inserted less than a TTL ago, so
  // every filter reports it present and changes nothing (no refresh); skipping it saves 30% of the warm-up.
  bool warmup_skips_repeats = false;
};

struct FilterResult {
  bool available = false;
  std::string note;  // why it is n/a, or an error
  double mib = kNaN;
  Timing timing;
  Timing batch_timing;  // test_and_insert_batch, kBatchKeys keys per call
  std::uint64_t slices = 0;
  std::uint32_t k = 0;
  std::uint32_t l = 0;
  double bits_per_element = kNaN;  // after warm-up (three TTLs)
  double bits_per_element_mean = kNaN;  // sampled over the following TTL
  double bits_per_element_max = kNaN;
  std::uint64_t distinct_in_window = 0;
  double fpr = kNaN;
  std::uint64_t fpr_probes = 0;
  std::uint64_t false_positives = 0;
  double estimated_fpr = kNaN;  // stats().estimated_fpr at the end
  // Sliced filters (l > 0): slices an absent-key query probes, modelled from the measured slice fills.
  double model_absent_probes = kNaN;
};

struct SbbfResult {
  double mib = kNaN;
  double bits_per_key = kNaN;
  Timing timing;
  Timing batch_timing;
  double fpr = kNaN;
  std::uint64_t fpr_probes = 0;
};

struct ExactResult {
  bool ran = false;
  std::string note;
  double mib = kNaN;
  std::uint64_t entries = 0;
  double bytes_per_entry = kNaN;
  Timing timing;
};

// The k-line floor (k_line_bloom.h): out-of-cache streams only.
struct FloorResult {
  bool ran = false;
  std::uint32_t k = 0;
  double mib = kNaN;
  Timing timing;
};

struct Baselines {
  SbbfResult sbbf;
  ExactResult exact;
  FloorResult floor;
};

// ------------------------------------------------------------------------------------------------------
// Measurement helpers.

std::uint64_t warmup_events(const KeyStream& stream, const StreamPlan& plan) {
  return static_cast<std::uint64_t>(plan.warmup_ttls * static_cast<double>(stream.events_per_ttl()));
}

std::uint64_t block_events(const KeyStream& stream, const StreamPlan& plan, const Config& config) {
  const std::uint64_t half_ttl = stream.events_per_ttl() / 2 / static_cast<std::uint64_t>(config.repetitions);
  return std::max<std::uint64_t>(1000, std::min(plan.block_events, half_ttl));
}

std::uint64_t fpr_probe_count(double rate, const Config& config) {
  const auto minimum = static_cast<std::uint64_t>(std::ceil(10.0 / rate));
  return std::max(minimum, config.min_fpr_probes);
}

TimePoint at(std::int64_t ns) { return filters::from_epoch_nanos(ns); }

// Keys per test_and_insert_batch call: about one consumer poll's worth.
constexpr std::size_t kBatchKeys = 1024;

// Like time_blocks, for the batch API: `op(keys, times, present)` is called on spans of kBatchKeys events.
template <typename BatchOp>
Timing time_batches(KeyStream& stream, std::uint64_t block_events, int repetitions, BatchOp&& op) {
  std::vector<KeyHash> keys(block_events);
  std::vector<TimePoint> times(block_events);
  std::unique_ptr<bool[]> answers(new bool[block_events]);
  std::vector<double> per_op;
  std::uint64_t present = 0;
  for (int r = 0; r < repetitions; ++r) {
    for (std::uint64_t i = 0; i < block_events; ++i) {
      const Event e = stream.next();
      keys[i] = KeyHash{e.key};
      times[i] = at(e.now_ns);
    }
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t begin = 0; begin < block_events; begin += kBatchKeys) {
      const std::size_t size = std::min<std::size_t>(kBatchKeys, block_events - begin);
      op(std::span<const KeyHash>(keys).subspan(begin, size), std::span<const TimePoint>(times).subspan(begin, size),
         std::span<bool>(answers.get() + begin, size));
    }
    const auto stop = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < block_events; ++i) present += answers[i] ? 1U : 0U;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(stop - start).count();
    per_op.push_back(static_cast<double>(ns) / static_cast<double>(block_events));
  }
  return summarize(per_op, present, block_events * static_cast<std::uint64_t>(repetitions));
}

// For the age-partitioned family (stats().l > 0): the expected number of slices a query for an absent key
// reads, by Monte Carlo over the measured slice fills. It follows detail::k_consecutive_match: slices are
// newest first, the search starts at the oldest window, moves one slice newer on a match and jumps k older
// positions back on a miss; an expired slice fails without being read. Out of cache, every slice read is a
// cache miss of its own (the slices are separate arrays), so probes + k (the insertion) estimate the cache
// lines a new key costs, against one for the split-block filter.
double model_absent_probes(const filters::FilterStats& s) {
  if (s.l == 0 || s.k == 0 || s.slice_stats.size() < s.k) return kNaN;
  const auto n = static_cast<std::int64_t>(s.slice_stats.size());
  const auto run = static_cast<std::int64_t>(s.k);
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  constexpr int kTrials = 20'000;
  std::uint64_t probes = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::int64_t i = n - run;
    std::int64_t matched_above = 0;
    std::int64_t matched = 0;
    while (i >= 0) {
      const filters::SliceStats& slice = s.slice_stats[static_cast<std::size_t>(i)];
      bool match = false;
      if (!slice.expired) {
        ++probes;
        match = uniform(rng) < slice.fill_ratio;
      }
      if (match) {
        if (matched_above + ++matched == run) break;
        ++i;
      } else {
        i -= run;
        matched_above = matched;
        matched = 0;
      }
    }
  }
  return static_cast<double>(probes) / kTrials;
}

FilterOptions options_for(FilterType type, double rate, std::uint64_t keys_per_ttl, std::int64_t ttl_ns) {
  FilterOptions o;
  o.type = type;
  o.error_rate = rate;
  o.ttl = Duration{ttl_ns};
  o.expected_per_ttl = keys_per_ttl;
  o.window = keys_per_ttl;  // age_partitioned: a count window of one TTL's keys
  return o;
}

// Keys per TTL at which the time-limited filter for `rate` takes `mib` MiB: its size at creation is
// proportional to expected_per_ttl, so one small filter calibrates the scale.
std::uint64_t keys_for_mib(double rate, double mib) {
  constexpr std::uint64_t kProbeKeys = 1 << 20;
  const auto filter = filters::make_filter(options_for(FilterType::kTimeLimited, rate, kProbeKeys, 1'000'000'000));
  const double bits_per_key = static_cast<double>(filter->stats(at(kStartNs)).bits) / kProbeKeys;
  return std::max<std::uint64_t>(1000, static_cast<std::uint64_t>(mib * kMiB * 8.0 / bits_per_key));
}

FilterResult run_filter(const FilterEntry& entry, double rate, const StreamPlan& plan, const Config& config) {
  FilterResult result;
  KeyStream stream(plan.keys_per_ttl, config.seed);
  std::unique_ptr<Filter> filter;
  try {
    filter = filters::make_filter(options_for(entry.type, rate, plan.keys_per_ttl, stream.ttl_ns()));
  } catch (const std::invalid_argument& e) {
    result.note = e.what();
    return result;
  }
  result.available = true;
  Filter& f = *filter;

  const std::uint64_t warmup = warmup_events(stream, plan);
  const auto warmup_start = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < warmup; ++i) {
    const Event e = stream.next();
    if (e.is_new || !plan.warmup_skips_repeats) f.test_and_insert(KeyHash{e.key}, at(e.now_ns));
  }
  const double warmup_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - warmup_start).count();
  std::fprintf(stderr, "    warm-up: %" PRIu64 " events in %.1f s (%.0f ns/event)\n", warmup, warmup_s,
               warmup_s * 1e9 / static_cast<double>(std::max<std::uint64_t>(warmup, 1)));
  {
    const filters::FilterStats s = f.stats(stream.now());
    result.mib = static_cast<double>(s.bits + s.padding_bits) / 8.0 / kMiB;  // real memory, for the ratio
    result.slices = s.slices;
    result.k = s.k;
    result.l = s.l;
    result.distinct_in_window = stream.distinct_in_window();
    result.bits_per_element = static_cast<double>(s.bits) / static_cast<double>(stream.distinct_in_window());
  }

  result.timing = time_blocks(stream, block_events(stream, plan, config), config.repetitions,
                              [&f](std::uint64_t key, std::int64_t ns) { return f.test_and_insert(KeyHash{key}, at(ns)); });
  result.batch_timing = time_batches(stream, block_events(stream, plan, config), config.repetitions,
                                     [&f](std::span<const KeyHash> keys, std::span<const TimePoint> times,
                                          std::span<bool> present) { f.test_and_insert_batch(keys, times, present); });

  if (plan.measure_quality) {
    // One more TTL of steady input with the probes spread evenly over it, so every phase of a generation
    // is sampled; bits per element sampled 16 times along the way.
    const std::uint64_t events = stream.events_per_ttl();
    const std::uint64_t probes = fpr_probe_count(rate, config);
    const std::uint64_t sample_every = std::max<std::uint64_t>(1, events / 16);
    std::uint64_t probed = 0;
    std::uint64_t positives = 0;
    double bpe_sum = 0;
    double bpe_max = 0;
    int samples = 0;
    for (std::uint64_t i = 0; i < events; ++i) {
      const Event e = stream.next();
      f.test_and_insert(KeyHash{e.key}, at(e.now_ns));
      const std::uint64_t due = (i + 1) * probes / events;
      for (; probed < due; ++probed) positives += f.contains(KeyHash{stream.probe_key(probed)}, at(e.now_ns)) ? 1U : 0U;
      if ((i + 1) % sample_every == 0) {
        const double bpe = static_cast<double>(f.stats(at(e.now_ns)).bits) /
                           static_cast<double>(stream.distinct_in_window());
        bpe_sum += bpe;
        bpe_max = std::max(bpe_max, bpe);
        ++samples;
      }
    }
    result.fpr_probes = probed;
    result.false_positives = positives;
    result.fpr = static_cast<double>(positives) / static_cast<double>(probed);
    result.bits_per_element_mean = bpe_sum / samples;
    result.bits_per_element_max = bpe_max;
  }
  const filters::FilterStats end = f.stats(stream.now());
  result.estimated_fpr = end.estimated_fpr;
  result.model_absent_probes = model_absent_probes(end);
  return result;
}

// Runs the warm-up of `stream` and gives `insert` the new keys of its last TTL, the distinct keys of the
// window: how the baselines without expiry are filled to their design load.
template <typename Insert>
void feed_window_keys(KeyStream& stream, const StreamPlan& plan, Insert&& insert) {
  const std::uint64_t warmup = warmup_events(stream, plan);
  const std::uint64_t skip = warmup > stream.events_per_ttl() ? warmup - stream.events_per_ttl() : 0;
  for (std::uint64_t i = 0; i < warmup; ++i) {
    const Event e = stream.next();
    if (i >= skip && e.is_new) insert(e.key);
  }
}

// The split-block Bloom filter, sized for one TTL's keys at `rate`. It has no expiry, so it is given only
// the new keys of the last TTL of the warm-up, the distinct keys of the window: it is at its design load
// when timing starts. The timed blocks are the very same events the filters get.
SbbfResult run_sbbf(double rate, const StreamPlan& plan, const Config& config) {
  SbbfResult result;
  KeyStream stream(plan.keys_per_ttl, config.seed);
  SplitBlockBloom sbbf(plan.keys_per_ttl, rate);
  feed_window_keys(stream, plan, [&sbbf](std::uint64_t key) { sbbf.test_and_insert(key); });
  result.mib = static_cast<double>(sbbf.bits()) / 8.0 / kMiB;
  result.bits_per_key = static_cast<double>(sbbf.bits()) / static_cast<double>(plan.keys_per_ttl);
  if (plan.measure_quality) {
    const std::uint64_t probes = fpr_probe_count(rate, config);
    std::uint64_t positives = 0;
    for (std::uint64_t i = 0; i < probes; ++i) positives += sbbf.contains(stream.probe_key(i)) ? 1U : 0U;
    result.fpr_probes = probes;
    result.fpr = static_cast<double>(positives) / static_cast<double>(probes);
  }
  result.timing = time_blocks(stream, block_events(stream, plan, config), config.repetitions,
                              [&sbbf](std::uint64_t key, std::int64_t) { return sbbf.test_and_insert(key); });
  result.batch_timing = time_batches(stream, block_events(stream, plan, config), config.repetitions,
                                     [&sbbf](std::span<const KeyHash> keys, std::span<const TimePoint>,
                                             std::span<bool> present) { sbbf.test_and_insert_batch(keys, present); });
  return result;
}

// The k-line floor with the time-limited filter's k at `rate` and its target memory, given the same keys as
// the split-block filter (the distinct keys of the last TTL of the warm-up), then timed on the same events.
FloorResult run_floor(double rate, const StreamPlan& plan, const Config& config) {
  FloorResult result;
  const FilterOptions options = options_for(FilterType::kTimeLimited, rate, plan.keys_per_ttl, 1);
  const std::uint32_t k = filters::choose_sliced_params(rate, filters::sliced_level(options)).k;
  KLineBloom floor(static_cast<std::uint64_t>(plan.target_mib * kMiB), k);
  KeyStream stream(plan.keys_per_ttl, config.seed);
  feed_window_keys(stream, plan, [&floor](std::uint64_t key) { floor.test_and_insert(key); });
  result.ran = true;
  result.k = k;
  result.mib = static_cast<double>(floor.bytes()) / kMiB;
  result.timing = time_blocks(stream, block_events(stream, plan, config), config.repetitions,
                              [&floor](std::uint64_t key, std::int64_t) { return floor.test_and_insert(key); });
  return result;
}

// The exact TTL set, fed the last 1.5 TTLs of the warm-up (all of it when shorter; enough for its sweeps to
// reach steady state),
// swept every TTL/4. Its memory is read after the timed blocks.
ExactResult run_exact(const StreamPlan& plan, const Config& config) {
  ExactResult result;
  // About 56 bytes per entry at steady state (a 32-byte node, 8-byte buckets, sweep slack): skip sizes that
  // would take more memory than allowed. The in-cache stream always runs it: it is the memory reference.
  const double estimate_mib = 56.0 * 1.25 * static_cast<double>(plan.keys_per_ttl) / kMiB;
  if (!plan.measure_quality && estimate_mib > config.exact_max_mib) {
    char note[160];
    std::snprintf(note, sizeof note, "skipped: would need about %.0f MiB (--exact-max-mib=%.0f)", estimate_mib,
                  config.exact_max_mib);
    result.note = note;
    return result;
  }
  result.ran = true;
  KeyStream stream(plan.keys_per_ttl, config.seed);
  ExactTtlSet set(stream.ttl_ns(), stream.ttl_ns() / 4);
  const std::uint64_t warmup = warmup_events(stream, plan);
  const std::uint64_t fed = stream.events_per_ttl() * 3 / 2;
  const std::uint64_t skip = warmup > fed ? warmup - fed : 0;
  for (std::uint64_t i = 0; i < warmup; ++i) {
    const Event e = stream.next();
    if (i >= skip) set.test_and_insert(e.key, e.now_ns);
  }
  result.timing = time_blocks(stream, block_events(stream, plan, config), config.repetitions,
                              [&set](std::uint64_t key, std::int64_t ns) { return set.test_and_insert(key, ns); });
  result.mib = static_cast<double>(set.bytes()) / kMiB;
  result.entries = set.size();
  result.bytes_per_entry = static_cast<double>(set.bytes()) / static_cast<double>(set.size());
  return result;
}

// ------------------------------------------------------------------------------------------------------
// Reporting.

struct RateReport {
  double rate = 0;
  std::vector<StreamPlan> plans;                    // [0] in cache, [1] full out of cache, [2] reduced
  std::map<std::uint64_t, Baselines> baselines;     // by keys per TTL
  std::vector<std::pair<const FilterEntry*, FilterResult>> in_cache;
  std::vector<std::pair<const FilterEntry*, FilterResult>> out_of_cache;
};

std::string fmt(const char* format, double v) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

double ratio(double a, double b) { return std::isfinite(a) && std::isfinite(b) && b > 0 ? a / b : kNaN; }

double low_end_bits_per_element(double rate) {
  // Seed 001 Table 2, low end: 19, 26 and 32 bits per element at 1e-2, 1e-3 and 1e-4.
  if (std::fabs(rate - 1e-2) < 1e-12) return 19;
  if (std::fabs(rate - 1e-3) < 1e-12) return 26;
  if (std::fabs(rate - 1e-4) < 1e-13) return 32;
  return kNaN;
}

const StreamPlan& plan_for(const RateReport& r, OutOfCacheSize size) {
  return size == OutOfCacheSize::kFull ? r.plans[1] : r.plans[2];
}

// The batch API against the split-block filter batched the same way (same lookahead), on the same streams.
void print_batches(const RateReport& r) {
  std::printf("  %-16s   test_and_insert_batch, %zu keys per call; split_block batched alike (block requested %zu keys "
              "ahead)\n", "batch:", kBatchKeys, filters::detail::kBatchLookahead);
  for (std::size_t i = 0; i < r.in_cache.size(); ++i) {
    const FilterResult& in = r.in_cache[i].second;
    const FilterResult& oc = r.out_of_cache[i].second;
    if (!in.available) continue;
    const double in_sbbf = r.baselines.at(r.plans[0].keys_per_ttl).sbbf.batch_timing.median_ns;
    const double oc_sbbf = r.baselines.at(plan_for(r, r.in_cache[i].first->out_of_cache).keys_per_ttl)
                               .sbbf.batch_timing.median_ns;
    std::printf("  %-16s   in cache %9s ns/op %6s xSBBF batch | out of cache %9s ns/op %6s xSBBF batch\n",
                r.in_cache[i].first->name, fmt("%.1f", in.batch_timing.median_ns).c_str(),
                fmt("%.2f", ratio(in.batch_timing.median_ns, in_sbbf)).c_str(),
                fmt("%.1f", oc.batch_timing.median_ns).c_str(),
                fmt("%.2f", ratio(oc.batch_timing.median_ns, oc_sbbf)).c_str());
  }
}

void print_rate(const RateReport& r) {
  std::printf("\n=== error rate %.0e ===\n", r.rate);
  for (const StreamPlan& p : r.plans) {
    const std::uint64_t events = KeyStream::events_per_ttl_for(p.keys_per_ttl);
    std::printf("  stream %-24s %11" PRIu64 " keys/TTL (%" PRIu64 " events/TTL, TTL %.3f s simulated), "
                "time-limited filter sized ~%.2f MiB\n",
                (p.label + ":").c_str(), p.keys_per_ttl, events,
                static_cast<double>(events) * static_cast<double>(kEventSpacingNs) * 1e-9,
                p.target_mib);
  }
  const Baselines& in_base = r.baselines.at(r.plans[0].keys_per_ttl);
  const double exact_mib = in_base.exact.mib;
  std::printf("\n  %-16s | %-32s | %-50s | %-17s | %-31s | %-10s\n", "", "in cache", "out of cache",
              "bits/elem (in c.)", "measured FPR (in cache)", "memory");
  std::printf("  %-16s | %8s %9s %6s %6s | %8s %10s %7s %6s %7s %7s | %7s %9s | %9s %15s %5s | %10s\n", "filter",
              "MiB", "ns/op", "xSBBF", "dup%", "MiB", "ns/op", "xSBBF", "dup%", "b/elem", "stream", "b/elem",
              "/log2(1/e)", "FPR", "fp/probes", "/e", "exact/this");
  for (std::size_t i = 0; i < r.in_cache.size(); ++i) {
    const FilterEntry& entry = *r.in_cache[i].first;
    const FilterResult& in = r.in_cache[i].second;
    const FilterResult& oc = r.out_of_cache[i].second;
    if (!in.available) {
      std::printf("  %-16s | n/a (%s)\n", entry.name, in.note.c_str());
      continue;
    }
    const StreamPlan& oc_plan = plan_for(r, entry.out_of_cache);
    const Baselines& oc_base = r.baselines.at(oc_plan.keys_per_ttl);
    char probes[40];
    std::snprintf(probes, sizeof probes, "%" PRIu64 "/%" PRIu64, in.false_positives, in.fpr_probes);
    std::printf("  %-16s | %8s %9s %6s %6s | %8s %10s %7s %6s %7s %7s | %7s %9s | %9s %15s %5s | %10s\n",
                entry.name, fmt("%.2f", in.mib).c_str(), fmt("%.1f", in.timing.median_ns).c_str(),
                fmt("%.2f", ratio(in.timing.median_ns, in_base.sbbf.timing.median_ns)).c_str(),
                fmt("%.1f", 100 * in.timing.present_fraction).c_str(),
                oc.available ? fmt("%.1f", oc.mib).c_str() : "n/a", fmt("%.1f", oc.timing.median_ns).c_str(),
                fmt("%.2f", ratio(oc.timing.median_ns, oc_base.sbbf.timing.median_ns)).c_str(),
                fmt("%.1f", 100 * oc.timing.present_fraction).c_str(), fmt("%.2f", oc.bits_per_element).c_str(),
                entry.out_of_cache == OutOfCacheSize::kFull ? "full" : "reduced",
                fmt("%.2f", in.bits_per_element).c_str(),
                fmt("%.2f", in.bits_per_element / std::log2(1.0 / r.rate)).c_str(), fmt("%.3e", in.fpr).c_str(),
                probes, fmt("%.2f", in.fpr / r.rate).c_str(),
                fmt("%.1f", ratio(exact_mib, in.mib)).c_str());
    if (!oc.available && !oc.note.empty()) std::printf("  %-16s   out of cache: %s\n", "", oc.note.c_str());
  }
  // Why the sliced filters cost what they cost: cache lines per operation, modelled.
  for (const auto& [entry, in] : r.in_cache) {
    if (!in.available || !std::isfinite(in.model_absent_probes)) continue;
    std::printf("  %-16s   k=%u l=%u, %" PRIu64 " slices: an absent-key query reads ~%.1f slices (model from measured "
                "fills) and an insertion writes k=%u,\n  %-16s   so out of cache a new key costs ~%.1f separate cache "
                "lines and a repeat at least %u; the split-block filter costs 1\n",
                entry->name, in.k, in.l, in.slices, in.model_absent_probes, in.k, "", in.model_absent_probes + in.k,
                in.k);
    if (entry->type == FilterType::kTimeLimited) {
      // The slices of one size form a segment of phase tables (column_segment.h): one cell per hash index.
      std::printf("  %-16s   that models the walk; the filter's slices of one size form one segment, and a query "
                  "loads\n  %-16s   k=%u cells of ~%" PRIu64 " bits, one per hash index (one line each, all independent), "
                  "and the insertion sets bits in the same cells\n",
                  "", "", in.k, (in.slices + in.k) / in.k);
    }
  }
  print_batches(r);
  // Baselines, one line per stream they ran on.
  std::printf("  %-16s\n", "baselines:");
  for (const StreamPlan& p : r.plans) {
    const auto it = r.baselines.find(p.keys_per_ttl);
    if (it == r.baselines.end()) continue;
    const Baselines& b = it->second;
    std::printf("  %-16s   %-24s %8.2f MiB %9s ns/op (batch %s)  dup %5s%%  %.2f bits/key", "split_block",
                p.label.c_str(), b.sbbf.mib, fmt("%.1f", b.sbbf.timing.median_ns).c_str(),
                fmt("%.1f", b.sbbf.batch_timing.median_ns).c_str(),
                fmt("%.1f", 100 * b.sbbf.timing.present_fraction).c_str(), b.sbbf.bits_per_key);
    if (p.measure_quality) std::printf("  FPR %s at design load", fmt("%.3e", b.sbbf.fpr).c_str());
    std::printf("\n");
    if (b.floor.ran) {
      std::printf("  %-16s   %-24s %8.2f MiB %9s ns/op  dup %5s%%  k=%u lines per key, requested together: %s x "
                  "split_block\n",
                  "k_line_floor", p.label.c_str(), b.floor.mib, fmt("%.1f", b.floor.timing.median_ns).c_str(),
                  fmt("%.1f", 100 * b.floor.timing.present_fraction).c_str(), b.floor.k,
                  fmt("%.2f", ratio(b.floor.timing.median_ns, b.sbbf.timing.median_ns)).c_str());
    }
    if (b.exact.ran) {
      std::printf("  %-16s   %-24s %8.2f MiB %9s ns/op  dup %5s%%  %" PRIu64 " entries, %.1f bytes/entry (counted)\n",
                  "exact_ttl_set", p.label.c_str(), b.exact.mib, fmt("%.1f", b.exact.timing.median_ns).c_str(),
                  fmt("%.1f", 100 * b.exact.timing.present_fraction).c_str(), b.exact.entries, b.exact.bytes_per_entry);
    } else if (!b.exact.note.empty()) {
      std::printf("  %-16s   %-24s %s\n", "exact_ttl_set", p.label.c_str(), b.exact.note.c_str());
    }
  }
}

struct Target {
  std::string name;
  double reached = kNaN;
  double limit = kNaN;
  bool at_most = true;  // reached <= limit passes; otherwise reached >= limit passes
  std::string unit;
};

std::vector<Target> targets(const std::vector<RateReport>& reports) {
  std::vector<Target> out;
  for (const RateReport& r : reports) {
    const FilterResult* in = nullptr;
    const FilterResult* oc = nullptr;
    for (std::size_t i = 0; i < r.in_cache.size(); ++i) {
      if (r.in_cache[i].first->type == FilterType::kTimeLimited) {
        in = &r.in_cache[i].second;
        oc = &r.out_of_cache[i].second;
      }
    }
    if (in == nullptr || !in->available) continue;
    char rate[16];
    std::snprintf(rate, sizeof rate, "%.0e", r.rate);
    const std::string at_rate = std::string(" @") + rate;
    out.push_back({"time_limited bits/elem <= Table 2 low end" + at_rate, in->bits_per_element,
                   low_end_bits_per_element(r.rate), true, ""});
    out.push_back({"time_limited measured FPR <= 1.1 x target" + at_rate, in->fpr / r.rate, 1.1, true, "x"});
    const double sbbf_oc = r.baselines.at(r.plans[1].keys_per_ttl).sbbf.timing.median_ns;
    const double speed = ratio(oc->timing.median_ns, sbbf_oc);
    out.push_back({"time_limited out of cache <= 4 x SBBF ns/op" + at_rate, speed, 4.0, true, "x"});
    out.push_back({"  (aim) out of cache <= 2.5 x SBBF ns/op" + at_rate, speed, 2.5, true, "x"});
    // Not a target of its own: whether any filter reading the time-limited filter's k lines per key, and
    // doing nothing else, would meet the 4 x above (k_line_bloom.h).
    const FloorResult& floor = r.baselines.at(r.plans[1].keys_per_ttl).floor;
    out.push_back({"  (floor) k lines per key, no other work, <= 4 x SBBF" + at_rate,
                   ratio(floor.timing.median_ns, sbbf_oc), 4.0, true, "x"});
    const double sbbf_batch = r.baselines.at(r.plans[1].keys_per_ttl).sbbf.batch_timing.median_ns;
    const double batch_speed = ratio(oc->batch_timing.median_ns, sbbf_batch);
    out.push_back({"  (batch) out of cache <= 4 x SBBF batch ns/op" + at_rate, batch_speed, 4.0, true, "x"});
    const double exact_mib = r.baselines.at(r.plans[0].keys_per_ttl).exact.mib;
    out.push_back({"time_limited memory >= 10 x less than exact TTL set" + at_rate, ratio(exact_mib, in->mib), 10.0,
                   false, "x"});
  }
  return out;
}

bool passes(const Target& t) {
  return std::isfinite(t.reached) && std::isfinite(t.limit) && (t.at_most ? t.reached <= t.limit : t.reached >= t.limit);
}

void print_targets(const std::vector<Target>& ts) {
  std::printf("\n=== targets ===\n  %-62s %12s %10s  %s\n", "target", "reached", "limit", "result");
  for (const Target& t : ts) {
    std::printf("  %-62s %11s%1s %9s%1s  %s\n", t.name.c_str(), fmt("%.2f", t.reached).c_str(), t.unit.c_str(),
                fmt("%.2f", t.limit).c_str(), t.unit.c_str(), passes(t) ? "PASS" : "MISS");
  }
}

// ------------------------------------------------------------------------------------------------------
// JSON: json_writer.h (flat figures, NaN as null).

void json_timing(Json& j, const char* key, const Timing& t) {
  j.open(key, '{');
  j.num("ns_per_op_median", t.median_ns);
  j.num("ns_per_op_min", t.min_ns);
  j.num("ns_per_op_max", t.max_ns);
  j.num("duplicate_fraction", t.present_fraction);
  j.u64("operations", t.operations);
  j.close('}');
}

void json_filter(Json& j, const char* key, const FilterResult& f, double sbbf_ns, double sbbf_batch_ns,
                 double exact_mib) {
  j.open(key, '{');
  j.boolean("available", f.available);
  j.str("note", f.note);
  if (f.available) {
    j.num("mib", f.mib);
    j.u64("slices", f.slices);
    j.u64("k", f.k);
    j.u64("l", f.l);
    json_timing(j, "timing", f.timing);
    j.num("ns_ratio_vs_split_block", ratio(f.timing.median_ns, sbbf_ns));
    json_timing(j, "batch_timing", f.batch_timing);
    j.num("batch_ns_ratio_vs_split_block_batch", ratio(f.batch_timing.median_ns, sbbf_batch_ns));
    j.num("bits_per_element", f.bits_per_element);
    j.num("bits_per_element_mean_next_ttl", f.bits_per_element_mean);
    j.num("bits_per_element_max_next_ttl", f.bits_per_element_max);
    j.u64("distinct_keys_in_window", f.distinct_in_window);
    j.num("measured_fpr", f.fpr);
    j.u64("fpr_probes", f.fpr_probes);
    j.u64("false_positives", f.false_positives);
    j.num("estimated_fpr", f.estimated_fpr);
    j.num("model_absent_query_slice_probes", f.model_absent_probes);
    j.num("memory_ratio_exact_over_filter", ratio(exact_mib, f.mib));
  }
  j.close('}');
}

std::string to_json(const Config& config, const std::vector<RateReport>& reports, const std::vector<Target>& ts) {
  Json j;
  j.open(nullptr, '{');
  j.str("benchmark", "filter_bench");
  j.boolean("quick", config.quick);
  j.u64("seed", config.seed);
  j.num("warmup_ttls_in_cache", config.warmup_ttls);
  j.num("warmup_ttls_out_of_cache", config.out_of_cache_warmup_ttls);
  j.num("new_key_fraction", kNewFraction);
  j.str("exact_ttl_set_memory", "counted: malloc_usable_size + 8 B chunk header per allocation");
  j.open("rates", '[');
  for (const RateReport& r : reports) {
    j.open(nullptr, '{');
    j.num("error_rate", r.rate);
    j.open("streams", '[');
    for (const StreamPlan& p : r.plans) {
      j.open(nullptr, '{');
      j.str("label", p.label);
      j.u64("keys_per_ttl", p.keys_per_ttl);
      j.num("time_limited_target_mib", p.target_mib);
      const Baselines& b = r.baselines.at(p.keys_per_ttl);
      j.open("split_block", '{');
      j.num("mib", b.sbbf.mib);
      j.num("bits_per_key", b.sbbf.bits_per_key);
      j.num("measured_fpr", b.sbbf.fpr);
      j.u64("fpr_probes", b.sbbf.fpr_probes);
      json_timing(j, "timing", b.sbbf.timing);
      json_timing(j, "batch_timing", b.sbbf.batch_timing);
      j.close('}');
      if (b.floor.ran) {
        j.open("k_line_floor", '{');
        j.u64("k", b.floor.k);
        j.num("mib", b.floor.mib);
        json_timing(j, "timing", b.floor.timing);
        j.num("ns_ratio_vs_split_block", ratio(b.floor.timing.median_ns, b.sbbf.timing.median_ns));
        j.close('}');
      }
      j.open("exact_ttl_set", '{');
      j.boolean("ran", b.exact.ran);
      j.str("note", b.exact.note);
      if (b.exact.ran) {
        j.num("mib", b.exact.mib);
        j.u64("entries", b.exact.entries);
        j.num("bytes_per_entry", b.exact.bytes_per_entry);
        json_timing(j, "timing", b.exact.timing);
      }
      j.close('}');
      j.close('}');
    }
    j.close(']');
    j.open("filters", '[');
    const Baselines& in_base = r.baselines.at(r.plans[0].keys_per_ttl);
    for (std::size_t i = 0; i < r.in_cache.size(); ++i) {
      const FilterEntry& entry = *r.in_cache[i].first;
      const Baselines& oc_base = r.baselines.at(plan_for(r, entry.out_of_cache).keys_per_ttl);
      j.open(nullptr, '{');
      j.str("filter", entry.name);
      j.str("out_of_cache_stream", plan_for(r, entry.out_of_cache).label);
      json_filter(j, "in_cache", r.in_cache[i].second, in_base.sbbf.timing.median_ns,
                  in_base.sbbf.batch_timing.median_ns, in_base.exact.mib);
      json_filter(j, "out_of_cache", r.out_of_cache[i].second, oc_base.sbbf.timing.median_ns,
                  oc_base.sbbf.batch_timing.median_ns, kNaN);
      j.close('}');
    }
    j.close(']');
    j.close('}');
  }
  j.close(']');
  j.open("targets", '[');
  for (const Target& t : ts) {
    j.open(nullptr, '{');
    j.str("target", t.name);
    j.num("reached", t.reached);
    j.num("limit", t.limit);
    j.str("result", passes(t) ? "PASS" : "MISS");
    j.close('}');
  }
  j.close(']');
  j.close('}');
  return j.text() + "\n";
}

// ------------------------------------------------------------------------------------------------------
// Completeness: every figure that should exist must be a finite number.

void require_figure(std::vector<std::string>& missing, const std::string& what, double v) {
  if (!std::isfinite(v)) missing.push_back(what);
}

std::vector<std::string> missing_figures(const std::vector<RateReport>& reports) {
  std::vector<std::string> missing;
  for (const RateReport& r : reports) {
    char rate[16];
    std::snprintf(rate, sizeof rate, "@%.0e ", r.rate);
    for (const auto& [keys, b] : r.baselines) {
      require_figure(missing, std::string(rate) + "split_block ns/op", b.sbbf.timing.median_ns);
      require_figure(missing, std::string(rate) + "split_block batch ns/op", b.sbbf.batch_timing.median_ns);
      if (b.floor.ran) require_figure(missing, std::string(rate) + "k_line_floor ns/op", b.floor.timing.median_ns);
      if (b.exact.ran) {
        require_figure(missing, std::string(rate) + "exact_ttl_set ns/op", b.exact.timing.median_ns);
        require_figure(missing, std::string(rate) + "exact_ttl_set MiB", b.exact.mib);
      }
    }
    require_figure(missing, std::string(rate) + "exact_ttl_set MiB (in cache stream)",
                   r.baselines.at(r.plans[0].keys_per_ttl).exact.mib);
    for (std::size_t i = 0; i < r.in_cache.size(); ++i) {
      const std::string name = std::string(rate) + r.in_cache[i].first->name;
      const FilterResult& in = r.in_cache[i].second;
      const FilterResult& oc = r.out_of_cache[i].second;
      if (!in.available) continue;  // n/a: make_filter does not build this type
      require_figure(missing, name + " in-cache ns/op", in.timing.median_ns);
      require_figure(missing, name + " in-cache batch ns/op", in.batch_timing.median_ns);
      require_figure(missing, name + " in-cache MiB", in.mib);
      require_figure(missing, name + " bits/elem", in.bits_per_element);
      require_figure(missing, name + " measured FPR", in.fpr);
      if (oc.available) {
        require_figure(missing, name + " out-of-cache ns/op", oc.timing.median_ns);
        require_figure(missing, name + " out-of-cache batch ns/op", oc.batch_timing.median_ns);
      } else {
        missing.push_back(name + " out of cache (" + oc.note + ")");
      }
    }
  }
  return missing;
}

// ------------------------------------------------------------------------------------------------------

int run(Config config) {
  if (config.quick) {
    config.in_cache_mib = 0.25;
    config.out_of_cache_mib = std::min(config.out_of_cache_mib, 2.0);
    config.slow_out_of_cache_mib = std::min(config.slow_out_of_cache_mib, 1.0);
    config.repetitions = 3;
    config.block_in_cache = 20'000;
    config.block_out_of_cache = 20'000;
    config.min_fpr_probes = 0;
  }
  std::vector<const FilterEntry*> entries;
  for (const std::string& name : config.filters) {
    const FilterEntry* found = nullptr;
    for (const FilterEntry& e : kFilterTable) {
      if (name == e.name) found = &e;
    }
    if (found == nullptr) throw std::invalid_argument("unknown filter " + name);
    entries.push_back(found);
  }

  std::printf("filter_bench%s: %zu filter(s) x %zu error rate(s); key stream: 64-bit keys (splitmix64 of a counter), "
              "new/repeat choice from std::mt19937_64 seed %" PRIu64 "\n",
              config.quick ? " --quick" : "", entries.size(), config.rates.size(), config.seed);
  std::printf("  %.0f%% new keys, %.0f%% repeats of a key from the last %.0f%% of a TTL; warm-up %.2f TTLs in cache, "
              "%.2f out of cache (new keys only);\n  %d timed blocks per figure (median), each timing spanning at most half a TTL; "
              "bits/elem after the warm-up; FPR over one more TTL\n",
              100 * kNewFraction, 100 * (1 - kNewFraction), 100 * kRepeatReach, config.warmup_ttls,
              config.out_of_cache_warmup_ttls, config.repetitions);
  std::printf("  exact_ttl_set memory is counted (malloc_usable_size + 8 B header per allocation), not estimated\n");
  std::fflush(stdout);

  const auto run_start = std::chrono::steady_clock::now();
  std::vector<RateReport> reports;
  for (double rate : config.rates) {
    RateReport r;
    r.rate = rate;
    r.plans = {
        {"in cache", keys_for_mib(rate, config.in_cache_mib), config.in_cache_mib, true, config.block_in_cache,
         config.warmup_ttls, false},
        {"out of cache", keys_for_mib(rate, config.out_of_cache_mib), config.out_of_cache_mib, false,
         config.block_out_of_cache, config.out_of_cache_warmup_ttls, true},
        {"out of cache (reduced)", keys_for_mib(rate, config.slow_out_of_cache_mib), config.slow_out_of_cache_mib,
         false, config.block_out_of_cache, config.out_of_cache_warmup_ttls, true},
    };
    auto baselines_for = [&](const StreamPlan& plan) {
      if (r.baselines.count(plan.keys_per_ttl) != 0) return;
      std::fprintf(stderr, "[%.0e] baselines, %s (%" PRIu64 " keys/TTL)\n", rate, plan.label.c_str(), plan.keys_per_ttl);
      Baselines b;
      b.sbbf = run_sbbf(rate, plan, config);
      b.exact = run_exact(plan, config);
      if (&plan == &r.plans[1]) b.floor = run_floor(rate, plan, config);
      r.baselines.emplace(plan.keys_per_ttl, std::move(b));
    };
    baselines_for(r.plans[0]);
    for (const FilterEntry* e : entries) {
      std::fprintf(stderr, "[%.0e] %s in cache\n", rate, e->name);
      r.in_cache.emplace_back(e, run_filter(*e, rate, r.plans[0], config));
    }
    for (const FilterEntry* e : entries) {
      const FilterResult& in = r.in_cache[r.out_of_cache.size()].second;
      if (!in.available) {
        r.out_of_cache.emplace_back(e, in);
        continue;
      }
      const StreamPlan& plan = plan_for(r, e->out_of_cache);
      baselines_for(plan);
      std::fprintf(stderr, "[%.0e] %s %s\n", rate, e->name, plan.label.c_str());
      try {
        r.out_of_cache.emplace_back(e, run_filter(*e, rate, plan, config));
      } catch (const std::bad_alloc&) {
        FilterResult failed;
        failed.note = "out of memory";
        r.out_of_cache.emplace_back(e, failed);
      }
    }
    // Both out-of-cache streams always have their baselines, so the table is complete.
    baselines_for(r.plans[1]);
    baselines_for(r.plans[2]);
    print_rate(r);
    std::fflush(stdout);
    reports.push_back(std::move(r));
  }

  const std::vector<Target> ts = targets(reports);
  std::fprintf(stderr, "filter_bench: done in %.0f s\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count());
  print_targets(ts);
  std::printf("\nSpeed ratios divide by the split-block Bloom filter timed in the same run on the same stream "
              "(lower is better);\nmemory ratios divide the exact TTL set's counted bytes by the filter's memory ((bits + padding)/8) "
              "for the same window (higher is better).\nTargets are reported, never enforced: a MISS does not "
              "change the exit code.\n");

  if (!config.json.empty()) {
    std::ofstream out(config.json);
    out << to_json(config, reports, ts);
    if (!out) {
      std::fprintf(stderr, "filter_bench: cannot write %s\n", config.json.c_str());
      return 2;
    }
  }

  const std::vector<std::string> missing = missing_figures(reports);
  if (!missing.empty()) {
    std::fprintf(stderr, "filter_bench: %zu figure(s) missing or not a number:\n", missing.size());
    for (const std::string& m : missing) std::fprintf(stderr, "  %s\n", m.c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace bloomgate::bench

int main(int argc, char** argv) {
  bloomgate::bench::Config config;
  for (const auto& e : bloomgate::bench::kFilterTable) config.filters.emplace_back(e.name);

  CLI::App app{"filter_bench: speed, space and FPR of every filter type against a split-block Bloom filter and an "
               "exact TTL set"};
  app.add_flag("--quick", config.quick, "small sizes; finishes in well under a minute (smoke test)");
  app.add_option("--filters", config.filters, "comma-separated filter types (default: all)")->delimiter(',');
  app.add_option("--rates", config.rates, "comma-separated error rates (default: 1e-2,1e-3,1e-4)")->delimiter(',');
  app.add_option("--in-cache-mib", config.in_cache_mib, "size of the time-limited filter for the in-cache stream")
      ->check(CLI::PositiveNumber);
  app.add_option("--out-of-cache-mib", config.out_of_cache_mib,
                 "size of the time-limited filter for the out-of-cache stream")
      ->check(CLI::PositiveNumber);
  app.add_option("--slow-out-of-cache-mib", config.slow_out_of_cache_mib,
                 "time-limited-equivalent size of the reduced out-of-cache stream used by the other filter types")
      ->check(CLI::PositiveNumber);
  app.add_option("--exact-max-mib", config.exact_max_mib,
                 "run the exact TTL set on a stream only when it would take at most this much memory")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup-ttls", config.warmup_ttls, "warm-up of the in-cache stream, in TTLs")
      ->check(CLI::PositiveNumber);
  app.add_option("--out-of-cache-warmup-ttls", config.out_of_cache_warmup_ttls,
                 "warm-up of the out-of-cache streams, in TTLs (new keys only)")
      ->check(CLI::PositiveNumber);
  app.add_option("--reps", config.repetitions, "timed blocks per figure (the median is reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", config.seed, "seed of the key stream");
  app.add_option("--json", config.json, "also write every figure as JSON to this file");
  bloomgate::bench::SweepConfig sweep;
  sweep.levels = {0, 1, 2, 3, 4, 5, 6};
  sweep.windows = {10'000, 100'000, 1'000'000, 10'000'000};
  app.add_option("--levels", sweep.levels,
                 "time-limited sweep: comma-separated levels (0..6) against the plain implementation at each; "
                 "with --keys-per-ttl, runs the sweep instead of the filter table (rates: --rates, default 1e-3)")
      ->delimiter(',')
      ->check(CLI::Range(0, 6));
  app.add_option("--keys-per-ttl", sweep.windows, "time-limited sweep: comma-separated windows (keys per TTL)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  bool ramp = false;
  std::uint32_t ramp_partitions = 32;
  app.add_option("--ramp-partitions", ramp_partitions, "filters of the service-shaped case (--ramp)")->check(CLI::PositiveNumber);
  app.add_flag("--ramp", ramp,
               "run the service-shaped case instead (tlbf_ramp.h): small filters whose rate grows, several segments "
               "live; levels from --levels (default 5), error rate the first of --rates (default 1e-3)");
  CLI11_PARSE(app, argc, argv);
  for (double rate : config.rates) {
    if (!(rate > 0 && rate < 1)) {
      std::fprintf(stderr, "filter_bench: error rate %g is not in (0, 1)\n", rate);
      return 2;
    }
  }
  if (ramp) {
    bloomgate::bench::RampConfig r;
    r.levels = app.count("--levels") > 0 ? sweep.levels : std::vector<std::uint32_t>{5};
    if (app.count("--rates") > 0) r.rate = config.rates.front();
    if (app.count("--reps") > 0) r.repetitions = config.repetitions;
    if (config.quick) r.events = 2'000;
    r.seed = config.seed;
    r.partitions = ramp_partitions;
    return bloomgate::bench::run_ramp(r);
  }
  if (app.count("--levels") + app.count("--keys-per-ttl") > 0) {
    sweep.quick = config.quick;
    sweep.rates = app.count("--rates") > 0 ? config.rates : std::vector<double>{1e-3};
    sweep.repetitions = config.repetitions;
    sweep.seed = config.seed;
    sweep.json = config.json;
    try {
      return bloomgate::bench::run_sweep(sweep);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "filter_bench: %s\n", e.what());
      return 2;
    }
  }

  try {
    return bloomgate::bench::run(config);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "filter_bench: %s\n", e.what());
    return 2;
  }
}
