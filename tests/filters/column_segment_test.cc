// The column segment (column_segment.h), the time-limited filter's storage: phase tables, gather and
// scatter against the bits one by one, the query's run search against the slice walk, pops and repacks.
// Random bits use fixed seeds (given at each call).
#include "column_segment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <span>
#include <vector>

#include "bit_slice.h"
#include "tlbf_probes.h"

namespace bloomgate::filters {
namespace {

// Pushes `count` columns whose hash indexes cycle down by one from the newest column's, as the filter's
// slides give them; returns the hash index of every column (`index_of`: those of the columns already pushed).
std::vector<std::uint32_t> push_cycling(detail::ColumnSegment& segment, std::uint32_t count, std::uint32_t k,
                                        std::vector<std::uint32_t> index_of = {}) {
  index_of.resize(segment.columns() + 1, 0);
  std::uint32_t next = segment.live() == 0 ? 0 : index_of[segment.column_of_age(segment.live() - 1)];
  for (std::uint32_t i = 0; i < count; ++i) {
    next = (next + k - 1) % k;
    index_of[segment.push(next)] = next;
  }
  return index_of;
}

// Columns are grouped by phase (column mod k) into tables of cells of w = C / k bits; one column stays free.
TEST(ColumnSegment, PhaseTablesHoldCellsOfEveryColumnOfAPhase) {
  detail::ColumnSegment segment(1000, 157, 16);
  EXPECT_EQ(segment.columns(), 159U);  // C = 160 = 16 x 10
  EXPECT_EQ(segment.cell_width(), 10U);
  EXPECT_EQ(segment.storage_bits(), 16U * 16 * 10 * 64);  // 16 tables of ceil(1000 / 64) blocks of 10 words
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(segment.cells()) % 64, 0U);
  for (const std::uint32_t c : {0U, 1U, 15U, 16U, 17U, 159U}) {
    EXPECT_EQ(segment.column_base(c), (c % 16) * 16 * 10 * 64 + c / 16) << c;
  }
  EXPECT_EQ(detail::ColumnSegment(1000, 1, 3).columns(), 2U);
  EXPECT_EQ(detail::ColumnSegment(1000, 500, 3).columns(), detail::ColumnSegment::max_slices(3));  // 64-bit cells
  detail::ColumnSegment cycling(100, 10, 4);
  cycling.push(2);
  EXPECT_NO_THROW(cycling.push(1));
  EXPECT_THROW(cycling.push(3), FormatError);  // hash indexes that do not cycle are a damaged restore
}

// A checkpoint gathers columns into slice words and a restore scatters them back, 64 x 64 bits at a time:
// both must agree with the bits one by one, for sizes that are not multiples of 64, a wrapped ring (and its
// columns asked for newest first), and cells of 34 to 64 bits.
TEST(ColumnSegment, GatherAndScatterMatchTheBitsOneByOne) {
  std::mt19937_64 rng(83);
  for (const std::uint32_t width : {100U, 150U, 180U, 191U}) {
    for (const std::uint64_t rows : {1000ULL, 4096ULL}) {
      detail::ColumnSegment segment(rows, width, 3);
      const std::vector<std::uint32_t> index_of = push_cycling(segment, width, 3);
      for (int i = 0; i < 40; ++i) segment.pop();
      push_cycling(segment, 40, 3, index_of);
      const std::uint32_t columns_c = segment.columns() + 1;
      for (int i = 0; i < 20'000; ++i) segment.set(rng() % rows, static_cast<std::uint32_t>(rng() % columns_c));
      // The k newest columns of a wrapped ring come unsorted (newest first, across the wrap).
      const std::vector<std::uint32_t> wrapped = {2, 1, 0, columns_c - 1, columns_c - 2};
      for (const auto& wanted : {wrapped, std::vector<std::uint32_t>{63, 64, 65}}) {
        const auto gathered = segment.gather(wanted);
        EXPECT_EQ(segment.gather_by_transposing(wanted), gathered) << "the two ways to gather differ";
        for (std::size_t n = 0; n < wanted.size(); ++n) {
          for (std::uint64_t r = 0; r < rows; ++r) {
            ASSERT_EQ(((gathered[n][r / 64] >> (r % 64)) & 1U) != 0, segment.test(r, wanted[n])) << wanted[n] << " " << r;
          }
        }
      }
      std::vector<std::uint32_t> columns = {0, 1, 63, 64, 65, columns_c - 2, columns_c - 1};
      const auto words = segment.gather(columns);
      detail::ColumnSegment copy(rows, width, 3);
      std::vector<const std::uint64_t*> pointers;
      for (const auto& w : words) pointers.push_back(w.data());
      copy.scatter(columns, pointers);
      for (std::uint32_t c = 0; c < columns_c; ++c) {
        const bool scattered = std::find(columns.begin(), columns.end(), c) != columns.end();
        for (std::uint64_t r = 0; r < rows; ++r) {
          ASSERT_EQ(copy.test(r, c), scattered && segment.test(r, c)) << width << " " << c << " " << r;
        }
      }
    }
  }
}

// Narrow cells (the service's filters: k = 10, about 90 slices, cells of 9 bits), every column at once.
TEST(ColumnSegment, GatherOfNarrowCellsMatchesTheBitsOneByOne) {
  std::mt19937_64 rng(85);
  for (const std::uint32_t slices : {5U, 29U, 89U}) {
    constexpr std::uint32_t kProbes = 10;
    constexpr std::uint64_t kRows = 777;
    detail::ColumnSegment segment(kRows, slices, kProbes);
    push_cycling(segment, slices, kProbes);
    for (int i = 0; i < 5'000; ++i) segment.set(rng() % kRows, static_cast<std::uint32_t>(rng() % slices));
    std::vector<std::uint32_t> all(slices);
    for (std::uint32_t c = 0; c < slices; ++c) all[c] = c;
    const auto gathered = segment.gather(all);
    EXPECT_EQ(segment.gather_by_transposing(all), gathered) << slices;
    for (std::uint32_t c = 0; c < slices; ++c) {
      for (std::uint64_t r = 0; r < kRows; ++r) {
        ASSERT_EQ(((gathered[c][r / 64] >> (r % 64)) & 1U) != 0, segment.test(r, c)) << slices << " " << c << " " << r;
      }
    }
  }
}

// The filter counts a slice's set bits from its column (count_column) instead of at every insertion: cells
// of 1 to 64 bits (widths that divide 64 included), every column, against the bits one by one.
TEST(ColumnSegment, CountColumnIsTheBitsSetOneByOne) {
  std::mt19937_64 rng(87);
  struct Shape {
    std::uint32_t slices;
    std::uint32_t k;
  };
  for (const Shape shape : {Shape{5, 10}, Shape{29, 10}, Shape{89, 10}, Shape{100, 3}, Shape{150, 3}, Shape{191, 3}}) {
    constexpr std::uint64_t kRows = 1000;
    detail::ColumnSegment segment(kRows, shape.slices, shape.k);
    push_cycling(segment, shape.slices, shape.k);
    for (int i = 0; i < 20'000; ++i) segment.set(rng() % kRows, static_cast<std::uint32_t>(rng() % shape.slices));
    for (std::uint32_t c = 0; c < shape.slices; ++c) {
      std::uint64_t set = 0;
      for (std::uint64_t r = 0; r < kRows; ++r) set += segment.test(r, c) ? 1U : 0U;
      ASSERT_EQ(segment.count_column(c), set) << "width " << segment.cell_width() << ", column " << c;
    }
  }
}

// One slice alone: gathered as its words.
TEST(ColumnSegment, OneColumnGathersItsRowsAsWords) {
  std::mt19937_64 rng(84);
  detail::ColumnSegment segment(1000, 1, 3);
  segment.push(2);
  for (int i = 0; i < 300; ++i) segment.set(rng() % 1000, 0);
  const auto words = segment.gather({0});
  ASSERT_EQ(words.size(), 1U);
  ASSERT_EQ(words[0].size(), 16U);  // ceil(1000 / 64)
  for (std::uint64_t r = 0; r < 1024; ++r) {
    ASSERT_EQ(((words[0][r / 64] >> (r % 64)) & 1U) != 0, r < 1000 && segment.test(r, 0)) << r;
  }
}

// A query loads the cell of each hash index: oldest_run() must find the window the slice walk
// (bit_slice.h's oldest_matching_run) finds over
// the same bits (each live column's bit of the row its hash index picks, oldest first, expired ones
// failing), for random validity too, and how many columns after it hold the key in a row (the sighting's
// age starts there), both from the cells (passes over the phases) and from what a query kept: the run
// slots of the vector query or of any_run (with AVX-512 and k <= 16), or the ring word in a ring of at most
// 64 columns, whose holding bits are checked one by one;
// and any_run() / any_run_located() / locate_any_run() whether there is one: the scalar query, and the
// vector one where the CPU has AVX-512 (k of 1 to 20: one, two and three groups of eight phases, whole and
// partial; 32 and 64, the most a ring word and a segment take).
TEST(ColumnSegment, OldestRunIsTheWindowTheWalkFinds) {
  std::mt19937_64 rng(85);
  for (const std::uint32_t k : {1U, 2U, 5U, 8U, 9U, 15U, 16U, 20U, 32U, 64U}) {
    for (const std::uint32_t width : {1U, 3U, 60U, 100U, 150U, 180U, 200U, 319U}) {
      if (width > detail::ColumnSegment::max_slices(k)) continue;
      const std::uint64_t rows = 200;
      detail::ColumnSegment segment(rows, width, k);
      std::vector<std::uint32_t> index_of = push_cycling(segment, width, k);
      for (std::uint32_t i = 0; i < width / 3; ++i) segment.pop();  // a wrapped ring
      index_of = push_cycling(segment, width / 3, k, index_of);
      const std::uint32_t columns_c = segment.columns() + 1;
      for (std::uint32_t i = 0; i < 100 * columns_c; ++i) {
        segment.set(rng() % rows, static_cast<std::uint32_t>(rng() % columns_c));
      }
      for (int trial = 0; trial < 300; ++trial) {
        const KeyHash key{rng()};
        const detail::Probes probes(key, k);
        std::array<std::uint64_t, detail::kMaxProbes> cell_starts{};
        segment.locate(probes, cell_starts.data());
        const std::uint32_t n = segment.live();
        std::vector<std::uint64_t> valid((n + 63) / 64 + 1, 0);
        std::vector<bool> holds(n);  // by age rank, oldest first
        const std::uint32_t expired = trial % 2 == 0 ? 0 : static_cast<std::uint32_t>(rng() % (n + 1));
        for (std::uint32_t age = 0; age < n; ++age) {
          const std::uint32_t c = segment.column_of_age(age);
          if (age >= expired) valid[age / 64] |= std::uint64_t{1} << (age % 64);
          holds[age] = age >= expired && segment.test(segment.row_of(probes, index_of[c]), c);
        }
        const std::int64_t window =  // positions newest first, as the filter's slices
            detail::oldest_matching_run(n, k, [&](std::size_t p) { return static_cast<bool>(holds[n - 1 - p]); });
        std::array<std::uint64_t, detail::kMaxProbes> by_phase{};
        segment.valid_by_phase(valid.data(), by_phase.data());
        std::uint32_t newer = 0;
        const std::int64_t run = segment.oldest_run(cell_starts.data(), by_phase.data(), &newer);
        ASSERT_EQ(run < 0 ? -1 : static_cast<std::int64_t>(n) - static_cast<std::int64_t>(k) - run, window)
            << "k " << k << ", width " << width << ", trial " << trial;
        std::uint32_t holding_after = 0;  // the columns after the run that hold the key, in a row
        for (auto age = static_cast<std::size_t>(run + k); run >= 0 && age < n && holds[age]; ++age) ++holding_after;
        ASSERT_EQ(newer, holding_after) << "k " << k << ", width " << width << ", trial " << trial;
        detail::QueriedCells kept_by_any;
        ASSERT_EQ(segment.any_run(cell_starts.data(), by_phase.data(), kept_by_any), window >= 0);
        detail::QueriedCells kept_located;  // out of the caches: the cells located and requested first
        ASSERT_EQ(segment.any_run_located(cell_starts.data(), by_phase.data(), valid[0], kept_located), window >= 0);
        std::uint32_t newer_located = 0;
        ASSERT_EQ(segment.oldest_run_kept(kept_located, &newer_located), run);
        ASSERT_EQ(newer_located, holding_after);
        const detail::KeyProbes key_probes(key, k);
        std::array<std::uint64_t, detail::kMaxProbes> fused{};
        ASSERT_EQ(segment.locate_any_run_scalar(key_probes, by_phase.data(), fused.data()), window >= 0);
        for (std::uint32_t b = 0; b < k; ++b) ASSERT_EQ(fused[b], cell_starts[b]) << "phase " << b;
        if (segment.vector_query()) {
          std::array<std::uint64_t, detail::kMaxProbes> vector{};
          detail::QueriedCells kept;
          ASSERT_EQ(segment.locate_any_run_vector(key_probes, by_phase.data(), vector.data(), kept), window >= 0);
          for (std::uint32_t b = 0; b < k; ++b) ASSERT_EQ(vector[b], cell_starts[b]) << "phase " << b;
          std::uint32_t newer_in_cells = 0;  // the passes over the cells it kept
          ASSERT_EQ(segment.oldest_run_in(kept.x.data(), &newer_in_cells), run);
          ASSERT_EQ(newer_in_cells, holding_after);
          // The filter's query (the ring word where the ring has at most 64 columns), and the oldest run from
          // what it kept.
          std::array<std::uint64_t, detail::kMaxProbes> starts{};
          detail::QueriedCells kept_by_query;
          ASSERT_EQ(segment.locate_any_run(key_probes, by_phase.data(), valid[0], starts.data(), kept_by_query), window >= 0);
          for (std::uint32_t b = 0; b < k; ++b) ASSERT_EQ(starts[b], cell_starts[b]) << "phase " << b;
          std::uint32_t newer_kept = 0;
          ASSERT_EQ(segment.oldest_run_after_query(starts.data(), by_phase.data(), kept_by_query, &newer_kept), run);
          ASSERT_EQ(newer_kept, holding_after);
          for (std::uint32_t age = 0; segment.ring_word_query() && age < 64; ++age) {
            ASSERT_EQ(((kept_by_query.holding_by_age >> age) & 1U) != 0, age < n && holds[age]) << "age " << age;
          }
        }
      }
    }
  }
}

// The vector query's rows come from two 32 x 32-bit products per lane (column_segment_avx512.cc): in a
// table of 2^25 + 12,345 rows every key's cells and answer are the scalar query's. Seed 86.
TEST(ColumnSegment, VectorQueryFindsTheScalarCellsInLargeTables) {
  const std::uint32_t k = 2;
  detail::ColumnSegment segment((std::uint64_t{1} << 25) + 12345, 3, k);
  if (!segment.vector_query()) GTEST_SKIP() << "the vector query is off or the CPU has no AVX-512 F and DQ";
  push_cycling(segment, 3, k);
  std::mt19937_64 rng(86);
  for (int i = 0; i < 200000; ++i) segment.set(rng() % segment.rows(), static_cast<std::uint32_t>(rng() % 3));
  std::array<std::uint64_t, detail::kMaxProbes> valid{};
  for (std::uint32_t b = 0; b < k; ++b) valid[b] = ~std::uint64_t{0} >> (64 - segment.cell_width());
  for (int trial = 0; trial < 20000; ++trial) {
    const detail::KeyProbes probes(KeyHash{rng()}, k);
    std::array<std::uint64_t, detail::kMaxProbes> scalar{};
    std::array<std::uint64_t, detail::kMaxProbes> vector{};
    detail::QueriedCells kept;
    ASSERT_EQ(segment.locate_any_run_vector(probes, valid.data(), vector.data(), kept),
              segment.locate_any_run_scalar(probes, valid.data(), scalar.data()));
    for (std::uint32_t b = 0; b < k; ++b) ASSERT_EQ(vector[b], scalar[b]) << "trial " << trial << ", phase " << b;
  }
}

// In a segment of a few KiB and in one of about 1 MiB, every key's answer, cell starts, kept cells and
// oldest run (from its run slots, or from its ring word in rings of at most 64 columns: k up to 16 here)
// from the vector query are the scalar query's, for k of 1 to 20 (one to
// three groups of eight phases, whole and partial), a wrapped ring, about half the bits set and every other
// trial a random stretch of the oldest columns invalid. Seed 87.
TEST(ColumnSegment, VectorQueryFindsTheScalarAnswersInSmallAndLargeSegments) {
  std::mt19937_64 rng(87);
  for (const std::uint32_t k : {1U, 7U, 8U, 9U, 14U, 16U, 17U, 20U}) {
    const std::uint32_t width = 3 * k + 2;
    const std::uint64_t columns_c = detail::ColumnSegment(1, width, k).columns() + 1;
    const std::uint64_t large_rows = (std::uint64_t{8} << 20) / columns_c + 4096;
    for (const std::uint64_t rows : {std::uint64_t{300}, large_rows}) {
      detail::ColumnSegment segment(rows, width, k);
      if (!segment.vector_query()) GTEST_SKIP() << "the vector query is off or the CPU has no AVX-512 F and DQ";
      std::vector<std::uint32_t> index_of = push_cycling(segment, width, k);
      for (std::uint32_t i = 0; i < width / 2; ++i) segment.pop();
      push_cycling(segment, width / 2, k, index_of);
      for (std::uint64_t i = 0; i < rows * columns_c / 2; ++i) {
        segment.set(rng() % rows, static_cast<std::uint32_t>(rng() % columns_c));
      }
      const std::uint32_t n = segment.live();
      for (int trial = 0; trial < 2000; ++trial) {
        std::vector<std::uint64_t> valid((n + 63) / 64 + 1, 0);
        const std::uint32_t expired = trial % 2 == 0 ? 0 : static_cast<std::uint32_t>(rng() % (n + 1));
        for (std::uint32_t age = expired; age < n; ++age) valid[age / 64] |= std::uint64_t{1} << (age % 64);
        std::array<std::uint64_t, detail::kMaxProbes> by_phase{};
        segment.valid_by_phase(valid.data(), by_phase.data());
        const detail::KeyProbes probes(KeyHash{rng()}, k);
        std::array<std::uint64_t, detail::kMaxProbes> scalar{};
        std::array<std::uint64_t, detail::kMaxProbes> vector{};
        detail::QueriedCells kept;
        const bool found = segment.locate_any_run_scalar(probes, by_phase.data(), scalar.data());
        ASSERT_EQ(segment.locate_any_run_vector(probes, by_phase.data(), vector.data(), kept), found)
            << "k " << k << ", rows " << rows << ", trial " << trial;
        for (std::uint32_t b = 0; b < k; ++b) ASSERT_EQ(vector[b], scalar[b]) << "k " << k << ", phase " << b;
        std::uint32_t newer = 0;
        std::uint32_t newer_in_cells = 0;
        const std::int64_t run = segment.oldest_run(scalar.data(), by_phase.data(), &newer);
        ASSERT_EQ(run >= 0, found);
        ASSERT_EQ(segment.oldest_run_in(kept.x.data(), &newer_in_cells), run) << "k " << k << ", rows " << rows;
        ASSERT_EQ(newer_in_cells, newer);
        std::array<std::uint64_t, detail::kMaxProbes> starts{};
        detail::QueriedCells kept_by_query;  // the filter's query: the ring word, or the vector query's run slots
        ASSERT_EQ(segment.locate_any_run(probes, by_phase.data(), valid[0], starts.data(), kept_by_query), found);
        for (std::uint32_t b = 0; b < k; ++b) ASSERT_EQ(starts[b], scalar[b]) << "k " << k << ", phase " << b;
        std::uint32_t newer_kept = 0;
        ASSERT_EQ(segment.oldest_run_after_query(starts.data(), by_phase.data(), kept_by_query, &newer_kept), run);
        ASSERT_EQ(newer_kept, newer);
      }
    }
  }
}

// Retiring the oldest column clears its bit in every row and no other; a repacked segment (another
// column count, so another cell width) holds the same bits by age.
TEST(ColumnSegment, PopAndRepackKeepEveryOtherBit) {
  std::mt19937_64 rng(84);
  const std::uint64_t rows = 3000;
  detail::ColumnSegment segment(rows, 100, 4);
  push_cycling(segment, 100, 4);
  const std::uint32_t columns_c = segment.columns() + 1;
  for (int i = 0; i < 60'000; ++i) segment.set(rng() % rows, static_cast<std::uint32_t>(rng() % columns_c));
  const std::uint32_t oldest = segment.column_of_age(0);
  detail::ColumnSegment before = segment;
  segment.pop();
  for (std::uint32_t c = 0; c < columns_c; ++c) {
    for (std::uint64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(segment.test(r, c), c != oldest && before.test(r, c)) << c << " " << r;
    }
  }
  for (const std::uint32_t columns : {99U, 180U, 255U}) {
    const auto copy = segment.repacked(columns);
    for (std::uint32_t age = 0; age < segment.live(); ++age) {
      for (std::uint64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(copy->test(r, copy->column_of_age(age)), segment.test(r, segment.column_of_age(age)))
            << columns << " " << age << " " << r;
      }
    }
  }
}

// A restore scatters runs of up to 64 columns as their records arrive, several in one sweep, two threads
// splitting the last by blocks: each call must set exactly its columns' bits, whatever the runs' first
// columns and widths, and calls over neighbouring block ranges must not touch each other's words.
TEST(ColumnSegment, ScatteredRunsSplitByBlocksMatchTheBitsOneByOne) {
  std::mt19937_64 rng(84);
  for (const std::uint32_t columns : {1U, 3U, 64U, 150U}) {
    const std::uint64_t rows = 64 * 37 + 5;  // a partial last block
    std::vector<std::vector<std::uint64_t>> words(columns, std::vector<std::uint64_t>((rows + 63) / 64));
    for (auto& column : words) {
      for (auto& word : column) word = rng() & rng();
      column.back() &= (std::uint64_t{1} << (rows % 64)) - 1;
    }
    detail::ColumnSegment segment(rows, columns, 3);
    push_cycling(segment, columns, 3);
    std::vector<const std::uint64_t*> pointers;
    for (const auto& column : words) pointers.push_back(column.data());
    std::vector<detail::ColumnSegment::ColumnRun> runs;
    const std::uint32_t first_run = columns % 64 == 0 ? std::min(columns, 64U) : columns % 64;
    for (std::uint32_t first = 0; first < columns; first = first == 0 ? first_run : first + 64) {
      const std::uint32_t width = first == 0 ? first_run : 64;
      runs.push_back({first, std::span<const std::uint64_t* const>(pointers.data() + first, width)});
    }
    // Blocks from `split` on: all runs in one sweep; the blocks before it: one run at a time.
    const std::uint64_t split = rng() % (segment.blocks() + 1);
    segment.scatter_runs(runs, split, segment.blocks());
    for (const auto& run : runs) segment.scatter_runs(std::span(&run, 1), 0, split);
    for (std::uint32_t c = 0; c < columns; ++c) {
      for (std::uint64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(segment.test(r, c), ((words[c][r / 64] >> (r % 64)) & 1U) != 0) << columns << " " << c << " " << r;
      }
    }
  }
}

// A restore splits the last run between two threads at shared_word_free(blocks / 2): the rows before the
// split and the rows from it on must share no word, or the two threads' ORs could lose bits.
TEST(ColumnSegment, SplitBlocksShareNoWordWithTheRowsBefore) {
  for (const std::uint32_t columns : {1U, 3U, 5U, 64U, 100U, 150U, 157U, 191U}) {
    const std::uint64_t rows = 64 * 50 + 7;
    const detail::ColumnSegment segment(rows, columns, 3);
    const std::uint64_t w = segment.cell_width();
    for (std::uint64_t block = 0; block < segment.blocks(); ++block) {
      const std::uint64_t split = segment.shared_word_free(block);
      ASSERT_LE(split, block) << columns;
      if (split == 0) continue;
      for (std::uint32_t c = 0; c <= segment.columns(); ++c) {
        const std::uint64_t cell_start = segment.column_base(c) - segment.slot_of(c) + 64 * split * w;
        const std::uint64_t last_bit_before = cell_start - 1;
        EXPECT_EQ(cell_start % 64, 0U) << columns << " columns, block " << split;
        EXPECT_LT(last_bit_before / 64, cell_start / 64) << columns << " columns, block " << split;
      }
    }
  }
}

}  // namespace
}  // namespace bloomgate::filters
