// File: column_segment.h
//
// Internal to filters/ (namespace detail): the storage of the time-limited filter. A segment holds the
// slices of one size M (M rows) as columns. With RedisBloom's mod-k indexing every slice with hash index j
// tests row fast_range(probe[j], M), so one key reads one row per hash index, whatever the slice count.
//
// Columns are a ring of C = k * w (w = the width of a cell) in age order: the newest slice takes the column
// after the newest one, slices leave oldest first, so the live columns are one contiguous (wrapping) run,
// and one column always stays free. Hash indexes cycle down by one from slice to slice (a slide gives the
// new slice its neighbour's index minus one), so column c always holds the same hash index, and columns
// are grouped by phase c mod k: phase b has a table of M cells of w bits, cell r at bit r * w of the table,
// bit s of it the row r of column s * k + b. A key's query loads one cell per hash index (one unaligned
// 64-bit load each) and finds the runs of k consecutive columns among k small words (oldest_run), or, with
// the vector query in a ring of at most 64 columns, in one word that holds the key's bit of every column
// (the ring word, locate_any_run_ring_word); its insertion sets one bit in each of the k newest columns'
// cells, the same cells. A key's cells are listed
// by phase (cell_starts[b] is its cell in phase b's table), the order the run search reads them in.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bit_slice.h"
#include "zeroed_words.h"

namespace bloomgate::filters::detail {

class KeyProbes;  // tlbf_probes.h

// What a query keeps for the age's search (ColumnSegment::locate_any_run's vector forms, any_run_located,
// any_run), read by ColumnSegment::oldest_run_kept. In a ring of at most 64 columns
// (ColumnSegment::ring_word_query()), the ring word: the columns that hold the key and are valid, and where
// its runs start, by age rank. In a wider one, the key's cells masked by validity, by phase, and the slots
// its runs start in (bit s: a run from some phase of slot s holds the key; 0: none does).
struct QueriedCells {
  alignas(64) std::array<std::uint64_t, kMaxProbes> x;
  std::uint64_t run_slots = 0;
  std::uint64_t holding_by_age = 0;  // bit a: the column of age rank a holds the key's bit and is valid
  std::uint64_t runs_by_age = 0;     // bit a: so do the k columns from age rank a
};

// The widest cell: a segment holds at most 64 k - 1 slices (the filter opens another segment beyond it).
inline constexpr std::uint32_t kMaxCellBits = 64;

class ColumnSegment {
 public:
  // Room for at least `slices` slices: C = k * ceil((slices + 1) / k) columns, one of them always free.
  ColumnSegment(std::uint64_t rows, std::uint32_t slices, std::uint32_t k);

  static std::uint32_t max_slices(std::uint32_t k) noexcept { return kMaxCellBits * k - 1; }

  std::uint64_t rows() const noexcept { return rows_; }
  // The slices it can hold (C - 1): a segment built with this count has the same shape.
  std::uint32_t columns() const noexcept { return columns_ - 1; }
  std::uint32_t live() const noexcept { return live_; }
  bool full() const noexcept { return live_ + 1 == columns_; }
  std::uint32_t cell_width() const noexcept { return width_; }
  // The live slices' bits.
  std::uint64_t cell_bits() const noexcept { return rows_ * live_; }
  // The memory of the tables (free columns and the tables' rounding to 64 rows included).
  std::uint64_t storage_bits() const noexcept { return 64 * storage_words(); }
  // Every byte the segment holds: the object, its cells (the tables and the word after them) and its
  // by-phase vectors.
  std::uint64_t memory_bytes() const noexcept;
  std::uint64_t* cells() noexcept { return cells_.data(); }
  const std::uint64_t* cells() const noexcept { return cells_.data(); }
  // The words of the k tables: what a snapshot of the segment holds (one padding word past them stays zero).
  std::size_t storage_words() const noexcept { return static_cast<std::size_t>(k_) * table_words_; }

