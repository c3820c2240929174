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

#include "bit_slice.h"
#include "column_segment.h"
#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/fpr.h"
#include "bloomgate/filters/hash.h"
#include "bloomgate/filters/options.h"
#include "bloomgate/filters/time.h"
#include "exact_ttl_set.h"
#include "filter_bench.h"
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
  const double bits_per_key = static_cast<double>(filter->stats(at(kStartNs)).memory_bytes) * 8 / kProbeKeys;
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
  const double warmup_s = seconds_since(warmup_start);
  std::fprintf(stderr, "    warm-up: %" PRIu64 " events in %.1f s (%.0f ns/event)\n", warmup, warmup_s,
               warmup_s * 1e9 / static_cast<double>(std::max<std::uint64_t>(warmup, 1)));
  {
    const filters::FilterStats s = f.stats(stream.now());
    result.mib = static_cast<double>(s.memory_bytes) / kMiB;  // every byte the filter holds
    result.slices = s.slices;
    result.k = s.k;
    result.l = s.l;
    result.distinct_in_window = stream.distinct_in_window();
    // Whole memory (padding included) per distinct key in the window.
    result.bits_per_element = static_cast<double>(s.memory_bytes) * 8 / static_cast<double>(stream.distinct_in_window());
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
        const double bpe = static_cast<double>(f.stats(at(e.now_ns)).memory_bytes * 8) /
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
  std::fprintf(stderr, "filter_bench: done in %.0f s\n", seconds_since(run_start));
  print_targets(ts);
  std::printf("\nSpeed ratios divide by the split-block Bloom filter timed in the same run on the same stream "
              "(lower is better);\nmemory ratios divide the exact TTL set's counted bytes by the filter's memory ((bits + padding)/8) "
              "for the same window (higher is better).\nTargets are reported, never enforced: a MISS does not "
              "change the exit code.\n");

  if (!config.json.empty() && !write_json_file(config.json, to_json(config, reports, ts), "filter_bench")) return 2;

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
  app.add_flag("--with-age", sweep.with_age,
               "time-limited sweep: time ours through test_and_insert_with_age (the service's call) instead of "
               "test_and_insert");
  app.add_flag("--one-at-a-time", sweep.one_at_a_time,
               "time-limited sweep: each side's calls timed one at a time (an LFENCE after each), the latency of a "
               "call that other work separates from the next; x86 only");
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
