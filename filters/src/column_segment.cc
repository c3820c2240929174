#include "bloomgate/filters/column_segment.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <numeric>

#include "target_clones.h"

namespace bloomgate::filters::detail {
namespace {

// Padding past the last row: a row read takes the word after the one it starts in.
constexpr std::size_t kPadWords = 3;
constexpr std::uint64_t kLineBits = 512;
// Line padding wastes at most this share of a line; beyond it rows stay packed back to back.
constexpr std::uint64_t kMaxWasteShare = 4;
constexpr std::uint64_t kLineWords = kLineBits / 64;
// match() by lines keeps one line accumulator per row slot; more slots (narrow young segments) read rows.
constexpr std::uint64_t kMaxLineSlots = 8;

bool line_slots_apply(const RowLayout& layout) noexcept {
  return layout.block_bits == kLineBits && layout.per_block <= kMaxLineSlots;
}

std::uint64_t low_bits(std::size_t n) noexcept { return n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1; }

// 64 bits of `src` from bit `bit` on; reads src[bit / 64 + 1], which must exist.
std::uint64_t bits_at(const std::uint64_t* src, std::uint64_t bit) noexcept {
  const std::uint64_t* p = src + (bit >> 6);
  const unsigned shift = bit & 63;
  // (x << 1) << (63 - shift) is x << (64 - shift) without the undefined shift by 64 when shift is 0.
  return (p[0] >> shift) | ((p[1] << 1) << (63 - shift));
}

// ORs `count` bits of `src` from bit `from` into `dst` from bit `to`.
void or_bits(std::uint64_t* dst, std::uint64_t to, const std::uint64_t* src, std::uint64_t from,
             std::uint64_t count) noexcept {
  for (std::uint64_t done = 0; done < count; done += 64) {
    const std::uint64_t n = std::min<std::uint64_t>(64, count - done);
    const std::uint64_t x = bits_at(src, from + done) & low_bits(n);
    const std::uint64_t at = to + done;
    const unsigned shift = at & 63;
    dst[at >> 6] |= x << shift;
    if (shift != 0 && shift + n > 64) dst[(at >> 6) + 1] |= x >> (64 - shift);
  }
}

// The rows from `row` on, bit `column` of each, without a division per row: the next row is C bits on, or
// at the start of the next line once the line's R slots are used (rows back to back: R = 1, a block is C).
class RowWalk {
 public:
  RowWalk(const RowLayout& layout, std::uint64_t row, std::uint64_t column) noexcept
      : layout_(layout),
        to_next_line_(layout.block_bits - (layout.per_block - 1) * layout.columns),
        slot_(row % layout.per_block),
        bit_(layout.start(row) + column) {}
  std::uint64_t bit() const noexcept { return bit_; }
  void next() noexcept {
    if (++slot_ == layout_.per_block) {
      slot_ = 0;
      bit_ += to_next_line_;
    } else {
      bit_ += layout_.columns;
    }
  }

 private:
  const RowLayout& layout_;
  std::uint64_t to_next_line_;
  std::uint64_t slot_;
  std::uint64_t bit_;
};

// Indexes of `columns` in ascending column order.
std::vector<std::size_t> by_column(const std::vector<std::uint32_t>& columns) {
  std::vector<std::size_t> order(columns.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return columns[x] < columns[y]; });
  return order;
}

}  // namespace

RowLayout RowLayout::for_columns(std::uint64_t columns, std::uint64_t rows) noexcept {
  RowLayout layout;
  layout.columns = columns;
  layout.block_bits = columns;
  const std::uint64_t per_line = columns == 0 ? 0 : kLineBits / columns;
  // One column (a small slice's own segment): its rows back to back are its words, and start() is the row
  // itself, without the multiply a line of rows needs.
  if (per_line == 0 || columns == 1 || rows >= (std::uint64_t{1} << 55)) return layout;
  if (kMaxWasteShare * (kLineBits - per_line * columns) > kLineBits) return layout;
  layout.per_block = per_line;
  layout.block_bits = kLineBits;
  layout.magic = per_line == 1 ? 0 : ~std::uint64_t{0} / per_line + 1;
  return layout;
}

