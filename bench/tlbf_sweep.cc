#include "tlbf_sweep.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/fpr.h"
#include "bloomgate/filters/options.h"
#include "json_writer.h"
#include "k_line_bloom.h"
#include "key_stream.h"
#include "plain_tlbf.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace bloomgate::bench {
namespace {

#if defined(__x86_64__) || defined(__i386__)
constexpr bool kCanTimeOneAtATime = true;
// No later instruction starts before every earlier one has finished (LFENCE), loads included.
void wait_for_completion() { _mm_lfence(); }
#else
constexpr bool kCanTimeOneAtATime = false;
void wait_for_completion() {}
#endif

struct Side {
  Timing timing;
  double bits_per_element = kNaN;       // whole memory per key in the window
  double cell_bits_per_element = kNaN;  // the cells alone per key, against the model
  double fpr = kNaN;
  double mib = kNaN;
  std::uint64_t slices = 0;
};

struct Point {
  double rate = 0;
  std::uint32_t level = 0;
  filters::SlicedParams params;
  std::uint64_t window = 0;
  bool is_default_level = false;
  Side ours;
  Side plain;
  Side aging;  // the aging-fingerprint filter (make_filter) at the same rate and window, any level
  Timing floor;
  double model_bits_per_element = kNaN;
};

// docs/filters.md: k + l slices of k g / ln 2 bits hold l g keys.
double model_bits_per_element(filters::SlicedParams p) {
  return static_cast<double>(p.k) * (p.k + p.l) / (p.l * std::log(2.0));
}

double warmup_ttls(const SweepConfig& c, std::uint64_t window) {
  if (c.quick) return 1.5;
  return window >= 1'000'000 ? 1.5 : 2.5;
}

std::uint64_t block_events(const SweepConfig& c, const KeyStream& stream) {
  const std::uint64_t cap = c.quick ? 20'000 : 200'000;
  const std::uint64_t half_ttl = stream.events_per_ttl() / 2 / static_cast<std::uint64_t>(c.repetitions);
  return std::clamp<std::uint64_t>(half_ttl, 1000, cap);
}

// Warm-up, then bits per element and memory. `Impl` has test_and_insert(key, ns), contains(key, ns), bits()
// (the cells), memory_bits() (every bit it holds) and slices().
template <typename Impl>
Side warm_up(Impl& impl, KeyStream& stream, const Point& point, const SweepConfig& config) {
  Side side;
  // Large windows skip the warm-up's repeats: every repeat is within the TTL and changes nothing.
  const bool skip_repeats = point.window >= 1'000'000;
  const auto warmup = static_cast<std::uint64_t>(warmup_ttls(config, point.window) * static_cast<double>(stream.events_per_ttl()));
  for (std::uint64_t i = 0; i < warmup; ++i) {
    const Event e = stream.next();
    if (e.is_new || !skip_repeats) impl.test_and_insert(e.key, e.now_ns);
  }
  const auto keys = static_cast<double>(stream.distinct_in_window());
  side.bits_per_element = static_cast<double>(impl.memory_bits()) / keys;
  side.cell_bits_per_element = static_cast<double>(impl.bits()) / keys;
  side.mib = static_cast<double>(impl.memory_bits()) / 8 / kMiB;
  side.slices = impl.slices();
  return side;
}

// The FPR over one more stretch of steady input.
template <typename Impl>
double measure_fpr(Impl& impl, KeyStream& stream, const Point& point, const SweepConfig& config) {
  const std::uint64_t events = std::min<std::uint64_t>(stream.events_per_ttl(), config.quick ? 50'000 : 2'000'000);
  // About 1,000 false positives expected at the target rate: enough for one point's FPR to be compared
  // with 1.1 x the target (bench/README.md, "The time-limited sweep").
  const auto probes = static_cast<std::uint64_t>(std::ceil((config.quick ? 10.0 : 1000.0) / point.rate));
  std::uint64_t probed = 0;
  std::uint64_t positives = 0;
  for (std::uint64_t i = 0; i < events; ++i) {
    const Event e = stream.next();
    impl.test_and_insert(e.key, e.now_ns);
    for (const std::uint64_t due = (i + 1) * probes / events; probed < due; ++probed) {
      positives += impl.contains(stream.probe_key(probed), e.now_ns) ? 1U : 0U;
    }
  }
  return static_cast<double>(positives) / static_cast<double>(probed);
}

// One side's timed blocks, taken in turn with the other sides' (run_point).
struct Blocks {
  std::vector<double> ns_per_op;
  std::uint64_t present = 0;
  std::uint64_t operations = 0;
};

// One untimed block, so the side's memory is back in the caches the other sides used, then one timed one.
template <typename Op>
void time_one_block(KeyStream& stream, std::uint64_t events, Blocks& out, Op&& op) {
  time_blocks(stream, events, 1, op);
  const Timing t = time_blocks(stream, events, 1, op);
  out.ns_per_op.push_back(t.median_ns);
  out.present += t.present;
  out.operations += t.operations;
}

// time_one_block, with SweepConfig::one_at_a_time each call finished before the next starts.
template <typename Op>
void time_side(KeyStream& stream, std::uint64_t events, Blocks& out, bool one_at_a_time, Op&& op) {
  if (!one_at_a_time) {
    time_one_block(stream, events, out, op);
    return;
  }
  time_one_block(stream, events, out, [&op](std::uint64_t key, std::int64_t ns) {
    const bool present = op(key, ns);
    wait_for_completion();
    return present;
  });
}

Timing summarized(const Blocks& b) { return summarize(b.ns_per_op, b.present, b.operations); }

// A filter as the service builds it (make_filter): the time-limited one by default, behind the interface
// warm_up() and measure_fpr() use.
class Ours {
 public:
  Ours(const Point& p, std::int64_t ttl_ns, filters::FilterType type = filters::FilterType::kTimeLimited) {
    filters::FilterOptions o;
    o.type = type;
    o.error_rate = p.rate;
    o.level = p.level;
    o.ttl = filters::Duration{ttl_ns};
    o.expected_per_ttl = p.window;
    filter_ = filters::make_filter(o);
  }
  bool test_and_insert(std::uint64_t key, std::int64_t ns) {
    last_ns_ = ns;
    return filter_->test_and_insert(filters::KeyHash{key}, filters::from_epoch_nanos(ns));
  }
  bool test_and_insert_with_age(std::uint64_t key, std::int64_t ns) {
    last_ns_ = ns;
    return filter_->test_and_insert_with_age(filters::KeyHash{key}, filters::from_epoch_nanos(ns)).present;
  }
  bool contains(std::uint64_t key, std::int64_t ns) const {
    return filter_->contains(filters::KeyHash{key}, filters::from_epoch_nanos(ns));
  }
  std::uint64_t bits() const { return filter_->stats(filters::from_epoch_nanos(last_ns_)).bits; }
  std::uint64_t memory_bits() const { return filter_->stats(filters::from_epoch_nanos(last_ns_)).memory_bytes * 8; }  // every byte
  std::uint64_t slices() const { return filter_->stats(filters::from_epoch_nanos(last_ns_)).slices; }

 private:
  std::unique_ptr<filters::Filter> filter_;
  std::int64_t last_ns_ = kStartNs;
};

// The k-line floor at `mib` of memory, warmed on the last TTL of its warm-up's new keys.
void warm_floor(KLineBloom& floor, KeyStream& stream, const Point& p, const SweepConfig& config) {
  const auto warmup = static_cast<std::uint64_t>(warmup_ttls(config, p.window) * static_cast<double>(stream.events_per_ttl()));
  const std::uint64_t skip = warmup > stream.events_per_ttl() ? warmup - stream.events_per_ttl() : 0;
  for (std::uint64_t i = 0; i < warmup; ++i) {
    const Event e = stream.next();
    if (i >= skip && e.is_new) floor.test_and_insert(e.key);
  }
}

Point run_point(double rate, std::uint32_t level, std::uint64_t window, const SweepConfig& config) {
  Point p;
  p.rate = rate;
  p.level = level;
  p.window = window;
  p.params = filters::choose_sliced_params(rate, level);
  filters::FilterOptions defaults;
  defaults.error_rate = rate;
  p.is_default_level = filters::sliced_level(defaults) == level;
  p.model_bits_per_element = model_bits_per_element(p.params);
  const std::int64_t ttl_ns = KeyStream(window, config.seed).ttl_ns();
  // The three sides run on copies of one stream, and their timed blocks alternate, so a minute of load on
  // the shared machine slows each of them alike instead of one point's one side.
  Ours ours(p, ttl_ns);
  PlainTimeLimitedBloom plain(p.params, window, ttl_ns);
  Ours aging(p, ttl_ns, filters::FilterType::kAgingFingerprint);
  KeyStream ours_stream(window, config.seed);
  KeyStream plain_stream(window, config.seed);
  KeyStream aging_stream(window, config.seed);
  p.ours = warm_up(ours, ours_stream, p, config);
  p.plain = warm_up(plain, plain_stream, p, config);
  p.aging = warm_up(aging, aging_stream, p, config);
  // The floor gets ours' memory after the warm-up; a steady filter may still grow its segment once.
  KLineBloom floor(ours.memory_bits() / 8, p.params.k);
  KeyStream floor_stream(window, config.seed);
  warm_floor(floor, floor_stream, p, config);
  const std::uint64_t events = block_events(config, ours_stream);
  Blocks ours_blocks;
  Blocks plain_blocks;
  Blocks floor_blocks;
  Blocks aging_blocks;
  for (int r = 0; r < config.repetitions; ++r) {
    const bool one = config.one_at_a_time;
    time_side(ours_stream, events, ours_blocks, one, [&ours, &config](std::uint64_t key, std::int64_t ns) {
      return config.with_age ? ours.test_and_insert_with_age(key, ns) : ours.test_and_insert(key, ns);
    });
    time_side(plain_stream, events, plain_blocks, one, [&plain](std::uint64_t key, std::int64_t ns) {
      return plain.test_and_insert(key, ns);
    });
    time_side(floor_stream, events, floor_blocks, one, [&floor](std::uint64_t key, std::int64_t) {
      return floor.test_and_insert(key);
    });
    time_side(aging_stream, events, aging_blocks, one, [&aging, &config](std::uint64_t key, std::int64_t ns) {
      return config.with_age ? aging.test_and_insert_with_age(key, ns) : aging.test_and_insert(key, ns);
    });
  }
  p.aging.timing = summarized(aging_blocks);
  p.aging.fpr = measure_fpr(aging, aging_stream, p, config);
  p.aging.mib = static_cast<double>(aging.memory_bits()) / 8 / kMiB;
  p.ours.timing = summarized(ours_blocks);
  p.plain.timing = summarized(plain_blocks);
  p.floor = summarized(floor_blocks);
  p.ours.fpr = measure_fpr(ours, ours_stream, p, config);
  p.ours.mib = static_cast<double>(ours.memory_bits()) / 8 / kMiB;  // at the end: the segment may have grown
  p.plain.fpr = measure_fpr(plain, plain_stream, p, config);
  return p;
}

std::string fmt(const char* format, double v) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

void print_header() {
  std::printf("%-6s %5s %4s %5s %10s | %8s %8s %7s | %6s %6s %6s %6s | %6s %6s | %8s %8s %6s | %8s %6s %6s\n", "rate",
              "level", "k", "l", "keys/TTL", "ours ns", "plain ns", "speedup", "b/e", "plain", "model", "c/mod", "FPR/e",
              "plain", "MiB", "floor ns", "/floor", "aging ns", "b/key", "FPR/e");
}

void print_point(const Point& p) {
  std::printf("%-6.0e %4u%s %4u %5u %10" PRIu64 " | %8s %8s %7s | %6s %6s %6s %6s | %6s %6s | %8s %8s %6s | %8s %6s %6s\n", p.rate,
              p.level, p.is_default_level ? "*" : " ", p.params.k, p.params.l, p.window,
              fmt("%.1f", p.ours.timing.median_ns).c_str(), fmt("%.1f", p.plain.timing.median_ns).c_str(),
              fmt("%.2f", p.plain.timing.median_ns / p.ours.timing.median_ns).c_str(),
              fmt("%.2f", p.ours.bits_per_element).c_str(), fmt("%.2f", p.plain.bits_per_element).c_str(),
              fmt("%.2f", p.model_bits_per_element).c_str(),
              fmt("%.3f", p.ours.cell_bits_per_element / p.model_bits_per_element).c_str(),
              fmt("%.2f", p.ours.fpr / p.rate).c_str(), fmt("%.2f", p.plain.fpr / p.rate).c_str(),
              fmt("%.2f", p.ours.mib).c_str(), fmt("%.1f", p.floor.median_ns).c_str(),
              fmt("%.2f", p.ours.timing.median_ns / p.floor.median_ns).c_str(),
              fmt("%.1f", p.aging.timing.median_ns).c_str(), fmt("%.2f", p.aging.bits_per_element).c_str(),
              fmt("%.2f", p.aging.fpr / p.rate).c_str());
  std::fflush(stdout);
}

// The targets of the sweep, each PASS or MISS (never an exit code).
void print_targets(const std::vector<Point>& points) {
  int checked = 0;
  std::vector<std::string> misses;
  auto check = [&](bool pass, const char* what, const Point& p, double value, double limit) {
    ++checked;
    if (pass) return;
    char line[200];
    std::snprintf(line, sizeof line, "MISS %s: %.3g (limit %.3g) at %.0e level %u, %" PRIu64 " keys/TTL", what, value,
                  limit, p.rate, p.level, p.window);
    misses.emplace_back(line);
  };
  for (const Point& p : points) {
    const double speedup = p.plain.timing.median_ns / p.ours.timing.median_ns;
    const double min_speedup = p.window >= 10'000'000 ? 1.5 : 3.0;
    check(speedup >= min_speedup, "speedup over plain", p, speedup, min_speedup);
    const double bpe = p.ours.cell_bits_per_element / p.model_bits_per_element;
    check(bpe <= 1.1, "cell bits/element over model", p, bpe, 1.1);
    check(p.ours.fpr <= 1.1 * p.rate, "FPR over target", p, p.ours.fpr / p.rate, 1.1);
    if (p.is_default_level && p.ours.mib <= 1.0 && std::fabs(p.rate - 1e-3) < 1e-12) {
      check(p.ours.timing.median_ns <= 50, "in-cache ns/op at the default level", p, p.ours.timing.median_ns, 50);
    }
    if (std::isfinite(p.floor.median_ns) && p.window >= 10'000'000) {
      const double over = p.ours.timing.median_ns / p.floor.median_ns;
      check(over <= 1.25, "out of cache over the k-line floor", p, over, 1.25);
    }
  }
  std::printf("\ntargets: %d checked, %zu MISS%s\n", checked, misses.size(), misses.empty() ? " (all PASS)" : "");
  for (const std::string& m : misses) std::printf("  %s\n", m.c_str());
}

void json_side(Json& j, const char* key, const Side& s) {
  j.open(key, '{');
  j.num("ns_per_op", s.timing.median_ns);
  j.num("ns_min", s.timing.min_ns);
  j.num("ns_max", s.timing.max_ns);
  j.num("bits_per_element", s.bits_per_element);
  j.num("cell_bits_per_element", s.cell_bits_per_element);
  j.num("fpr", s.fpr);
  j.num("mib", s.mib);
  j.u64("slices", s.slices);
  j.close('}');
}

std::string to_json(const std::vector<Point>& points, const SweepConfig& config) {
  Json j;
  j.open(nullptr, '{');
  j.boolean("with_age", config.with_age);
  j.boolean("one_at_a_time", config.one_at_a_time);
  j.open("sweep", '[');
  for (const Point& p : points) {
    j.open(nullptr, '{');
    j.num("rate", p.rate);
    j.u64("level", p.level);
    j.u64("k", p.params.k);
    j.u64("l", p.params.l);
    j.u64("keys_per_ttl", p.window);
    j.boolean("default_level", p.is_default_level);
    j.num("model_bits_per_element", p.model_bits_per_element);
    json_side(j, "ours", p.ours);
    json_side(j, "plain", p.plain);
    json_side(j, "aging", p.aging);
    j.num("floor_ns_per_op", p.floor.median_ns);
    j.close('}');
  }
  j.close(']');
  j.close('}');
  return j.text();
}

}  // namespace

int run_sweep(const SweepConfig& config) {
  if (config.one_at_a_time && !kCanTimeOneAtATime) {
    std::fprintf(stderr, "filter_bench: --one-at-a-time needs an x86 CPU (it fences each call with LFENCE)\n");
    return 2;
  }
  std::printf("filter_bench time-limited sweep%s: ours (make_filter) against plain_tlbf.h at the same (k, l), same key "
              "stream (seed %" PRIu64 ", 30%% repeats), median of %d blocks, the sides' blocks in turn; "
              "* = the default level\n",
              config.quick ? " --quick" : "", config.seed, config.repetitions);
  if (config.with_age) std::printf("ours timed through test_and_insert_with_age (--with-age)\n");
  if (config.one_at_a_time) std::printf("every side's calls timed one at a time, an LFENCE after each (--one-at-a-time)\n");
  std::printf("speedup = plain ns / ours ns; model = k(k+l)/(l ln 2) bits per element; floor = k_line_bloom.h at "
              "ours' memory; b/e, plain and b/key: whole memory per key in the window; c/mod = ours' cells alone per key "
              "/ model; aging = the aging_fingerprint filter on the same stream\n\n");
  print_header();
  const auto start = std::chrono::steady_clock::now();
  std::vector<Point> points;
  for (const double rate : config.rates) {
    for (const std::uint32_t level : config.levels) {
      for (const std::uint64_t window : config.windows) {
        points.push_back(run_point(rate, level, window, config));
        print_point(points.back());
      }
    }
  }
  std::fflush(stdout);
  std::fprintf(stderr, "sweep: done in %.0f s\n", seconds_since(start));
  print_targets(points);
  if (!config.json.empty() && !write_json_file(config.json, to_json(points, config), "filter_bench")) return 2;
  for (const Point& p : points) {
    for (const double v : {p.ours.timing.median_ns, p.plain.timing.median_ns, p.ours.bits_per_element,
                           p.plain.bits_per_element, p.ours.fpr, p.plain.fpr, p.aging.timing.median_ns,
                           p.aging.bits_per_element, p.aging.fpr}) {
      if (!std::isfinite(v)) {
        std::fprintf(stderr, "filter_bench: a sweep figure is missing or not a number\n");
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace bloomgate::bench
