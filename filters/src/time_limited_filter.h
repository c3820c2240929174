// File: time_limited_filter.h
//
// The time-limited Bloom filter (TLBF): an age-partitioned Bloom filter whose slices carry timestamps,
// so it forgets after a time span T whatever the insertion rate (docs/filters.md, "The time-limited filter").
//
// Structure: slices S[0..N-1], newest first. An insertion sets one bit in each of S[0..k-1]; a query reports present
// when k consecutive valid slices all have the key's bit set. Every g insertions (one generation) a new empty slice is
// pushed at the front; the generation size g and the new slice's size adapt to the observed rate (docs/filters.md, "The
// time-limited filter") so that one generation lasts about T/l and the filter settles at k+l slices. A slice expires
// when its stamp is older than now - T; expired slices are dropped from the tail, and a still-valid oldest slice makes
// the filter grow by one slice instead.
//
// Storage (column_segment.h): slices that share one size are the columns of a segment, grouped by hash
// index into tables of small cells, so a query loads one cell per hash index (k independent reads,
// requested together) instead of walking up to k+l slices one dependent miss after another, and finds the
// runs of k among those k words; it answers exactly as the walk. To share, the slice size is rounded to
// the newest segment's when within -1/8..+1/64 of it (docs/filters.md, "Segments", explains the bias), so at a
// steady rate all slices live in one segment, at every size. With several segments (for up to a TTL after
// the rate changed) a query walks the slices (docs/filters.md, "The query"). Records hold each slice's own
// words.
//
// Guarantees: a key inserted at t0 is reported present at every `now` in [t0, t0 + T] (no false negatives
// within T). From the end of its generation plus T (generations last at most 2T/l) its oldest slice has
// expired and it fades out: its k-1 younger slices still match, so it stays present only while younger
// slices happen to match too, a chance that halves with each further generation; once all its slices have
// expired (T + (k+1) generations) it shows up only at the false-positive rate. At a steady rate the
// measured FPR is at or below the target (docs/filters.md, "False-positive model", is the worst case, just
// before a shift).
//
// Differences from the reference implementation (RedisBloom agingBloom.c):
//  - time is passed in, in nanoseconds; there is no hidden clock, and queries are const;
//  - time never runs backwards: an earlier `now` is treated as the latest one seen;
//  - a generation ending within one clock tick uses a 1 ns duration, so the target generation never divides
//    by zero, and it grows at most 4x per slide, so a burst of equal timestamps sizes no huge slice;
//  - the generation size and the new slice capacity are computed in signed arithmetic, clamped, and g is at least 1;
//  - the slice count, the slice size and the generation size have caps (FilterOptions);
//  - the slices being written count as stamped with the last insertion, so an idle filter forgets them;
//  - an insertion after more than T of silence resets the filter: every slice had expired anyway;
//  - the target generation measures the rate over the last 8 generations instead of one, so Poisson arrivals
//    do not push the slice count above k+l;
//  - a generation also ends when it has lasted 2T/l, so a rate drop cannot widen the slack.
//
// Thread-safety: none; one filter per partition worker. Const queries (contains) use the filter's scratch
// buffers and validity cache too, so they need the same single thread.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "bit_slice.h"
#include "column_segment.h"
#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/fpr.h"
#include "bloomgate/filters/options.h"
#include "tlbf_sizing.h"

namespace bloomgate::filters {

class TimeLimitedFilter final : public Filter {
 public:
  explicit TimeLimitedFilter(const FilterOptions& options);
  ~TimeLimitedFilter() override;

