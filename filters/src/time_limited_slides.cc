// File: filters/src/time_limited_slides.cc
//
// TimeLimitedFilter's slides and the segments they fill (docs/filters.md, "Insertion, generations and
// slides", "Segments"): the generation's end, the rate estimate and the new slice's size, the retirement of
// expired slices, and where a new slice's column goes (the newest segment, grown, or a new one).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "bloomgate/filters/fpr.h"
#include "time_limited_filter.h"
#include "tlbf_sizing.h"

#include "tlbf_time.h"

namespace bloomgate::filters {
namespace {

using detail::BitSlice;
using detail::ColumnSegment;
using detail::ColumnSlice;
using detail::elapsed;
using detail::kUnstamped;

// Completed generations the target generation's rate estimate averages over: at least kRateWindow, and
// more while they hold fewer than kMinRateInsertions insertions and span at most T / kMaxRateSpanPerTtl.
// Small filters' generations are small, and a rate counted over 8 of them is noisy enough to make the slice
// sizes jump past the segment's and open segments (docs/decisions/tlbf-phase-tables.md, "Sizes").
constexpr std::size_t kRateWindow = 8;
constexpr double kMinRateInsertions = 1024;
constexpr std::int64_t kMaxRateSpanPerTtl = 4;
// The target generation grows at most this much per slide, so a measured duration of ~0 (events sharing one
// timestamp) cannot size huge slices, while a 100x rate jump is still followed within four rounds of k
// generations (docs/filters.md, "Decisions").
constexpr double kMaxGenerationGrowth = 4;

}  // namespace

// The generation has lasted 2T/l (a rate drop): close it as if it were full, stamped with its last insertion.
void TimeLimitedFilter::end_generation_early() {
  BitSlice& leaving = slices_[params_.k - 1];
  leaving.stamp_ns = last_insert_ns_;
  leaving.generation_insertions = generation_inserted_;
  leaving.dirty = true;
  generation_remaining_ = 0;
  ++layout_version_;
}

// The slide (docs/filters.md, "Insertion, generations and slides"): measure the rate, retire the expired
// tail, shift or grow, install a new slice sized for the target rate, then size the next generation.
void TimeLimitedFilter::slide(std::int64_t now_ns) {
  const SlideStart start = slide_start(now_ns);
  settle_region();
  const std::uint64_t target = target_generation_size();
  retire_expired_tail(now_ns);
  const BitSlice& oldest = slices_.back();
  const bool keep_oldest = !expired(oldest, now_ns) && oldest.insertions > 0 && slices_.size() < max_slices_;
  if (!keep_oldest) drop_oldest();
  const std::uint64_t bits = tlbf::slice_bits(new_slice_capacity(target), params_.k, max_slice_bits_);
  const std::uint32_t index = (slices_.front().hash_index + params_.k - 1) % params_.k;
  ask_spread_.record(bits);
  push_front_slice(next_slice_id_++, bits, index, false);
  ramp_.asked(bits);
  generation_size_ = generation_remaining_ = next_generation_size();
  generation_inserted_ = 0;
  generation_start_ns_ = now_ns;
  carry_valid_across(start);
}

// The target generation (docs/filters.md): ceil(rate * T / l) + 1, the rate measured over the completed
// generations of kRateWindow and the constants above, read off the slices' stamps and generation sizes (a
// duration of at least 1 ns). A window of generations keeps the slice count at k+l under bursty arrivals,
// where the generation that just ended alone would not (docs/filters.md, "Decisions").
std::uint64_t TimeLimitedFilter::target_generation_size() const {
  const std::size_t newest = params_.k - 1;
  std::size_t oldest = newest;
  double inserted = 0;
  const auto counted_enough = [&](std::size_t next) {
    if (oldest - newest < kRateWindow) return false;
    return inserted >= kMinRateInsertions ||
           elapsed(slices_[newest].stamp_ns, slices_[next].stamp_ns) > ttl_ns_ / kMaxRateSpanPerTtl;
  };
  while (oldest + 1 < slices_.size() && slices_[oldest + 1].stamp_ns != kUnstamped && !counted_enough(oldest + 1)) {
    inserted += static_cast<double>(slices_[oldest].generation_insertions);
    ++oldest;
  }
  return tlbf::target_generation(inserted, elapsed(slices_[newest].stamp_ns, slices_[oldest].stamp_ns),
                                static_cast<double>(ttl_ns_) / params_.l,
                                kMaxGenerationGrowth * static_cast<double>(generation_size_), max_generation_size_);
}

void TimeLimitedFilter::retire_expired_tail(std::int64_t now_ns) {
  while (slices_.size() > params_.k + params_.l && expired(slices_.back(), now_ns)) drop_oldest();
}

void TimeLimitedFilter::drop_oldest() {
  dropped_slice_ids_.push_back(slices_.back().id);
  ColumnSegment* segment = slices_.back().segment;
  segment->pop();
  slices_.pop_back();
  if (segment->live() == 0 && segment != segments_.back().get()) segments_.erase(segments_.begin());
  ++layout_version_;
}

// The asked sizes' observed spread once there is one, else (a new or restored filter) the Poisson noise of
// the rate estimate (docs/filters.md, "Segments").
std::uint64_t TimeLimitedFilter::segment_rows(std::uint64_t bits, std::uint64_t newest_rows,
                                              double ramp_headroom) const {
  double deviation = ask_spread_.deviation();
  if (deviation < 0) deviation = tlbf::poisson_deviation(bits, params_.k, kRateWindow);
  return tlbf::segment_rows(bits, newest_rows, deviation, max_slice_bits_, ramp_headroom);
}

void TimeLimitedFilter::open_segment(std::uint64_t rows, std::uint32_t columns) {
  segments_.push_back(std::make_unique<ColumnSegment>(rows, columns, params_.k));
}

// The new slice becomes the newest column of the newest segment when it can share its rows (its size
// is then the segment's), else of a new segment sized by segment_rows() (exactly, for a restore).
void TimeLimitedFilter::push_front_slice(std::uint64_t id, std::uint64_t bits, std::uint32_t hash_index,
                                         bool exact_size) {
  if (!shares_newest_segment(bits, exact_size)) {
    // A segment grows one slot (k columns) at a time, so the one left behind has fewer than k free columns:
    // it keeps them rather than be copied: a copy transposes all its cells (docs/decisions/tlbf-phase-tables.md,
    // "Several segments: the walk").
    const std::uint64_t newest_rows = segments_.empty() ? bits : segments_.back()->rows();
    if (exact_size) {
      open_segment(bits, 1);
    } else {
      const double ramp_headroom = ramp_.open(bits, !segments_.empty() && bits > newest_rows, params_.k);
      open_segment(segment_rows(bits, newest_rows, ramp_headroom), 1);
    }
  }
  if (segments_.back()->full()) {
    if (segments_.back()->columns() < ColumnSegment::max_slices(params_.k)) {
      grow(*segments_.back());
    } else {
      open_segment(segments_.back()->rows(), 1);  // the widest cells: the next slices in a segment of their own
    }
  }
  ColumnSlice slice;
  slice.id = id;
  slice.bits = segments_.back()->rows();
  slice.hash_index = hash_index;
  slice.place(segments_.back().get(), segments_.back()->push(hash_index));
  slices_.push_front(std::move(slice));
  ++layout_version_;
}

bool TimeLimitedFilter::shares_newest_segment(std::uint64_t bits, bool exact_size) const noexcept {
  if (segments_.empty()) return false;
  const std::uint64_t rows = segments_.back()->rows();
  return tlbf::shares_rows(rows, bits, exact_size) || (!exact_size && ramp_.takes(bits, rows));
}

// Copies the segment into one with one more slot per phase (k more columns), so a steady filter ends with
// fewer than k free columns; a new size phasing in at k+l slices copies its segment (k+l)/k times.
void TimeLimitedFilter::grow(ColumnSegment& segment) {
  resize(segment, std::min(segment.columns() + 1, ColumnSegment::max_slices(params_.k)));
}

void TimeLimitedFilter::resize(ColumnSegment& segment, std::uint32_t columns) {
  std::unique_ptr<ColumnSegment> copy = segment.repacked(columns);
  std::uint32_t age = 0;
  for (auto slice = slices_.rbegin(); slice != slices_.rend(); ++slice) {
    if (slice->segment != &segment) continue;
    slice->place(copy.get(), copy->column_of_age(age++));
  }
  for (auto& owned : segments_) {
    if (owned.get() == &segment) owned = std::move(copy);
  }
}

std::uint64_t TimeLimitedFilter::capacity_left(const BitSlice& slice) const {
  const std::uint64_t capacity = half_fill_capacity(slice.bits);
  return capacity > slice.insertions ? capacity - slice.insertions : 0;
}

// Run after the shift and before the new S[0] exists: deque index j-1 holds the future position j.
std::uint64_t TimeLimitedFilter::new_slice_capacity(std::uint64_t target_generation) const {
  std::array<std::uint64_t, detail::kMaxProbes> room{};
  for (std::uint32_t j = 1; j < params_.k; ++j) room[j - 1] = capacity_left(slices_[j - 1]);
  return tlbf::new_slice_capacity(std::span(room.data(), params_.k - 1), params_.k, target_generation);
}

std::uint64_t TimeLimitedFilter::next_generation_size() const {
  std::array<std::uint64_t, detail::kMaxProbes> room;
  for (std::uint32_t i = 0; i < params_.k; ++i) room[i] = capacity_left(slices_[i]);
  return tlbf::generation_size(std::span(room.data(), params_.k), max_generation_size_);
}

}  // namespace bloomgate::filters
