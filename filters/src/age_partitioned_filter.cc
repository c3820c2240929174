#include "age_partitioned_filter.h"

#include <cmath>
#include <string>

#include "memory_accounting.h"

#include "bit_slice.h"

namespace bloomgate::filters {

using detail::BitSlice;
using detail::Probes;

namespace {
constexpr std::uint64_t kMaxSliceBits = 1ULL << 36;
}  // namespace

AgePartitionedFilter::AgePartitionedFilter(const FilterOptions& options)
    : params_(choose_sliced_params(options.error_rate, sliced_level(options))),
      error_rate_(options.error_rate),
      window_(options.window != 0 ? options.window : options.expected_per_ttl),
      refresh_on_duplicate_(options.refresh_on_duplicate),
      level_(sliced_level(options)) {
  generation_size_ = (window_ + params_.l - 1) / params_.l;
  slice_bits_ = half_fill_slice_bits(static_cast<double>(params_.k * generation_size_), 2ULL * params_.k);
  for (std::uint32_t p = 0; p < params_.k + params_.l; ++p) slices_.emplace_back(next_slice_id_++, slice_bits_, p % params_.k);
}

AgePartitionedFilter::~AgePartitionedFilter() = default;

bool AgePartitionedFilter::contains_probes(const Probes& probes) const {
  return detail::k_consecutive_match(slices_, params_.k, probes, [](const BitSlice&) { return true; });
}

bool AgePartitionedFilter::contains(KeyHash key, TimePoint) const { return contains_probes(Probes(key, params_.k)); }

bool AgePartitionedFilter::test_and_insert(KeyHash key, TimePoint) {
  const Probes probes(key, params_.k);
  // The insertion's lines are requested with the query's, so an absent key's insertion waits for no miss.
  for (std::uint32_t p = 0; p < params_.k; ++p) slices_[p].prefetch(probes);
  const bool present = contains_probes(probes);
  if (present && !refresh_on_duplicate_) return true;
  if (generation_inserted_ == generation_size_) shift();
  for (std::uint32_t p = 0; p < params_.k; ++p) slices_[p].set(probes);
  if (++generation_inserted_ == generation_size_) slices_[params_.k - 1].generation_insertions = generation_size_;
  return present;
}

// The shift after each generation: drop the oldest slice, push a cleared one at the front with the next hash
// index down, so the k slices an insertion writes keep hash indexes k-1 .. 0 from newest to oldest.
void AgePartitionedFilter::shift() {
  dropped_slice_ids_.push_back(slices_.back().id);
  slices_.pop_back();
  const std::uint32_t index = (slices_.front().hash_index + params_.k - 1) % params_.k;
  slices_.emplace_front(next_slice_id_++, slice_bits_, index);
  generation_inserted_ = 0;
}

FilterStats AgePartitionedFilter::stats(TimePoint) const {
  FilterStats s;
  s.type = type();
  s.k = params_.k;
  s.l = params_.l;
  s.slices = slices_.size();
  s.target_fpr = error_rate_;
  std::vector<double> fill;
  s.elements = generation_inserted_ < generation_size_ ? generation_inserted_ : 0;
  for (const BitSlice& slice : slices_) {
    s.slice_stats.push_back(detail::slice_stats(slice, false));
    fill.push_back(s.slice_stats.back().fill_ratio);
    s.bits += slice.bits;
    s.elements += slice.generation_insertions;
  }
  s.estimated_fpr = sliced_fpr(params_.k, fill);
  s.memory_bytes = sizeof(*this) + detail::heap_bytes(slices_) + detail::heap_bytes(dropped_slice_ids_);
  for (const BitSlice& slice : slices_) s.memory_bytes += detail::heap_bytes(slice.words);
  set_per_element_figures(s);
  return s;
}

FilterImage AgePartitionedFilter::image(ImageScope scope) const {
  ByteWriter w;
  w.u32(params_.k);
  w.u32(params_.l);
  w.u32(level_);
  w.f64(error_rate_);
  w.u64(window_);
  w.u8(refresh_on_duplicate_ ? 1 : 0);
  w.u64(generation_size_);
  w.u64(slice_bits_);
  w.u64(generation_inserted_);
  w.u64(next_slice_id_);
  for (const BitSlice& slice : slices_) w.u64(slice.id);
  FilterImage out;
  out.meta = encode_record(RecordKind::kMeta, type(), 0, w.take());
  for (const BitSlice& slice : slices_) {
    if (scope == ImageScope::kFull || slice.dirty) out.slices.push_back({slice.id, slice.encode(type())});
  }
  out.dropped_slice_ids = dropped_slice_ids_;
  return out;
}

void AgePartitionedFilter::mark_persisted() {
  for (BitSlice& slice : slices_) slice.dirty = false;
  dropped_slice_ids_.clear();
}

std::unique_ptr<Filter> AgePartitionedFilter::restore(const Record& meta, const SliceViews& lookup) {
  expect_meta_record(meta, FilterType::kAgePartitioned);
  ByteReader r(meta.payload);
  std::unique_ptr<AgePartitionedFilter> f(new AgePartitionedFilter(Restored{}));
  f->params_.k = r.u32("k");
  f->params_.l = r.u32("l");
  if (f->params_.k == 0 || f->params_.k > detail::kMaxProbes || f->params_.l == 0 || f->params_.l > 100000) {
    throw FormatError("age-partitioned filter has impossible (k, l)");
  }
  f->level_ = r.u32("level");
  f->error_rate_ = r.f64("error rate");
  f->window_ = r.u64("window");
  f->refresh_on_duplicate_ = r.u8("refresh on duplicate") != 0;
  f->generation_size_ = r.u64("generation size");
  f->slice_bits_ = r.u64("slice bits");
  f->generation_inserted_ = r.u64("generation inserted");
  if (f->generation_size_ == 0 || f->generation_inserted_ > f->generation_size_ || f->slice_bits_ == 0 ||
      f->slice_bits_ > kMaxSliceBits) {
    throw FormatError("age-partitioned filter has an impossible generation or slice size");
  }
  f->next_slice_id_ = r.u64("next slice id");
  if (r.remaining() != 8ULL * (f->params_.k + f->params_.l)) {
    throw FormatError("age-partitioned filter does not list k+l slices");
  }
  // The slices' memory, all of the same size (slice_memory.h).
  const auto arena = detail::SliceArena::create_for(std::size_t{f->params_.k} + f->params_.l,
                                                    static_cast<std::size_t>((f->slice_bits_ + 63) / 64 * 8));
  for (std::uint32_t p = 0; p < f->params_.k + f->params_.l; ++p) {
    const std::uint64_t id = r.u64("slice id");
    const auto record = lookup(id);
    if (!record) throw FormatError("age-partitioned filter slice " + std::to_string(id) + " is missing");
    BitSlice slice = BitSlice::decode(*record, FilterType::kAgePartitioned, id, f->params_.k, arena);
    if (slice.bits != f->slice_bits_) throw FormatError("age-partitioned slice has the wrong size");
    f->slices_.push_back(std::move(slice));
  }
  return f;
}

}  // namespace bloomgate::filters