  FilterType type() const noexcept override { return FilterType::kTimeLimited; }
  bool test_and_insert(KeyHash key, TimePoint now) override;
  // Requests the first lines (insertion and first probe) of the key a few places ahead while answering the
  // current one, so those misses overlap the current key's instead of starting after it.
  void test_and_insert_batch(std::span<const KeyHash> keys, std::span<const TimePoint> now,
                             std::span<bool> present) override;
  // The age is read off the stamps of the slices the sighting wrote, so its resolution is a generation
  // (about T/l); neighbouring slices that hold the key's bit by chance blur it by a generation or two
  // (sighting_age). With refresh_on_duplicate a key seen several times reports about its oldest sighting.
  Sighting test_and_insert_with_age(KeyHash key, TimePoint now) override;
  bool contains(KeyHash key, TimePoint now) const override;
  FilterStats stats(TimePoint now) const override;
  FilterImage image(ImageScope scope) const override;
  void mark_persisted() override;
  using Filter::contains;
  using Filter::test_and_insert;
  using Filter::test_and_insert_with_age;

  static std::unique_ptr<Filter> restore(const Record& meta, const SliceViews& slices);
  // Snapshots (filter.h; the format is in time_limited_snapshot.cc).
  std::optional<FilterSnapshot> snapshot() const override;
  static std::unique_ptr<Filter> restore_snapshot(const Record& meta, std::string_view meta_record,
                                                  std::string_view header_record, const SliceViews& bands);

  SlicedParams params() const noexcept { return params_; }
  std::size_t slice_count() const noexcept;
  std::uint64_t generation_size() const noexcept { return generation_size_; }
  std::size_t segment_count() const noexcept { return segments_.size(); }
  // The bits of its segments that hold no slice: free columns and the tables' rounding (part of memory_bytes).
  std::uint64_t free_segment_bits() const noexcept;

 private:
  struct Restored {};
  explicit TimeLimitedFilter(Restored) {}
  // The filter a metadata record describes, without slices; `ids` gets the slice ids it lists, newest first.
  static std::unique_ptr<TimeLimitedFilter> from_meta(const Record& meta, std::vector<std::uint64_t>& ids);
  std::string meta_record() const;