ColumnSegment::ColumnSegment(std::uint64_t rows, std::uint32_t columns, std::uint32_t k)
    : rows_(rows),
      columns_(columns),
      k_(k),
      row_words_((columns + 63) / 64),
      layout_(RowLayout::for_columns(columns, rows)),
      cells_((layout_.blocks(rows) * layout_.block_bits + 63) / 64 + kPadWords),
      index_masks_(static_cast<std::size_t>(k) * row_words_, 0),
      index_used_(k, 0),
      column_index_(columns, 0),
      line_masks_(line_slots_apply(layout_) ? std::size_t{k} * layout_.per_block * kLineWords : 0, 0),
      scratch_(2 * (row_words_ + 1) + (line_slots_apply(layout_) ? layout_.per_block * kLineWords + 1 : 0), 0),
      slot_magic_(((std::uint64_t{1} << 32) + columns - 1) / columns) {}

// The row whose first bit is `start`. Bits past the last column come from the next row or the line's
// padding; the index masks are zero there.
void ColumnSegment::load_row_at(std::uint64_t start, std::uint64_t* out) const noexcept {
  for (std::uint32_t w = 0; w < row_words_; ++w) out[w] = bits_at(cells_.data(), start + 64 * std::uint64_t{w});
}

void ColumnSegment::locate(const Probes& probes, std::uint64_t* row_starts) const noexcept {
  for (std::uint32_t j = 0; j < k_; ++j) {
    if (index_used_[j] != 0) row_starts[j] = layout_.start(row_of(probes, j));
  }
}

// A line-aligned row is one line: one request per row.
void ColumnSegment::prefetch(const std::uint64_t* row_starts) const noexcept {
  const auto* bytes = reinterpret_cast<const char*>(cells_.data());
  const bool one_line = layout_.block_bits == kLineBits;
  for (std::uint32_t j = 0; j < k_; ++j) {
    if (index_used_[j] == 0) continue;
    __builtin_prefetch(bytes + (row_starts[j] >> 3));
    if (!one_line) __builtin_prefetch(bytes + ((row_starts[j] + columns_ - 1) >> 3));
  }
}

void ColumnSegment::match(const std::uint64_t* row_starts, std::uint64_t* out, std::size_t offset) const noexcept {
  std::uint64_t* acc = scratch_.data();
  std::fill(acc, acc + row_words_ + 1, 0);
  if (by_lines()) {
    match_lines(row_starts, acc);
  } else {
    match_rows(row_starts, acc);
  }
  const std::uint32_t to_end = std::min(live_, columns_ - oldest_);
  or_bits(out, offset, acc, oldest_, to_end);
  or_bits(out, offset + to_end, acc, 0, live_ - to_end);
}

// ORs each hash index's row, masked to its columns, into acc (row_words_ words).
void ColumnSegment::match_rows(const std::uint64_t* row_starts, std::uint64_t* acc) const noexcept {
  std::uint64_t* row = acc + row_words_ + 1;
  for (std::uint32_t j = 0; j < k_; ++j) {
    if (index_used_[j] == 0) continue;
    load_row_at(row_starts[j], row);
    const std::uint64_t* mask = &index_masks_[static_cast<std::size_t>(j) * row_words_];
    for (std::uint32_t w = 0; w < row_words_; ++w) acc[w] |= row[w] & mask[w];
  }
}