  std::uint64_t row_of(const Probes& probes, std::uint32_t hash_index) const noexcept {
    return fast_range(probes.value[hash_index], rows_);
  }
  // The first bit of column `column`'s phase table, plus its slot: its cell bit for row r is that + r * w.
  std::uint64_t column_base(std::uint32_t column) const noexcept {
    return (column % k_) * table_words_ * 64 + slot_of(column);
  }
  std::uint32_t slot_of(std::uint32_t column) const noexcept { return column / k_; }
  std::uint32_t next_slot(std::uint32_t slot) const noexcept { return slot + 1 == width_ ? 0 : slot + 1; }  // mod w
  bool test(std::uint64_t row, std::uint32_t column) const noexcept {
    const std::uint64_t bit = column_base(column) + row * width_;
    return ((cells_[bit >> 6] >> (bit & 63)) & 1U) != 0;
  }
  // True when the bit was clear.
  bool set(std::uint64_t row, std::uint32_t column) noexcept {
    const std::uint64_t bit = column_base(column) + row * width_;
    const std::uint64_t mask = std::uint64_t{1} << (bit & 63);
    const bool was_clear = (cells_[bit >> 6] & mask) == 0;
    cells_[bit >> 6] |= mask;
    return was_clear;
  }
  // The first bit of the key's cell in every phase table, in cell_starts[phase]: found once per key, then
  // used to request, match and set its cells.
  void locate(const Probes& probes, std::uint64_t* cell_starts) const noexcept;
  // Requests the located cells.
  void prefetch(const std::uint64_t* cell_starts) const noexcept;

  // The age rank (0 = oldest live column) of the oldest run of k consecutive columns that hold the key's bit
  // and are set in `valid` (valid_by_phase(): bit s of word b for column s * k + b), or -1. With `newer`,
  // also how many live columns after that run (younger) hold the bit and are valid, in a row. In passes
  // over the phases (oldest_run_start); after a query, what it kept answers sooner (below).
  std::int64_t oldest_run(const std::uint64_t* cell_starts, const std::uint64_t* valid,
                          std::uint32_t* newer = nullptr) const noexcept;
  // The same from the cells masked by `valid` (load_cells' x).
  std::int64_t oldest_run_in(const std::uint64_t* cells, std::uint32_t* newer = nullptr) const noexcept;
  // The same after locate_any_run() with these arguments, from what it kept, without reading the cells
  // again (oldest_run_kept); after the scalar query, which keeps none, from cell_starts.
  std::int64_t oldest_run_after_query(const std::uint64_t* cell_starts, const std::uint64_t* valid,
                                      const QueriedCells& kept, std::uint32_t* newer = nullptr) const noexcept {
    if (!vector_query_) return oldest_run(cell_starts, valid, newer);
    return oldest_run_kept(kept, newer);
  }
  bool vector_runs() const noexcept { return vector_query_ && k_ <= kVectorRunPhases; }
  // Whether such a run exists (the same search without locating the oldest); the cells masked by `valid`
  // and the run slots go into `kept`.
  bool any_run(const std::uint64_t* cell_starts, const std::uint64_t* valid, QueriedCells& kept) const noexcept;
  // any_run of cells located before (out of the caches, requested first), or the ring word's search of them
  // where ring_word_query() (any_run_in_ring_word); either keeps what oldest_run_kept reads.
  bool any_run_located(const std::uint64_t* cell_starts, const std::uint64_t* valid, std::uint64_t valid_by_age,
                       QueriedCells& kept) const noexcept {
    return ring_word_query_ ? any_run_in_ring_word(cell_starts, valid_by_age, kept) : any_run(cell_starts, valid, kept);
  }
  // oldest_run from what a vector query or any_run_located kept: the ring word; else the masked cells and,
  // with k <= 16 and AVX-512, the run slots (oldest_run_start_from_slots).
  std::int64_t oldest_run_kept(const QueriedCells& kept, std::uint32_t* newer = nullptr) const noexcept {
    if (ring_word_query_) return oldest_run_in_ring_word(kept, newer);
    return age_of_run(kept.x.data(), vector_runs() ? oldest_run_start_from_slots(kept) : oldest_run_start(kept.x.data()),
                      newer);
  }
  // locate() and any_run() in one call: the single-call path in cache. With AVX-512 (vector_query()), the
  // rows of eight phases at a time, then the k cells loaded (locate_any_run_vector); else one pass over the
  // phases, each probe value computed where its cell is read (locate_any_run_scalar, DescendingProbes).
  // Same answers and cells. The vector form also keeps what oldest_run_after_query reads in `kept` (the
  // ring word, or the cells masked by `valid` and the run slots; an extra store per phase made the scalar
  // loop slower, so it keeps none). `valid_by_age` is the first word of the validity by age rank (bit a:
  // the column of age rank a), which the ring word reads instead of `valid`. cell_starts needs kMaxProbes
  // words (the vector form writes whole groups of eight).
  bool locate_any_run(const KeyProbes& probes, const std::uint64_t* valid, std::uint64_t valid_by_age,
                      std::uint64_t* cell_starts, QueriedCells& kept) const noexcept {
    if (ring_word_query_) return locate_any_run_ring_word(probes, valid_by_age, cell_starts, kept);
    return vector_query_ ? locate_any_run_vector(probes, valid, cell_starts, kept)
                         : locate_any_run_scalar(probes, valid, cell_starts);
  }
  bool locate_any_run_scalar(const KeyProbes& probes, const std::uint64_t* valid, std::uint64_t* cell_starts) const noexcept;
  // Only where vector_query() (asserted): the CPU has AVX-512 F and DQ and BMI2, the cells are narrow and
  // the rows fewer than 2^32 (column_segment_avx512.cc).
  bool locate_any_run_vector(const KeyProbes& probes, const std::uint64_t* valid, std::uint64_t* cell_starts,
                             QueriedCells& kept) const noexcept;
  bool vector_query() const noexcept { return vector_query_; }
  // The vector query of a ring of at most 64 columns and two slots or more: the rows as
  // locate_any_run_vector's, then the k cells deposited into one word, column c at bit c, turned to age
  // order and masked by `valid_by_age`, and its runs of k found by shifts; `kept` gets the ring word.
  // Only where ring_word_query() (asserted).
  bool locate_any_run_ring_word(const KeyProbes& probes, std::uint64_t valid_by_age, std::uint64_t* cell_starts,
                                QueriedCells& kept) const noexcept;
  bool ring_word_query() const noexcept { return ring_word_query_; }
  // `valid` by age rank (bit a of valid_by_age = the column of age rank a, oldest first) regrouped by phase,
  // into out[0..k).
  void valid_by_phase(const std::uint64_t* valid_by_age, std::uint64_t* out) const noexcept;

