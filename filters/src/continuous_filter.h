// File: continuous_filter.h
//
// The continuous Bloom filter of bloombroom: one array of 4-bit time cells, where a key's k cells remember
// the tick in which the key was last written. Unlike bloombroom there is no clock thread: the tick is derived from the caller's `now`, and the 15-tick wrap-around of the cells is fixed.
//
// Layout. m cells of 4 bits, 16 to a 64-bit word, kept in pages of PagedWords (slice id = page index + 1).
// A cell holds 0 (empty) or the slot of the tick t it was last written in: slot(t) = t mod 15 + 1.
//
// Clock. tick(now) = floor((now - epoch) / (ttl / 2)), where epoch is the first `now` the filter saw. A
// `now` earlier than the latest one seen counts as the latest one, so ticks never decrease.
//
// Lifetime. A key is present iff all of its k cells are non-zero and written at most 2 ticks ago. A key
// written at tick t is present through tick t + 2 and absent from tick t + 3 on: it is remembered for at
// least TTL after the write and at most 1.5 TTL. With refresh_on_duplicate a duplicate rewrites its cells,
// so "the write" is the last sighting; without it a duplicate leaves the cells as they are.
//
// Sizing. At the end of a tick the keys of that tick and of the two before it are all live: 1.5 x
// expected_per_ttl keys when the stream delivers expected_per_ttl keys per TTL. The filter is sized for
// that peak, n_live = 1.5 n:
//   m = ceil(-n_live ln p / (ln 2)^2),  k = round(ln 2 * m / n_live), clamped to 1..64.
// So the false-positive rate reaches p at the end of every tick and averages below it (about n_live = 1.25 n
// over a tick). The price is 1.5x the cells of the bloombroom formula, at 4 bits each; memory is capped at
// 2^30 words (8 GiB).
//
// Wrap-around. Slots repeat every 15 ticks, so a cell only says its age modulo 15. The filter keeps
// invariant W: after every mutating call at tick T, every non-zero cell was written in [T - 12, T].
// Under W a cell's age at T is exactly (slot(T) - cell) mod 15, and a query at tick t >= T adds t - T (a
// query 3 or more ticks after T finds nothing fresh and answers at once). W is kept by a sweep that clears
// stale cells (age >= 3), only from test_and_insert:
//   - each test_and_insert sweeps a few words, so that at the nominal rate a pass over the array takes
//     about one tick;
//   - when the tick changes and the current pass started 6 or more ticks ago (a slow stream, or a long
//     silence), the whole array is swept at once and a new pass begins.
// Why W holds: a pass that starts at tick s leaves, once complete, only cells written at s - 2 or later
// (a cell visited at tick v >= s is cleared when written at v - 3 or earlier). Every pass completes within
// 5 ticks of its start, or is replaced by a whole sweep at the current tick. So when writing at tick t
// during a pass that started at s (t - s <= 5), the previous pass started at s' >= s - 5 and every cell
// was written at s' - 2 >= t - 12 or later. Hence a cell written more than 2 ticks ago is never fresh,
// however long ago it was written. contains() is const and never clears anything.
//
// Thread-safety: none; one filter per partition worker.
#pragma once

#include <cstdint>
#include <memory>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"

namespace bloomgate::filters {

namespace detail {
class PagedWords;
}

class ContinuousFilter final : public Filter {
 public:
  explicit ContinuousFilter(const FilterOptions& options);
  ~ContinuousFilter() override;

  // Rebuilds a filter from its metadata record and its page records. Throws FormatError when the metadata
  // is malformed or inconsistent, or a page is missing or malformed.
  static std::unique_ptr<Filter> restore(const Record& meta, const SliceViews& slices);

  FilterType type() const noexcept override { return FilterType::kContinuous; }
  bool test_and_insert(KeyHash key, TimePoint now) override;
  bool contains(KeyHash key, TimePoint now) const override;
  FilterStats stats(TimePoint now) const override;
  FilterImage image(ImageScope scope) const override;
  void mark_persisted() override;

  using Filter::contains, Filter::test_and_insert;  // the string-key overloads beside these

  std::uint64_t cells() const noexcept { return cells_; }
  std::uint32_t probes() const noexcept { return probes_; }

 private:
  struct Config {
    std::uint64_t cells;
    std::uint32_t probes;
    std::uint64_t expected_per_ttl;
    double error_rate;
    Duration ttl;
    bool refresh_on_duplicate;
  };
  explicit ContinuousFilter(const Config& config);
  static Config config_for(const FilterOptions& options);

  TimePoint clamp(TimePoint now) const noexcept;
  std::uint64_t tick_at(TimePoint clamped_now) const noexcept;
  void advance(TimePoint now);
  bool fresh(KeyHash key, std::uint64_t ticks_after_current) const;
  void write(KeyHash key);
  void sweep_step();
  void sweep_all(std::uint64_t ticks_after_current);
  void clear_stale(std::size_t word, std::uint64_t ticks_after_current);
  std::uint64_t cell(std::uint64_t index) const noexcept;
  std::uint64_t fresh_cells(std::size_t first_word, std::size_t end_word, std::uint64_t ticks_after_current) const;
  std::string meta_payload() const;
  bool state_is_consistent() const;
  bool padding_is_empty() const;

  std::uint64_t cells_;
  std::uint32_t probes_;
  std::uint64_t expected_per_ttl_;
  double error_rate_;
  Duration ttl_;
  bool refresh_on_duplicate_;
  std::uint64_t half_ttl_nanos_;
  std::uint64_t sweep_words_per_insert_;
  std::unique_ptr<detail::PagedWords> words_;

  bool seen_ = false;
  TimePoint epoch_{};
  TimePoint latest_{};
  std::uint64_t tick_ = 0;             // tick of latest_, the reference of every cell age
  std::size_t sweep_cursor_ = 0;       // next word the incremental sweep visits
  std::uint64_t pass_start_tick_ = 0;  // tick at which the current sweep pass began
};

}  // namespace bloomgate::filters
