// File: filters/src/column_segment_avx512.cc
//
// The vector queries of the time-limited filter's segment (ColumnSegment::locate_any_run_vector and
// locate_any_run_ring_word), the ring word's search of cells requested first (any_run_in_ring_word), and
// the age's oldest run from a query's run slots across the phases' lanes. The file is compiled for AVX-512 F
// and DQ and BMI2 (its target pragma); its functions are called only where the CPU has them
// (ColumnSegment::vector_query()). Per eight phases: the probe sums h1 + j h2 + (j^3 - j) / 6 and their mix
// (tlbf_probes.h) in 64-bit lanes, the rows by fast_range and the cells' starts. Then every cell is loaded
// (one 64-bit load each), all of them before the search reads any, which is faster than gathering them in
// the lanes at every size the query serves (docs/decisions/tlbf-query-experiments.md, "Kept: the cells
// loaded one by one, before the search"), and searched in one of two ways:
// - a ring of at most 64 columns (every level up to 4 at 1e-3): each cell deposited into its columns of one
//   word with PDEP, the word turned to age order and masked by the validity, and its runs of k found by
//   five or six shifts and ANDs ("Kept: the ring in one word");
// - a wider ring: each cell masked by validity, then the run search reads the k cells in phase order as
//   the scalar query does: its chain is two operations per phase, shorter than the lanes' shuffles a
//   vector prefix would take ("The vector query").
//
// fast_range(v, rows) is the high 64 bits of v * rows. With rows < 2^32 (required by vector_query()), and
// v = v_hi 2^32 + v_lo, that is (v_hi rows + (v_lo rows >> 32)) >> 32, from two 32 x 32 -> 64-bit
// multiplications per lane; the sum cannot overflow (v_hi rows <= 2^64 - 2^33 + 1).
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdint>

#include "column_segment.h"

#include "tlbf_probes.h"

// GCC 12's shift and multiply intrinsics pass _mm512_undefined_epi32() (a self-initialised
// variable) as their unused merge source, which -Wmaybe-uninitialized and -Wuninitialized report once they
// are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace bloomgate::filters::detail {

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,bmi2")

namespace {

// The k cells deposited into their columns of one word (PDEP takes a cell's w low bits, so the bits above
// the cell that a load brings need no mask), in two chains of ORs so that no deposit waits for the one
// before it. `cell(start)` reads the cell whose first bit is `start`.
template <class CellAt>
[[gnu::always_inline]] inline std::uint64_t deposit_cells(const std::uint64_t* cell_starts, const std::uint64_t* columns,
                                                          std::uint32_t k, CellAt cell) {
  std::uint64_t even = 0;
  std::uint64_t odd = 0;
  std::uint32_t b = 0;
  for (; b + 1 < k; b += 2) {
    even |= _pdep_u64(cell(cell_starts[b]), columns[b]);
    odd |= _pdep_u64(cell(cell_starts[b + 1]), columns[b + 1]);
  }
  if (b < k) even |= _pdep_u64(cell(cell_starts[b]), columns[b]);
  return even | odd;
}

// Sixteen lanes in two registers (phases 0-7, 8-15).
struct Lanes16 {
  __m512i low;
  __m512i high;
};

// Bit b: lane b has bit `slot`.
std::uint64_t lanes_with_slot(Lanes16 v, std::uint32_t slot) {
  const __m512i bit = _mm512_set1_epi64(static_cast<long long>(std::uint64_t{1} << slot));
  return _mm512_test_epi64_mask(v.low, bit) | static_cast<std::uint64_t>(_mm512_test_epi64_mask(v.high, bit)) << 8;
}

// Lane b of the sixteen: x[b] for the phases set in `live` (b < k), zero beyond.
Lanes16 phase_lanes(const std::uint64_t* x, __mmask16 live) {
  return {_mm512_maskz_loadu_epi64(static_cast<__mmask8>(live), x),
          _mm512_maskz_loadu_epi64(static_cast<__mmask8>(live >> 8), x + 8)};
}

__mmask16 live_phases(std::uint32_t k) { return static_cast<__mmask16>(k == 16 ? 0xFFFFU : (1U << k) - 1); }

}  // namespace

// The cells' starts of eight phases at a time, stored in whole groups: a masked store is not forwarded to
// the loads that read them. Inlined into both vector queries.
[[gnu::always_inline]] inline void ColumnSegment::locate_vector(const KeyProbes& probes,
                                                               std::uint64_t* cell_starts) const noexcept {
  const __m512i h1 = _mm512_set1_epi64(static_cast<long long>(probes.key().value));
  const __m512i h2 = _mm512_set1_epi64(static_cast<long long>(second_probe_hash(probes.key())));
  const __m512i mix = _mm512_set1_epi64(static_cast<long long>(kProbeMix));
  const __m512i rows = _mm512_set1_epi64(static_cast<long long>(rows_));
  const __m512i width = _mm512_set1_epi64(width_);
  for (std::uint32_t b = 0; b < k_; b += 8) {
    const auto lanes = static_cast<__mmask8>(k_ - b >= 8 ? 0xFFU : (1U << (k_ - b)) - 1);
    const __m512i j = _mm512_maskz_loadu_epi64(lanes, index_of_phase_.data() + b);
    const __m512i cubic = _mm512_maskz_loadu_epi64(lanes, cubic_of_phase_.data() + b);
    const __m512i sum = _mm512_add_epi64(_mm512_add_epi64(h1, cubic), _mm512_mullo_epi64(j, h2));
    const __m512i value = _mm512_mullo_epi64(_mm512_xor_si512(sum, _mm512_srli_epi64(sum, kProbeMixShift)), mix);
    const __m512i low = _mm512_mul_epu32(value, rows);
    const __m512i high = _mm512_mul_epu32(_mm512_srli_epi64(value, 32), rows);
    const __m512i row = _mm512_srli_epi64(_mm512_add_epi64(high, _mm512_srli_epi64(low, 32)), 32);
    const __m512i start =
        _mm512_add_epi64(_mm512_maskz_loadu_epi64(lanes, table_start_.data() + b), _mm512_mul_epu32(row, width));
    _mm512_storeu_si512(cell_starts + b, start);
  }
}