  static std::int64_t long_generation(std::int64_t ttl_ns, std::uint32_t l) noexcept;
  std::int64_t clamp(TimePoint now) const noexcept;
  bool expired(const detail::BitSlice& slice, std::int64_t now_ns) const noexcept;
  bool contains_at(const detail::KeyProbes& probes, std::int64_t now_ns) const;
  // A key's cells in one segment (ColumnSegment::locate), found once for the prefetch, the query and the
  // insertion. Valid while the layout is the one they were found in: no slice pushed or dropped, no segment
  // resized or freed since (every such change moves layout_version_ on).
  struct LocatedRows {
    const detail::ColumnSegment* segment = nullptr;
    std::uint64_t layout_version = 0;
    std::array<std::uint64_t, detail::kMaxProbes> start;
  };
  bool located_in(const detail::ColumnSegment& segment, const LocatedRows& located) const noexcept;
  void locate(const detail::ColumnSegment& segment, const detail::KeyProbes& probes, LocatedRows& located) const noexcept;
  // Leaves `located` (when given) holding the newest segment's cells. Without `newer`, any window's
  // position (0) may stand for the oldest one: enough to tell present from absent. With it, the oldest
  // window, and in *newer how many slices after it (younger) hold the key too, valid, in a row.
  std::int64_t oldest_window(const detail::KeyProbes& probes, std::int64_t now_ns, LocatedRows* located = nullptr,
                             std::uint32_t* newer = nullptr) const;
  // Whether valid_ and valid_by_phase_ hold at now_ns: the layout is the one they were computed for, and
  // `now` is still in the span over which no slice changes state (inline: the in-place path asks per key).
  bool valid_cache_current(std::int64_t now_ns) const noexcept {
    return valid_version_ == layout_version_ && now_ns > valid_after_ns_ && now_ns <= valid_until_ns_;
  }
  const std::vector<std::uint64_t>& valid_bits(std::int64_t now_ns) const;
  const std::vector<std::uint64_t>& recomputed_valid_bits(std::int64_t now_ns) const;
  const std::vector<detail::ColumnSlice*>& slices_by_position() const;
  void push_front_slice(std::uint64_t id, std::uint64_t bits, std::uint32_t hash_index, bool exact_size);
  // Rows of a segment opened for slices of `bits` bits, the newest segment having `newest_rows`.
  std::uint64_t segment_rows(std::uint64_t bits, std::uint64_t newest_rows, double ramp_headroom) const;
  // Whether a slice asked to be `bits` bits goes into the newest segment (its size then the segment's).
  bool shares_newest_segment(std::uint64_t bits, bool exact_size) const noexcept;
  void open_segment(std::uint64_t rows, std::uint32_t columns);
  void grow(detail::ColumnSegment& segment);
  void resize(detail::ColumnSegment& segment, std::uint32_t columns);
  void restore_slices(std::vector<detail::BitSlice> decoded, const std::vector<std::uint64_t>& set_bits);
  detail::ColumnSlice& place_restored(detail::BitSlice decoded, std::uint64_t set_bits);
  std::vector<detail::Words> slice_words(ImageScope scope) const;
  void prefetch_first_lines(const detail::KeyProbes& probes, LocatedRows& located) const noexcept;
  bool requests_cells_first() const noexcept;
  std::size_t batch_lookahead() const noexcept;
  // Sets *age (when age is not null) for a present key.
  bool test_and_insert_probes(const detail::KeyProbes& probes, TimePoint now, LocatedRows& located,
                              std::optional<Duration>* age = nullptr);
  Duration sighting_age(std::size_t oldest_window, std::size_t newer, std::int64_t now_ns) const;
  void insert(const detail::KeyProbes& probes, std::int64_t now_ns, const LocatedRows* located = nullptr);
  // The reset, early generation end or slide due before an insertion at now_ns; none when insertion_ready.
  bool insertion_ready(std::int64_t now_ns) const noexcept;
  void prepare_insertion(std::int64_t now_ns);
  // Sets the key's bits in the insertion region, its cells located in the one segment by phase.
  void set_region_bits(const std::uint64_t* cell_starts);
  // What an insertion counts once its bits are set: the region's insertions, the generation, the clock.
  void count_insertion(std::int64_t now_ns);
  bool inserts_in_place(std::int64_t now_ns) const noexcept;
  // What a slide changes of the valid cache, when it was current and the slide stays in one segment.
  struct SlideStart {
    bool valid_current = false;
    const detail::ColumnSegment* segment = nullptr;
    std::uint32_t columns = 0;  // the segment's columns() before the slide
    std::size_t slices = 0;
    std::uint32_t oldest_column = 0;
  };
  SlideStart slide_start(std::int64_t now_ns) const noexcept;
  void carry_valid_across(const SlideStart& start);
  bool test_and_insert_key(KeyHash key, TimePoint now, std::optional<Duration>* age);
  bool test_and_insert_in_place(const detail::KeyProbes& probes, std::int64_t now_ns, std::optional<Duration>* age);
  std::int64_t window_of_run(std::int64_t age) const noexcept;
  void reset(std::int64_t now_ns);
  void end_generation_early();
  void slide(std::int64_t now_ns);
  std::uint64_t target_generation_size() const;
  void retire_expired_tail(std::int64_t now_ns);
  void drop_oldest();
  std::uint64_t new_slice_capacity(std::uint64_t target_generation) const;
  std::uint64_t next_generation_size() const;
  std::uint64_t capacity_left(const detail::BitSlice& slice) const;
  std::uint64_t elements_in_window(std::int64_t now_ns) const;
  std::uint64_t memory_bytes() const noexcept;  // FilterStats::memory_bytes

  SlicedParams params_;
  std::int64_t ttl_ns_ = 0;
  double error_rate_ = 0;
  std::uint64_t expected_per_ttl_ = 0;
  bool refresh_on_duplicate_ = false;
  std::uint32_t level_ = 0;
  std::uint64_t max_slices_ = 0;
  std::uint64_t max_slice_bits_ = 0;
  std::uint64_t max_generation_size_ = 0;
  std::int64_t long_generation_ns_ = 0;  // a generation this old ends at its next insertion (not persisted)

