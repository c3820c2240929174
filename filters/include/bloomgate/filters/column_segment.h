// File: column_segment.h
//
// Internal to filters/ (namespace detail): the transposed ("bit-sliced") storage of the time-limited
// filter. A segment holds up to C slices of one size M as columns: row r is C bits, bit c of it is bit r
// of column c. With RedisBloom's mod-k indexing every slice with hash index j tests row
// fast_range(probe[j], M), so one key's query over all slices of a segment reads k rows, independent of
// each other, instead of walking up to k+l slices one dependent miss after another; its insertion writes
// bits of the same k rows.
//
// Columns are a ring in age order: the newest slice takes the column after the newest one, and slices
// leave oldest first, so the live columns are always one contiguous (wrapping) run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "bloomgate/filters/bit_slice.h"
#include "bloomgate/filters/zeroed_words.h"

namespace bloomgate::filters::detail {

// Slices of this many bits or more share segments by size (time_limited_filter.cc says how); smaller ones
// keep one column each. A restore that scatters on a thread (column_restore.h) handles only the shared kind.
inline constexpr std::uint64_t kMinSharedRows = 1ULL << 16;

// Where a segment's rows lie. Out of cache every line a query touches is a miss, and a row of C bits
// packed right after the previous one straddles two lines with probability ~C/512, so when C <= 512
// the rows are packed R = floor(512 / C) to a 64-byte line and the next row starts on the next line: a
// row is then one line. The bits left over at the end of a line are memory but no slice's bits
// (ColumnSegment::storage_bits). When that would waste more than a quarter of the line (C of 171 to 191
// or 257 to 383), rows stay packed back to back, as before.
struct RowLayout {
  std::uint64_t columns = 1;    // C: bits per row
  std::uint64_t per_block = 1;  // R: rows per block
  std::uint64_t block_bits = 1; // a block's bits: 512 when rows are line-aligned, else C
  std::uint64_t magic = 0;      // ceil(2^64 / R) for R >= 2: row / R without a division

  static RowLayout for_columns(std::uint64_t columns, std::uint64_t rows) noexcept;
  std::uint64_t blocks(std::uint64_t rows) const noexcept { return (rows + per_block - 1) / per_block; }
  // Exact for R <= 512 and rows below 2^55 (the error of the multiply-shift stays under 1 / R).
  std::uint64_t start(std::uint64_t row) const noexcept {
    if (per_block == 1) return row * block_bits;
    __extension__ using Wide = unsigned __int128;
    const auto block = static_cast<std::uint64_t>((static_cast<Wide>(row) * magic) >> 64);
    return block * block_bits + (row - block * per_block) * columns;
  }
};

class ColumnSegment {
 public:
  ColumnSegment(std::uint64_t rows, std::uint32_t columns, std::uint32_t k);

  std::uint64_t rows() const noexcept { return rows_; }
  std::uint32_t columns() const noexcept { return columns_; }
  std::uint32_t live() const noexcept { return live_; }
  bool full() const noexcept { return live_ == columns_; }
  std::uint64_t cell_bits() const noexcept { return rows_ * columns_; }
  // The memory of the cells, the line padding included (not the few words past the end).
  std::uint64_t storage_bits() const noexcept { return layout_.blocks(rows_) * layout_.block_bits; }
  const RowLayout& layout() const noexcept { return layout_; }
  std::uint32_t row_reads() const noexcept { return live_ < k_ ? live_ : k_; }  // per query
  std::uint64_t* cells() noexcept { return cells_.data(); }
  const std::uint64_t* cells() const noexcept { return cells_.data(); }
  // The words of storage_bits(): what a snapshot of the segment holds (the padding words past them stay zero).
  std::size_t storage_words() const noexcept { return (storage_bits() + 63) / 64; }