bool ColumnSegment::locate_any_run_vector(const KeyProbes& probes, const std::uint64_t* valid, std::uint64_t* cell_starts,
                                          QueriedCells& kept) const noexcept {
  assert(vector_query_);
  locate_vector(probes, cell_starts);
  // Every cell loaded before the search reads any: with the loads in the search's loop each waited behind
  // the search's chain.
  const auto* bytes = reinterpret_cast<const unsigned char*>(cells_.data());
  std::uint64_t* x = kept.x.data();
  for (std::uint32_t b = 0; b < k_; ++b) x[b] = bits_from(bytes, cell_starts[b]) & valid[b];
  RunSearch search;
  for (std::uint32_t b = 0; b < k_; ++b) search.feed_cell(x[b], width_);
  kept.run_slots = search.runs;
  return search.found(cell_mask_);
}

// Cells of a width that divides 64 never cross a word: each is read from its aligned word, shifted by the
// start's low six bits (what a 64-bit SHRX reads of its count), one operation less per cell than bits_from's
// byte address and shift. Turning the word by the oldest column puts the free column just before it at the
// top: no valid run wraps, and the ring's copy that the left shift leaves above bit C - 1 is masked with the
// validity, which has no bit from the live count on. Inlined into both of its callers.
[[gnu::always_inline]] inline bool ColumnSegment::search_ring_word(const std::uint64_t* cell_starts,
                                                                  std::uint64_t valid_by_age,
                                                                  QueriedCells& kept) const noexcept {
  const std::uint64_t* words = cells_.data();
  const auto* bytes = reinterpret_cast<const unsigned char*>(words);
  const std::uint64_t by_column =
      cells_in_words_
          ? deposit_cells(cell_starts, columns_of_phase_.data(), k_,
                          [words](std::uint64_t start) { return words[start >> 6] >> (start & 63); })
          : deposit_cells(cell_starts, columns_of_phase_.data(), k_,
                          [bytes](std::uint64_t start) { return bits_from(bytes, start); });
  // (x << 1) << (C - 1 - oldest) is x << (C - oldest) without the undefined shift by 64 when oldest is 0.
  const std::uint64_t holding =
      ((by_column >> oldest_) | ((by_column << 1) << (columns_ - 1 - oldest_))) & valid_by_age;
  std::uint64_t runs = holding;
  for (const std::uint32_t shift : run_shifts_) runs &= runs >> shift;
  kept.holding_by_age = holding;
  kept.runs_by_age = runs;
  return runs != 0;
}

bool ColumnSegment::locate_any_run_ring_word(const KeyProbes& probes, std::uint64_t valid_by_age,
                                             std::uint64_t* cell_starts, QueriedCells& kept) const noexcept {
  assert(ring_word_query_);
  locate_vector(probes, cell_starts);
  return search_ring_word(cell_starts, valid_by_age, kept);
}

bool ColumnSegment::any_run_in_ring_word(const std::uint64_t* cell_starts, std::uint64_t valid_by_age,
                                         QueriedCells& kept) const noexcept {
  return search_ring_word(cell_starts, valid_by_age, kept);
}

// oldest_run_start's run, from the slots the query's search found runs in: the oldest run starts in
// the first of them at or after the oldest column's slot, else (past the ring's end) in the first of all.
// A run from that slot at a phase before the oldest column's would cross the free column just before it,
// which is never valid, so any phase of the slot's runs is at or after the oldest column. The slot's runs
// start at the phases p with phases p..k-1 holding slot s and phases 0..p-1 slot s + 1: from the first
// phase of the longest suffix of lanes with slot s to the length of the prefix of lanes with slot s + 1.
ColumnSegment::RunStart ColumnSegment::oldest_run_start_from_slots(const QueriedCells& kept) const noexcept {
  if (kept.run_slots == 0) return {};
  const Lanes16 masked = phase_lanes(kept.x.data(), live_phases(k_));
  const OldestColumn oldest = oldest_column();
  const std::uint64_t from_oldest = kept.run_slots & oldest.from_slot;
  const bool wraps = from_oldest == 0;
  const auto slot = static_cast<std::uint32_t>(std::countr_zero(wraps ? kept.run_slots : from_oldest));
  const std::uint32_t following_slot = next_slot(slot);
  const std::uint64_t with_slot = lanes_with_slot(masked, slot);
  const std::uint64_t with_following = lanes_with_slot(masked, following_slot);
  const std::uint32_t first = k_ - static_cast<std::uint32_t>(std::countl_one(with_slot << (64 - k_)));
  const std::uint32_t last = std::min(static_cast<std::uint32_t>(std::countr_one(with_following)), k_ - 1);
  const std::uint64_t phases = ((std::uint64_t{2} << last) - 1) & ~((std::uint64_t{1} << first) - 1);
  RunStart run = first_phase(slot, phases, wraps, oldest);
  // The columns after the run: phases run.phase..k-1 of the next slot, then every phase of the one after.
  run.following = with_following >> run.phase | lanes_with_slot(masked, next_slot(following_slot)) << (k_ - run.phase);
  run.following_span = 2 * k_ - run.phase;
  return run;
}

#pragma GCC pop_options

}  // namespace bloomgate::filters::detail

#pragma GCC diagnostic pop
