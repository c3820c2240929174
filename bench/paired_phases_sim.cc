// File: bench/paired_phases_sim.cc
//
// What putting two or three phases' cells of a key in one 64-byte line costs a time-limited filter in FPR,
// and so in memory (docs/decisions/tlbf-paired-phases.md). A query reads k cells, one per phase table
// (docs/filters.md, "The time-limited filter"), each in its own line. If a group of G consecutive phases kept a key's cells in one line, a query would
// read about k/G lines, but the group's rows would no longer be independent: a line of 512 bits holds
// R = floor(512 / (G w)) rows of each of the G phases, w = ceil((k+l+1)/k) bits per cell. This program
// simulates the filter's steady state with independent rows (layout 1) and grouped rows (layouts 2, 3, ...)
// on the same keys, and prints each layout's FPR, its ratio to the first layout's and a semi-analytic
// value. For the memory: pass --g, the keys per generation, at its value for the reference m and raise --m
// until a grouped layout's FPR is back at the independent one.
//
// Model: a ring of n = k+l slices of m bits, position 0 the oldest. Each generation inserts g keys (default
// round(m ln 2 / k)), each setting one bit in each of the k newest slices; then come the generation's
// queries, at the FPR's peak; then the oldest slice is dropped and an empty one appended. A slice's phase
// is its creation index mod k and fixes the key's row in it. A query is positive when the key's bit is set
// in k consecutive positions. Layout G groups the phases (0..G-1), (G..2G-1), ... (the last group may be
// smaller). The first phase of a group takes row fast_range(h_b, m); every other phase b of it takes
// start + fast_range(h_b, len), inside the first one's block [start, start + len) of R rows (R from the
// group's own size; the last block is cut at m, so any m works). h_b = mix64(key + golden (b + 1)), golden
// = 0x9E3779B97F4A7C15. Queries begin after n + 5 generations; standard errors are batch means over
// --batch generations.
//
// Semi-analytic model: the exact joint law of a query's bits within one group instance (a group's slices
// at consecutive positions, which share insertion generations), by inclusion-exclusion over the
// generations that wrote them; distinct instances are taken as independent, which leaves out the weak
// correlation between a slice and its partner phases' slices one cycle away. It is averaged over the k
// phase alignments of the ring. For layout 1 it is the exact-fill independent-bits FPR, also printed from
// a recursion over run lengths.
//
// Seeds: insertion key i (from 1) is mix64(mix64(2 seed + 0x1234567) + golden i), query key i (from 1) is
// mix64(mix64(2 seed + 1 + 0xABCDEF0) ^ 0xD1B54A32D192ED03 i). Every layout gets the same keys (common
// random numbers), so the batch-means standard error of a ratio includes the correlation between its two
// FPRs. --verify-every N compares every Nth query of each generation (query 0, N, 2N, ...) with a naive scan
// of all positions, in every layout; the exit code is 1 when any of them disagrees.

#include <algorithm>
#include <bit>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include <CLI/CLI.hpp>

#include "bloomgate/filters/hash.h"

#include "bench_support.h"