  std::uint64_t row_of(const Probes& probes, std::uint32_t hash_index) const noexcept {
    return fast_range(probes.value[hash_index], rows_);
  }
  bool test(std::uint64_t row, std::uint32_t column) const noexcept {
    const std::uint64_t bit = layout_.start(row) + column;
    return ((cells_[bit >> 6] >> (bit & 63)) & 1U) != 0;
  }
  // True when the bit was clear, so callers can count set bits without scanning.
  bool set(std::uint64_t row, std::uint32_t column) noexcept {
    const std::uint64_t bit = layout_.start(row) + column;
    const std::uint64_t mask = std::uint64_t{1} << (bit & 63);
    const bool was_clear = (cells_[bit >> 6] & mask) == 0;
    cells_[bit >> 6] |= mask;
    return was_clear;
  }
  // The first bit of the key's row for every hash index a live column uses (layout_.start of row_of), in
  // row_starts[index]: found once per key, then used to request, match and set its rows.
  void locate(const Probes& probes, std::uint64_t* row_starts) const noexcept;
  // Requests the located rows.
  void prefetch(const std::uint64_t* row_starts) const noexcept;

  // ORs the key's match bits of the live columns, oldest first, into out[offset, offset + live()), from
  // the rows locate() found for the key.
  void match(const std::uint64_t* row_starts, std::uint64_t* out, std::size_t offset) const noexcept;

  // Appends the newest column (requires !full()); returns its column number.
  std::uint32_t push(std::uint32_t hash_index);
  // Clears and frees the oldest column.
  void pop() noexcept;
  // Makes `column` the one the next push() takes, in a segment with no live column: a snapshot restores
  // the ring where it was, its cells copied whole.
  void start_ring_at(std::uint32_t column) noexcept {
    if (live_ == 0 && column < columns_) oldest_ = column;
  }
  std::uint32_t column_of_age(std::uint32_t age_rank) const noexcept {  // 0 = oldest live
    return static_cast<std::uint32_t>((oldest_ + age_rank) % columns_);
  }
  // The same slices with room for `columns` columns, the oldest moved to column 0.
  std::unique_ptr<ColumnSegment> repacked(std::uint32_t columns) const;

  // Columns as slices' own words (the persisted byte order), and back into clear columns: one pass over
  // the segment for all of them, 64 rows by 64 columns at a time.
  std::vector<Words> gather(const std::vector<std::uint32_t>& columns) const;
  // words[n] points to the (rows + 63) / 64 words of column columns[n]; one sweep (scatter_runs).
  void scatter(const std::vector<std::uint32_t>& columns, const std::vector<const std::uint64_t*>& words);
  // Consecutive columns first .. first + words.size() - 1 (at most 64), words[j] the words of column
  // first + j, as above.
  struct ColumnRun {
    std::uint32_t first = 0;
    std::span<const std::uint64_t* const> words;
  };
  // ORs the runs' columns into the rows of blocks [block_begin, block_end) (64 rows each): a restore
  // scatters runs as soon as their records are read, and splits the last one across threads by blocks.
  // Calls with disjoint block ranges may run at the same time when every boundary between them is a
  // shared_word_free() block. All runs of a call go in one sweep over the cells (one pass through memory,
  // not one per run).
  void scatter_runs(std::span<const ColumnRun> runs, std::uint64_t block_begin, std::uint64_t block_end) noexcept;
  std::uint64_t blocks() const noexcept { return (rows_ + 63) / 64; }
  // The last block at or before `block` whose first row starts a line of rows (or, packed back to back,
  // any block: 64 rows of C bits are C whole words), so that rows on either side share no word.
  std::uint64_t shared_word_free(std::uint64_t block) const noexcept {
    const std::uint64_t line_period_blocks = layout_.per_block / std::gcd(layout_.per_block, std::uint64_t{64});
    return block - block % line_period_blocks;
  }

 private:
  void load_row_at(std::uint64_t start, std::uint64_t* out) const noexcept;
  void load_block(std::uint64_t block, std::uint32_t first, std::uint64_t* a) const noexcept;
  bool by_lines() const noexcept { return !line_masks_.empty(); }
  void match_rows(const std::uint64_t* row_starts, std::uint64_t* acc) const noexcept;
  void match_lines(const std::uint64_t* row_starts, std::uint64_t* acc) const noexcept;
  void set_index_bit(std::uint32_t column, std::uint32_t hash_index, bool on) noexcept;

