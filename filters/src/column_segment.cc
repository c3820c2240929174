#include "column_segment.h"

#include "memory_accounting.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstring>

#include <immintrin.h>

#include "bloomgate/filters/format.h"
#include "bloomgate/filters/vector_query.h"

#include "target_clones.h"
#include "tlbf_probes.h"

namespace bloomgate::filters::detail {
namespace {

std::uint64_t low_bits(std::uint64_t n) noexcept { return n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1; }

// 64 bits of `src` from bit `bit` on; reads src[bit / 64 + 1], which must exist.
std::uint64_t bits_at(const std::uint64_t* src, std::uint64_t bit) noexcept {
  const std::uint64_t* p = src + (bit >> 6);
  const unsigned shift = bit & 63;
  // (x << 1) << (63 - shift) is x << (64 - shift) without the undefined shift by 64 when shift is 0.
  return (p[0] >> shift) | ((p[1] << 1) << (63 - shift));
}

std::uint32_t cycle_columns(std::uint32_t slices, std::uint32_t k) noexcept {
  const std::uint32_t wanted = std::min(slices, ColumnSegment::max_slices(k)) + 1;
  return k * ((wanted + k - 1) / k);
}

}  // namespace

ColumnSegment::ColumnSegment(std::uint64_t rows, std::uint32_t slices, std::uint32_t k)
    : rows_(rows),
      columns_(cycle_columns(slices, k)),
      k_(k),
      width_(columns_ / k),
      cell_mask_(low_bits(width_)),
      table_words_(blocks() * width_),
      cells_(static_cast<std::size_t>(k) * table_words_ + 1),
      index_of_phase_(k, 0),
      table_start_(k),
      cubic_of_phase_(k, 0),
      vector_query_(vector_query_in_use() && rows < (std::uint64_t{1} << 32) && width_ <= kMaxNarrowCellBits),
      ring_word_query_(vector_query_ && columns_ <= 64 && width_ >= 2) {
  set_oldest(0);
  for (std::uint32_t b = 0; b < k; ++b) table_start_[b] = b * table_words_ * 64;
  if (ring_word_query_) set_up_ring_word();
}

std::uint64_t ColumnSegment::memory_bytes() const noexcept {
  return sizeof(*this) + cells_.memory_bytes() + heap_bytes(index_of_phase_) + heap_bytes(table_start_) +
         heap_bytes(cubic_of_phase_) + heap_bytes(columns_of_phase_);
}

void ColumnSegment::set_up_ring_word() {
  columns_of_phase_.assign(k_, 0);
  for (std::uint32_t c = 0; c < columns_; ++c) columns_of_phase_[c % k_] |= std::uint64_t{1} << c;
  std::uint32_t run = 1;
  std::size_t i = 0;
  for (; run * 2 <= k_; run *= 2) run_shifts_[i++] = run;
  run_shifts_[i] = k_ - run;
  cells_in_words_ = 64 % width_ == 0;
}

void ColumnSegment::locate(const Probes& probes, std::uint64_t* cell_starts) const noexcept {
  for (std::uint32_t b = 0; b < k_; ++b) cell_starts[b] = table_start_[b] + row_of(probes, static_cast<std::uint32_t>(index_of_phase_[b])) * width_;
}

void ColumnSegment::prefetch(const std::uint64_t* cell_starts) const noexcept {
  const auto* bytes = reinterpret_cast<const char*>(cells_.data());
  for (std::uint32_t b = 0; b < k_; ++b) __builtin_prefetch(bytes + (cell_starts[b] >> 3));
}

void ColumnSegment::load_cells(const std::uint64_t* cell_starts, const std::uint64_t* valid,
                               std::uint64_t* x) const noexcept {
  for (std::uint32_t b = 0; b < k_; ++b) x[b] = cell_at(cell_starts[b]) & valid[b];
}

// The out-of-cache path: the cells are read in a loop of their own, then searched, so that their loads
// (of lines requested before) issue a few instructions apart (docs/decisions/tlbf-query-experiments.md,
// "Kept: the in-cache query").
bool ColumnSegment::any_run(const std::uint64_t* cell_starts, const std::uint64_t* valid,
                            QueriedCells& kept) const noexcept {
  std::uint64_t* x = kept.x.data();
  load_cells(cell_starts, valid, x);
  RunSearch search;
  for (std::uint32_t b = 0; b < k_; ++b) search.feed(x[b], down_a_slot(x[b]));
  kept.run_slots = search.runs;
  return search.found(cell_mask_);
}

// Phase b holds hash index (first - b) mod k, first = index_of_phase_[0] (push()), so the phases in order
// take the values of hash indexes first, first - 1, ..., 0, then k - 1, ..., first + 1: two descending
// runs of DescendingProbes. The members it reads are copied to locals first: the loop keeps them in
// registers instead of reloading them around its stores. Narrow cells (every steady filter's) are one
// unaligned load each, masked by the validity alone (valid[b] has no bit from w on), and moved down a slot
// as (x | x << w) >> 1, whose bits from w on RunSearch ignores.
BLOOMGATE_TARGET_CLONES("bmi2", "default")
bool ColumnSegment::locate_any_run_scalar(const KeyProbes& probes, const std::uint64_t* valid,
                                          std::uint64_t* cell_starts) const noexcept {
  if (width_ > kMaxNarrowCellBits) {
    locate(probes.values(), cell_starts);
    QueriedCells kept;
    return any_run(cell_starts, valid, kept);
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(cells_.data());
  const std::uint64_t rows = rows_;
  const std::uint64_t width = width_;
  const std::uint64_t first = index_of_phase_[0];
  const std::uint64_t* table_start = table_start_.data();  // the three advance with the phase
  const std::uint64_t* phase_valid = valid;
  std::uint64_t* cell_start = cell_starts;
  const std::uint64_t h2 = second_probe_hash(probes.key());
  RunSearch search;
  const auto read_cells = [&](std::uint64_t from, std::uint64_t down_to) {
    DescendingProbes value(probes.key(), h2, from);
    for (std::uint64_t j = from + 1; j-- > down_to; value.step_down()) {
      const std::uint64_t start = *table_start++ + fast_range(value.value(), rows) * width;
      *cell_start++ = start;
      const std::uint64_t x = bits_from(bytes, start) & *phase_valid++;
      search.feed_cell(x, width);
    }
  };
  read_cells(first, 0);
  if (first + 1 < k_) read_cells(k_ - 1, first + 1);
  return search.found(cell_mask_);
}

std::int64_t ColumnSegment::oldest_run(const std::uint64_t* cell_starts, const std::uint64_t* valid,
                                       std::uint32_t* newer) const noexcept {
  std::array<std::uint64_t, kMaxProbes> x;
  load_cells(cell_starts, valid, x.data());
  return oldest_run_in(x.data(), newer);
}

std::int64_t ColumnSegment::oldest_run_in(const std::uint64_t* cells, std::uint32_t* newer) const noexcept {
  return age_of_run(cells, oldest_run_start(cells), newer);
}

std::int64_t ColumnSegment::age_of_run(const std::uint64_t* x, RunStart run, std::uint32_t* newer) const noexcept {
  if (newer != nullptr) *newer = 0;
  if (!run.found) return -1;
  const std::uint32_t column = run.slot * k_ + run.phase;
  const std::uint32_t age = column >= oldest_ ? column - oldest_ : column + columns_ - oldest_;
  if (newer != nullptr) *newer = holding_after_run(x, age, run);
  return age;
}

// A run of k consecutive columns from column s * k + b covers phases b..k-1 of slot s and phases 0..b-1 of
// slot s + 1 (mod w): with S_b the AND of phases b..k-1 and P_b that of phases 0..b-1, it holds the key
// when bit s of S_b and bit s + 1 of P_b are set (bit s of run word b). A run through the free column never
// matches, so every run found is k consecutive slices in age order. Column order is (slot, phase) order,
// and the oldest run is the first at or after column oldest_ in it, else (past the ring's end) the first of
// all: its slot is the lowest of the run words ORed, its phase the lowest whose word has that slot. Two
// passes over the phases, the suffix ANDs, then the run words and their ORs; then the phases of the slot.
ColumnSegment::RunStart ColumnSegment::oldest_run_start(const std::uint64_t* x) const noexcept {
  std::array<std::uint64_t, kMaxProbes + 1> suffix;  // bit s of suffix[b]: phases b..k-1 of slot s hold the key
  std::array<std::uint64_t, kMaxProbes> runs;
  suffix[k_] = cell_mask_;
  for (std::uint32_t b = k_; b-- > 0;) suffix[b] = suffix[b + 1] & x[b];
  const OldestColumn oldest = oldest_column();
  std::uint64_t slots_from_oldest = 0;
  std::uint64_t slots = 0;
  std::uint64_t prefix = cell_mask_;
  for (std::uint32_t b = 0; b < k_; ++b) {
    runs[b] = suffix[b] & down_a_slot(prefix);
    prefix &= x[b];
    slots_from_oldest |= runs[b] & (b >= oldest.phase ? oldest.from_slot : oldest.after_slot);
    slots |= runs[b];
  }
  if (slots == 0) return {};
  const bool wraps = slots_from_oldest == 0;
  const auto slot = static_cast<std::uint32_t>(std::countr_zero(wraps ? slots : slots_from_oldest));
  std::uint64_t phases = 0;  // bit b: runs[b] has the slot
  for (std::uint32_t b = 0; b < k_; ++b) phases |= ((runs[b] >> slot) & 1U) << b;
  return first_phase(slot, phases, wraps, oldest);
}

void ColumnSegment::set_oldest(std::uint32_t column) noexcept {
  oldest_ = column;
  const std::uint32_t slot = oldest_ / k_;
  const std::uint32_t phase = oldest_ % k_;
  oldest_column_ = {slot, phase, ~low_bits(phase), ~low_bits(slot), ~low_bits(slot + 1)};
}

// Without wrapping, the runs in the oldest column's slot count from its phase on.
ColumnSegment::RunStart ColumnSegment::first_phase(std::uint32_t slot, std::uint64_t phases, bool wraps,
                                                   const OldestColumn& oldest) noexcept {
  if (!wraps && slot == oldest.slot) phases &= oldest.from_phase;
  return {true, slot, static_cast<std::uint32_t>(std::countr_zero(phases))};
}

// The columns after the run start k columns on: the same phase, the next slot. A run's `following` bits
// (the vector search's) answer without a branch on the cells unless every one of them holds; the loop
// stops at the first clear bit, a branch that mispredicts about once per call.
std::uint32_t ColumnSegment::holding_after_run(const std::uint64_t* x, std::uint32_t age, RunStart run) const noexcept {
  const std::uint32_t live_after = live_ - age - k_;
  if (const auto held = static_cast<std::uint32_t>(std::countr_one(run.following)); held < run.following_span) {
    return std::min(held, live_after);
  }
  std::uint32_t slot = next_slot(run.slot);
  std::uint32_t phase = run.phase;
  std::uint32_t count = 0;
  for (std::uint32_t a = age + k_; a < live_ && ((x[phase] >> slot) & 1U) != 0; ++a) {
    ++count;
    if (++phase == k_) {
      phase = 0;
      slot = next_slot(slot);
    }
  }
  return count;
}

// 64 rows of a table are w whole words, in which the column's bits lie at the same places in every block.
void ColumnSegment::block_masks(std::uint32_t column, std::uint64_t* masks) const noexcept {
  std::fill(masks, masks + width_, 0);
  for (std::uint64_t i = 0, bit = slot_of(column); i < 64; ++i, bit += width_) masks[bit >> 6] |= std::uint64_t{1} << (bit & 63);
}

BLOOMGATE_TARGET_CLONES("popcnt", "default")
std::uint64_t ColumnSegment::count_column(std::uint32_t column) const noexcept {
  std::uint64_t masks[kMaxCellBits];
  block_masks(column, masks);
  const std::uint64_t* words = cells_.data() + (column % k_) * table_words_;
  std::uint64_t count = 0;
  for (std::uint64_t b = 0; b < blocks(); ++b, words += width_) {
    for (std::uint32_t w = 0; w < width_; ++w) count += static_cast<std::uint64_t>(std::popcount(words[w] & masks[w]));
  }
  return count;
}

void ColumnSegment::valid_by_phase(const std::uint64_t* valid_by_age, std::uint64_t* out) const noexcept {
  std::fill(out, out + k_, 0);
  std::uint32_t phase = oldest_ % k_;
  std::uint32_t slot = oldest_ / k_;
  for (std::uint32_t a = 0; a < live_; ++a) {
    if (((valid_by_age[a / 64] >> (a % 64)) & 1U) != 0) out[phase] |= std::uint64_t{1} << slot;
    if (++phase == k_) {
      phase = 0;
      slot = next_slot(slot);
    }
  }
}

// Hash indexes cycle down by one from each slice to the next newer one, so the first column pushed fixes
// the phase of every hash index; a restore whose slices do not cycle is refused here.
std::uint32_t ColumnSegment::push(std::uint32_t hash_index) {
  assert(!full());
  const std::uint32_t column = column_of_age(live_);
  const std::uint32_t phase = column % k_;
  if (live_ == 0) {
    for (std::uint32_t d = 0; d < k_; ++d) {
      const std::uint32_t index = (hash_index + k_ - d) % k_;
      const std::uint32_t of = (phase + d) % k_;
      index_of_phase_[of] = index;
      cubic_of_phase_[of] = kDescentOffsets[index].cubic;
    }
  } else if (hash_index >= k_ || index_of_phase_[phase] != hash_index) {
    throw FormatError("time-limited filter slices' hash indexes do not cycle: slice with hash index " +
                      std::to_string(hash_index) + " where " + std::to_string(index_of_phase_[phase]) + " belongs");
  }
  ++live_;
  return column;
}

// One bit per row, once per generation: each block cleared with one mask per word (block_masks).
void ColumnSegment::pop() noexcept {
  const std::uint32_t column = oldest_;
  std::uint64_t masks[kMaxCellBits];
  block_masks(column, masks);
  std::uint64_t* words = cells_.data() + (column % k_) * table_words_;
  for (std::uint64_t b = 0; b < blocks(); ++b, words += width_) {
    for (std::uint32_t w = 0; w < width_; ++w) words[w] &= ~masks[w];
  }
  set_oldest((oldest_ + 1) % columns_);
  --live_;
}

std::unique_ptr<ColumnSegment> ColumnSegment::repacked(std::uint32_t slices) const {
  auto out = std::make_unique<ColumnSegment>(rows_, slices, k_);
  for (std::uint32_t age = 0; age < live_; ++age) out->push(static_cast<std::uint32_t>(index_of_phase_[column_of_age(age) % k_]));
  std::vector<std::uint64_t> mine(columns_);
  std::vector<std::uint64_t> theirs(out->columns_, 0);
  for (std::uint64_t b = 0; b < blocks(); ++b) {
    read_block(b, mine.data());
    for (std::uint32_t age = 0; age < live_; ++age) theirs[age] = mine[column_of_age(age)];
    out->or_block(b, theirs.data(), ~std::uint64_t{0});
  }
  return out;
}

void ColumnSegment::read_block(std::uint64_t block, std::uint64_t* out) const noexcept {
  std::uint64_t a[64];
  for (std::uint32_t phase = 0; phase < k_; ++phase) {
    const std::uint64_t first = (phase * table_words_ + block * width_) * 64;
    for (std::uint32_t i = 0; i < 64; ++i) a[i] = bits_at(cells_.data(), first + std::uint64_t{i} * width_) & cell_mask_;
    transpose64(a);
    for (std::uint32_t slot = 0; slot < width_; ++slot) out[slot * k_ + phase] = a[slot];
  }
}

void ColumnSegment::or_block(std::uint64_t block, const std::uint64_t* in, std::uint64_t phases) noexcept {
  const std::uint64_t row_mask = low_bits(std::min<std::uint64_t>(64, rows_ - 64 * block));
  std::uint64_t a[64];
  std::uint64_t packed[kMaxCellBits + 1];
  for (std::uint32_t phase = 0; phase < k_; ++phase) {
    if (((phases >> (phase % 64)) & 1U) == 0) continue;
    std::fill(a, a + 64, 0);
    for (std::uint32_t slot = 0; slot < width_; ++slot) a[slot] = in[slot * k_ + phase] & row_mask;
    transpose64(a);
    std::fill(packed, packed + width_ + 1, 0);
    for (std::uint32_t i = 0; i < 64; ++i) {
      const std::uint64_t at = std::uint64_t{i} * width_;
      const unsigned shift = at & 63;
      packed[at >> 6] |= a[i] << shift;
      if (shift != 0) packed[(at >> 6) + 1] |= a[i] >> (64 - shift);
    }
    std::uint64_t* words = cells_.data() + phase * table_words_ + block * width_;
    for (std::uint32_t w = 0; w < width_; ++w) words[w] |= packed[w];
  }
}

// Recursive block swaps: at step J, the top-right J x J blocks trade places with the bottom-left ones. Every
// step works on four words at a time (GCC vector extensions; AVX2 where the CPU has it, chosen at load time):
// a restore transposes every 64 x 64 block of a filter (docs/decisions/tlbf-phase-tables.md, "Persistence").
using FourWords = std::uint64_t __attribute__((vector_size(32)));

template <unsigned J, std::uint64_t Mask>
inline void wide_swap_step(std::uint64_t* a) noexcept {
  for (unsigned base = 0; base < 64; base += 2 * J) {
    for (unsigned i = base; i < base + J; i += 4) {
      FourWords x;
      FourWords y;
      std::memcpy(&x, a + i, sizeof x);
      std::memcpy(&y, a + i + J, sizeof y);
      const FourWords t = ((x >> J) ^ y) & Mask;
      x ^= t << J;
      y ^= t;
      std::memcpy(a + i, &x, sizeof x);
      std::memcpy(a + i + J, &y, sizeof y);
    }
  }
}

// J = 2 and J = 1 pair words within four: eight words at a time, regrouped by shuffles into the four that
// move and their four partners.
template <unsigned J, std::uint64_t Mask>
inline void narrow_swap_step(std::uint64_t* a) noexcept {
  using Index = long long __attribute__((vector_size(32)));
  constexpr Index kLo = J == 2 ? Index{0, 1, 4, 5} : Index{0, 2, 4, 6};
  constexpr Index kHi = J == 2 ? Index{2, 3, 6, 7} : Index{1, 3, 5, 7};
  constexpr Index kFirst = J == 2 ? Index{0, 1, 4, 5} : Index{0, 4, 1, 5};
  constexpr Index kSecond = J == 2 ? Index{2, 3, 6, 7} : Index{2, 6, 3, 7};
  for (unsigned i = 0; i < 64; i += 8) {
    FourWords v0;
    FourWords v1;
    std::memcpy(&v0, a + i, sizeof v0);
    std::memcpy(&v1, a + i + 4, sizeof v1);
    FourWords lo = __builtin_shuffle(v0, v1, kLo);
    FourWords hi = __builtin_shuffle(v0, v1, kHi);
    const FourWords t = ((lo >> J) ^ hi) & Mask;
    lo ^= t << J;
    hi ^= t;
    v0 = __builtin_shuffle(lo, hi, kFirst);
    v1 = __builtin_shuffle(lo, hi, kSecond);
    std::memcpy(a + i, &v0, sizeof v0);
    std::memcpy(a + i + 4, &v1, sizeof v1);
  }
}

BLOOMGATE_TARGET_CLONES("avx2", "default")
void transpose64(std::uint64_t* a) noexcept {
  wide_swap_step<32, 0x00000000FFFFFFFFULL>(a);
  wide_swap_step<16, 0x0000FFFF0000FFFFULL>(a);
  wide_swap_step<8, 0x00FF00FF00FF00FFULL>(a);
  wide_swap_step<4, 0x0F0F0F0F0F0F0F0FULL>(a);
  narrow_swap_step<2, 0x3333333333333333ULL>(a);
  narrow_swap_step<1, 0x5555555555555555ULL>(a);
}

// Column c of a block is bit slot(c) of each of its 64 cells, which lie w bits apart in the w words of the
// block's phase table: the bits at slot, slot + w, slot + 2w, ... of those words. With BMI2 each word gives
// its share with one PEXT (the masks depend only on the slot), so a checkpoint reads just the columns it
// writes; without it, read_block transposes whole blocks.
namespace {

struct ColumnMasks {
  std::array<std::uint64_t, kMaxCellBits> mask{};  // by word of the block: the column's bits in it
  std::array<std::uint32_t, kMaxCellBits> shift{};  // where those bits go in the column's word
};

ColumnMasks column_masks(std::uint32_t slot, std::uint32_t width) noexcept {
  ColumnMasks out;
  std::uint32_t taken = 0;
  for (std::uint64_t i = 0, bit = slot; i < 64; ++i, bit += width) out.mask[bit / 64] |= std::uint64_t{1} << (bit % 64);
  for (std::uint32_t w = 0; w < width; ++w) {
    out.shift[w] = taken;
    taken += static_cast<std::uint32_t>(std::popcount(out.mask[w]));
  }
  return out;
}

__attribute__((target("bmi2"))) void extract_column(const std::uint64_t* table, std::uint64_t blocks,
                                                    std::uint32_t width, const ColumnMasks& masks,
                                                    std::uint64_t* out) noexcept {
  for (std::uint64_t b = 0; b < blocks; ++b, table += width) {
    std::uint64_t word = 0;
    for (std::uint32_t w = 0; w < width; ++w) {
      if (masks.mask[w] != 0) word |= _pext_u64(table[w], masks.mask[w]) << masks.shift[w];
    }
    out[b] = word;
  }
}

bool has_bmi2() noexcept {
  static const bool supported = __builtin_cpu_supports("bmi2") != 0;
  return supported;
}

}  // namespace

std::vector<Words> ColumnSegment::gather(const std::vector<std::uint32_t>& columns) const {
  if (!has_bmi2()) return gather_by_transposing(columns);
  const std::uint64_t block_count = blocks();
  std::vector<Words> out(columns.size(), Words(block_count, 0));
  for (std::size_t n = 0; n < columns.size(); ++n) {
    const std::uint64_t* table = cells_.data() + (columns[n] % k_) * table_words_;
    extract_column(table, block_count, width_, column_masks(slot_of(columns[n]), width_), out[n].data());
  }
  return out;
}

std::vector<Words> ColumnSegment::gather_by_transposing(const std::vector<std::uint32_t>& columns) const {
  const std::uint64_t block_count = blocks();
  std::vector<Words> out(columns.size(), Words(block_count, 0));
  std::vector<std::uint64_t> words(columns_);
  for (std::uint64_t b = 0; b < block_count; ++b) {
    read_block(b, words.data());
    for (std::size_t n = 0; n < columns.size(); ++n) out[n][b] = words[columns[n]];
  }
  return out;
}

void ColumnSegment::scatter(const std::vector<std::uint32_t>& columns,
                            const std::vector<const std::uint64_t*>& words) {
  std::vector<std::uint64_t> in(columns_, 0);
  std::uint64_t phases = 0;
  for (const std::uint32_t c : columns) phases |= std::uint64_t{1} << (c % k_ % 64);
  for (std::uint64_t b = 0; b < blocks(); ++b) {
    for (std::size_t n = 0; n < columns.size(); ++n) in[columns[n]] = words[n][b];
    or_block(b, in.data(), phases);
  }
}

void ColumnSegment::scatter_runs(std::span<const ColumnRun> runs, std::uint64_t block_begin,
                                 std::uint64_t block_end) noexcept {
  std::vector<std::uint64_t> in(columns_, 0);
  std::uint64_t phases = 0;
  for (const ColumnRun& run : runs) {
    for (std::size_t j = 0; j < run.words.size(); ++j) phases |= std::uint64_t{1} << ((run.first + j) % k_ % 64);
  }
  for (std::uint64_t b = block_begin; b < block_end; ++b) {
    for (const ColumnRun& run : runs) {
      for (std::size_t j = 0; j < run.words.size(); ++j) in[run.first + j] = run.words[j][b];
    }
    or_block(b, in.data(), phases);
  }
}

}  // namespace bloomgate::filters::detail