  // Appends the newest column (not full(), asserted; the hash index after the newest one's, or any in an
  // empty segment, else a FormatError); returns its column number.
  std::uint32_t push(std::uint32_t hash_index);
  // The set bits of `column` (a popcount over its phase table).
  std::uint64_t count_column(std::uint32_t column) const noexcept;
  // Clears and frees the oldest column.
  void pop() noexcept;
  // Makes `column` the one the next push() takes, in a segment with no live column: a snapshot restores
  // the ring where it was, its cells copied whole.
  void start_ring_at(std::uint32_t column) noexcept {
    if (live_ == 0 && column < columns_) set_oldest(column);
  }
  std::uint32_t column_of_age(std::uint32_t age_rank) const noexcept {  // 0 = oldest live
    return (oldest_ + age_rank) % columns_;
  }
  // The same slices with room for `slices` slices, the oldest moved to column 0.
  std::unique_ptr<ColumnSegment> repacked(std::uint32_t slices) const;

  // Columns as slices' own words (the persisted byte order), and back into clear columns, 64 rows at a time.
  // gather extracts each column's bits from its phase table (BMI2's PEXT, one per word of a block) where the
  // CPU has it, else gather_by_transposing (one 64 x 64 transpose per phase table and block): same words.
  std::vector<Words> gather(const std::vector<std::uint32_t>& columns) const;
  std::vector<Words> gather_by_transposing(const std::vector<std::uint32_t>& columns) const;
  // words[n] points to the (rows + 63) / 64 words of column columns[n].
  void scatter(const std::vector<std::uint32_t>& columns, const std::vector<const std::uint64_t*>& words);
  // Consecutive columns first .. first + words.size() - 1 (at most 64), words[j] the words of column
  // first + j, as above.
  struct ColumnRun {
    std::uint32_t first = 0;
    std::span<const std::uint64_t* const> words;
  };
  // ORs the runs' columns into the rows of blocks [block_begin, block_end) (64 rows each). A block of every
  // table is whole words, so calls with disjoint block ranges may run at the same time.
  void scatter_runs(std::span<const ColumnRun> runs, std::uint64_t block_begin, std::uint64_t block_end) noexcept;
  std::uint64_t blocks() const noexcept { return (rows_ + 63) / 64; }
  // The last block at or before `block` that shares no word with the rows before it: every block.
  std::uint64_t shared_word_free(std::uint64_t block) const noexcept { return block; }