  std::deque<detail::ColumnSlice> slices_;
  std::vector<std::unique_ptr<detail::ColumnSegment>> segments_;  // oldest first; slices go to the last
  std::uint64_t layout_version_ = 0;  // bumped whenever a slice's validity may change other than by time
  std::uint64_t generation_size_ = 0;       // g
  std::uint64_t generation_remaining_ = 0;  // the reference's `counter`
  std::uint64_t generation_inserted_ = 0;   // insertions so far in the current generation
  std::int64_t generation_start_ns_ = 0;
  std::int64_t last_insert_ns_;             // detail::kUnstamped before the first insertion
  std::int64_t latest_now_ns_;              // the clamp: time never runs backwards
  std::uint64_t next_slice_id_ = 1;
  std::vector<std::uint64_t> dropped_slice_ids_;  // since the last persisted checkpoint
  tlbf::AskSpread ask_spread_;  // the sizes asked at the slides (segment_rows), not persisted
  tlbf::RampTracker ramp_;      // whether they rise segment after segment, not persisted

  // Which slices are valid (oldest first), for every `now` in (valid_after_ns_, valid_until_ns_] at
  // layout_version_: slices expire about once per generation, so queries rarely recompute it.
  mutable std::vector<std::uint64_t> valid_;
  mutable std::uint64_t valid_version_ = ~std::uint64_t{0};
  mutable std::int64_t valid_after_ns_ = 0;
  mutable std::int64_t valid_until_ns_ = 0;
  mutable bool valid_has_expired_unstamped_ = false;
  // valid_ regrouped by the phase tables of the one segment (ColumnSegment::valid_by_phase), k words. When
  // only the time moved, the recompute flips the bits of the slices whose validity changed
  // (flip_changed_by_phase, against previous_valid_, the cache before).
  mutable std::vector<std::uint64_t> valid_by_phase_;
  mutable std::vector<std::uint64_t> previous_valid_;
  void flip_changed_by_phase() const;
  // slices_ by position (0 = newest) at by_position_version_: the insertion and the walk read them without
  // the deque.
  mutable std::vector<detail::ColumnSlice*> by_position_;
  mutable std::uint64_t by_position_version_ = ~std::uint64_t{0};
  // Where each slice's bits lie, by position, at walk_version_: what the walk over several segments reads.
  const std::vector<detail::SliceBits>& slices_for_walk() const;
  mutable std::vector<detail::SliceBits> walk_;
  mutable std::uint64_t walk_version_ = ~std::uint64_t{0};

  // The insertion region (the k newest slices) as the insertion reads it: each slice's cells and bit in a
  // cell, by position and (k consecutive columns have distinct phases) by phase, rebuilt when
  // the layout moves. An insertion only sets bits and counts into region_inserted_ instead of into k
  // slices; settle_region() adds the count to the slices (insertions, dirty) before anything reads those or
  // the region moves. The readers (stats, snapshot) count a slice's set_bits from its column with
  // count_set_bits(): the region's slices every time, a slice that left the region (it is then at position k,
  // marked uncounted) once, as its bits no longer change.
  struct RegionColumn {
    detail::ColumnSlice* slice = nullptr;
    std::uint64_t* cells = nullptr;
    detail::SliceBits place;  // where its bits lie (the insertion's cells without the slice's record)
  };
  const RegionColumn* region_columns() const;
  const RegionColumn* rebuilt_region() const;
  void settle_region() const;
  void count_set_bits() const;
  mutable std::array<RegionColumn, detail::kMaxProbes> region_{};
  mutable std::uint64_t region_version_ = ~std::uint64_t{0};
  mutable std::uint64_t region_inserted_ = 0;
  mutable std::array<std::uint32_t, detail::kMaxProbes> region_slot_by_phase_{};
};

}  // namespace bloomgate::filters