// The same from whole lines: row j sits in slot s of its line, so the line ANDed with the index's mask at
// slot s is ORed into slot s's accumulator; each slot's bits are then shifted down once.
void ColumnSegment::match_lines(const std::uint64_t* row_starts, std::uint64_t* acc) const noexcept {
  const std::uint64_t slots = layout_.per_block;
  std::uint64_t* by_slot = acc + 2 * (row_words_ + 1);  // slots lines, then a zero word for bits_at
  std::fill(by_slot, by_slot + slots * kLineWords + 1, 0);
  std::uint64_t used = 0;  // slots that received a line
  for (std::uint32_t j = 0; j < k_; ++j) {
    if (index_used_[j] == 0) continue;
    const std::uint64_t block = row_starts[j] / kLineBits;
    const std::uint64_t slot = ((row_starts[j] % kLineBits) * slot_magic_) >> 32;  // the bit in the line / C
    const std::uint64_t* line = cells_.data() + block * kLineWords;
    const std::uint64_t* mask = &line_masks_[(j * slots + slot) * kLineWords];
    std::uint64_t* into = by_slot + slot * kLineWords;
    for (std::uint64_t w = 0; w < kLineWords; ++w) into[w] |= line[w] & mask[w];
    used |= std::uint64_t{1} << slot;
  }
  for (; used != 0; used &= used - 1) {
    const auto slot = static_cast<std::uint64_t>(std::countr_zero(used));
    for (std::uint32_t w = 0; w < row_words_; ++w) acc[w] |= bits_at(by_slot, slot * (kLineBits + columns_) + 64 * w);
  }
}

void ColumnSegment::set_index_bit(std::uint32_t column, std::uint32_t hash_index, bool on) noexcept {
  std::uint64_t& word = index_masks_[static_cast<std::size_t>(hash_index) * row_words_ + column / 64];
  const std::uint64_t bit = std::uint64_t{1} << (column % 64);
  word = on ? (word | bit) : (word & ~bit);
  for (std::uint64_t slot = 0; slot < layout_.per_block && by_lines(); ++slot) {
    const std::uint64_t line = std::uint64_t{hash_index} * layout_.per_block + slot;
    const std::uint64_t at = line * kLineBits + slot * columns_ + column;
    std::uint64_t& line_word = line_masks_[at / 64];
    line_word = on ? (line_word | (std::uint64_t{1} << (at % 64))) : (line_word & ~(std::uint64_t{1} << (at % 64)));
  }
  if (on) {
    ++index_used_[hash_index];
  } else {
    --index_used_[hash_index];
  }
}

std::uint32_t ColumnSegment::push(std::uint32_t hash_index) {
  const std::uint32_t column = column_of_age(live_);
  column_index_[column] = hash_index;
  set_index_bit(column, hash_index, true);
  ++live_;
  return column;
}

// One bit per row, so this touches every line of the segment: once per generation.
void ColumnSegment::pop() noexcept {
  const std::uint32_t column = oldest_;
  if (columns_ == 1) {
    // A small slice's segment: its rows are back to back, so the cells are its words. Clearing them bit by
    // bit was ~9% of a 60 KiB filter's time (perf, 1e-3), one read-modify-write per row per generation.
    std::fill(cells_.data(), cells_.data() + (rows_ + 63) / 64, 0);
  } else {
    RowWalk walk(layout_, 0, column);
    for (std::uint64_t row = 0; row < rows_; ++row, walk.next()) {
      cells_[walk.bit() >> 6] &= ~(std::uint64_t{1} << (walk.bit() & 63));
    }
  }
  set_index_bit(column, column_index_[column], false);
  oldest_ = (oldest_ + 1) % columns_;
  --live_;
}

std::unique_ptr<ColumnSegment> ColumnSegment::repacked(std::uint32_t columns) const {
  auto out = std::make_unique<ColumnSegment>(rows_, columns, k_);
  std::vector<std::uint64_t> row(row_words_ + 1, 0);
  const std::uint32_t to_end = std::min(live_, columns_ - oldest_);
  for (std::uint64_t r = 0; r < rows_; ++r) {
    load_row_at(layout_.start(r), row.data());
    row[row_words_ - 1] &= low_bits(columns_ - 64 * (row_words_ - 1));
    const std::uint64_t at = out->layout_.start(r);
    or_bits(out->cells_.data(), at, row.data(), oldest_, to_end);
    or_bits(out->cells_.data(), at + to_end, row.data(), 0, live_ - to_end);
  }
  for (std::uint32_t age = 0; age < live_; ++age) out->push(column_index_[column_of_age(age)]);
  return out;
}