 private:
  // The w-bit cell whose first bit is `bit`.
  std::uint64_t cell_at(std::uint64_t bit) const noexcept {
    if (width_ <= kMaxNarrowCellBits) {
      return bits_from(reinterpret_cast<const unsigned char*>(cells_.data()), bit) & cell_mask_;
    }
    std::uint64_t x;
    const std::uint64_t* p = cells_.data() + (bit >> 6);
    const unsigned shift = bit & 63;
    x = (p[0] >> shift) | ((p[1] << 1) << (63 - shift));
    return x & cell_mask_;
  }
  // A cell of at most kMaxNarrowCellBits bits is read with one unaligned load (bits_from).
  static constexpr std::uint32_t kMaxNarrowCellBits = 57;
  // The 57 or more bits from bit `bit` of `bytes`: a narrow cell and the cells after it.
  static std::uint64_t bits_from(const unsigned char* bytes, std::uint64_t bit) noexcept {
    std::uint64_t x;
    std::memcpy(&x, bytes + (bit >> 3), sizeof x);
    return x >> (bit & 7);
  }
  // The key's cells by phase, masked by `valid`.
  void load_cells(const std::uint64_t* cell_starts, const std::uint64_t* valid, std::uint64_t* x) const noexcept;
  // oldest_run's answer before it is turned into an age rank: the run from column slot * k + phase.
  struct RunStart {
    bool found = false;
    std::uint32_t slot = 0;
    std::uint32_t phase = 0;
    // Bit i: the i-th column after the run holds the key's bit and is valid, for i < following_span (the
    // bound of the live columns is holding_after_run's); a span of 0 leaves them to holding_after_run's loop.
    std::uint64_t following = 0;
    std::uint32_t following_span = 0;
  };
  // Column oldest_ as (slot, phase), the phases from its own on, and the slots at or after it for phases
  // from its own on and before it.
  struct OldestColumn {
    std::uint32_t slot;
    std::uint32_t phase;
    std::uint64_t from_phase;
    std::uint64_t from_slot;
    std::uint64_t after_slot;
  };
  // Kept with oldest_ (set_oldest): the age's search would otherwise divide by k on every present key.
  OldestColumn oldest_column() const noexcept { return oldest_column_; }
  void set_oldest(std::uint32_t column) noexcept;
  // The oldest run from the masked cells by phase.
  RunStart oldest_run_start(const std::uint64_t* x) const noexcept;
  // The same from the query's run slots (vector_runs()): only the first slot's phases are tested.
  RunStart oldest_run_start_from_slots(const QueriedCells& kept) const noexcept;
  static constexpr std::uint32_t kVectorRunPhases = 16;  // two registers of eight lanes
  // The vector queries' rows, eight phases at a time, into cell_starts (column_segment_avx512.cc).
  void locate_vector(const KeyProbes& probes, std::uint64_t* cell_starts) const noexcept;
  // The ring word's search of the cells at cell_starts, into `kept`; whether a run holds the key. Inlined
  // into locate_any_run_ring_word; any_run_in_ring_word is its out-of-line call for any_run_located.
  bool search_ring_word(const std::uint64_t* cell_starts, std::uint64_t valid_by_age, QueriedCells& kept) const noexcept;
  bool any_run_in_ring_word(const std::uint64_t* cell_starts, std::uint64_t valid_by_age,
                            QueriedCells& kept) const noexcept;
  void set_up_ring_word();  // columns_of_phase_, run_shifts_ and cells_in_words_
  // The oldest run, and the columns after it that hold the key in a row, from the ring word kept.
  std::int64_t oldest_run_in_ring_word(const QueriedCells& kept, std::uint32_t* newer) const noexcept {
    if (kept.runs_by_age == 0) return -1;
    const auto age = static_cast<std::uint32_t>(std::countr_zero(kept.runs_by_age));
    // age + k <= live < 64: the ring's free column follows the live ones.
    if (newer != nullptr) *newer = static_cast<std::uint32_t>(std::countr_one(kept.holding_by_age >> (age + k_)));
    return age;
  }
  // Enough shifts for k <= 32, doubling to the largest power of two up to k (at most 5), then the rest. The
  // ring word serves rings of two slots or more, so C <= 64 gives k <= 32 (a ring of one slot holds fewer
  // than k slices: no run).
  static constexpr std::size_t kRunShifts = 6;
  std::int64_t age_of_run(const std::uint64_t* x, RunStart run, std::uint32_t* newer) const noexcept;
  static RunStart first_phase(std::uint32_t slot, std::uint64_t phases, bool wraps, const OldestColumn& oldest) noexcept;
  // How many live columns after the run (at age rank `age`) hold the key's bit in the masked cells `x`, in a
  // row.
  std::uint32_t holding_after_run(const std::uint64_t* x, std::uint32_t age, RunStart run) const noexcept;
  // The run search without the run words (oldest_run_start's), in one pass over the phases in order, fed
  // each cell as it loads. A run from column s * k + b holds the key when phases b..k-1 of slot s and
  // phases 0..b-1 of slot s + 1 do.
  // After the cells of phases 0..b-1 are fed, `next_slot` has bit s when phases 0..b-1 of slot s + 1 hold the
  // key (the runs that may start at phase b), and `open` has bit s when a run from slot s starting at a phase
  // up to b holds it in every phase fed. After all k, `open` has the runs (its last term, slot s + 1 in every
  // phase, is the run from column (s + 1) k). Bits from w on may be set: found() masks them.
  struct RunSearch {
    std::uint64_t open = ~std::uint64_t{0};
    std::uint64_t next_slot = ~std::uint64_t{0};
    // Bit s: a run from slot s starting at a phase before the last one fed holds the key in every phase
    // fed. After all k: the slots the runs start in (QueriedCells::run_slots), without open's last term.
    std::uint64_t runs = 0;
    // x: the phase's cell masked by validity; x_down: its bits below w, each slot's bit moved down one
    // (bit s = slot s + 1, bit w - 1 = slot 0).
    void feed(std::uint64_t x, std::uint64_t x_down) noexcept {
      next_slot &= x_down;
      runs = open & x;
      open = runs | next_slot;
    }
    // feed() with x_down as (x | x << w) >> 1: the bits below w are down_a_slot's, in three operations;
    // the bits from w on are left set, which found() masks.
    void feed_cell(std::uint64_t x, std::uint64_t width) noexcept { feed(x, (x | x << width) >> 1); }
    bool found(std::uint64_t cell_mask) const noexcept { return (open & cell_mask) != 0; }
  };
  // Bit s + 1 of `cells` (w bits) to bit s, bit 0 to bit w - 1: the next slot's bit, the ring wrapping.
  std::uint64_t down_a_slot(std::uint64_t cells) const noexcept {
    return (cells >> 1) | ((cells & 1U) << (width_ - 1));
  }
  // The bits of `column` in the w words of any 64-row block of its phase table, into masks[0..w).
  void block_masks(std::uint32_t column, std::uint64_t* masks) const noexcept;
  // out[c] = word `block` of column c (rows 64 block .. 64 block + 63), for every column.
  void read_block(std::uint64_t block, std::uint64_t* out) const noexcept;
  // ORs in[c] into word `block` of column c, for the columns whose phase bit is set in `phases`.
  void or_block(std::uint64_t block, const std::uint64_t* in, std::uint64_t phases) noexcept;