namespace bloomgate::bench {
namespace {

constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ULL;        // step of the row hashes and insertion keys
constexpr std::uint64_t kQueryKeyStep = 0xD1B54A32D192ED03ULL;  // step of the query keys
constexpr std::size_t kLineBits = 512;
constexpr std::size_t kWarmGenerationsPastRing = 5;  // generations before the first query: n + this

struct Config {
  std::size_t k = 10;
  std::size_t l = 6;
  std::uint64_t m = 65536;
  std::uint64_t g = 0;  // keys per generation; run() sets round(m ln 2 / k) when --g is absent
  std::uint64_t generations = 2000;
  std::uint64_t queries_per_generation = 5000;
  std::uint64_t batch = 50;
  std::uint64_t seed = 1;
  std::vector<std::size_t> layouts{1, 2, 3};
  std::uint64_t verify_every = 0;
  bool semi_analytic_only = false;
};

// ------------------------------------------------------------------------------------------------------
// Rows

using filters::fast_range;  // floor(hash * n / 2^64): a row in [0, n)

std::uint64_t row_hash(std::uint64_t key, std::size_t phase) { return mix64(key + kGolden * (phase + 1)); }

// Bits per phase-table cell: one per slice of a phase among the k+l slices and the one being filled.
std::size_t cell_bits(std::size_t k, std::size_t l) { return (k + l + 1 + k - 1) / k; }

// Rows of each phase in one line when `phases` phases share it.
std::uint64_t rows_per_line(std::size_t phases, std::size_t w) { return kLineBits / (phases * w); }

// Which phases share a line: group_leader[b] is the first phase of b's group; block_rows[b] is the block
// size of b's rows, 0 for a group's first phase (its row is uniform over the slice).
struct Layout {
  std::vector<std::size_t> group_leader;
  std::vector<std::uint64_t> block_rows;
};

Layout make_layout(std::size_t k, std::size_t group_size, std::size_t w) {
  Layout layout;
  layout.group_leader.resize(k);
  layout.block_rows.assign(k, 0);
  for (std::size_t leader = 0; leader < k; leader += group_size) {
    const std::size_t size = std::min(group_size, k - leader);
    const std::uint64_t rows = size >= 2 ? rows_per_line(size, w) : 0;
    for (std::size_t b = leader; b < leader + size; ++b) {
      layout.group_leader[b] = leader;
      if (b != leader) layout.block_rows[b] = rows;
    }
  }
  return layout;
}

// Phases in the group that starts at `leader`.
std::size_t group_size_at(const Layout& layout, std::size_t leader) {
  std::size_t size = 1;
  while (leader + size < layout.group_leader.size() && layout.group_leader[leader + size] == leader) ++size;
  return size;
}

// ------------------------------------------------------------------------------------------------------
// The simulated filter: n slices in a ring, each one bit array of m rows.

class SliceRing {
 public:
  SliceRing(std::size_t k, std::size_t l, std::uint64_t m, Layout layout)
      : k_(k), l_(l), n_(k + l), m_(m), words_((m + 63) / 64), layout_(std::move(layout)),
        bits_(n_ * words_, 0), phase_(n_), next_creation_(n_), rows_(k) {
    for (std::size_t slot = 0; slot < n_; ++slot) phase_[slot] = slot % k_;
  }

  // Sets the key's bit in each of the k newest slices.
  void insert(std::uint64_t key) {
    compute_rows(key);
    for (std::size_t position = n_ - k_; position < n_; ++position) {
      const std::size_t slot = slot_of(position);
      const std::uint64_t row = rows_[phase_[slot]];
      bits_[slot * words_ + (row >> 6)] |= std::uint64_t{1} << (row & 63);
    }
  }

  // Whether some window of k consecutive positions has the key's bit set in all of them. Each window
  // [start, start + k) is tested from its top down; a miss at p moves the next window to start at p + 1.
  bool query(std::uint64_t key) {
    compute_rows(key);
    std::size_t start = 0;
    while (start <= l_) {
      std::size_t top = start + k_;  // one past the highest position not yet found set
      while (top > start && bit_set(top - 1)) --top;
      if (top == start) return true;
      start = top;
    }
    return false;
  }

  // The same answer from one pass over every position, counting the run of set bits.
  bool query_naive(std::uint64_t key) {
    compute_rows(key);
    std::size_t run = 0;
    for (std::size_t position = 0; position < n_; ++position) {
      if (!bit_set(position)) {
        run = 0;
      } else if (++run >= k_) {
        return true;
      }
    }
    return false;
  }

  // Drops the oldest slice: its slot, cleared, becomes the newest slice with the next creation's phase.
  void advance_generation() {
    const std::size_t slot = oldest_slot_;
    oldest_slot_ = oldest_slot_ + 1 == n_ ? 0 : oldest_slot_ + 1;
    std::memset(&bits_[slot * words_], 0, words_ * sizeof(std::uint64_t));
    phase_[slot] = static_cast<std::size_t>(next_creation_ % k_);
    ++next_creation_;
  }

 private:
  std::size_t slot_of(std::size_t position) const {
    const std::size_t slot = oldest_slot_ + position;
    return slot >= n_ ? slot - n_ : slot;
  }

  bool bit_set(std::size_t position) const {
    const std::size_t slot = slot_of(position);
    const std::uint64_t row = rows_[phase_[slot]];
    return ((bits_[slot * words_ + (row >> 6)] >> (row & 63)) & 1U) != 0;
  }