  std::uint64_t rows_;
  std::uint32_t columns_;
  std::uint32_t k_;
  std::uint32_t row_words_;  // ceil(columns / 64)
  RowLayout layout_;
  std::uint32_t oldest_ = 0;
  std::uint32_t live_ = 0;
  // The rows as layout_ places them, then padding, all zero until set. A 256 MiB segment on small pages
  // adds a page walk to every row read; on huge pages (2 MiB) it spans 128 pages, which the TLB holds.
  ZeroedWords cells_;
  std::vector<std::uint64_t> index_masks_;    // k rows of row_words_: the live columns of hash index j
  std::vector<std::uint32_t> index_used_;     // live columns per hash index
  std::vector<std::uint32_t> column_index_;   // hash index of each column
  // Line-aligned layouts of up to kMaxLineSlots rows a line: index_masks_ placed at each row slot of a
  // line (k x R lines of 8 words), so a query ANDs whole lines, one per row, into one accumulator per slot
  // and lines up R accumulators instead of k rows. Empty otherwise.
  std::vector<std::uint64_t> line_masks_;
  mutable std::vector<std::uint64_t> scratch_;  // the accumulators of match()
  // ceil(2^32 / C): a bit offset within a line (below 512) divided by C, as an exact multiply-shift.
  std::uint64_t slot_magic_;
};

// The first window of k consecutive ones in `bits` (n bits, bit i = the slice at position n-1-i, so
// oldest first), as oldest_matching_window answers it: the position of that window's newest slice, or -1.
// `bits` needs one word of zeros past n and is overwritten.
std::int64_t oldest_window_of_bits(std::vector<std::uint64_t>& bits, std::size_t n, std::uint32_t k) noexcept;

// A slice of the time-limited filter: its metadata is a BitSlice's (words left empty), its bits are a
// column of a segment.
struct ColumnSlice : BitSlice {
  ColumnSegment* segment = nullptr;
  // The segment's cells and row layout, kept here so the walk over slices reads no segment object.
  std::uint64_t* cells = nullptr;
  RowLayout layout;
  std::uint32_t column = 0;
  std::uint64_t set_bits = 0;  // kept on insertion, so stats() reads fills without scanning columns

  void place(ColumnSegment* in, std::uint32_t at) noexcept {
    segment = in;
    cells = in->cells();
    layout = in->layout();
    column = at;
  }
  std::uint64_t row_start_of(const Probes& probes) const noexcept {
    return layout.start(fast_range(probes.value[hash_index], bits));
  }
  std::uint64_t cell_of(const Probes& probes) const noexcept { return row_start_of(probes) + column; }
  bool test(const Probes& probes) const noexcept {
    const std::uint64_t b = cell_of(probes);
    return ((cells[b >> 6] >> (b & 63)) & 1U) != 0;
  }
  void set(const Probes& probes) noexcept { set_at_row(row_start_of(probes)); }
  // The same, given the first bit of the key's row (ColumnSegment::locate's row_starts).
  void set_at_row(std::uint64_t row_start) noexcept {
    const std::uint64_t b = row_start + column;
    const std::uint64_t mask = std::uint64_t{1} << (b & 63);
    const std::uint64_t word = cells[b >> 6];
    set_bits += (word & mask) == 0 ? 1U : 0U;  // no branch: at half fill it would mispredict every other bit
    cells[b >> 6] = word | mask;
    ++insertions;
    dirty = true;
  }
  void prefetch(const Probes& probes) const noexcept { __builtin_prefetch(&cells[cell_of(probes) >> 6]); }
  double measured_fill() const noexcept {
    return bits == 0 ? 0.0 : static_cast<double>(set_bits) / static_cast<double>(bits);
  }
};

// Bit j of a[i] goes to bit i of a[j].
void transpose64(std::uint64_t* a) noexcept;

}  // namespace bloomgate::filters::detail
