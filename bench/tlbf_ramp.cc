#include "tlbf_ramp.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <type_traits>
#include <vector>

#include "bloomgate/filters/fpr.h"
#include "bloomgate/filters/options.h"
#include "time_limited_filter.h"
#include "key_stream.h"
#include "plain_tlbf.h"

namespace bloomgate::bench {
namespace {

// The events of every partition, interleaved as the service's consumer hands them out (one from each in
// turn); keys of different partitions differ (each partition's stream has its own seed).
struct Events {
  std::vector<std::uint32_t> partition;
  std::vector<std::uint64_t> key;
  std::vector<std::int64_t> now_ns;
  std::int64_t ttl_ns = 0;
};

Events make_events(const RampConfig& c) {
  Events out;
  std::vector<KeyStream> streams;
  for (std::uint32_t p = 0; p < c.partitions; ++p) streams.emplace_back(c.hint * c.growth, c.seed + p);
  out.ttl_ns = streams.front().ttl_ns();
  for (std::uint64_t i = 0; i < c.events; ++i) {
    for (std::uint32_t p = 0; p < c.partitions; ++p) {
      const Event e = streams[p].next();
      out.partition.push_back(p);
      out.key.push_back(e.key);
      out.now_ns.push_back(e.now_ns);
    }
  }
  return out;
}

struct Run {
  double ns_per_op = 0;
  std::uint64_t present = 0;
  std::size_t max_segments = 0;
  std::size_t max_slices = 0;
  double mib = 0;  // all partitions' filters at the end: ours' slices, free columns and rounding included
};

// ns per operation over the whole stream, fresh filters each time; `op(filter, key, ns)`.
template <typename Make, typename Op>
Run time_run(const Events& events, std::uint32_t partitions, Make&& make, Op&& op) {
  std::vector<decltype(make())> filters;
  for (std::uint32_t p = 0; p < partitions; ++p) filters.push_back(make());
  Run run;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < events.key.size(); ++i) {
    run.present += op(*filters[events.partition[i]], events.key[i], events.now_ns[i]) ? 1U : 0U;
  }
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  run.ns_per_op = took.count() / static_cast<double>(events.key.size());
  if constexpr (std::is_same_v<decltype(make()), std::unique_ptr<filters::TimeLimitedFilter>>) {
    for (const auto& f : filters) {
      run.max_segments = std::max(run.max_segments, f->segment_count());
      run.max_slices = std::max(run.max_slices, f->slice_count());
      const filters::FilterStats s = f->stats(filters::from_epoch_nanos(events.now_ns.back()));
      run.mib += static_cast<double>(s.memory_bytes) / kMiB;
    }
  } else {
    for (const auto& f : filters) run.mib += static_cast<double>(f->bits()) / 8 / kMiB;
  }
  return run;
}

template <typename Make, typename Op>
Run median_run(const Events& events, const RampConfig& c, Make&& make, Op&& op) {
  std::vector<Run> runs;
  std::vector<double> ns;
  for (int r = 0; r < c.repetitions; ++r) {
    runs.push_back(time_run(events, c.partitions, make, op));
    ns.push_back(runs.back().ns_per_op);
  }
  Run out = runs.back();
  out.ns_per_op = median(ns);
  return out;
}

}  // namespace

int run_ramp(const RampConfig& c) {
  const Events events = make_events(c);
  std::printf("Service-shaped time-limited filters: %u partitions x %llu events, created for %llu keys per TTL, "
              "fed %llu x that; TTL longer than the data; error rate %g; median of %d runs\n",
              c.partitions, static_cast<unsigned long long>(c.events), static_cast<unsigned long long>(c.hint),
              static_cast<unsigned long long>(c.growth), c.rate, c.repetitions);
  std::printf("%5s %3s %4s %9s %7s %10s %10s %10s %8s %8s %9s %10s\n", "level", "k", "l", "segments", "slices",
              "ours ns", "w/ age ns", "plain ns", "plain/us", "present", "ours MiB", "plain MiB");
  for (const std::uint32_t level : c.levels) {
    const filters::SlicedParams params = filters::choose_sliced_params(c.rate, level);
    filters::FilterOptions o;
    o.error_rate = c.rate;
    o.level = level;
    o.ttl = filters::Duration{events.ttl_ns};
    o.expected_per_ttl = c.hint;
    const auto make_ours = [&o] { return std::make_unique<filters::TimeLimitedFilter>(o); };
    const Run ours = median_run(events, c, make_ours, [](filters::TimeLimitedFilter& f, std::uint64_t key, std::int64_t ns) {
      return f.test_and_insert(filters::KeyHash{key}, filters::from_epoch_nanos(ns));
    });
    const Run aged = median_run(events, c, make_ours, [](filters::TimeLimitedFilter& f, std::uint64_t key, std::int64_t ns) {
      return f.test_and_insert_with_age(filters::KeyHash{key}, filters::from_epoch_nanos(ns)).present;
    });
    const auto make_plain = [&] { return std::make_unique<PlainTimeLimitedBloom>(params, c.hint, events.ttl_ns); };
    const Run plain = median_run(events, c, make_plain, [](PlainTimeLimitedBloom& f, std::uint64_t key, std::int64_t ns) {
      return f.test_and_insert(key, ns);
    });
    std::printf("%5u %3u %4u %9zu %7zu %10.1f %10.1f %10.1f %8.2f %8.3f %9.2f %10.2f\n", level, params.k, params.l,
                ours.max_segments, ours.max_slices, ours.ns_per_op, aged.ns_per_op, plain.ns_per_op,
                plain.ns_per_op / ours.ns_per_op, static_cast<double>(ours.present) / static_cast<double>(events.key.size()),
                ours.mib, plain.mib);
  }
  return 0;
}

}  // namespace bloomgate::bench
