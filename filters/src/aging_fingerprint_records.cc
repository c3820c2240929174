// File: aging_fingerprint_records.cc
//
// The aging-fingerprint filter's records (format.h's envelope, type kAgingFingerprint). Little-endian.
//
// Metadata payload:
//   u8 layout version (kLayoutVersion)
//   f64 error_rate | i64 ttl_nanos | u64 expected_per_ttl | u8 refresh_on_duplicate
//   f64 size_load | f64 grow_load | u32 max_kicks                       (AgingTuning)
//   u8 seen | i64 origin_nanos | i64 latest_nanos | u64 epoch
//   8 x u64 insertions per epoch, at epoch mod 8
//   u64 next_serial | u32 table count, then per table, oldest first:
//     u64 serial | u64 buckets | u8 fingerprint_bits | u8 retired | u64 retired_epoch | u64 sweep_cursor |
//     u8 stash entries, each u64 bucket | u32 fingerprint | u64 epoch
// Slice records: a table's words, kAgingWordsPerPage to a page, slice id = serial << 32 | page + 1.
#include <algorithm>
#include <string>
#include <vector>

#include "aging_fingerprint_filter.h"

namespace bloomgate::filters {
namespace {

using detail::AgingTable;
using detail::StashEntry;

constexpr std::uint8_t kLayoutVersion = 1;
constexpr std::uint32_t kMaxKicksStored = 1'000'000;

void require(bool condition, const std::string& what) {
  if (!condition) throw FormatError("aging_fingerprint filter metadata: " + what);
}

std::uint64_t slice_id(std::uint64_t serial, std::uint64_t page) { return (serial << 32) | (page + 1); }

struct StoredTable {
  std::uint64_t serial;
  std::uint64_t buckets;
  std::uint32_t fingerprint_bits;
  bool retired;
  std::uint64_t retired_epoch;
  std::uint64_t sweep_cursor;
  std::vector<StashEntry> stash;
};

StoredTable read_table(ByteReader& r) {
  StoredTable t{};
  t.serial = r.u64("table serial");
  t.buckets = r.u64("table buckets");
  t.fingerprint_bits = r.u8("fingerprint bits");
  const std::uint8_t retired = r.u8("retired flag");
  require(retired <= 1, "retired flag is neither 0 nor 1");
  t.retired = retired == 1;
  t.retired_epoch = r.u64("retired epoch");
  t.sweep_cursor = r.u64("sweep cursor");
  const std::uint8_t stash = r.u8("stash size");
  static_assert(detail::kStashLimit <= 255, "the stash size is stored in a u8");
  for (std::uint8_t i = 0; i < stash; ++i) {
    StashEntry e{};
    e.bucket = r.u64("stash bucket");
    e.fingerprint = r.u32("stash fingerprint");
    e.epoch = r.u64("stash epoch");
    t.stash.push_back(e);
  }
  return t;
}

void check_table_shape(const StoredTable& t, bool newest, std::uint64_t epoch) {
  require(t.fingerprint_bits >= detail::kMinFingerprintBits && t.fingerprint_bits <= detail::kMaxFingerprintBits,
          "fingerprint bits " + std::to_string(t.fingerprint_bits) + " outside 4..27");
  require(t.buckets >= 1, "a table without buckets");
  require(AgingTable::words_for(t.buckets, t.fingerprint_bits) <= kMaxSlicedCreationBits / 64,
          "table of " + std::to_string(t.buckets) + " buckets exceeds the memory cap");
  require(t.retired != newest, newest ? "the newest table is retired" : "an older table is not retired");
  require(!t.retired || t.retired_epoch <= epoch, "a table retired after the filter's present");
  require(t.retired || t.retired_epoch == 0, "retired epoch set on the newest table");
}

// Fetches and checks a table's last page before its memory is allocated, so a metadata record claiming a
// huge table fails on a missing or short record instead of an allocation.
void require_last_page(const StoredTable& t, const SliceViews& slices) {
  const std::uint64_t words = AgingTable::words_for(t.buckets, t.fingerprint_bits);
  const std::uint64_t pages = (words + detail::kAgingWordsPerPage - 1) / detail::kAgingWordsPerPage;
  const auto bytes = slices(slice_id(t.serial, pages - 1));
  if (!bytes) throw FormatError("aging_fingerprint filter: missing page " + std::to_string(pages) + " of table " + std::to_string(t.serial));
  const Record rec = decode_single_record(*bytes);
  const std::uint64_t last_words = words - (pages - 1) * detail::kAgingWordsPerPage;
  if (rec.kind != RecordKind::kSlice || rec.type != FilterType::kAgingFingerprint ||
      rec.slice_id != slice_id(t.serial, pages - 1) || rec.payload.size() != last_words * 8) {
    throw FormatError("aging_fingerprint filter: last page of table " + std::to_string(t.serial) + " does not match the metadata");
  }
}

void load_pages(AgingTable& table, std::uint64_t serial, const SliceViews& slices) {
  for (std::uint64_t p = 0; p < table.pages(); ++p) {
    const std::uint64_t id = slice_id(serial, p);
    const auto bytes = slices(id);
    if (!bytes) throw FormatError("aging_fingerprint filter: missing page " + std::to_string(p + 1) + " of table " + std::to_string(serial));
    const Record rec = decode_single_record(*bytes);
    if (rec.kind != RecordKind::kSlice || rec.type != FilterType::kAgingFingerprint || rec.slice_id != id) {
      throw FormatError("aging_fingerprint filter: page record " + std::to_string(id) + " does not belong to this filter");
    }
    table.load_page(p, rec.payload);
  }
}

}  // namespace

std::string AgingFingerprintFilter::meta_payload() const {
  ByteWriter w;
  w.u8(kLayoutVersion);
  w.f64(settings_.error_rate);
  w.i64(settings_.ttl.count());
  w.u64(settings_.expected_per_ttl);
  w.u8(settings_.refresh_on_duplicate ? 1 : 0);
  w.f64(settings_.tuning.size_load);
  w.f64(settings_.tuning.grow_load);
  w.u32(settings_.tuning.max_kicks);
  w.u8(seen_ ? 1 : 0);
  w.i64(to_epoch_nanos(origin_));
  w.i64(to_epoch_nanos(latest_));
  w.u64(epoch_);
  for (std::uint64_t count : inserts_) w.u64(count);
  w.u64(next_serial_);
  w.u32(static_cast<std::uint32_t>(tables_.size()));
  for (const Table& t : tables_) {
    w.u64(t.serial);
    w.u64(t.cells.buckets());
    w.u8(static_cast<std::uint8_t>(t.cells.fingerprint_bits()));
    w.u8(t.retired ? 1 : 0);
    w.u64(t.retired.value_or(0));
    w.u64(t.cells.sweep_cursor());
    w.u8(static_cast<std::uint8_t>(t.cells.stash().size()));
    for (const StashEntry& e : t.cells.stash()) {
      w.u64(e.bucket);
      w.u32(e.fingerprint);
      w.u64(e.epoch);
    }
  }
  return w.take();
}

FilterImage AgingFingerprintFilter::image(ImageScope scope) const {
  FilterImage image;
  image.meta = encode_record(RecordKind::kMeta, FilterType::kAgingFingerprint, 0, meta_payload());
  for (const Table& t : tables_) {
    for (std::uint64_t p = 0; p < t.cells.pages(); ++p) {
      if (scope == ImageScope::kChangedSinceLastPersist && !t.cells.page_dirty(p)) continue;
      const std::uint64_t id = slice_id(t.serial, p);
      image.slices.push_back({id, encode_record(RecordKind::kSlice, FilterType::kAgingFingerprint, id, t.cells.page_payload(p))});
    }
  }
  image.dropped_slice_ids = dropped_slice_ids_;
  return image;
}

void AgingFingerprintFilter::mark_persisted() {
  for (Table& t : tables_) t.cells.mark_clean();
  dropped_slice_ids_.clear();
}

std::unique_ptr<Filter> AgingFingerprintFilter::restore(const Record& meta, const SliceViews& slices) {
  expect_meta_record(meta, FilterType::kAgingFingerprint);
  ByteReader r(meta.payload);
  require(r.u8("layout version") == kLayoutVersion, "unknown layout version");
  Settings s{};
  s.error_rate = r.f64("error_rate");
  s.ttl = Duration{r.i64("ttl")};
  s.expected_per_ttl = r.u64("expected_per_ttl");
  const std::uint8_t refresh = r.u8("refresh_on_duplicate");
  s.tuning.size_load = r.f64("size_load");
  s.tuning.grow_load = r.f64("grow_load");
  s.tuning.max_kicks = r.u32("max_kicks");
  require(s.error_rate >= 1e-12 && s.error_rate < 1.0, "error_rate outside [1e-12, 1)");
  require(s.ttl.count() > 0, "ttl is not positive");
  require(s.expected_per_ttl >= 1, "expected_per_ttl is 0");
  require(refresh <= 1, "refresh_on_duplicate is neither 0 nor 1");
  s.refresh_on_duplicate = refresh == 1;
  require(s.tuning.size_load > 0 && s.tuning.size_load <= s.tuning.grow_load && s.tuning.grow_load < 1,
          "loads outside 0 < size_load <= grow_load < 1");
  require(s.tuning.max_kicks <= kMaxKicksStored, "max_kicks above 1000000");

  std::unique_ptr<AgingFingerprintFilter> filter(new AgingFingerprintFilter(s));
  const std::uint8_t seen = r.u8("seen");
  require(seen <= 1, "seen is neither 0 nor 1");
  filter->seen_ = seen == 1;
  filter->origin_ = from_epoch_nanos(r.i64("origin"));
  filter->latest_ = from_epoch_nanos(r.i64("latest"));
  filter->epoch_ = r.u64("epoch");
  for (std::uint64_t& count : filter->inserts_) count = r.u64("insertions per epoch");
  filter->next_serial_ = r.u64("next serial");
  if (filter->seen_) {
    require(filter->latest_ >= filter->origin_ && filter->epoch_at(filter->latest_) == filter->epoch_,
            "epoch does not match the clock");
  } else {
    require(filter->epoch_ == detail::kFirstAgingEpoch && to_epoch_nanos(filter->origin_) == 0 &&
                to_epoch_nanos(filter->latest_) == 0,
            "clock set on a filter that saw no key");
  }
  const std::uint32_t count = r.u32("table count");
  require(count >= 1 && count <= detail::kMaxAgingTables, "table count " + std::to_string(count) + " outside 1..24");
  std::vector<StoredTable> stored;
  for (std::uint32_t i = 0; i < count; ++i) {
    stored.push_back(read_table(r));
    check_table_shape(stored.back(), i + 1 == count, filter->epoch_);
    require(stored.back().serial >= 1 && stored.back().serial < filter->next_serial_ &&
                (i == 0 || stored[i - 1].serial < stored.back().serial),
            "table serials out of order");
  }
  r.expect_end("aging_fingerprint filter metadata");
  for (const StoredTable& t : stored) require_last_page(t, slices);
  for (StoredTable& t : stored) {
    AgingTable cells(t.buckets, t.fingerprint_bits, 0);
    load_pages(cells, t.serial, slices);
    cells.restore_state(t.sweep_cursor, std::move(t.stash), filter->epoch_);
    filter->tables_.push_back(Table{std::move(cells), t.serial, t.retired ? std::optional(t.retired_epoch) : std::nullopt});
  }
  return filter;
}

}  // namespace bloomgate::filters
