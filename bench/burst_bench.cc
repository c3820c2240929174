// File: bench/burst_bench.cc
//
// The rate-burst benchmark ("during a 100x rate jump": the FPR bound while a new rate phases in): a time-limited filter sized for a base
// rate gets three TTLs at that rate, one TTL at 100x, then three more TTLs at the base rate, in simulated
// time; then an aging-fingerprint filter on the same keys. Every 1/20 TTL it records the measured
// false-positive rate (contains() of keys never inserted), the filter's own estimate, its slice (table)
// count, its memory and its bits per key in the window. The targets it reports: FPR at most 2x the target
// during the jump (and the TTL after it, while burst keys are still in the window) for the time-limited
// filter and 1.5x for the aging-fingerprint filter, and the slice count back to k+l within two
// TTLs after the burst.
//
// The expiry slack, per type, at the base rate: how long past the TTL a key is still reported present.
// Keys inserted over 1/20 TTL after two TTLs of steady input are queried every 1/200 TTL once their TTL has
// passed, while the input goes on; a key's slack is the first query that finds it absent, less its
// insertion time and the TTL (so up to 1/200 TTL too long). A key that a false positive keeps present stays
// so while the keys that match it live (up to a TTL), so the maximum is the false-positive rate's, and the
// figure judged is the 99th percentile. The aging-fingerprint filter's target: at most TTL/6. The
// time-limited filter fades out over k generations instead (filters.md), reported without a target.
//
// Keys are splitmix64 finalizers of a counter (plus the seed): new keys never collide, and probe keys (top
// bit set before mixing) are never inserted. Every event is a new key, as in seed 001's FPR experiment.
// This is a benchmark, not a test: targets are reported, never enforced; the program exits non-zero only
// when a figure is missing or not a number.

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"
#include "bloomgate/filters/time.h"
#include "bench_support.h"
#include "json_writer.h"