  std::uint64_t rows_;
  std::uint32_t columns_;  // C, a multiple of k
  std::uint32_t k_;
  std::uint32_t width_;    // w = C / k
  std::uint64_t cell_mask_;
  std::uint64_t table_words_;  // per phase: blocks * w
  std::uint32_t oldest_ = 0;
  OldestColumn oldest_column_;  // of oldest_, set with it (set_oldest)
  std::uint32_t live_ = 0;
  // The k tables, then one word of padding for the unaligned loads. A 256 MiB segment on small pages adds
  // a page walk to every cell read; on huge pages (2 MiB) it spans 128 pages, which the TLB holds.
  ZeroedWords cells_;
  // By phase, once the first column is pushed: the phase's hash index (64-bit: the vector query loads it
  // as lanes).
  std::vector<std::uint64_t> index_of_phase_;
  std::vector<std::uint64_t> table_start_;  // by phase: the first bit of its table
  // By phase, for the vector query: (j^3 - j) / 6 of the phase's hash index j, its probe's sum less h1 + j h2.
  std::vector<std::uint64_t> cubic_of_phase_;
  // By phase, for the ring word: the bits of the phase's columns (s * k + b for every slot s).
  std::vector<std::uint64_t> columns_of_phase_;
  // For the ring word: ANDing a word with itself shifted down by each of these leaves bit a set where bits
  // a .. a + k - 1 were (1, 2, 4, ... while the run length doubles within k, then k less that length;
  // zeros pad).
  std::array<std::uint32_t, kRunShifts> run_shifts_{};
  bool cells_in_words_ = false;  // w divides 64: no cell crosses a word (the ring word reads words)
  bool vector_query_ = false;
  bool ring_word_query_ = false;
};

// Where a slice's bits lie: its ColumnSlice's fields that a test reads, also copied into a dense array for
// the walk over several segments.
struct SliceBits {
  const std::uint64_t* cells = nullptr;
  std::uint64_t base = 0;  // ColumnSegment::column_base of the slice's column
  std::uint64_t rows = 0;
  std::uint64_t width = 1;  // the segment's cell width
  std::uint32_t hash_index = 0;

