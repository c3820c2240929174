// File: filters/src/column_segment_avx512.cc
//
// ColumnSegment::locate_any_run_vector: the in-cache query eight phases at a time with AVX-512 F and DQ,
// compiled for those alone (the function's target attribute) and called only where the CPU has them
// (ColumnSegment::vector_query()). Per eight phases: the probe sums h1 + j h2 + (j^3 - j) / 6 and their mix
// (tlbf_probes.h) in 64-bit lanes, the rows by fast_range and the cells' starts. Then every cell is loaded
// (one unaligned 64-bit load each) and masked by validity in a loop of its own, and the run search reads
// the k cells in phase order as the scalar query does: its chain is two operations per phase, shorter
// than the lanes' shuffles a vector prefix would take (docs/decisions/tlbf-query-experiments.md, "The
// vector query"). Loading the cells this way, all of them before the search reads any, is faster than
// gathering them in the lanes at every size the query serves ("Kept: the cells loaded one by one, before
// the search").
//
// fast_range(v, rows) is the high 64 bits of v * rows. With rows < 2^32 (required by vector_query()), and
// v = v_hi 2^32 + v_lo, that is (v_hi rows + (v_lo rows >> 32)) >> 32, from two 32 x 32 -> 64-bit
// multiplications per lane; the sum cannot overflow (v_hi rows <= 2^64 - 2^33 + 1).
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstdint>

#include "bloomgate/filters/column_segment.h"

#include "tlbf_probes.h"

// GCC 12's shift, align and multiply intrinsics pass _mm512_undefined_epi32() (a self-initialised
// variable) as their unused merge source, which -Wmaybe-uninitialized and -Wuninitialized report once they
// are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace bloomgate::filters::detail {

__attribute__((target("avx512f,avx512dq"))) bool ColumnSegment::locate_any_run_vector(
    const KeyProbes& probes, const std::uint64_t* valid, std::uint64_t* cell_starts, QueriedCells& kept) const noexcept {
  const auto* bytes = reinterpret_cast<const unsigned char*>(cells_.data());
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
    _mm512_storeu_si512(cell_starts + b, start);  // whole groups: a masked store is not forwarded to loads
  }
  // Every cell loaded before the search reads any: with the loads in the search's loop each waited behind
  // the search's chain.
  std::uint64_t* x = kept.x.data();
  for (std::uint32_t b = 0; b < k_; ++b) x[b] = bits_from(bytes, cell_starts[b]) & valid[b];
  RunSearch search;
  for (std::uint32_t b = 0; b < k_; ++b) search.feed_cell(x[b], width_);
  kept.run_slots = search.runs;
  return search.found(cell_mask_);
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq")

namespace {

// Sixteen lanes in two registers (phases 0-7, 8-15), moved down (lane i takes lane i + n) or up (lane i
// takes lane i - n) by n < 8 lanes, `fill` entering at the end.
struct Lanes16 {
  __m512i low;
  __m512i high;
};

template <int n>
Lanes16 lanes_down(Lanes16 v, __m512i fill) {
  return {_mm512_alignr_epi64(v.high, v.low, n), _mm512_alignr_epi64(fill, v.high, n)};
}

template <int n>
Lanes16 lanes_up(Lanes16 v, __m512i fill) {
  return {_mm512_alignr_epi64(v.low, fill, 8 - n), _mm512_alignr_epi64(v.high, v.low, 8 - n)};
}

Lanes16 operator&(Lanes16 a, Lanes16 b) {
  return {_mm512_and_si512(a.low, b.low), _mm512_and_si512(a.high, b.high)};
}

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

// oldest_run_start with the sixteen phases in lanes: the suffix ANDs S_b and the prefix ANDs in four steps
// each (by 1, 2, 4 and 8 lanes), the run words S_b & down_a_slot(P_b) in every lane at once, their slots ORed
// across the lanes, and the phases whose word has the slot found as a lane mask.
ColumnSegment::RunStart ColumnSegment::oldest_run_start_vector(const std::uint64_t* x) const noexcept {
  const __m512i ones = _mm512_set1_epi64(static_cast<long long>(cell_mask_));
  const __mmask16 live = live_phases(k_);
  const Lanes16 masked = phase_lanes(x, live);
  // Lanes from k on hold every slot, for the suffix ANDs.
  const Lanes16 cells{_mm512_mask_mov_epi64(ones, static_cast<__mmask8>(live), masked.low),
                      _mm512_mask_mov_epi64(ones, static_cast<__mmask8>(live >> 8), masked.high)};
  Lanes16 suffix = cells & lanes_down<1>(cells, ones);
  suffix = suffix & lanes_down<2>(suffix, ones);
  suffix = suffix & lanes_down<4>(suffix, ones);
  suffix.low = _mm512_and_si512(suffix.low, suffix.high);
  Lanes16 prefix = cells & lanes_up<1>(cells, ones);  // lane b: phases 0..b
  prefix = prefix & lanes_up<2>(prefix, ones);
  prefix = prefix & lanes_up<4>(prefix, ones);
  prefix.high = _mm512_and_si512(prefix.high, prefix.low);
  const Lanes16 before = lanes_up<1>(prefix, ones);  // lane b: phases 0..b-1
  const __m512i one = _mm512_set1_epi64(1);
  const __m128i top_slot = _mm_cvtsi64_si128(width_ - 1);
  const auto down_a_slot = [&](__m512i p) {
    return _mm512_or_si512(_mm512_srli_epi64(p, 1), _mm512_sll_epi64(_mm512_and_si512(p, one), top_slot));
  };
  const __m512i runs_low = _mm512_maskz_and_epi64(static_cast<__mmask8>(live), suffix.low, down_a_slot(before.low));
  const __m512i runs_high = _mm512_maskz_and_epi64(static_cast<__mmask8>(live >> 8), suffix.high, down_a_slot(before.high));
  const auto slots = static_cast<std::uint64_t>(_mm512_reduce_or_epi64(_mm512_or_si512(runs_low, runs_high)));
  if (slots == 0) return {};
  const OldestColumn oldest = oldest_column();
  const auto from_phase = static_cast<__mmask16>(oldest.from_phase);
  const __m512i from_slot = _mm512_set1_epi64(static_cast<long long>(oldest.from_slot));
  const __m512i after_slot = _mm512_set1_epi64(static_cast<long long>(oldest.after_slot));
  const __m512i selected_low = _mm512_and_si512(runs_low, _mm512_mask_blend_epi64(static_cast<__mmask8>(from_phase), after_slot, from_slot));
  const __m512i selected_high =
      _mm512_and_si512(runs_high, _mm512_mask_blend_epi64(static_cast<__mmask8>(from_phase >> 8), after_slot, from_slot));
  const auto slots_from_oldest =
      static_cast<std::uint64_t>(_mm512_reduce_or_epi64(_mm512_or_si512(selected_low, selected_high)));
  const bool wraps = slots_from_oldest == 0;
  const auto slot = static_cast<std::uint32_t>(std::countr_zero(wraps ? slots : slots_from_oldest));
  RunStart run = first_phase(slot, lanes_with_slot(Lanes16{runs_low, runs_high}, slot), wraps, oldest);
  // The columns after the run: phases run.phase..k-1 of the next slot, then every phase of the one after.
  const std::uint32_t following_slot = next_slot(slot);
  run.following = lanes_with_slot(masked, following_slot) >> run.phase |
                  lanes_with_slot(masked, next_slot(following_slot)) << (k_ - run.phase);
  run.following_span = 2 * k_ - run.phase;
  return run;
}

// oldest_run_start_vector's run, from the slots the query's search found runs in: the oldest run starts in
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
