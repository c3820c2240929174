// The time-limited filter's records (filter.h): the metadata record, one record per slice in the slice's
// own words (gathered from and scattered into the segments' phase tables), and the restore from them.
// Snapshots are in time_limited_snapshot.cc.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "bit_slice.h"
#include "time_limited_filter.h"
#include "column_restore.h"
#include "popcount.h"

namespace bloomgate::filters {
namespace {

using detail::BitSlice;
using detail::ColumnSegment;
using detail::ColumnSlice;

constexpr std::uint64_t kMaxSlicesOnDisk = 1ULL << 20;

// Frees a decoded slice's words once the segment holds its cells. Assigning `{}` would only clear them and
// keep their memory (the arena's pages stay in use), doubling what a restored filter holds.
void release(detail::Words& words) noexcept { detail::Words().swap(words); }

}  // namespace

FilterImage TimeLimitedFilter::image(ImageScope scope) const {
  settle_region();
  FilterImage out;
  out.meta = meta_record();
  std::vector<detail::Words> words = slice_words(scope);
  for (std::size_t p = 0; p < slices_.size(); ++p) {
    if (scope != ImageScope::kFull && !slices_[p].dirty) continue;
    BitSlice record = slices_[p];
    record.words = std::move(words[p]);
    out.slices.push_back({record.id, record.encode(type())});
  }
  out.dropped_slice_ids = dropped_slice_ids_;
  return out;
}

std::string TimeLimitedFilter::meta_record() const {
  ByteWriter w;
  w.u32(params_.k);
  w.u32(params_.l);
  w.u32(level_);
  w.i64(ttl_ns_);
  w.f64(error_rate_);
  w.u64(expected_per_ttl_);
  w.u8(refresh_on_duplicate_ ? 1 : 0);
  w.u64(max_slices_);
  w.u64(max_slice_bits_);
  w.u64(max_generation_size_);
  w.u64(generation_size_);
  w.u64(generation_remaining_);
  w.u64(generation_inserted_);
  w.i64(generation_start_ns_);
  w.i64(last_insert_ns_);
  w.i64(latest_now_ns_);
  w.u64(next_slice_id_);
  w.u64(slices_.size());
  for (const BitSlice& slice : slices_) w.u64(slice.id);
  return encode_record(RecordKind::kMeta, type(), 0, w.take());
}

// The words of the slices an image writes (by position), gathered one segment at a time.
std::vector<detail::Words> TimeLimitedFilter::slice_words(ImageScope scope) const {
  std::vector<detail::Words> words(slices_.size());
  for (const auto& segment : segments_) {
    std::vector<std::size_t> positions;
    std::vector<std::uint32_t> columns;
    for (std::size_t p = 0; p < slices_.size(); ++p) {
      if (slices_[p].segment != segment.get() || (scope != ImageScope::kFull && !slices_[p].dirty)) continue;
      positions.push_back(p);
      columns.push_back(slices_[p].column);
    }
    if (columns.empty()) continue;
    auto gathered = segment->gather(columns);
    for (std::size_t i = 0; i < positions.size(); ++i) words[positions[i]] = std::move(gathered[i]);
  }
  return words;
}

void TimeLimitedFilter::mark_persisted() {
  for (ColumnSlice& slice : slices_) slice.dirty = false;
  dropped_slice_ids_.clear();
}

std::unique_ptr<TimeLimitedFilter> TimeLimitedFilter::from_meta(const Record& meta, std::vector<std::uint64_t>& ids) {
  expect_meta_record(meta, FilterType::kTimeLimited);
  ByteReader r(meta.payload);
  std::unique_ptr<TimeLimitedFilter> f(new TimeLimitedFilter(Restored{}));
  f->params_.k = r.u32("k");
  f->params_.l = r.u32("l");
  if (f->params_.k == 0 || f->params_.k > detail::kMaxProbes || f->params_.l == 0 || f->params_.l > 100000) {
    throw FormatError("time-limited filter has impossible (k, l) = (" + std::to_string(f->params_.k) + ", " +
                      std::to_string(f->params_.l) + ")");
  }
  f->level_ = r.u32("level");
  f->ttl_ns_ = r.i64("ttl");
  if (f->ttl_ns_ <= 0) throw FormatError("time-limited filter has a non-positive TTL");
  f->long_generation_ns_ = long_generation(f->ttl_ns_, f->params_.l);
  f->error_rate_ = r.f64("error rate");
  f->expected_per_ttl_ = r.u64("expected per ttl");
  f->refresh_on_duplicate_ = r.u8("refresh on duplicate") != 0;
  f->max_slices_ = r.u64("max slices");
  f->max_slice_bits_ = r.u64("max slice bits");
  f->max_generation_size_ = r.u64("max generation size");
  f->generation_size_ = r.u64("generation size");
  f->generation_remaining_ = r.u64("generation remaining");
  f->generation_inserted_ = r.u64("generation inserted");
  f->generation_start_ns_ = r.i64("generation start");
  f->last_insert_ns_ = r.i64("last insert");
  f->latest_now_ns_ = r.i64("latest now");
  f->next_slice_id_ = r.u64("next slice id");
  const std::uint64_t count = r.u64("slice count");
  if (count < f->params_.k + f->params_.l || count > kMaxSlicesOnDisk || count * 8 != r.remaining()) {
    throw FormatError("time-limited filter lists an impossible number of slices: " + std::to_string(count));
  }
  ids.resize(count);
  for (std::uint64_t& id : ids) id = r.u64("slice id");
  r.expect_end("time-limited filter metadata");
  return f;
}

std::unique_ptr<Filter> TimeLimitedFilter::restore(const Record& meta, const SliceViews& lookup) {
  std::vector<std::uint64_t> ids;
  std::unique_ptr<TimeLimitedFilter> f = from_meta(meta, ids);
  // The slices are listed newest first; they are looked up in ascending id order, the order a store sorted
  // by id keeps them in, so that it can answer with one forward scan (SliceViews). Their words are decoded
  // into one arena (slice_memory.h) and scattered into the segment while later records are read
  // (column_restore.h), or, when the slices are not one segment's, by restore_slices afterwards.
  std::vector<std::size_t> order(ids.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ids[a] < ids[b]; });
  std::vector<BitSlice> decoded(ids.size());  // newest first
  std::vector<std::uint64_t> set_bits(ids.size());
  std::shared_ptr<detail::SliceArena> arena;  // sized at the first record (a record is larger than its words)
  detail::ColumnRestore columns(ids.size(), f->params_.k);  // after `decoded`: stopped before its words go
  for (const std::size_t i : order) {
    const auto record = lookup(ids[i]);
    if (!record) throw FormatError("time-limited filter slice " + std::to_string(ids[i]) + " is missing");
    if (!arena) arena = detail::SliceArena::create_for(ids.size(), record->size());
    decoded[i] = BitSlice::decode(*record, FilterType::kTimeLimited, ids[i], f->params_.k, arena);
    set_bits[i] = detail::popcount_words(decoded[i].words.data(), decoded[i].words.size());  // still in cache
    columns.add(ids.size() - 1 - i, decoded[i]);
  }
  if (auto segment = columns.finish()) {
    f->segments_.push_back(std::move(segment));
    for (std::size_t i = decoded.size(); i-- > 0;) release(f->place_restored(std::move(decoded[i]), set_bits[i]).words);
  } else {
    f->restore_slices(std::move(decoded), set_bits);
  }
  return f;
}

