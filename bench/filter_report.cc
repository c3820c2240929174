// filter_bench's report: the tables of every error rate, the targets and the JSON (filter_bench.h).
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bit_slice.h"
#include "filter_bench.h"
#include "json_writer.h"

namespace bloomgate::bench {

// ------------------------------------------------------------------------------------------------------
// Reporting.

std::string fmt(const char* format, double v) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
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
                fmt("%.1f", 100 * in.timing.present_fraction()).c_str(),
                oc.available ? fmt("%.1f", oc.mib).c_str() : "n/a", fmt("%.1f", oc.timing.median_ns).c_str(),
                fmt("%.2f", ratio(oc.timing.median_ns, oc_base.sbbf.timing.median_ns)).c_str(),
                fmt("%.1f", 100 * oc.timing.present_fraction()).c_str(), fmt("%.2f", oc.bits_per_element).c_str(),
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
                fmt("%.1f", 100 * b.sbbf.timing.present_fraction()).c_str(), b.sbbf.bits_per_key);
    if (p.measure_quality) std::printf("  FPR %s at design load", fmt("%.3e", b.sbbf.fpr).c_str());
    std::printf("\n");
    if (b.floor.ran) {
      std::printf("  %-16s   %-24s %8.2f MiB %9s ns/op  dup %5s%%  k=%u lines per key, requested together: %s x "
                  "split_block\n",
                  "k_line_floor", p.label.c_str(), b.floor.mib, fmt("%.1f", b.floor.timing.median_ns).c_str(),
                  fmt("%.1f", 100 * b.floor.timing.present_fraction()).c_str(), b.floor.k,
                  fmt("%.2f", ratio(b.floor.timing.median_ns, b.sbbf.timing.median_ns)).c_str());
    }
    if (b.exact.ran) {
      std::printf("  %-16s   %-24s %8.2f MiB %9s ns/op  dup %5s%%  %" PRIu64 " entries, %.1f bytes/entry (counted)\n",
                  "exact_ttl_set", p.label.c_str(), b.exact.mib, fmt("%.1f", b.exact.timing.median_ns).c_str(),
                  fmt("%.1f", 100 * b.exact.timing.present_fraction()).c_str(), b.exact.entries, b.exact.bytes_per_entry);
    } else if (!b.exact.note.empty()) {
      std::printf("  %-16s   %-24s %s\n", "exact_ttl_set", p.label.c_str(), b.exact.note.c_str());
    }
  }
}

// The row of `type` in a report's tables: its in-cache and out-of-cache results, or nulls when it did not run.
std::pair<const FilterResult*, const FilterResult*> rows_of(const RateReport& r, FilterType type) {
  for (std::size_t i = 0; i < r.in_cache.size(); ++i) {
    if (r.in_cache[i].first->type == type && r.in_cache[i].second.available) {
      return {&r.in_cache[i].second, &r.out_of_cache[i].second};
    }
  }
  return {nullptr, nullptr};
}

// The targets in force: the aging-fingerprint filter against the time-limited filter on the same
// streams, and the time-limited filter's own accuracy and its memory against the exact set. Memory is whole
// memory (FilterStats::memory_bytes) per distinct key in the window.
std::vector<Target> targets(const std::vector<RateReport>& reports) {
  std::vector<Target> out;
  for (const RateReport& r : reports) {
    const auto [tl_in, tl_oc] = rows_of(r, FilterType::kTimeLimited);
    if (tl_in == nullptr) continue;
    char rate[16];
    std::snprintf(rate, sizeof rate, "%.0e", r.rate);
    const std::string at_rate = std::string(" @") + rate;
    out.push_back({"time_limited measured FPR <= 1.1 x target" + at_rate, tl_in->fpr / r.rate, 1.1, true, "x"});
    const double exact_mib = r.baselines.at(r.plans[0].keys_per_ttl).exact.mib;
    out.push_back({"time_limited memory >= 10 x less than exact TTL set" + at_rate, ratio(exact_mib, tl_in->mib), 10.0,
                   false, "x"});
    const auto [af_in, af_oc] = rows_of(r, FilterType::kAgingFingerprint);
    if (af_in == nullptr) continue;
    if (std::fabs(r.rate - 1e-3) < 1e-12) {
      out.push_back({"aging_fingerprint whole memory <= 20 bits/key" + at_rate, af_in->bits_per_element, 20.0, true, ""});
    } else {
      out.push_back({"aging_fingerprint whole memory <= 0.8 x time_limited's" + at_rate,
                     ratio(af_in->bits_per_element, tl_in->bits_per_element), 0.8, true, "x"});
    }
    out.push_back({"aging_fingerprint measured FPR <= 1.1 x target" + at_rate, af_in->fpr / r.rate, 1.1, true, "x"});
    out.push_back({"aging_fingerprint in cache ns/op <= time_limited's / 1.3" + at_rate,
                   ratio(af_in->timing.median_ns, tl_in->timing.median_ns), 1 / 1.3, true, "x"});
    out.push_back({"aging_fingerprint out of cache ns/op <= time_limited's" + at_rate,
                   ratio(af_oc->timing.median_ns, tl_oc->timing.median_ns), 1.0, true, "x"});
    out.push_back({"aging_fingerprint out of cache batch ns/op <= 0.5 x time_limited's batch" + at_rate,
                   ratio(af_oc->batch_timing.median_ns, tl_oc->batch_timing.median_ns), 0.5, true, "x"});
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
  j.num("duplicate_fraction", t.present_fraction());
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
    j.target(t.name, t.reached, t.limit, passes(t) ? "PASS" : "MISS");
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

}  // namespace bloomgate::bench
