// File: bench/aging_candidates.cc
//
// The design measurement of the aging-fingerprint filter (docs/decisions/aging-fingerprint.md): candidate
// tunings of its cuckoo tables (sizing load, grow load, kicks per insertion) against the time-limited filter
// at the service's level 5, on one stream (key_stream.h, fixed seed) in one process: whole memory per key in
// the window, measured FPR, and ns per event one call at a time and in batches of 64 (the filter's own batch
// call, which prefetches). Prints one line per (size, filter).
//
//   aging_candidates [--keys K1,K2,...] [--rate 1e-3 | --rates R1,R2] [--only 0,3] [--reps 5] [--block 200000]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "aging_fingerprint_filter.h"
#include "bloomgate/filters/options.h"
#include "key_stream.h"

namespace {

using namespace bloomgate;
using filters::AgingTuning;
using filters::FilterOptions;
using filters::FilterType;

struct Candidate {
  std::string name;
  std::optional<AgingTuning> tuning;  // none: the time-limited filter
};

std::unique_ptr<filters::Filter> build(const Candidate& c, double rate, std::uint64_t keys, std::int64_t ttl_ns) {
  FilterOptions o;
  o.error_rate = rate;
  o.expected_per_ttl = keys;
  o.ttl = filters::Duration{ttl_ns};
  if (!c.tuning) {
    o.type = FilterType::kTimeLimited;
    o.level = 5;
    return filters::make_filter(o);
  }
  o.type = FilterType::kAgingFingerprint;
  return std::make_unique<filters::AgingFingerprintFilter>(o, *c.tuning);
}

double memory_bytes(const filters::Filter& f, filters::TimePoint now) {
  const filters::FilterStats s = f.stats(now);
  return static_cast<double>(s.memory_bytes);
}

void run(const Candidate& c, double rate, std::uint64_t keys, int reps, std::uint64_t block, bool batch) {
  bench::KeyStream stream(keys, 42);
  const auto filter = build(c, rate, keys, stream.ttl_ns());
  for (std::uint64_t i = 0; i < 2 * stream.events_per_ttl(); ++i) {
    const bench::Event e = stream.next();
    filter->test_and_insert(filters::KeyHash{e.key}, filters::from_epoch_nanos(e.now_ns));
  }
  std::vector<filters::KeyHash> ks(block);
  std::vector<filters::TimePoint> ts(block);
  std::unique_ptr<bool[]> answers(new bool[block]);
  std::vector<double> per_op;
  for (int r = 0; r < reps; ++r) {
    for (std::uint64_t i = 0; i < block; ++i) {
      const bench::Event e = stream.next();
      ks[i] = filters::KeyHash{e.key};
      ts[i] = filters::from_epoch_nanos(e.now_ns);
    }
    const auto start = std::chrono::steady_clock::now();
    if (batch) {
      for (std::uint64_t i = 0; i < block; i += 64) {
        const std::size_t n = std::min<std::uint64_t>(64, block - i);
        filter->test_and_insert_batch(std::span(ks).subspan(i, n), std::span(ts).subspan(i, n),
                                      std::span<bool>(answers.get() + i, n));
      }
    } else {
      for (std::uint64_t i = 0; i < block; ++i) answers[i] = filter->test_and_insert(ks[i], ts[i]);
    }
    const auto ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    per_op.push_back(ns / static_cast<double>(block));
  }
  const std::uint64_t probes = std::max<std::uint64_t>(200'000, static_cast<std::uint64_t>(30 / rate));
  std::uint64_t hits = 0;
  for (std::uint64_t i = 0; i < probes; ++i) hits += filter->contains(filters::KeyHash{stream.probe_key(i)}, stream.now()) ? 1U : 0U;
  const double bits_per_key = memory_bytes(*filter, stream.now()) * 8 / static_cast<double>(keys);
  std::printf("%.0e %9" PRIu64 " keys  %-28s %-6s %7.1f ns/event  %6.2f bits/key  FPR %.2e (%.2fx target)\n", rate, keys,
              c.name.c_str(), batch ? "batch" : "single", bench::median(per_op), bits_per_key,
              static_cast<double>(hits) / static_cast<double>(probes),
              static_cast<double>(hits) / static_cast<double>(probes) / rate);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("aging_candidates: the aging-fingerprint filter's design candidates against time_limited");
  std::vector<std::uint64_t> keys = {14'000, 7'000'000};
  double rate = 1e-3;
  int reps = 5;
  std::uint64_t block = 200'000;
  std::vector<std::size_t> only;
  std::vector<double> rates;
  app.add_option("--keys", keys)->delimiter(',');
  app.add_option("--only", only, "candidate numbers from 0 (time_limited) in the order printed")->delimiter(',');
  app.add_option("--rates", rates, "several error rates, one after another (default: --rate)")->delimiter(',');
  app.add_option("--rate", rate);
  app.add_option("--reps", reps);
  app.add_option("--block", block);
  CLI11_PARSE(app, argc, argv);
  const std::vector<Candidate> candidates = {
      {"time_limited level 5", std::nullopt},
      {"cuckoo load .93/.96 kicks 32", AgingTuning{0.93, 0.96, 32}},
      {"cuckoo load .93/.96 kicks 500", AgingTuning{0.93, 0.96, 500}},
      {"cuckoo load .95/.97 kicks 500", AgingTuning{0.95, 0.97, 500}},
      {"cuckoo load .85/.90 kicks 8", AgingTuning{0.85, 0.90, 8}},
      {"two-choice load .75/.85 no kick", AgingTuning{0.75, 0.85, 0}},
  };
  if (rates.empty()) rates.push_back(rate);
  for (const double r : rates) {
    for (const std::uint64_t k : keys) {
      for (std::size_t i = 0; i < candidates.size(); ++i) {
        if (!only.empty() && std::find(only.begin(), only.end(), i) == only.end()) continue;
        for (const bool batch : {false, true}) run(candidates[i], r, k, reps, block, batch);
      }
    }
  }
  return 0;
}
