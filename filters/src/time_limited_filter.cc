#include "time_limited_filter.h"

#include <algorithm>
#include <array>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "bit_slice.h"
#include "memory_accounting.h"
#include "tlbf_sizing.h"
#include "tlbf_probes.h"
#include "tlbf_time.h"

namespace bloomgate::filters {
namespace {

using detail::BitSlice;
using detail::ColumnSegment;
using detail::ColumnSlice;
using detail::kUnstamped;
using detail::KeyProbes;
using detail::elapsed;

constexpr std::uint64_t kDefaultMaxGeneration = 1ULL << 32;
// A generation that has lasted this many target periods (T/l) ends at its next insertion.
constexpr std::int64_t kLongGenerationPeriods = 2;
// A segment of at least this many bits (8 MiB) is mostly out of the caches: there a query requests all k of
// a key's cells before it reads any, so their misses overlap, instead of loading them in one pass
// (docs/decisions/tlbf-query-experiments.md, "Out of cache: request every cell first").
constexpr std::uint64_t kRequestCellsFirstBits = std::uint64_t{1} << 26;
// A batch requests the cells of the next key only: more keys' requests in flight wait for the miss buffers
// instead of overlapping (docs/decisions/tlbf-phase-tables.md, "Batch lookahead").
constexpr std::size_t kRowBatchLookahead = 1;

// How many slices before position `window` (newer) hold the key, in a row.
template <typename Holds>
std::uint32_t holding_before(std::size_t window, const Holds& holds) {
  std::uint32_t count = 0;
  for (std::size_t p = window; p > 0 && holds(p - 1); --p) ++count;
  return count;
}

}  // namespace

TimeLimitedFilter::TimeLimitedFilter(const FilterOptions& options)
    : params_(choose_sliced_params(options.error_rate, sliced_level(options))),
      ttl_ns_(options.ttl.count()),
      error_rate_(options.error_rate),
      expected_per_ttl_(options.expected_per_ttl),
      refresh_on_duplicate_(options.refresh_on_duplicate),
      level_(sliced_level(options)),
      max_slices_(options.max_slices != 0 ? options.max_slices : 4ULL * (params_.k + params_.l)),
      max_slice_bits_(options.max_slice_bits != 0 ? options.max_slice_bits : kDefaultMaxSliceBits),
      max_generation_size_(options.max_generation_size != 0 ? options.max_generation_size : kDefaultMaxGeneration),
      long_generation_ns_(long_generation(ttl_ns_, params_.l)),
      last_insert_ns_(kUnstamped),
      latest_now_ns_(kUnstamped) {
  reset(kUnstamped);
}

TimeLimitedFilter::~TimeLimitedFilter() = default;

std::size_t TimeLimitedFilter::slice_count() const noexcept { return slices_.size(); }

// Creation (docs/filters.md, "Insertion, generations and slides"): k+l slices sized for expected_per_ttl keys per T,
// S[k] stamped as the end of "generation 0" so the first rate measurement has a reference point. The slices share one
// segment of k+l columns. A filter that later keeps k+l+1 slices grows it once (grow()); with shared sizes a steady
// filter keeps k+l: its slices are a little larger than the slice size asks, so the oldest has often expired by the
// next slide.
void TimeLimitedFilter::reset(std::int64_t now_ns) {
  settle_region();
  for (const BitSlice& slice : slices_) dropped_slice_ids_.push_back(slice.id);
  slices_.clear();
  segments_.clear();
  const double per_slice = static_cast<double>(expected_per_ttl_) * params_.k / params_.l;
  // The size the expected rate asks for, without headroom: it is a hint, and a segment for a measured rate
  // gets its headroom when it opens (segment_rows).
  const std::uint64_t bits = std::min(half_fill_slice_bits(per_slice, 2ULL * params_.k), max_slice_bits_);
  const std::uint32_t count = params_.k + params_.l;
  open_segment(bits, count);
  for (std::uint32_t p = count; p-- > 0;) push_front_slice(next_slice_id_ + p, bits, p % params_.k, true);
  next_slice_id_ += count;
  slices_[params_.k].stamp_ns = now_ns;
  generation_size_ = generation_remaining_ = next_generation_size();
  generation_inserted_ = 0;
  generation_start_ns_ = now_ns;
}

std::int64_t TimeLimitedFilter::long_generation(std::int64_t ttl_ns, std::uint32_t l) noexcept {
  return kLongGenerationPeriods * ttl_ns / l;
}

std::int64_t TimeLimitedFilter::clamp(TimePoint now) const noexcept {
  return std::max(to_epoch_nanos(now), latest_now_ns_);
}

bool TimeLimitedFilter::expired(const BitSlice& slice, std::int64_t now_ns) const noexcept {
  return now_ns > detail::expiry_deadline(slice.stamp_ns, last_insert_ns_, ttl_ns_);
}

bool TimeLimitedFilter::contains_at(const KeyProbes& probes, std::int64_t now_ns) const {
  return oldest_window(probes, now_ns) >= 0;
}

// The walk's answer. One segment (a steady rate): the runs of k found among the key's k cells
// (ColumnSegment::oldest_run). Several (for up to a TTL after a rate change): the walk.
std::int64_t TimeLimitedFilter::oldest_window(const KeyProbes& probes, std::int64_t now_ns, LocatedRows* located,
                                              std::uint32_t* newer) const {
  const std::vector<std::uint64_t>& valid = valid_bits(now_ns);
  LocatedRows here;
  if (located == nullptr) located = &here;
  if (segments_.size() > 1) {
    const std::size_t n = slices_.size();
    const std::vector<detail::SliceBits>& walk = slices_for_walk();
    const detail::Probes& values = probes.values();
    const auto holds = [&](std::size_t p) {
      const std::size_t bit = n - 1 - p;
      return ((valid[bit / 64] >> (bit % 64)) & 1U) != 0 && walk[p].holds(values);
    };
    const std::int64_t window = detail::oldest_matching_run(n, params_.k, holds);
    if (newer != nullptr && window >= 0) *newer = holding_before(static_cast<std::size_t>(window), holds);
    return window;
  }
  // Whether any run holds the key first (most keys of a stream are new); which run is the oldest only then,
  // from the cells that answer already read.
  const ColumnSegment& segment = *segments_.front();
  if (located_in(segment, *located) || requests_cells_first()) {
    if (!located_in(segment, *located)) prefetch_first_lines(probes, *located);  // contains(); test_and_insert did
    detail::QueriedCells kept;
    const bool any = segment.any_run_located(located->start.data(), valid_by_phase_.data(), valid.front(), kept);
    if (!any || newer == nullptr) return any ? 0 : -1;
    return window_of_run(segment.oldest_run_kept(kept, newer));
  }
  // In cache: the cells the query read answer for the oldest run too.
  located->segment = &segment;
  located->layout_version = layout_version_;
  detail::QueriedCells kept;
  const bool any = segment.locate_any_run(probes, valid_by_phase_.data(), valid.front(), located->start.data(), kept);
  if (!any || newer == nullptr) return any ? 0 : -1;
  return window_of_run(segment.oldest_run_after_query(located->start.data(), valid_by_phase_.data(), kept, newer));
}

// The position of the window whose oldest slice has age rank `age` (ColumnSegment::oldest_run), or -1.
std::int64_t TimeLimitedFilter::window_of_run(std::int64_t age) const noexcept {
  return age < 0 ? -1 : static_cast<std::int64_t>(slices_.size()) - static_cast<std::int64_t>(params_.k) - age;
}

// A deque's operator[] divides by its block's element count and its iterator steps through blocks; the
// insertion and the walk read the slices from here instead.
const std::vector<ColumnSlice*>& TimeLimitedFilter::slices_by_position() const {
  if (by_position_version_ != layout_version_) {
    by_position_.clear();
    for (const ColumnSlice& slice : slices_) by_position_.push_back(const_cast<ColumnSlice*>(&slice));
    by_position_version_ = layout_version_;
  }
  return by_position_;
}

const std::vector<detail::SliceBits>& TimeLimitedFilter::slices_for_walk() const {
  if (walk_version_ != layout_version_) {
    walk_.clear();
    for (const ColumnSlice& slice : slices_) walk_.push_back(slice.place_of_bits());
    walk_version_ = layout_version_;
  }
  return walk_;
}

// Rebuilt when the layout moved, after the counts of the region it replaces are settled.
const TimeLimitedFilter::RegionColumn* TimeLimitedFilter::region_columns() const {
  if (region_version_ == layout_version_) [[likely]] return region_.data();
  return rebuilt_region();
}

const TimeLimitedFilter::RegionColumn* TimeLimitedFilter::rebuilt_region() const {
  settle_region();
  const std::vector<ColumnSlice*>& newest = slices_by_position();
  for (std::uint32_t p = 0; p < params_.k; ++p) {
    region_[p] = {newest[p], newest[p]->cells, newest[p]->place_of_bits()};
    region_slot_by_phase_[newest[p]->column % params_.k] = newest[p]->slot;
  }
  if (newest.size() > params_.k) newest[params_.k]->set_bits_counted = false;  // the slice that left, if one did
  region_version_ = layout_version_;
  return region_.data();
}

void TimeLimitedFilter::count_set_bits() const {
  const std::vector<ColumnSlice*>& newest = slices_by_position();
  for (std::size_t p = 0; p < newest.size(); ++p) {
    if (p < params_.k || !newest[p]->set_bits_counted) newest[p]->count_set_bits();
  }
}

// The region's slices are still alive here: slices leave from the oldest end, never below k + l, and
// reset() settles before it clears them.
void TimeLimitedFilter::settle_region() const {
  if (region_inserted_ == 0) return;
  for (std::uint32_t p = 0; p < params_.k; ++p) {
    ColumnSlice& slice = *region_[p].slice;
    slice.insertions += region_inserted_;
    slice.dirty = true;
  }
  region_inserted_ = 0;
}

bool TimeLimitedFilter::contains(KeyHash key, TimePoint now) const {
  return contains_at(KeyProbes(key, params_.k), clamp(now));
}

// `located` holds the cells of one segment at a time.
bool TimeLimitedFilter::located_in(const ColumnSegment& segment, const LocatedRows& located) const noexcept {
  return located.segment == &segment && located.layout_version == layout_version_;
}

void TimeLimitedFilter::locate(const ColumnSegment& segment, const KeyProbes& probes, LocatedRows& located) const noexcept {
  segment.locate(probes.values(), located.start.data());
  located.segment = &segment;
  located.layout_version = layout_version_;
}

// One segment: requests the key's cells, located here once for the query and the insertion that follow
// (`located`). Several (the walk): the first probe (the oldest window's newest slice) and the k insertion
// cells.
void TimeLimitedFilter::prefetch_first_lines(const KeyProbes& probes, LocatedRows& located) const noexcept {
  if (segments_.size() == 1) {
    locate(*segments_.front(), probes, located);
    segments_.front()->prefetch(located.start.data());
    return;
  }
  const std::vector<detail::SliceBits>& walk = slices_for_walk();
  for (std::uint32_t p = 0; p < params_.k; ++p) walk[p].prefetch(probes.values());
  walk[slices_.size() - params_.k].prefetch(probes.values());
}

bool TimeLimitedFilter::test_and_insert_probes(const KeyProbes& probes, TimePoint now, LocatedRows& located,
                                              std::optional<Duration>* age) {
  const std::int64_t now_ns = clamp(now);
  latest_now_ns_ = now_ns;
  std::uint32_t newer = 0;
  const std::int64_t window = oldest_window(probes, now_ns, &located, age != nullptr ? &newer : nullptr);
  const bool present = window >= 0;
  if (present && age != nullptr) *age = sighting_age(static_cast<std::size_t>(window), newer, now_ns);  // before a slide
  if (!present || refresh_on_duplicate_) insert(probes, now_ns, &located);
  return present;
}

// The key's bit is set in a run of valid slices around the k it wrote: each neighbour has it by chance
// (at half fill, one in two), so every window of k inside the run matches and `oldest_window` is only the
// oldest of them; `newer` more slices after that window hold it too. The run's two ends are equally likely
// to have grown, so the window taken is the one in the middle. Its generation ended when its oldest slice
// was stamped (unstamped: it is the current one) and began when the next older slice was; the sighting is
// dated to the middle of that generation.
Duration TimeLimitedFilter::sighting_age(std::size_t oldest_window, std::size_t newer, std::int64_t now_ns) const {
  const std::size_t window = oldest_window - newer + newer / 2;
  const BitSlice& last_written = slices_[window + params_.k - 1];
  const std::int64_t ended = last_written.stamp_ns == kUnstamped ? now_ns : last_written.stamp_ns;
  const std::size_t before = window + params_.k;
  const bool began_known = before < slices_.size() && slices_[before].stamp_ns != kUnstamped;
  const std::int64_t began = began_known ? slices_[before].stamp_ns : ended;
  const std::int64_t recorded = began + elapsed(ended, began) / 2;
  return Duration{std::max<std::int64_t>(0, elapsed(now_ns, recorded))};
}

// A segment in cache: the query computes the values and reads the cells itself. Out of the caches, and for
// the walk over several segments, the cells are requested first, before anything else the query does.
[[gnu::always_inline]] inline bool TimeLimitedFilter::requests_cells_first() const noexcept {
  return segments_.size() > 1 || segments_.front()->storage_bits() >= kRequestCellsFirstBits;
}

// The in-cache path is one function: the steps of test_and_insert_key that it takes are always inlined (the
// calls between them cost 4 to 7% of an operation in cache; docs/decisions/tlbf-query-experiments.md, "Kept:
// the in-place path in one function").
bool TimeLimitedFilter::test_and_insert(KeyHash key, TimePoint now) { return test_and_insert_key(key, now, nullptr); }

Sighting TimeLimitedFilter::test_and_insert_with_age(KeyHash key, TimePoint now) {
  Sighting sighting;
  sighting.present = test_and_insert_key(key, now, &sighting.age);
  return sighting;
}

// The one-call path: the cells requested first (out of the caches, several segments), or the in-place
// path when it applies, else the query and then the insertion.
[[gnu::always_inline]] inline bool TimeLimitedFilter::test_and_insert_key(KeyHash key, TimePoint now,
                                                                        std::optional<Duration>* age) {
  const KeyProbes probes(key, params_.k);
  LocatedRows located;
  if (requests_cells_first()) {
    prefetch_first_lines(probes, located);
  } else if (const std::int64_t now_ns = clamp(now); inserts_in_place(now_ns)) {
    return test_and_insert_in_place(probes, now_ns, age);
  }
  return test_and_insert_probes(probes, now, located, age);
}

// One segment in cache, and nothing to do before an insertion but setting bits: the validity and the
// insertion region are current, and no reset, early generation end or slide is due.
[[gnu::always_inline]] inline bool TimeLimitedFilter::inserts_in_place(std::int64_t now_ns) const noexcept {
  return valid_cache_current(now_ns) && region_version_ == layout_version_ && insertion_ready(now_ns);
}

// The query of one segment in cache (ColumnSegment::locate_any_run), the sighting's age when asked and the
// key is present, then the insertion into the cells it located, with no lookup in between.
[[gnu::always_inline]] inline bool TimeLimitedFilter::test_and_insert_in_place(const KeyProbes& probes,
                                                                             std::int64_t now_ns,
                                                                             std::optional<Duration>* age) {
  latest_now_ns_ = now_ns;
  std::array<std::uint64_t, detail::kMaxProbes> cell_starts;
  detail::QueriedCells kept;
  const ColumnSegment& segment = *segments_.front();
  const bool present = segment.locate_any_run(probes, valid_by_phase_.data(), valid_.front(), cell_starts.data(), kept);
  if (present && age != nullptr) {
    std::uint32_t newer = 0;
    const std::int64_t window =
        window_of_run(segment.oldest_run_after_query(cell_starts.data(), valid_by_phase_.data(), kept, &newer));
    *age = sighting_age(static_cast<std::size_t>(window), newer, now_ns);
  }
  if (present && !refresh_on_duplicate_) return true;
  set_region_bits(cell_starts.data());
  count_insertion(now_ns);
  return present;
}

[[gnu::always_inline]] inline void TimeLimitedFilter::set_region_bits(const std::uint64_t* cell_starts) {
  std::uint64_t* cells = region_[0].cells;  // one segment: every slice's
  for (std::uint32_t b = 0; b < params_.k; ++b) detail::set_cell_bit(cells, cell_starts[b] + region_slot_by_phase_[b]);
}

// Keys whose cells are requested ahead: a query requests all k of its cells at once, and more than a few
// keys' worth of requests in flight wait for the miss buffers instead of overlapping.
std::size_t TimeLimitedFilter::batch_lookahead() const noexcept {
  return std::min(kRowBatchLookahead, detail::kBatchLookahead);
}

// A slide between prefetch and use only makes a prefetched line useless, never an answer wrong.
void TimeLimitedFilter::test_and_insert_batch(std::span<const KeyHash> keys, std::span<const TimePoint> now,
                                              std::span<bool> present) {
  if (now.size() != keys.size() || present.size() != keys.size()) {
    throw std::invalid_argument("test_and_insert_batch: keys, times and answers differ in size");
  }
  const std::size_t lookahead = batch_lookahead();
  std::array<KeyProbes, detail::kBatchLookahead> ahead;
  std::array<LocatedRows, detail::kBatchLookahead> located;
  for (std::size_t i = 0; i < std::min(lookahead, keys.size()); ++i) {
    ahead[i].assign(keys[i], params_.k);
    prefetch_first_lines(ahead[i], located[i]);
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    KeyProbes& probes = ahead[i % lookahead];
    present[i] = test_and_insert_probes(probes, now[i], located[i % lookahead]);
    if (i + lookahead < keys.size()) {
      probes.assign(keys[i + lookahead], params_.k);
      prefetch_first_lines(probes, located[i % lookahead]);
    }
  }
}

// No reset, early generation end or slide is due before an insertion at now_ns.
bool TimeLimitedFilter::insertion_ready(std::int64_t now_ns) const noexcept {
  return last_insert_ns_ != kUnstamped && elapsed(now_ns, last_insert_ns_) <= ttl_ns_ && generation_remaining_ > 0 &&
         (generation_inserted_ == 0 || elapsed(now_ns, generation_start_ns_) <= long_generation_ns_);
}

void TimeLimitedFilter::prepare_insertion(std::int64_t now_ns) {
  if (insertion_ready(now_ns)) return;
  if (last_insert_ns_ == kUnstamped) {
    reset(now_ns);  // the first insertion starts the clock
  } else if (elapsed(now_ns, last_insert_ns_) > ttl_ns_) {
    reset(now_ns);  // every slice has expired: start afresh rather than revive stale bits
  } else if (generation_remaining_ > 0 && generation_inserted_ > 0 &&
             elapsed(now_ns, generation_start_ns_) > long_generation_ns_) {
    end_generation_early();
  }
  if (generation_remaining_ == 0) slide(now_ns);
}

void TimeLimitedFilter::insert(const KeyProbes& probes, std::int64_t now_ns, const LocatedRows* located) {
  prepare_insertion(now_ns);
  // After a slide, reset or early generation end in prepare_insertion the cells are found again.
  const RegionColumn* region = region_columns();
  if (located != nullptr && segments_.size() == 1 && located_in(*segments_.front(), *located)) {
    set_region_bits(located->start.data());
  } else {
    for (std::uint32_t p = 0; p < params_.k; ++p) detail::set_cell_bit(region[p].cells, region[p].place.bit_of(probes.values()));
  }
  count_insertion(now_ns);
}

[[gnu::always_inline]] inline void TimeLimitedFilter::count_insertion(std::int64_t now_ns) {
  ++region_inserted_;
  if (valid_has_expired_unstamped_ && now_ns != last_insert_ns_) ++layout_version_;
  last_insert_ns_ = now_ns;
  ++generation_inserted_;
  // The generation's last insertion stamps the slice leaving the region with now_ns, the time it counted
  // as unstamped (last_insert_ns_): its validity and its deadline stay as the valid cache has them.
  if (--generation_remaining_ == 0) {
    BitSlice& leaving = slices_[params_.k - 1];
    leaving.stamp_ns = now_ns;
    leaving.generation_insertions = generation_inserted_;
  }
}

std::uint64_t TimeLimitedFilter::elements_in_window(std::int64_t now_ns) const {
  std::uint64_t elements = generation_remaining_ > 0 && !expired(slices_.front(), now_ns) ? generation_inserted_ : 0;
  for (const BitSlice& slice : slices_) {
    if (slice.stamp_ns != kUnstamped && !expired(slice, now_ns)) elements += slice.generation_insertions;
  }
  return elements;
}

FilterStats TimeLimitedFilter::stats(TimePoint now) const {
  settle_region();
  count_set_bits();
  const std::int64_t now_ns = clamp(now);
  FilterStats s;
  s.type = type();
  s.k = params_.k;
  s.l = params_.l;
  s.slices = slices_.size();
  s.target_fpr = error_rate_;
  std::vector<double> fill;
  std::int64_t oldest_valid_stamp = kUnstamped;
  for (const ColumnSlice& slice : slices_) {
    const bool is_expired = expired(slice, now_ns);
    s.slice_stats.push_back(detail::slice_stats(slice, is_expired));
    s.slice_stats.back().fill_ratio = slice.measured_fill();
    fill.push_back(is_expired ? 0.0 : s.slice_stats.back().fill_ratio);
    if (!is_expired && slice.stamp_ns != kUnstamped && slice.insertions > 0) oldest_valid_stamp = slice.stamp_ns;
  }
  for (const auto& segment : segments_) s.bits += segment->cell_bits();  // the slices' bits
  s.elements = elements_in_window(now_ns);
  s.estimated_fpr = sliced_fpr(params_.k, fill);
  if (oldest_valid_stamp != kUnstamped) s.effective_window = Duration{elapsed(now_ns, oldest_valid_stamp)};
  s.memory_bytes = memory_bytes();
  set_per_element_figures(s);
  return s;
}

std::uint64_t TimeLimitedFilter::free_segment_bits() const noexcept {
  std::uint64_t bits = 0;
  for (const auto& segment : segments_) bits += segment->storage_bits() - segment->cell_bits();
  return bits;
}

std::uint64_t TimeLimitedFilter::memory_bytes() const noexcept {
  using detail::heap_bytes;
  std::uint64_t bytes = sizeof(*this) + heap_bytes(slices_) + heap_bytes(segments_) + heap_bytes(dropped_slice_ids_) +
                        heap_bytes(valid_) + heap_bytes(valid_by_phase_) + heap_bytes(previous_valid_) +
                        heap_bytes(by_position_) + heap_bytes(walk_);
  for (const auto& segment : segments_) bytes += segment->memory_bytes();  // cells, free columns, rounding
  for (const ColumnSlice& slice : slices_) bytes += heap_bytes(slice.words);
  return bytes;
}

}  // namespace bloomgate::filters
