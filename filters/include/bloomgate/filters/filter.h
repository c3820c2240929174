// File: filter.h
//
// The shape every filter shares, so the service holds one filter per input partition without knowing
// which kind it is.
//
// Semantics: test_and_insert(key, now) answers "was this key seen within the filter's window?" and
// records the sighting. Filters without a notion of time (bloom, scalable, spectral) treat the window as
// unbounded. No method reads a clock; `now` is always the caller's. Time never runs backwards inside a
// filter: a `now` earlier than the latest one seen is treated as that latest one.
//
// Thread-safety: none. A filter belongs to one partition worker; use one filter per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bloomgate/filters/format.h"
#include "bloomgate/filters/hash.h"
#include "bloomgate/filters/time.h"

namespace bloomgate::filters {

struct SliceStats {
  std::uint64_t id = 0;
  std::uint64_t bits = 0;
  std::uint64_t insertions = 0;
  double fill_ratio = 0;  // set bits (or non-zero cells) / bits (or cells), measured
  bool expired = false;
  std::optional<TimePoint> stamp;  // time-based slices: time of the last insertion it will receive
};

struct FilterStats {
  FilterType type = FilterType::kBloom;
  std::uint32_t k = 0;  // probes per key (time-limited and age-partitioned: slices written per insert)
  std::uint32_t l = 0;  // extra aged slices (time-limited and age-partitioned only)
  std::uint64_t slices = 0;
  std::uint64_t bits = 0;  // the filter's cells alone, in bits: no padding, no bookkeeping
  // Every byte the filter holds: the filter object, its cells, their padding (the time-limited filter's free
  // columns and line rounding, column_segment.h), and everything else it allocates: page marks, slice and
  // table objects, stashes, caches, vectors at their capacity.
  std::uint64_t memory_bytes = 0;
  std::uint64_t elements = 0;  // distinct insertions the filter still holds within its window
  double bits_per_element = 0;       // memory_bytes * 8 / elements: the whole memory per key
  double cell_bits_per_element = 0;  // bits / elements: the cells alone per key (a lower bound of the above)
  double target_fpr = 0;
  double estimated_fpr = 0;
  // Time-based filters: age of the oldest slice still valid, against the configured TTL.
  std::optional<Duration> effective_window;
  std::vector<SliceStats> slice_stats;  // in age order, newest first
};

// Sets bits_per_element and cell_bits_per_element from memory_bytes, bits and elements (0 without elements).
inline void set_per_element_figures(FilterStats& stats) noexcept {
  const auto per_element = [&](double bits) {
    return stats.elements == 0 ? 0.0 : bits / static_cast<double>(stats.elements);
  };
  stats.bits_per_element = per_element(static_cast<double>(stats.memory_bytes) * 8);
  stats.cell_bits_per_element = per_element(static_cast<double>(stats.bits));
}

// What a checkpoint writes: the metadata record, the slice records that changed since the last
// mark_persisted(), and the ids of slices that no longer belong to the filter and can be deleted.
struct FilterImage {
  std::string meta;
  struct Slice {
    std::uint64_t id;
    std::string record;
  };
  std::vector<Slice> slices;
  std::vector<std::uint64_t> dropped_slice_ids;

  // The bytes of its records: the metadata and the slices it writes.
  std::uint64_t record_bytes() const noexcept {
    std::uint64_t bytes = meta.size();
    for (const Slice& slice : slices) bytes += slice.record.size();
    return bytes;
  }
};

// A filter's memory as it lies, for a restore that skips rebuilding it (docs/state.md, "Snapshots at a clean
// stop"): a header record bound to one metadata record (kind kSnapshot) and the memory cut into bands of at
// most kSnapshotBandBytes (kind kSnapshotBand, numbered from 0 in the envelope's slice id field), each
// naming its header. Written beside the slice records, never instead of them: the slices stay the
// checkpoint, and a snapshot that does not match the metadata record it is restored with is ignored.
struct FilterSnapshot {
  std::string header;
  std::vector<std::string> bands;
};

// A band's words: a store reads them one band (one value) at a time, and a smaller band would mean more
// lookups; larger ones left each read in fresh memory of malloc's (4 KiB faults per read).
inline constexpr std::size_t kSnapshotBandBytes = 256 * 1024;

// What test_and_insert_with_age answers: whether the key was present and, for a present key of a filter
// that keeps time, how long before `now` the sighting that matched was recorded.
struct Sighting {
  bool present = false;
  std::optional<Duration> age;
};

enum class ImageScope { kChangedSinceLastPersist, kFull };

// Looks up a slice record by id when restoring; returns nullopt when the store does not have it. Each
// record is a copy; SliceViews below is the same without one.
using SliceLookup = std::function<std::optional<std::string>(std::uint64_t slice_id)>;

// Looks up a slice record by id when restoring, without copying it: nullopt when the store does not have
// it, else a view of the stored bytes. Lifetime: a view must stay valid until the next call of the lookup
// (or until the restore returns, whichever comes first); every restore verifies and copies a record into
// the filter before it asks for the next one, so a store can hand out views of a buffer it reuses, such as
// the current block of a database iterator. Filters whose slices are numbered in age order (time_limited)
// ask in ascending id order, so a store keeping its records sorted by id can answer them all with one
// forward scan; other orders must work too (a seek per lookup). The constructor is explicit, so a
// SliceLookup or a lambda returning copies never turns into views of temporaries by accident.
class SliceViews {
 public:
  using Find = std::function<std::optional<std::string_view>(std::uint64_t slice_id)>;
  explicit SliceViews(Find find) : find_(std::move(find)) {}
  std::optional<std::string_view> operator()(std::uint64_t slice_id) const { return find_(slice_id); }