// The slice as the newest column of the newest segment, which the restore opened for it with its size.
detail::ColumnSlice& TimeLimitedFilter::place_restored(BitSlice decoded, std::uint64_t set_bits) {
  push_front_slice(decoded.id, decoded.bits, decoded.hash_index, true);
  ColumnSlice& placed = slices_.front();
  static_cast<BitSlice&>(placed) = std::move(decoded);
  placed.set_bits = set_bits;
  return placed;
}

// Scatters the slices' words into segments, oldest first; each run of equal sizes becomes one segment with
// room for its slices (free columns are not in the records, so a restored filter may take less memory than
// the one imaged).
void TimeLimitedFilter::restore_slices(std::vector<BitSlice> decoded, const std::vector<std::uint64_t>& set_bits) {
  for (std::size_t end = decoded.size(); end > 0;) {
    std::size_t begin = end - 1;
    const std::uint64_t bits = decoded[end - 1].bits;
    while (begin > 0 && decoded[begin - 1].bits == bits && end - begin < ColumnSegment::max_slices(params_.k)) --begin;
    open_segment(decoded[end - 1].bits, static_cast<std::uint32_t>(end - begin));
    std::vector<std::uint32_t> columns;
    std::vector<const std::uint64_t*> words;
    for (std::size_t i = end; i-- > begin;) {
      const ColumnSlice& placed = place_restored(std::move(decoded[i]), set_bits[i]);
      columns.push_back(placed.column);
      words.push_back(placed.words.data());
    }
    segments_.back()->scatter(columns, words);
    for (std::size_t i = begin; i < end; ++i) release(slices_[i - begin].words);
    end = begin;
  }
}

}  // namespace bloomgate::filters
