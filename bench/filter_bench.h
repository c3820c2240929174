// File: bench/filter_bench.h
//
// filter_bench's settings, results and report (filter_report.cc): the filter table, the streams, the
// figures of every filter and baseline at one error rate, the targets checked, the JSON. The measurements
// are in filter_bench.cc.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bloomgate/filters/filter.h"
#include "key_stream.h"

namespace bloomgate::bench {

using filters::FilterType;

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

inline constexpr FilterEntry kFilterTable[] = {
    {"time_limited", FilterType::kTimeLimited, OutOfCacheSize::kFull},
    {"aging_fingerprint", FilterType::kAgingFingerprint, OutOfCacheSize::kFull},
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

// test_and_insert_batch is timed on calls of this many keys.
inline constexpr std::size_t kBatchKeys = 1024;

struct RateReport {
  double rate = 0;
  std::vector<StreamPlan> plans;                    // [0] in cache, [1] full out of cache, [2] reduced
  std::map<std::uint64_t, Baselines> baselines;     // by keys per TTL
  std::vector<std::pair<const FilterEntry*, FilterResult>> in_cache;
  std::vector<std::pair<const FilterEntry*, FilterResult>> out_of_cache;
};

struct Target {
  std::string name;
  double reached = kNaN;
  double limit = kNaN;
  bool at_most = true;  // reached <= limit passes; otherwise reached >= limit passes
  std::string unit;
};

// The stream an out-of-cache row of the table runs on.
inline const StreamPlan& plan_for(const RateReport& r, OutOfCacheSize size) {
  return size == OutOfCacheSize::kFull ? r.plans[1] : r.plans[2];
}

// The report of one error rate: every filter in and out of cache against the baselines, then the batch API.
void print_rate(const RateReport& r);
void print_batches(const RateReport& r);
std::vector<Target> targets(const std::vector<RateReport>& reports);
void print_targets(const std::vector<Target>& ts);
std::string to_json(const Config& config, const std::vector<RateReport>& reports, const std::vector<Target>& ts);
// The figures a run should have produced and did not (or that are not numbers), named.
std::vector<std::string> missing_figures(const std::vector<RateReport>& reports);

}  // namespace bloomgate::bench