  // Views over a copying lookup: each view is of the copy its last call returned.
  static SliceViews of(SliceLookup lookup);

 private:
  Find find_;
};

class Filter {
 public:
  virtual ~Filter() = default;
  Filter() = default;
  Filter(const Filter&) = delete;
  Filter& operator=(const Filter&) = delete;

  virtual FilterType type() const noexcept = 0;

  // Returns true when the key was present (a duplicate within the window); records the sighting.
  // With refresh_on_duplicate a duplicate is recorded again, extending its lifetime.
  virtual bool test_and_insert(KeyHash key, TimePoint now) = 0;

  // test_and_insert of keys[i] at now[i] for every i in order, each answer written to present[i]: the same
  // answers and the same final state as one call per key. A filter overrides it to overlap the cache misses
  // of neighbouring keys. The three spans must have the same size.
  virtual void test_and_insert_batch(std::span<const KeyHash> keys, std::span<const TimePoint> now,
                                     std::span<bool> present);

  // test_and_insert that also says how old the matching sighting is. Filters without timestamps (all but
  // the time-limited one) leave the age empty.
  virtual Sighting test_and_insert_with_age(KeyHash key, TimePoint now) { return {test_and_insert(key, now), {}}; }

  // Read-only membership test.
  virtual bool contains(KeyHash key, TimePoint now) const = 0;

  virtual FilterStats stats(TimePoint now) const = 0;

  // The records a checkpoint needs; see FilterImage. Does not change the filter.
  virtual FilterImage image(ImageScope scope) const = 0;

  // Called once the records of the last image() are durable: clears the change tracking.
  virtual void mark_persisted() = 0;

  // The snapshot of the filter as it is now, bound to the metadata record image() writes now, or nullopt for
  // a filter that has none: only a time-limited filter whose slices are all columns of one segment of 2^16
  // rows or more, the one kind whose restore from slices rebuilds a layout (transposes) rather than copying
  // words. Does not change the filter.
  virtual std::optional<FilterSnapshot> snapshot() const { return std::nullopt; }

  bool test_and_insert(std::string_view key, TimePoint now) { return test_and_insert(hash_key(key), now); }
  bool contains(std::string_view key, TimePoint now) const { return contains(hash_key(key), now); }
  Sighting test_and_insert_with_age(std::string_view key, TimePoint now) {
    return test_and_insert_with_age(hash_key(key), now);
  }
};

// The whole filter as one blob: its metadata record followed by every slice record.
std::string serialize(const Filter& filter);

// Reads a blob written by serialize(). Throws FormatError on anything that is not a valid filter.
std::unique_ptr<Filter> deserialize(std::string_view blob);

// Rebuilds a filter from its metadata record and a store of slice records (a checkpoint).
// Throws FormatError when the metadata or a slice is missing, corrupt or inconsistent. Every record's
// envelope, checksum included (format.h), is verified once, here: a store need not verify it first.
std::unique_ptr<Filter> restore(std::string_view meta_record, const SliceLookup& lookup);

// The same over views of the stored records: nothing is copied but into the filter's own memory (each
// slice's words are copied once, straight from the view, after its checksum is verified).
std::unique_ptr<Filter> restore(std::string_view meta_record, const SliceViews& slices);

// Rebuilds a filter from its metadata record and a snapshot (Filter::snapshot): `bands` looks the bands up
// by number, as views with SliceViews' lifetime. Returns nullptr, having read no band, when the snapshot was
// taken with another metadata record (the filter changed after it): the caller then restores from the
// slices. Throws FormatError when a record is missing, corrupt or inconsistent; the slices are then still
// the way to restore, the snapshot being only a copy.
std::unique_ptr<Filter> restore_snapshot(std::string_view meta_record, std::string_view header, const SliceViews& bands);

}  // namespace bloomgate::filters