// Recursive block swaps: at step J, the top-right J x J blocks trade places with the bottom-left ones. Every
// step works on four words at a time (GCC vector extensions; AVX2 where the CPU has it, chosen at load time):
// a restore transposes every 64 x 64 block of a filter, and the scalar form was most of it.
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
// move and their four partners (restore's scatter of 156 columns, in cache: 0.107 ms per 16,384 rows against
// 0.114 with these two steps scalar).
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

// The wanted columns go in windows of up to 64 consecutive ones, each transposed once per block of 64
// rows. A checkpoint wants the k newest columns, one contiguous run of the ring, so usually one window (two
// when the run wraps) instead of every 64-column group the run touches. Before (one transpose per wanted
// group, each row found by layout_.start()), a checkpoint of bench/service_bench's filters was 13% of the
// service thread's samples (perf, bench/README.md "Checkpoint gather").
std::vector<Words> ColumnSegment::gather(const std::vector<std::uint32_t>& columns) const {
  const std::uint64_t block_count = blocks();
  if (columns_ == 1) {  // a small slice's segment: its rows are back to back, the cells are its words
    return std::vector<Words>(columns.size(), Words(cells_.data(), cells_.data() + block_count));
  }
  std::vector<Words> out(columns.size(), Words(block_count, 0));
  const std::vector<std::size_t> order = by_column(columns);
  std::vector<std::size_t> window_starts;  // indexes into `order`
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (window_starts.empty() || columns[order[i]] >= columns[order[window_starts.back()]] + 64) window_starts.push_back(i);
  }
  window_starts.push_back(order.size());
  std::uint64_t a[64];
  for (std::uint64_t b = 0; b < block_count; ++b) {
    for (std::size_t w = 0; w + 1 < window_starts.size(); ++w) {
      const std::uint32_t first = columns[order[window_starts[w]]];
      load_block(b, first, a);
      transpose64(a);
      for (std::size_t i = window_starts[w]; i < window_starts[w + 1]; ++i) {
        out[order[i]][b] = a[columns[order[i]] - first];
      }
    }
  }
  return out;
}

// a[i] = the 64 bits of row 64 * block + i from column `first` on (zero past the last row).
void ColumnSegment::load_block(std::uint64_t block, std::uint32_t first, std::uint64_t* a) const noexcept {
  const std::uint64_t row = 64 * block;
  const std::uint64_t count = std::min<std::uint64_t>(64, rows_ - row);
  RowWalk walk(layout_, row, first);
  for (std::uint64_t i = 0; i < count; ++i, walk.next()) a[i] = bits_at(cells_.data(), walk.bit());
  std::fill(a + count, a + 64, 0);
}

// Consecutive columns form runs of up to 64, all scattered in one sweep (scatter_runs); before that sweep
// existed this wrote each block front to back from the transposes of all its column groups, which took 21.5
// instead of 14.2 ms of CPU for 156 columns of 1,653,248 rows (state_bench's filter).
void ColumnSegment::scatter(const std::vector<std::uint32_t>& columns,
                            const std::vector<const std::uint64_t*>& words) {
  const std::vector<std::size_t> order = by_column(columns);
  std::vector<const std::uint64_t*> sorted;
  for (const std::size_t n : order) sorted.push_back(words[n]);
  std::vector<ColumnRun> runs;
  for (std::size_t begin = 0, end = 0; begin < order.size(); begin = end) {
    for (end = begin + 1; end < order.size() && end - begin < 64; ++end) {
      if (columns[order[end]] != columns[order[end - 1]] + 1) break;
    }
    runs.push_back({columns[order[begin]], std::span<const std::uint64_t* const>(sorted.data() + begin, end - begin)});
  }
  scatter_runs(runs, 0, blocks());
}