namespace bloomgate::bench {
namespace {

constexpr std::int64_t kStartNs = 1'700'000'000'000'000'000;
constexpr std::int64_t kTtlNs = 60'000'000'000;  // one minute of simulated time
constexpr double kWarmTtls = 3;
constexpr double kBurstTtls = 1;
constexpr double kAfterTtls = 3;
constexpr int kSamplesPerTtl = 20;

struct Config {
  bool quick = false;
  std::uint64_t base_keys_per_ttl = 100'000;
  double jump = 100;
  double error_rate = 1e-3;
  std::uint64_t probes = 100'000;  // per sample
  std::uint64_t seed = 0xb0257ULL;
  std::string json;
};

filters::KeyHash key_of(const Config& c, std::uint64_t i) {
  return filters::KeyHash{mix64(i + c.seed * 0x9e3779b97f4a7c15ULL)};
}

// The rate, in keys per TTL, at t TTLs after the start.
double rate_at(const Config& c, double t) {
  const bool burst = t >= kWarmTtls && t < kWarmTtls + kBurstTtls;
  return static_cast<double>(c.base_keys_per_ttl) * (burst ? c.jump : 1.0);
}

// Keys inserted within (t - 1, t] TTLs: the integral of the piecewise-constant rate.
double keys_in_window(const Config& c, double t) {
  const double from = std::max(0.0, t - 1);
  const double burst_from = std::max(from, kWarmTtls);
  const double burst_to = std::min(t, kWarmTtls + kBurstTtls);
  const double burst = std::max(0.0, burst_to - burst_from);
  return static_cast<double>(c.base_keys_per_ttl) * ((t - from - burst) + burst * c.jump);
}

struct Sample {
  double t_ttls = 0;
  double rate_multiple = 1;
  std::uint64_t slices = 0;
  double measured_fpr = kNaN;
  double estimated_fpr = kNaN;
  double mib = kNaN;
  double bits_per_key = kNaN;
};

Sample sample(const Config& c, const filters::Filter& f, double t, std::uint64_t& probe_counter) {
  const auto now = filters::from_epoch_nanos(kStartNs + static_cast<std::int64_t>(t * static_cast<double>(kTtlNs)));
  std::uint64_t positives = 0;
  for (std::uint64_t i = 0; i < c.probes; ++i) {
    positives += f.contains(key_of(c, (probe_counter++) | (std::uint64_t{1} << 63)), now) ? 1U : 0U;
  }
  const filters::FilterStats stats = f.stats(now);
  Sample s;
  s.t_ttls = t;
  s.rate_multiple = rate_at(c, t - 1e-9) / static_cast<double>(c.base_keys_per_ttl);
  s.slices = stats.slices;
  s.measured_fpr = static_cast<double>(positives) / static_cast<double>(c.probes);
  s.estimated_fpr = stats.estimated_fpr;
  s.mib = static_cast<double>(stats.memory_bytes) / kMiB;  // every byte the filter holds
  s.bits_per_key = static_cast<double>(stats.memory_bytes) * 8 / keys_in_window(c, t);
  return s;
}

struct Run {
  std::vector<Sample> samples;
  std::uint32_t k = 0;
  std::uint32_t l = 0;
  std::uint64_t keys = 0;
};

std::unique_ptr<filters::Filter> make(const Config& c, filters::FilterType type) {
  filters::FilterOptions o;
  o.type = type;
  o.error_rate = c.error_rate;
  o.ttl = std::chrono::nanoseconds(kTtlNs);
  o.expected_per_ttl = c.base_keys_per_ttl;
  return filters::make_filter(o);
}

filters::TimePoint at_ttls(double t) {
  return filters::from_epoch_nanos(kStartNs + static_cast<std::int64_t>(t * static_cast<double>(kTtlNs)));
}

// Slack past the TTL, in TTLs, of the keys sampled (see the file's comment).
struct Slack {
  double median_ttls = kNaN;
  double p99_ttls = kNaN;
  double max_ttls = kNaN;  // infinite when a sampled key outlived the measurement (1.5 TTLs past its TTL)
  std::uint64_t keys = 0;
};

Slack measure_slack(const Config& c, filters::FilterType type) {
  constexpr int kStepsPerTtl = 200;
  constexpr double kSampleFrom = 2.0;
  constexpr double kSampleTo = 2.05;
  constexpr double kEnd = kSampleTo + 1.5;
  auto filter = make(c, type);
  const double keys_per_step = static_cast<double>(c.base_keys_per_ttl) / kStepsPerTtl;
  struct Sampled {
    filters::KeyHash key;
    double inserted;
    double slack = kNaN;
  };
  std::vector<Sampled> sampled;
  std::uint64_t next_key = 0;
  double owed = 0;
  for (int step = 1; step <= static_cast<int>(kEnd * kStepsPerTtl); ++step) {
    const double from = static_cast<double>(step - 1) / kStepsPerTtl;
    const double until = static_cast<double>(step) / kStepsPerTtl;
    owed += keys_per_step;
    const auto n = static_cast<std::uint64_t>(owed);
    owed -= static_cast<double>(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      const double t = from + (until - from) * static_cast<double>(i + 1) / static_cast<double>(n);
      const filters::KeyHash key = key_of(c, next_key++);
      filter->test_and_insert(key, at_ttls(t));
      if (t > kSampleFrom && t <= kSampleTo) sampled.push_back({key, t, kNaN});
    }
    for (Sampled& s : sampled) {
      if (std::isnan(s.slack) && until >= s.inserted + 1 && !filter->contains(s.key, at_ttls(until))) {
        s.slack = until - s.inserted - 1;
      }
    }
  }
  std::vector<double> slack;
  for (const Sampled& s : sampled) slack.push_back(std::isnan(s.slack) ? std::numeric_limits<double>::infinity() : s.slack);
  Slack out;
  out.keys = slack.size();
  if (slack.empty()) return out;
  std::sort(slack.begin(), slack.end());
  out.median_ttls = slack[slack.size() / 2];
  out.p99_ttls = slack[std::min(slack.size() - 1, slack.size() * 99 / 100)];
  out.max_ttls = slack.back();
  return out;
}

Run run_burst(const Config& c, filters::FilterType type) {
  auto filter = make(c, type);
  Run run;
  const double end = kWarmTtls + kBurstTtls + kAfterTtls;
  const int steps = static_cast<int>(end * kSamplesPerTtl);
  std::uint64_t probe_counter = 0;
  double t = 0;
  for (int step = 1; step <= steps; ++step) {
    const double until = static_cast<double>(step) / kSamplesPerTtl;
    // Each step lies within one phase: the rate is constant, so its keys are evenly spaced.
    const double rate = rate_at(c, t);
    const auto n = static_cast<std::uint64_t>(std::llround(rate * (until - t)));
    for (std::uint64_t i = 0; i < n; ++i) {
      const double at = t + (until - t) * static_cast<double>(i + 1) / static_cast<double>(n);
      filter->test_and_insert(key_of(c, run.keys++), at_ttls(at));
    }
    t = until;
    run.samples.push_back(sample(c, *filter, t, probe_counter));
  }
  const filters::FilterStats stats = filter->stats(filters::from_epoch_nanos(kStartNs));
  run.k = stats.k;
  run.l = stats.l;
  return run;
}

// ------------------------------------------------------------------------------------------------------
// Targets

struct Targets {
  // Mean over the last TTL before the burst, / target: one sample's probes are too few for a maximum to
  // mean anything at steady state (filter_bench measures it with 10/error-rate probes).
  double steady_fpr_ratio = kNaN;
  double burst_fpr_ratio = kNaN;   // max from the burst's start to one TTL after its end, / target
  double slices_back_ttls = kNaN;  // after the burst's end, until the slice count stays at <= k+l
  std::uint64_t max_slices = 0;
};

Targets targets_of(const Config& c, const Run& run) {
  Targets t;
  const double burst_end = kWarmTtls + kBurstTtls;
  double steady = 0;
  int steady_samples = 0;
  double burst = 0;
  double back = kNaN;
  for (const Sample& s : run.samples) {
    if (s.t_ttls > kWarmTtls - 1 && s.t_ttls <= kWarmTtls) {
      steady += s.measured_fpr;
      ++steady_samples;
    }
    if (s.t_ttls > kWarmTtls && s.t_ttls <= burst_end + 1) burst = std::max(burst, s.measured_fpr);
    t.max_slices = std::max(t.max_slices, s.slices);
    if (s.t_ttls < burst_end) continue;
    if (s.slices <= run.k + run.l) {
      if (std::isnan(back)) back = s.t_ttls - burst_end;
    } else {
      back = kNaN;  // above k+l again: not back yet
    }
  }
  t.steady_fpr_ratio = steady / std::max(steady_samples, 1) / c.error_rate;
  t.burst_fpr_ratio = burst / c.error_rate;
  t.slices_back_ttls = back;
  return t;
}

// Unlike verdict_at_most, a figure that is not a number is a MISS: the burst never settled back.
const char* verdict(double reached, double limit) {
  if (!std::isfinite(reached)) return "MISS";
  return reached <= limit ? "PASS" : "MISS";
}

// ------------------------------------------------------------------------------------------------------
// Output

// One filter type's burst run, targets and slack (the aging-fingerprint filter's burst limit is 1.5x, above).
struct TypeResult {
  filters::FilterType type;
  double burst_limit;
  Run run;
  Targets targets;
  Slack slack;
};

const char* name_of(const TypeResult& r) { return filters::filter_type_name(r.type); }
bool is_time_limited(const TypeResult& r) { return r.type == filters::FilterType::kTimeLimited; }

void print(const Config& c, const TypeResult& r) {
  const Run& run = r.run;
  const Targets& t = r.targets;
  std::printf("burst_bench%s: %s %.0e, k=%u l=%u, %" PRIu64 " keys/TTL, x%.0f for %.0f TTL after %.0f TTLs, "
              "then %.0f TTLs; %" PRIu64 " probes per sample; seed %" PRIu64 "\n",
              c.quick ? " --quick" : "", name_of(r), c.error_rate, run.k, run.l, c.base_keys_per_ttl, c.jump,
              kBurstTtls, kWarmTtls, kAfterTtls, c.probes, c.seed);
  std::printf("  %7s %6s %7s %12s %12s %9s %9s\n", "t/TTL", "rate", "slices", "FPR", "est. FPR", "MiB", "bits/key");
  for (const Sample& s : run.samples) {
    std::printf("  %7.2f %5.0fx %7" PRIu64 " %12.3e %12.3e %9.3f %9.2f\n", s.t_ttls, s.rate_multiple, s.slices,
                s.measured_fpr, s.estimated_fpr, s.mib, s.bits_per_key);
  }
  std::printf("\nTARGETS (%s)\n", name_of(r));
  std::printf("  %-58s %8.2fx  limit 1.10x  %s\n", "FPR at steady state, last TTL before the burst / target (mean)",
              t.steady_fpr_ratio, verdict(t.steady_fpr_ratio, 1.1));
  std::printf("  %-58s %8.2fx  limit %.2fx  %s\n", "FPR during the jump and one TTL after / target (max)",
              t.burst_fpr_ratio, r.burst_limit, verdict(t.burst_fpr_ratio, r.burst_limit));
  if (is_time_limited(r)) {
    std::printf("  %-58s %8.2f   limit 2 TTLs %s   (max %" PRIu64 " slices, k+l=%u)\n",
                "slice count back to k+l after the burst, TTLs", t.slices_back_ttls, verdict(t.slices_back_ttls, 2.0),
                t.max_slices, run.k + run.l);
  }
  std::printf("  expiry slack past the TTL, %" PRIu64 " keys: median %.4f, p99 %.4f, max %.4f TTLs%s\n\n", r.slack.keys,
              r.slack.median_ttls, r.slack.p99_ttls, r.slack.max_ttls,
              is_time_limited(r)               ? " (its fade-out over k generations; no target)"
              : r.slack.p99_ttls <= 1.0 / 6    ? " (p99 limit TTL/6: PASS)"
                                               : " (p99 limit TTL/6: MISS)");
}

void json_target(Json& j, const std::string& name, double reached, double limit) {
  j.target(name, reached, limit, verdict(reached, limit));
}

void json_samples(Json& j, const Run& run) {
  j.open("samples", '[');
  for (const Sample& s : run.samples) {
    j.open(nullptr, '{');
    j.num("t_ttls", s.t_ttls);
    j.num("rate_multiple", s.rate_multiple);
    j.u64("slices", s.slices);
    j.num("measured_fpr", s.measured_fpr);
    j.num("estimated_fpr", s.estimated_fpr);
    j.num("mib", s.mib);
    j.num("bits_per_key", s.bits_per_key);
    j.close('}');
  }
  j.close(']');
}

void json_slack(Json& j, const Slack& s) {
  j.open("expiry_slack", '{');
  j.u64("keys", s.keys);
  j.num("median_ttls", s.median_ttls);
  j.num("p99_ttls", s.p99_ttls);
  j.num("max_ttls", s.max_ttls);
  j.close('}');
}

// The time-limited run at the top level (its samples, k, l and slack), the aging-fingerprint run under
// "aging_fingerprint", and every target of both in "targets".
std::string to_json(const Config& c, const std::vector<TypeResult>& results) {
  const TypeResult& tl = results.front();
  Json j;
  j.open(nullptr, '{');
  j.str("benchmark", "burst_bench");
  j.boolean("quick", c.quick);
  j.num("error_rate", c.error_rate);
  j.u64("base_keys_per_ttl", c.base_keys_per_ttl);
  j.num("jump", c.jump);
  j.num("burst_start_ttls", kWarmTtls);
  j.num("burst_end_ttls", kWarmTtls + kBurstTtls);
  j.u64("probes_per_sample", c.probes);
  j.u64("seed", c.seed);
  j.u64("k", tl.run.k);
  j.u64("l", tl.run.l);
  j.u64("max_slices", tl.targets.max_slices);
  json_samples(j, tl.run);
  json_slack(j, tl.slack);
  for (std::size_t i = 1; i < results.size(); ++i) {
    j.open(name_of(results[i]), '{');
    j.u64("max_tables", results[i].targets.max_slices);
    json_samples(j, results[i].run);
    json_slack(j, results[i].slack);
    j.close('}');
  }
  j.open("targets", '[');
  json_target(j, "FPR at steady state before the burst <= 1.1 x target", tl.targets.steady_fpr_ratio, 1.1);
  json_target(j, "FPR during a 100x rate jump (and one TTL after) <= 2 x target", tl.targets.burst_fpr_ratio, 2.0);
  json_target(j, "slice count back to k+l within 2 TTLs after the burst", tl.targets.slices_back_ttls, 2.0);
  for (std::size_t i = 1; i < results.size(); ++i) {
    const TypeResult& r = results[i];
    const std::string name = name_of(r);
    json_target(j, name + " FPR at steady state before the burst <= 1.1 x target", r.targets.steady_fpr_ratio, 1.1);
    json_target(j, name + " FPR during a 100x rate jump (and one TTL after) <= 1.5 x target", r.targets.burst_fpr_ratio,
                r.burst_limit);
    json_target(j, name + " expiry slack past the TTL, 99% of keys, <= TTL/6 (in TTLs)", r.slack.p99_ttls, 1.0 / 6);
  }
  j.close(']');
  j.close('}');
  return j.text() + "\n";
}

int run(Config c) {
  if (c.quick) {
    c.base_keys_per_ttl = std::min<std::uint64_t>(c.base_keys_per_ttl, 5'000);
    c.probes = std::min<std::uint64_t>(c.probes, 20'000);
  }
  const auto started = std::chrono::steady_clock::now();
  std::vector<TypeResult> results;
  for (const auto& [type, burst_limit] : {std::pair{filters::FilterType::kTimeLimited, 2.0},
                                          std::pair{filters::FilterType::kAgingFingerprint, 1.5}}) {
    TypeResult r{type, burst_limit, run_burst(c, type), {}, measure_slack(c, type)};
    r.targets = targets_of(c, r.run);
    print(c, r);
    results.push_back(std::move(r));
  }
  std::printf("Targets are reported, never enforced.\n");
  std::fprintf(stderr, "burst_bench: done in %.1f s\n", seconds_since(started));
  if (!c.json.empty() && !write_json_file(c.json, to_json(c, results), "burst_bench")) return 2;
  bool complete = true;
  for (const TypeResult& r : results) {
    complete = complete && std::isfinite(r.targets.steady_fpr_ratio) && std::isfinite(r.targets.burst_fpr_ratio) &&
               std::isfinite(r.slack.median_ttls);
    for (const Sample& s : r.run.samples) complete = complete && std::isfinite(s.measured_fpr) && std::isfinite(s.bits_per_key);
  }
  if (!complete) std::fprintf(stderr, "burst_bench: a figure is missing or not a number\n");
  return complete ? 0 : 1;
}

}  // namespace
}  // namespace bloomgate::bench

int main(int argc, char** argv) {
  bloomgate::bench::Config c;
  CLI::App app{"burst_bench: FPR, slice count and expiry slack of the time-limited and aging-fingerprint filters through a rate jump"};
  app.add_flag("--quick", c.quick, "5,000 keys per TTL at the base rate, 20,000 probes per sample (seconds)");
  app.add_option("--base-keys-per-ttl", c.base_keys_per_ttl, "keys per TTL before and after the burst")
      ->check(CLI::PositiveNumber);
  app.add_option("--jump", c.jump, "the burst's rate as a multiple of the base rate")->check(CLI::Range(1.0, 10'000.0));
  app.add_option("--error-rate", c.error_rate, "the filter's error rate")->check(CLI::Range(1e-9, 0.5));
  app.add_option("--probes", c.probes, "absent keys probed per sample")->check(CLI::PositiveNumber);
  app.add_option("--seed", c.seed, "seed of the keys");
  app.add_option("--json", c.json, "also write every figure (the whole time series) as JSON to this file");
  CLI11_PARSE(app, argc, argv);
  try {
    return bloomgate::bench::run(c);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "burst_bench: %s\n", e.what());
    return 2;
  }
}
