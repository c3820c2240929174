// File: aging_fingerprint_filter.h
//
// The aging-fingerprint filter: a time-window filter that keeps one short fingerprint and a 3-bit epoch per
// key in a cuckoo table (aging_table.h), so a query reads two buckets where a Bloom filter reads k cells
// (docs/decisions/aging-fingerprint.md has the design, its candidates and their figures).
//
// Time. Epochs last ceil(TTL / 7); the first `now` the filter sees starts epoch 8 (so epoch arithmetic
// never goes below zero), and a `now` earlier than the latest one counts as the latest. A key written in
// epoch e is present through epoch e + 7: at least TTL after the write, at most TTL x 8/7 (the slack is one
// epoch, TTL/7). With refresh_on_duplicate a duplicate rewrites its epoch, so "the write" is the last sighting.
//
// Tables. Insertions go to the newest table. When it is full (its load reaches the grow load, or an
// insertion's kicks end in a full stash) a larger table follows: twice the slots, or more when the insertion
// rate of the current epoch asks for more. The full table takes no more insertions, queries test every
// table, and a retired table is dropped once its last slot has expired (8 epochs). At an epoch boundary a
// table that is alone and was sized for another rate (more than twice the slots the last 7 epochs need,
// or longer fingerprints than the target needs) is followed the same way by one sized for the measured
// rate. So a burst grows the filter and a quiet stream shrinks it, and a live fingerprint is never evicted.
//
// False positives. A table of f-bit fingerprints at load a answers a new key present with probability
// about 8a / 2^f (two buckets of four slots). The first table's f is the smallest for which that is at most
// the target at the grow load; a table opened while n others still hold live slots gets 2n more bits, so
// the rate summed over the tables stays within 4/3 of the target while full ones drain.
//
// Sweep. Each test_and_insert sweeps one region (128 buckets) of every table, and a write sweeps its own
// region first, so expired slots are reclaimed incrementally, never by a pass over a whole table.
//
// Persistence (aging_fingerprint_records.cc): a metadata record with the clock, the rate counters and each
// table's shape, cursor and stash, and each table's words in pages (slice id = table serial << 32 | page + 1);
// a checkpoint writes the pages written since the last one.
//
// Thread-safety: none; one filter per partition worker.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "aging_table.h"
#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"

namespace bloomgate::filters {

// The design's knobs, fixed for the product (kAgingTuning) and varied only by the design measurement
// (bench/aging_candidates.cc).
struct AgingTuning {
  double size_load = 0.95;        // a table is sized for its peak of live keys at this load
  double grow_load = 0.97;        // a table at this load takes no more insertions
  std::uint32_t max_kicks = 500;  // moves of one insertion before the fingerprint in hand goes to the stash
  friend bool operator==(const AgingTuning&, const AgingTuning&) = default;
};
inline constexpr AgingTuning kAgingTuning{};

class AgingFingerprintFilter final : public Filter {
 public:
  explicit AgingFingerprintFilter(const FilterOptions& options, const AgingTuning& tuning = kAgingTuning);
  ~AgingFingerprintFilter() override;

  // Rebuilds a filter from its metadata record and its page records; throws FormatError naming what is
  // malformed, inconsistent or missing.
  static std::unique_ptr<Filter> restore(const Record& meta, const SliceViews& slices);

  FilterType type() const noexcept override { return FilterType::kAgingFingerprint; }
  bool test_and_insert(KeyHash key, TimePoint now) override;
  // Requests the buckets of the key a few places ahead while answering the current one.
  void test_and_insert_batch(std::span<const KeyHash> keys, std::span<const TimePoint> now,
                             std::span<bool> present) override;
  // The age is the time since the start of the epoch the matching fingerprint was written in: at most one
  // epoch (TTL/7) more than the true age.
  Sighting test_and_insert_with_age(KeyHash key, TimePoint now) override;
  bool contains(KeyHash key, TimePoint now) const override;
  FilterStats stats(TimePoint now) const override;
  FilterImage image(ImageScope scope) const override;
  void mark_persisted() override;

  using Filter::contains, Filter::test_and_insert, Filter::test_and_insert_with_age;

  std::size_t tables() const noexcept { return tables_.size(); }
  std::uint64_t memory_bytes() const noexcept;
  Duration epoch_length() const noexcept { return Duration{static_cast<std::int64_t>(epoch_nanos_)}; }

 private:
  struct Table {
    detail::AgingTable cells;
    std::uint64_t serial;
    std::optional<std::uint64_t> retired;  // the epoch it took its last insertion in
  };
  struct Settings {
    double error_rate;
    Duration ttl;
    std::uint64_t expected_per_ttl;
    bool refresh_on_duplicate;
    AgingTuning tuning;
  };
  explicit AgingFingerprintFilter(const Settings& settings);
  std::string meta_payload() const;

  std::uint64_t epoch_at(TimePoint clamped) const noexcept;
  TimePoint epoch_start(std::uint64_t epoch) const noexcept;
  void advance(TimePoint now);
  void drop_drained_tables();
  void drop_table(std::size_t index);
  std::uint64_t first_table_slots() const noexcept;
  struct Found {
    std::size_t table;
    detail::Match match;
  };
  std::optional<Found> find(KeyHash key, std::uint64_t epoch) const;
  Sighting test_and_insert_at(KeyHash key, TimePoint now);
  void insert_new(KeyHash key);
  void open_table(std::uint64_t slots, std::uint32_t fingerprint_bits);
  void grow();
  void rescale_if_idle_sized();
  std::uint64_t completed_epochs_inserts() const noexcept;
  std::uint64_t slots_for_peak(double peak_keys) const noexcept;
  void prefetch(KeyHash key) const noexcept;

  Settings settings_;
  std::uint32_t base_fingerprint_bits_;
  std::uint64_t epoch_nanos_;
  std::vector<Table> tables_;  // oldest first; the last takes the insertions
  std::uint64_t next_serial_ = 1;
  bool seen_ = false;
  TimePoint origin_{};
  TimePoint latest_{};
  std::uint64_t epoch_ = detail::kFirstAgingEpoch;
  std::array<std::uint64_t, 8> inserts_{};  // writes (insertions and refreshes) per epoch, at epoch mod 8
  std::vector<std::uint64_t> dropped_slice_ids_;  // pages of dropped tables, until mark_persisted
};

// The fingerprint bits of a first table for `error_rate` at the grow load: 8 x grow_load / (2^f - 1) <= it.
std::uint32_t aging_fingerprint_bits(double error_rate, const AgingTuning& tuning = kAgingTuning);

}  // namespace bloomgate::filters