// Per chunk of 8 blocks and run, one cache line of each of the run's columns is copied into `lines` (up to
// 64 loads from as many streams, all in flight at once, the next chunk's lines requested ahead), then each
// block is transposed out of it. A row's bits of the run are ORed in at bit layout_.start(r) + first; the
// second word only when the run's bits reach it, so that a call writes no word outside its rows' lines (or,
// packed back to back, outside its blocks). The chunk's cells
// (8 * C words) stay in cache from one run to the next.
void ColumnSegment::scatter_runs(std::span<const ColumnRun> runs, std::uint64_t block_begin,
                                 std::uint64_t block_end) noexcept {
  constexpr std::uint64_t kChunk = 8;
  constexpr std::uint64_t kAhead = 4 * kChunk;  // words: far enough ahead to cover a miss
  alignas(64) std::uint64_t lines[64][kChunk] = {};
  alignas(64) std::uint64_t a[64];
  for (std::uint64_t b0 = block_begin; b0 < block_end; b0 += kChunk) {
    const std::uint64_t n = std::min(kChunk, block_end - b0);
    for (const ColumnRun& run : runs) {
      const auto width = static_cast<unsigned>(run.words.size());
      for (unsigned j = 0; j < 64; ++j) {
        if (j >= width) {
          std::fill(lines[j], lines[j] + kChunk, 0);
        } else if (n == kChunk) {
          std::memcpy(lines[j], run.words[j] + b0, sizeof lines[j]);  // a fixed size: one or two vector loads
        } else {
          std::memcpy(lines[j], run.words[j] + b0, n * sizeof(std::uint64_t));
        }
        if (j < width && b0 + kAhead < block_end) __builtin_prefetch(run.words[j] + b0 + kAhead);
      }
      for (std::uint64_t c = 0; c < n; ++c) {
        for (unsigned j = 0; j < 64; ++j) a[j] = lines[j][c];
        transpose64(a);
        const std::uint64_t row0 = 64 * (b0 + c);
        const std::uint64_t in_block = std::min<std::uint64_t>(64, rows_ - row0);
        RowWalk walk(layout_, row0, run.first);
        for (std::uint64_t i = 0; i < in_block; ++i, walk.next()) {
          const unsigned shift = walk.bit() & 63;
          std::uint64_t* out = cells_.data() + (walk.bit() >> 6);
          out[0] |= a[i] << shift;
          if (shift + width > 64) out[1] |= a[i] >> (64 - shift);
        }
      }
    }
  }
}

// Doubling: after the step that brings `run` to n, bit i is set when bits i..i+n-1 all were.
std::int64_t oldest_window_of_bits(std::vector<std::uint64_t>& bits, std::size_t n, std::uint32_t k) noexcept {
  const std::size_t words = (n + 63) / 64;
  for (std::uint32_t run = 1; run < k;) {
    const std::uint32_t step = std::min(run, k - run);
    // Each word is read before it is written, one word at a time: a vectorised form of this loop loaded
    // two words the previous pass had just stored one by one, which the CPU cannot forward from its store
    // buffer (a profile at 2.7 MiB and 1e-3 had 56% of this function's samples on that load).
    std::uint64_t current = bits[0];
    for (std::size_t w = 0; w < words; ++w) {
      const std::uint64_t next = bits[w + 1];
      bits[w] = current & ((current >> step) | (next << (64 - step)));
      current = next;
    }
    run += step;
  }
  for (std::size_t w = 0; w < words; ++w) {
    if (bits[w] == 0) continue;
    const auto i = static_cast<std::int64_t>(64 * w + static_cast<std::size_t>(std::countr_zero(bits[w])));
    const auto window = static_cast<std::int64_t>(n) - static_cast<std::int64_t>(k) - i;
    return window >= 0 ? window : -1;
  }
  return -1;
}

}  // namespace bloomgate::filters::detail