  // The key's bit in the segment's cells.
  std::uint64_t bit_of(const Probes& probes) const noexcept {
    return base + fast_range(probes.value[hash_index], rows) * width;
  }
  bool holds(const Probes& probes) const noexcept {
    const std::uint64_t bit = bit_of(probes);
    return ((cells[bit >> 6] >> (bit & 63)) & 1U) != 0;
  }
  void prefetch(const Probes& probes) const noexcept { __builtin_prefetch(&cells[bit_of(probes) >> 6]); }
};

// A slice of the time-limited filter: its metadata is a BitSlice's (words left empty), its bits are a
// column of a segment.
struct ColumnSlice : BitSlice {
  ColumnSegment* segment = nullptr;
  // The segment's cells and the column's place in them, kept here so the insertion reads no segment object.
  std::uint64_t* cells = nullptr;
  std::uint64_t base = 0;   // ColumnSegment::column_base
  std::uint32_t width = 1;  // the segment's cell width
  std::uint32_t column = 0;
  std::uint32_t slot = 0;   // its bit in a cell
  // The column's set bits, counted by count_set_bits(): the filter counts the region's slices, and a slice
  // that left the region once (set_bits_counted false until then), before a reader (TimeLimitedFilter,
  // "The insertion region").
  std::uint64_t set_bits = 0;
  bool set_bits_counted = true;

  void place(ColumnSegment* in, std::uint32_t at) noexcept {
    segment = in;
    cells = in->cells();
    base = in->column_base(at);
    width = in->cell_width();
    column = at;
    slot = in->slot_of(at);
  }
  SliceBits place_of_bits() const noexcept { return {cells, base, bits, width, hash_index}; }
  bool test(const Probes& probes) const noexcept { return place_of_bits().holds(probes); }
  void prefetch(const Probes& probes) const noexcept { place_of_bits().prefetch(probes); }
  void count_set_bits() noexcept {
    set_bits = segment->count_column(column);
    set_bits_counted = true;
  }
  double measured_fill() const noexcept {
    return bits == 0 ? 0.0 : static_cast<double>(set_bits) / static_cast<double>(bits);
  }
};

// Sets bit `bit` of `cells`.
inline void set_cell_bit(std::uint64_t* cells, std::uint64_t bit) noexcept {
  cells[bit >> 6] |= std::uint64_t{1} << (bit & 63);
}

// Bit j of a[i] goes to bit i of a[j].
void transpose64(std::uint64_t* a) noexcept;

}  // namespace bloomgate::filters::detail