  // The key's row in each phase (see the file comment).
  void compute_rows(std::uint64_t key) {
    for (std::size_t phase = 0; phase < k_; ++phase) {
      const std::uint64_t hash = row_hash(key, phase);
      const std::size_t leader = layout_.group_leader[phase];
      if (leader == phase) {
        rows_[phase] = fast_range(hash, m_);
        continue;
      }
      const std::uint64_t block = layout_.block_rows[phase];
      const std::uint64_t block_start = (rows_[leader] / block) * block;
      rows_[phase] = block_start + fast_range(hash, std::min(block, m_ - block_start));
    }
  }

  std::size_t k_;
  std::size_t l_;
  std::size_t n_;
  std::uint64_t m_;
  std::uint64_t words_;
  Layout layout_;
  std::vector<std::uint64_t> bits_;  // n slots of `words_` words
  std::vector<std::size_t> phase_;   // per slot
  std::size_t oldest_slot_ = 0;      // slot of position 0
  std::uint64_t next_creation_;      // creation index of the next slice appended
  std::vector<std::uint64_t> rows_;  // per phase, for the key in hand
};

// ------------------------------------------------------------------------------------------------------
// Models

// Exact-fill FPR at the end of a generation with independent bits: the slice at position p got
// min(k, n - p) generations of g keys; a recursion over the length of the current run of set bits, state k
// meaning a window of k was found.
double independent_bits_fpr(std::size_t k, std::size_t l, std::uint64_t m, std::uint64_t g) {
  const std::size_t n = k + l;
  std::vector<double> run(k + 1, 0.0);
  run[0] = 1.0;
  for (std::size_t position = 0; position < n; ++position) {
    const std::size_t writes = std::min(k, n - position);
    const double set = 1.0 - std::pow(1.0 - 1.0 / static_cast<double>(m), static_cast<double>(writes) * static_cast<double>(g));
    std::vector<double> next(k + 1, 0.0);
    next[k] = run[k];
    for (std::size_t a = 0; a < k; ++a) {
      next[a + 1] += run[a] * set;
      next[0] += run[a] * (1 - set);
    }
    run = next;
  }
  return run[k];
}

// P(one key, written to every slice in `slices` of a group instance, sets the query's bit in at least one
// of them), by inclusion-exclusion over the nonempty subsets U, the term of U being (1/m) R^-(|U|-1).
double hit_probability(std::uint32_t slices, double block_rows, std::uint64_t m) {
  double p = 0;
  for (std::uint32_t subset = slices; subset != 0; subset = (subset - 1) & slices) {
    const int size = std::popcount(subset);
    const double term = (1.0 / static_cast<double>(m)) * std::pow(block_rows, static_cast<double>(1 - size));
    p += (size & 1) != 0 ? term : -term;
  }
  return p;
}

// One group instance of a ring: `count` slices at positions first .. first + count - 1.
struct GroupInstance {
  std::size_t first = 0;
  std::size_t count = 0;
  double block_rows = 1.0;
};

// For every subset Z of the instance's slices, P(the query's bit is 0 in all of Z). At age t (generations
// back, 0 the current one) the slice now at position q was at q + t, and was written when that was one of
// the k newest.
std::vector<double> all_zero_probabilities(const GroupInstance& group, std::size_t k, std::size_t n, std::uint64_t m,
                                           std::uint64_t g) {
  const std::uint32_t subsets = std::uint32_t{1} << group.count;
  std::vector<double> hit(subsets, 0.0);
  for (std::uint32_t slices = 1; slices < subsets; ++slices) hit[slices] = hit_probability(slices, group.block_rows, m);
  std::vector<double> all_zero(subsets);
  for (std::uint32_t zero = 0; zero < subsets; ++zero) {
    double log_p = 0;
    for (std::size_t age = 0; age < n; ++age) {
      std::uint32_t written = 0;
      for (std::size_t i = 0; i < group.count; ++i) {
        const std::size_t then = group.first + i + age;
        if ((zero >> i & 1U) != 0 && then >= n - k && then <= n - 1) written |= std::uint32_t{1} << i;
      }
      if (written != 0) log_p += static_cast<double>(g) * std::log1p(-hit[written]);
    }
    all_zero[zero] = std::exp(log_p);
  }
  return all_zero;
}

// P(the query's bit is 0 in exactly the slices of `zero`), from the all-zero probabilities by
// inclusion-exclusion over the other slices.
double exactly_zero_probability(const std::vector<double>& all_zero, std::uint32_t zero, std::uint32_t full) {
  const std::uint32_t rest = full & ~zero;
  double p = 0;
  for (std::uint32_t also = rest;; also = (also - 1) & rest) {
    p += ((std::popcount(also) & 1) != 0 ? -1.0 : 1.0) * all_zero[zero | also];
    if (also == 0) break;
  }
  return p;
}

// Carries the run-length distribution `run` (state k: a window found) across one group instance.
std::vector<double> across_group(const std::vector<double>& run, const GroupInstance& group, std::size_t k, std::size_t n,
                                 std::uint64_t m, std::uint64_t g) {
  const std::vector<double> all_zero = all_zero_probabilities(group, k, n, m, g);
  const std::uint32_t full = (std::uint32_t{1} << group.count) - 1;
  std::vector<double> next(k + 1, 0.0);
  next[k] = run[k];
  for (std::uint32_t zero = 0; zero <= full; ++zero) {
    const double p = exactly_zero_probability(all_zero, zero, full);
    for (std::size_t a = 0; a < k; ++a) {
      if (run[a] == 0) continue;
      std::size_t length = a;
      bool found = false;
      for (std::size_t i = 0; i < group.count; ++i) {
        if ((zero >> i & 1U) != 0) {
          length = 0;
        } else if (++length >= k) {
          found = true;
          break;
        }
      }
      next[found ? k : length] += run[a] * p;
    }
  }
  return next;
}

// P(positive) when position 0 holds phase `alignment`, walking the ring one group instance at a time (the
// instances at the ring's ends may be cut short).
double semi_analytic_positive(const Layout& layout, std::size_t alignment, std::size_t k, std::size_t n, std::uint64_t m,
                              std::uint64_t g, std::size_t w) {
  std::vector<double> run(k + 1, 0.0);
  run[0] = 1.0;
  std::size_t position = 0;
  while (position < n) {
    const std::size_t phase = (alignment + position) % k;
    const std::size_t leader = layout.group_leader[phase];
    const std::size_t size = group_size_at(layout, leader);
    const std::size_t offset = phase - leader;  // position - offset is where the leader's slice is (or would be)
    GroupInstance group;
    group.first = position >= offset ? position - offset : 0;
    const std::size_t last = std::min(n - 1, position + (size - 1 - offset));
    group.count = last - group.first + 1;
    group.block_rows = size >= 2 ? static_cast<double>(rows_per_line(size, w)) : 1.0;
    run = across_group(run, group, k, n, m, g);
    position = last + 1;
  }
  return run[k];
}

// The semi-analytic FPR of layout `group_size`, averaged over the k phase alignments.
double semi_analytic_fpr(std::size_t k, std::size_t l, std::uint64_t m, std::uint64_t g, std::size_t group_size,
                         std::size_t w) {
  const Layout layout = make_layout(k, group_size, w);
  double total = 0;
  for (std::size_t alignment = 0; alignment < k; ++alignment) total += semi_analytic_positive(layout, alignment, k, k + l, m, g, w);
  return total / static_cast<double>(k);
}

// ------------------------------------------------------------------------------------------------------
// Simulation

std::uint64_t insertion_key(std::uint64_t base, std::uint64_t index) { return mix64(base + kGolden * index); }
std::uint64_t query_key(std::uint64_t base, std::uint64_t index) { return mix64(base ^ (kQueryKeyStep * index)); }

struct LayoutCounts {
  std::uint64_t positives = 0;
  std::uint64_t batch_positives = 0;  // in the batch not yet closed
  std::vector<double> batch_fpr;      // one per closed batch
};

struct Simulation {
  std::vector<LayoutCounts> layouts;
  std::uint64_t queries = 0;
  std::uint64_t mismatches = 0;  // verified queries, over all layouts, where query() and query_naive() differ
  std::uint64_t warm_generations = 0;
  double seconds = 0;
};

// One generation's queries on every ring, the same keys for each.
void query_generation(const Config& c, std::vector<SliceRing>& rings, std::uint64_t query_base, std::uint64_t& query_index,
                      Simulation& sim) {
  for (std::uint64_t q = 0; q < c.queries_per_generation; ++q) {
    const std::uint64_t key = query_key(query_base, ++query_index);
    const bool verify = c.verify_every != 0 && q % c.verify_every == 0;
    for (std::size_t j = 0; j < rings.size(); ++j) {
      const bool positive = rings[j].query(key);
      if (verify && positive != rings[j].query_naive(key)) ++sim.mismatches;
      if (positive) {
        ++sim.layouts[j].positives;
        ++sim.layouts[j].batch_positives;
      }
    }
  }
}

Simulation simulate(const Config& c, std::size_t w) {
  std::vector<SliceRing> rings;
  for (const std::size_t group_size : c.layouts) rings.emplace_back(c.k, c.l, c.m, make_layout(c.k, group_size, w));
  Simulation sim;
  sim.layouts.resize(rings.size());
  sim.warm_generations = c.k + c.l + kWarmGenerationsPastRing;
  const std::uint64_t insertion_base = mix64(c.seed * 2 + 0x1234567ULL);
  const std::uint64_t query_base = mix64(c.seed * 2 + 1 + 0xABCDEF0ULL);
  std::uint64_t insertion_index = 0;
  std::uint64_t query_index = 0;
  std::uint64_t batch_queries = 0;
  const auto started = std::chrono::steady_clock::now();
  for (std::uint64_t generation = 0; generation < sim.warm_generations + c.generations; ++generation) {
    for (std::uint64_t i = 0; i < c.g; ++i) {
      const std::uint64_t key = insertion_key(insertion_base, ++insertion_index);
      for (SliceRing& ring : rings) ring.insert(key);
    }
    if (generation >= sim.warm_generations) {
      query_generation(c, rings, query_base, query_index, sim);
      batch_queries += c.queries_per_generation;
      sim.queries += c.queries_per_generation;
      if ((generation - sim.warm_generations + 1) % c.batch == 0) {
        for (LayoutCounts& counts : sim.layouts) {
          counts.batch_fpr.push_back(static_cast<double>(counts.batch_positives) / static_cast<double>(batch_queries));
          counts.batch_positives = 0;
        }
        batch_queries = 0;
      }
    }
    for (SliceRing& ring : rings) ring.advance_generation();
  }
  sim.seconds = seconds_since(started);
  return sim;
}

// ------------------------------------------------------------------------------------------------------
// Output

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (const double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

// Batch-means standard error of the mean of `batches`.
double batch_standard_error(const std::vector<double>& batches) {
  const double count = static_cast<double>(batches.size());
  const double average = mean(batches);
  double variance = 0;
  for (const double x : batches) variance += (x - average) * (x - average);
  variance /= count - 1;
  return std::sqrt(variance / count);
}

// Standard error of the ratio estimate `ratio` = mean(a) / mean(b) over paired batches (delta method).
double ratio_standard_error(const std::vector<double>& a, const std::vector<double>& b, double ratio) {
  const double count = static_cast<double>(b.size());
  double sum = 0;
  for (std::size_t t = 0; t < b.size(); ++t) {
    const double d = a[t] - ratio * b[t];
    sum += d * d;
  }
  sum /= count - 1;
  return std::sqrt(sum / count) / mean(b);
}

void print_semi_analytic_only(const Config& c, std::size_t w) {
  std::printf("semi k=%zu l=%zu m=%" PRIu64 " g=%" PRIu64, c.k, c.l, c.m, c.g);
  for (const std::size_t group_size : c.layouts) {
    std::printf(" G%zu=%.6e", group_size, semi_analytic_fpr(c.k, c.l, c.m, c.g, group_size, w));
  }
  std::printf("\n");
}

void print_simulation(const Config& c, std::size_t w, const Simulation& sim) {
  const std::size_t batches = sim.layouts.front().batch_fpr.size();
  std::printf("# k=%zu l=%zu n=%zu w=%zu m=%" PRIu64 " g=%" PRIu64 " gens=%" PRIu64 "(warm %" PRIu64 ") Q/gen=%" PRIu64
              " queries=%" PRIu64 " seed=%" PRIu64 " batches=%zu(x%" PRIu64 " gens) time=%.1fs verify_mismatch=%" PRIu64 "\n",
              c.k, c.l, c.k + c.l, w, c.m, c.g, c.generations, sim.warm_generations, c.queries_per_generation, sim.queries,
              c.seed, batches, c.batch, sim.seconds, sim.mismatches);
  std::printf("# analytic exact-fill independent-bits FPR (end of generation) = %.4e\n",
              independent_bits_fpr(c.k, c.l, c.m, c.g));
  const double queries = static_cast<double>(sim.queries);
  const double first_fpr = static_cast<double>(sim.layouts.front().positives) / queries;
  const double independent_semi = semi_analytic_fpr(c.k, c.l, c.m, c.g, 1, w);
  for (std::size_t j = 0; j < c.layouts.size(); ++j) {
    const std::size_t group_size = c.layouts[j];
    const LayoutCounts& counts = sim.layouts[j];
    const double fpr = static_cast<double>(counts.positives) / queries;
    const double se = batch_standard_error(counts.batch_fpr);
    const double se_binomial = std::sqrt(fpr * (1 - fpr) / queries);
    const double ratio = fpr / first_fpr;
    const double ratio_se = j > 0 ? ratio_standard_error(counts.batch_fpr, sim.layouts.front().batch_fpr, ratio) : 0;
    // The nominal group's rows per line (a smaller last group has more).
    const std::uint64_t rows = group_size == 1 || c.k < 2 ? 0 : rows_per_line(std::min(group_size, c.k), w);
    const double semi = semi_analytic_fpr(c.k, c.l, c.m, c.g, group_size, w);
    std::printf("layout G=%zu semi-analytic FPR=%.4e (ratio %.4f)\n", group_size, semi, semi / independent_semi);
    std::printf("layout G=%zu R=%" PRIu64 " positives=%" PRIu64 " FPR=%.4e se_batch=%.2e (%.2f%%) se_binom=%.2e "
                "ratio_to_first=%.4f +- %.4f\n",
                group_size, rows, counts.positives, fpr, se, 100 * se / fpr, se_binomial, ratio, ratio_se);
  }
}

int run(Config c, bool g_given) {
  if (!g_given) c.g = static_cast<std::uint64_t>(std::llround(static_cast<double>(c.m) * std::log(2.0) / static_cast<double>(c.k)));
  const std::size_t w = cell_bits(c.k, c.l);
  if (c.layouts.empty()) {
    std::fprintf(stderr, "paired_phases_sim: --layouts is empty\n");
    return 2;
  }
  for (const std::size_t group_size : c.layouts) {
    if (group_size >= 2 && c.k >= 2 && rows_per_line(std::min(group_size, c.k), w) == 0) {
      std::fprintf(stderr, "paired_phases_sim: layout %zu: %zu cells of %zu bits do not fit in one line\n", group_size,
                   std::min(group_size, c.k), w);
      return 2;
    }
  }
  if (c.semi_analytic_only) {
    print_semi_analytic_only(c, w);
    return 0;
  }
  const Simulation sim = simulate(c, w);
  print_simulation(c, w, sim);
  if (sim.mismatches != 0) {
    std::fprintf(stderr, "paired_phases_sim: %" PRIu64 " verified queries disagree with the naive scan\n", sim.mismatches);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace bloomgate::bench

int main(int argc, char** argv) {
  bloomgate::bench::Config c;
  CLI::App app{"paired_phases_sim: steady-state FPR of a time-limited filter with phases grouped per cache line"};
  app.add_option("--k", c.k, "slices a key is written to, and the window length (default 10)")->check(CLI::Range(1, 4096));
  app.add_option("--l", c.l, "slices beyond k in the ring (default 6)")->check(CLI::Range(0, 65536));
  app.add_option("--m", c.m, "rows (bits) per slice (default 65536)")->check(CLI::PositiveNumber);
  CLI::Option* g_option = app.add_option("--g", c.g, "keys inserted per generation (default round(m ln 2 / k))");
  app.add_option("--generations", c.generations, "generations with queries, after the n + 5 warm-up ones (default 2000)");
  app.add_option("--queries-per-generation", c.queries_per_generation, "queries at the end of each generation (default 5000)");
  app.add_option("--batch", c.batch, "generations per batch of the batch-means standard errors (default 50)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", c.seed, "seed of the insertion and query keys (default 1)");
  app.add_option("--layouts", c.layouts,
                 "comma-separated group sizes, 1 = independent rows; ratios are to the first (default 1,2,3)")
      ->delimiter(',')
      ->check(CLI::Range(1, 9));
  app.add_option("--verify-every", c.verify_every,
                 "compare every Nth query of each generation with a naive scan; 0 = never (default 0)");
  app.add_flag("--semi-analytic-only", c.semi_analytic_only, "print only the semi-analytic FPR of each layout");
  CLI11_PARSE(app, argc, argv);
  try {
    return bloomgate::bench::run(c, g_option->count() != 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paired_phases_sim: %s\n", e.what());
    return 2;
  }
}
