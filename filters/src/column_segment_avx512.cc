// File: filters/src/column_segment_avx512.cc
//
// ColumnSegment::locate_any_run_vector: the in-cache query eight phases at a time with AVX-512 F and DQ,
// compiled for those alone (the function's target attribute) and called only where the CPU has them
// (ColumnSegment::vector_query()). Per eight phases: the probe sums h1 + j h2 + (j^3 - j) / 6 and their mix
// (tlbf_probes.h) in 64-bit lanes, the rows by fast_range, the cells' starts, one gather of the eight
// unaligned 64-bit words, the cells masked by validity and moved down a slot. The run search then reads
// the k cells in phase order as the scalar query does: its chain is two operations per phase, shorter
// than the lanes' shuffles a vector prefix would take (docs/decisions/tlbf-query-experiments.md, "The
// vector query").
//
// fast_range(v, rows) is the high 64 bits of v * rows. With rows < 2^32 (required by vector_query()), and
// v = v_hi 2^32 + v_lo, that is (v_hi rows + (v_lo rows >> 32)) >> 32, from two 32 x 32 -> 64-bit
// multiplications per lane; the sum cannot overflow (v_hi rows <= 2^64 - 2^33 + 1).
#include <immintrin.h>

#include <cstdint>

#include "bloomgate/filters/column_segment.h"

#include "tlbf_probes.h"

// GCC 12's shift and multiply intrinsics pass _mm512_undefined_epi32() (a self-initialised variable) as
// their unused merge source, which -Wmaybe-uninitialized reports once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace bloomgate::filters::detail {

__attribute__((target("avx512f,avx512dq"))) bool ColumnSegment::locate_any_run_vector(
    const KeyProbes& probes, const std::uint64_t* valid, std::uint64_t* cell_starts) const noexcept {
  const auto* bytes = cells_.data();
  const __m512i h1 = _mm512_set1_epi64(static_cast<long long>(probes.key().value));
  const __m512i h2 = _mm512_set1_epi64(static_cast<long long>(second_probe_hash(probes.key())));
  const __m512i mix = _mm512_set1_epi64(static_cast<long long>(kProbeMix));
  const __m512i rows = _mm512_set1_epi64(static_cast<long long>(rows_));
  const __m512i width = _mm512_set1_epi64(width_);
  const __m512i low_three = _mm512_set1_epi64(7);
  const __m128i width_count = _mm_cvtsi64_si128(width_);
  alignas(64) std::uint64_t x[kMaxProbes];
  alignas(64) std::uint64_t x_down[kMaxProbes];
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
    _mm512_mask_storeu_epi64(cell_starts + b, lanes, start);
    const __m512i words = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), lanes, _mm512_srli_epi64(start, 3), bytes, 1);
    const __m512i cells = _mm512_and_si512(_mm512_srlv_epi64(words, _mm512_and_si512(start, low_three)),
                                           _mm512_maskz_loadu_epi64(lanes, valid + b));
    _mm512_store_si512(x + b, cells);
    _mm512_store_si512(x_down + b, _mm512_srli_epi64(_mm512_or_si512(cells, _mm512_sll_epi64(cells, width_count)), 1));
  }
  RunSearch search;
  for (std::uint32_t b = 0; b < k_; ++b) search.feed(x[b], x_down[b]);
  return search.found(cell_mask_);
}

}  // namespace bloomgate::filters::detail

#pragma GCC diagnostic pop
