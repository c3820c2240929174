#include "bloomgate/filters/time_limited_filter.h"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "bloomgate/filters/bit_slice.h"
#include "bloomgate/filters/tlbf_sizing.h"
#include "tlbf_probes.h"

namespace bloomgate::filters {
namespace {

using detail::BitSlice;
using detail::ColumnSegment;
using detail::ColumnSlice;
using detail::kUnstamped;
using detail::KeyProbes;

constexpr std::uint64_t kDefaultMaxSliceBits = 1ULL << 33;
constexpr std::uint64_t kDefaultMaxGeneration = 1ULL << 32;
// Completed generations the target generation's rate estimate averages over: at least kRateWindow, and
// more while they hold fewer than kMinRateInsertions insertions and span at most T / kMaxRateSpanPerTtl.
// Small filters' generations are small, and a rate counted over 8 of them is noisy enough to make the slice
// sizes jump past the segment's and open segments (docs/decisions/tlbf-phase-tables.md, "Sizes").
constexpr std::size_t kRateWindow = 8;
constexpr double kMinRateInsertions = 1024;
constexpr std::int64_t kMaxRateSpanPerTtl = 4;
// The target generation may grow at most this much per slide: events sharing one timestamp make the
// measured duration ~0 and the rate estimate unbounded, which would otherwise size gigantic slices.
// 4x per slide follows a 100x rate jump within four rounds of k generations.
constexpr double kMaxGenerationGrowth = 4;
// A generation that has lasted this many target periods (T/l) ends at its next insertion.
constexpr std::int64_t kLongGenerationPeriods = 2;
// A segment of at least this many bits (8 MiB) is mostly out of the caches: there a query requests all k of
// a key's cells before it reads any, so their misses overlap, instead of loading them in one pass
// (docs/decisions/tlbf-query-experiments.md, "Out of cache: request every cell first").
constexpr std::uint64_t kRequestCellsFirstBits = std::uint64_t{1} << 26;
// A batch requests the cells of the next key only: more keys' requests in flight wait for the miss buffers
// instead of overlapping (docs/decisions/tlbf-rows-in-lines.md).
constexpr std::size_t kRowBatchLookahead = 1;

// Bit i + count of `words` to bit i (zeros come in at the top).
void shift_bits_down(std::vector<std::uint64_t>& words, std::size_t count) {
  const std::size_t skip = std::min(count / 64, words.size());
  words.erase(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(skip));
  words.resize(words.size() + skip, 0);
  const unsigned shift = count % 64;
  if (shift == 0) return;
  for (std::size_t i = 0; i < words.size(); ++i) {
    words[i] = (words[i] >> shift) | (i + 1 < words.size() ? words[i + 1] << (64 - shift) : 0);
  }
}

std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return b > 0 ? std::numeric_limits<std::int64_t>::max() : kUnstamped;
  return out;
}

// now - then without signed overflow, saturating at the int64 range.
std::int64_t elapsed(std::int64_t now, std::int64_t then) noexcept {
  std::int64_t out;
  if (__builtin_sub_overflow(now, then, &out)) {
    return now > then ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
  }
  return out;
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

// A slice still being written counts as stamped with the last insertion, so an idle filter
// forgets its current generation like every other.
bool TimeLimitedFilter::expired(const BitSlice& slice, std::int64_t now_ns) const noexcept {
  const std::int64_t stamp = slice.stamp_ns != kUnstamped ? slice.stamp_ns : last_insert_ns_;
  if (stamp == kUnstamped) return false;
  return elapsed(now_ns, stamp) > ttl_ns_;
}

bool TimeLimitedFilter::contains_at(const KeyProbes& probes, std::int64_t now_ns) const {
  return oldest_window(probes, now_ns, nullptr, false) >= 0;
}

// The walk's answer. One segment (a steady rate): the runs of k found among the key's k cells
// (ColumnSegment::oldest_run). Several (for up to a TTL after a rate change): the walk.
std::int64_t TimeLimitedFilter::oldest_window(const KeyProbes& probes, std::int64_t now_ns, LocatedRows* located,
                                              bool oldest) const {
  const std::vector<std::uint64_t>& valid = valid_bits(now_ns);
  LocatedRows here;
  if (located == nullptr) located = &here;
  if (segments_.size() > 1) {
    const std::size_t n = slices_.size();
    const std::vector<detail::SliceBits>& walk = slices_for_walk();
    const detail::Probes& values = probes.values();
    return detail::oldest_matching_run(n, params_.k, [&](std::size_t p) {
      const std::size_t bit = n - 1 - p;
      return ((valid[bit / 64] >> (bit % 64)) & 1U) != 0 && walk[p].holds(values);
    });
  }
  // Whether any run holds the key first (most keys of a stream are new); which run is the oldest only then,
  // from the cells that answer already read.
  const ColumnSegment& segment = *segments_.front();
  bool any = false;
  if (located_in(segment, *located)) {
    any = segment.any_run(located->start.data(), valid_by_phase_.data());
  } else if (requests_cells_first()) {  // from contains(); test_and_insert has located them above
    prefetch_first_lines(probes, *located);
    any = segment.any_run(located->start.data(), valid_by_phase_.data());
  } else {
    located->segment = &segment;
    located->layout_version = layout_version_;
    any = segment.locate_any_run(probes, valid_by_phase_.data(), located->start.data());
  }
  if (!any || !oldest) return any ? 0 : -1;
  return window_of_run(segment.oldest_run(located->start.data(), valid_by_phase_.data()));
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
    region_[p] = {newest[p], newest[p]->cells};
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

// Recomputed when the layout changed or `now` left the span over which no slice changes state.
const std::vector<std::uint64_t>& TimeLimitedFilter::valid_bits(std::int64_t now_ns) const {
  if (valid_version_ == layout_version_ && now_ns > valid_after_ns_ && now_ns <= valid_until_ns_) [[likely]] {
    return valid_;
  }
  return recomputed_valid_bits(now_ns);
}

const std::vector<std::uint64_t>& TimeLimitedFilter::recomputed_valid_bits(std::int64_t now_ns) const {
  const std::size_t n = slices_.size();
  const bool time_alone = valid_version_ == layout_version_ && segments_.size() == 1;  // only `now` moved
  previous_valid_.swap(valid_);
  valid_.assign((n + 63) / 64 + 1, 0);
  // Locals, not the members: the loop's stores into valid_ would make the compiler store them every turn.
  std::uint64_t* valid = valid_.data();
  std::int64_t after = std::numeric_limits<std::int64_t>::min();
  std::int64_t until = std::numeric_limits<std::int64_t>::max();
  bool expired_unstamped = false;
  const std::int64_t last_insert = last_insert_ns_;
  const std::int64_t ttl = ttl_ns_;
  std::size_t i = n;  // the bit of the slice, oldest first
  for (const ColumnSlice* by_position : slices_by_position()) {
    const BitSlice& slice = *by_position;
    --i;
    // expired() as a deadline: an unstamped slice counts as stamped with the last insertion, and before
    // the first insertion nothing expires.
    const std::int64_t stamp = slice.stamp_ns != kUnstamped ? slice.stamp_ns : last_insert;
    const std::int64_t deadline = stamp == kUnstamped ? std::numeric_limits<std::int64_t>::max() : saturating_add(stamp, ttl);
    if (now_ns <= deadline) {
      valid[i / 64] |= std::uint64_t{1} << (i % 64);
      until = std::min(until, deadline);
    } else {
      after = std::max(after, deadline);
      expired_unstamped |= slice.stamp_ns == kUnstamped;
    }
  }
  valid_after_ns_ = after;
  valid_until_ns_ = until;
  valid_has_expired_unstamped_ = expired_unstamped;
  valid_version_ = layout_version_;
  if (time_alone) {
    flip_changed_by_phase();
  } else {
    valid_by_phase_.assign(params_.k, 0);
    if (segments_.size() == 1) segments_.front()->valid_by_phase(valid_.data(), valid_by_phase_.data());
  }
  return valid_;
}

// The slices whose validity the time changed (usually the oldest valid one) flip their bit by phase.
void TimeLimitedFilter::flip_changed_by_phase() const {
  const ColumnSegment& segment = *segments_.front();
  for (std::size_t w = 0; w < valid_.size() && w < previous_valid_.size(); ++w) {
    for (std::uint64_t changed = valid_[w] ^ previous_valid_[w]; changed != 0; changed &= changed - 1) {
      const auto age = static_cast<std::uint32_t>(64 * w + static_cast<std::size_t>(std::countr_zero(changed)));
      const std::uint32_t column = segment.column_of_age(age);
      valid_by_phase_[column % params_.k] ^= std::uint64_t{1} << (column / params_.k);
    }
  }
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
  const std::vector<ColumnSlice*>& by_position = slices_by_position();
  for (std::uint32_t p = 0; p < params_.k; ++p) by_position[p]->prefetch(probes.values());
  by_position[slices_.size() - params_.k]->prefetch(probes.values());
}

bool TimeLimitedFilter::test_and_insert_probes(const KeyProbes& probes, TimePoint now, LocatedRows& located,
                                              std::optional<Duration>* age) {
  const std::int64_t now_ns = clamp(now);
  latest_now_ns_ = now_ns;
  const std::int64_t window = oldest_window(probes, now_ns, &located, age != nullptr);
  const bool present = window >= 0;
  if (present && age != nullptr) *age = sighting_age(probes, static_cast<std::size_t>(window), now_ns);  // before a slide
  if (!present || refresh_on_duplicate_) insert(probes, now_ns, &located);
  return present;
}

// The key's bit is set in a run of valid slices around the k it wrote: each neighbour has it by chance
// (at half fill, one in two), so every window of k inside the run matches and `oldest_window` is only the
// oldest of them. The run's two ends are equally likely to have grown, so the window taken is the one in
// the middle. Its generation ended when its oldest slice was stamped (unstamped: it is the current one) and
// began when the next older slice was; the sighting is dated to the middle of that generation.
Duration TimeLimitedFilter::sighting_age(const KeyProbes& probes, std::size_t oldest_window, std::int64_t now_ns) const {
  std::size_t newest_in_run = oldest_window;
  while (newest_in_run > 0 && slices_[newest_in_run - 1].test(probes.values()) && !expired(slices_[newest_in_run - 1], now_ns)) {
    --newest_in_run;
  }
  const std::size_t window = newest_in_run + (oldest_window - newest_in_run) / 2;
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
bool TimeLimitedFilter::requests_cells_first() const noexcept {
  return segments_.size() > 1 || segments_.front()->storage_bits() >= kRequestCellsFirstBits;
}

bool TimeLimitedFilter::test_and_insert(KeyHash key, TimePoint now) {
  const KeyProbes probes(key, params_.k);
  LocatedRows located;
  if (requests_cells_first()) {
    prefetch_first_lines(probes, located);
  } else if (const std::int64_t now_ns = clamp(now); inserts_in_place(now_ns)) {
    return test_and_insert_in_place(probes, now_ns);
  }
  return test_and_insert_probes(probes, now, located);
}

// One segment in cache, and nothing to do before an insertion but setting bits: the validity and the
// insertion region are current, and no reset, early generation end or slide is due.
bool TimeLimitedFilter::inserts_in_place(std::int64_t now_ns) const noexcept {
  return valid_version_ == layout_version_ && now_ns > valid_after_ns_ && now_ns <= valid_until_ns_ &&
         region_version_ == layout_version_ && insertion_ready(now_ns);
}

// The query of one segment in cache (ColumnSegment::locate_any_run), the sighting's age when asked and the
// key is present, then the insertion into the cells it located, with no lookup in between.
bool TimeLimitedFilter::test_and_insert_in_place(const KeyProbes& probes, std::int64_t now_ns,
                                                 std::optional<Duration>* age) {
  latest_now_ns_ = now_ns;
  std::array<std::uint64_t, detail::kMaxProbes> cell_starts;
  const ColumnSegment& segment = *segments_.front();
  const bool present = segment.locate_any_run(probes, valid_by_phase_.data(), cell_starts.data());
  if (present && age != nullptr) {
    const std::int64_t window = window_of_run(segment.oldest_run(cell_starts.data(), valid_by_phase_.data()));
    *age = sighting_age(probes, static_cast<std::size_t>(window), now_ns);
  }
  if (present && !refresh_on_duplicate_) return true;
  set_region_bits(cell_starts.data());
  count_insertion(now_ns);
  return present;
}

void TimeLimitedFilter::set_region_bits(const std::uint64_t* cell_starts) {
  std::uint64_t* cells = region_[0].cells;  // one segment: every slice's
  for (std::uint32_t b = 0; b < params_.k; ++b) detail::set_cell_bit(cells, cell_starts[b] + region_slot_by_phase_[b]);
}

Sighting TimeLimitedFilter::test_and_insert_with_age(KeyHash key, TimePoint now) {
  const KeyProbes probes(key, params_.k);
  LocatedRows located;
  Sighting sighting;
  if (requests_cells_first()) {
    prefetch_first_lines(probes, located);
  } else if (const std::int64_t now_ns = clamp(now); inserts_in_place(now_ns)) {
    sighting.present = test_and_insert_in_place(probes, now_ns, &sighting.age);
    return sighting;
  }
  sighting.present = test_and_insert_probes(probes, now, located, &sighting.age);
  return sighting;
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
    ahead[i] = KeyProbes(keys[i], params_.k);
    prefetch_first_lines(ahead[i], located[i]);
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    KeyProbes& probes = ahead[i % lookahead];
    present[i] = test_and_insert_probes(probes, now[i], located[i % lookahead]);
    if (i + lookahead < keys.size()) {
      probes = KeyProbes(keys[i + lookahead], params_.k);
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
    for (std::uint32_t p = 0; p < params_.k; ++p) detail::set_cell_bit(region[p].cells, region[p].slice->cell_of(probes.values()));
  }
  count_insertion(now_ns);
}

void TimeLimitedFilter::count_insertion(std::int64_t now_ns) {
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

TimeLimitedFilter::SlideStart TimeLimitedFilter::slide_start(std::int64_t now_ns) const noexcept {
  const bool one_segment = segments_.size() == 1;
  return {valid_version_ == layout_version_ && now_ns > valid_after_ns_ && now_ns <= valid_until_ns_ && one_segment,
          one_segment ? segments_.front().get() : nullptr, one_segment ? segments_.front()->columns() : 0, slices_.size(),
          slices_.back().column};
}

// A slide in one segment that neither grew nor moved drops the oldest slices (the oldest columns of the ring,
// from start.oldest_column on) and adds one, valid (unstamped, and a slide comes at most T after the last
// insertion). The valid cache follows without a recompute: the other slices keep their validity, and its
// bounds stay safe (the new slice's deadline, the last insertion's plus T, is the latest; a dropped slice's
// deadline leaves valid_until_ns_ at most earlier than it could be, which recomputes sooner).
void TimeLimitedFilter::carry_valid_across(const SlideStart& start) {
  if (!start.valid_current || segments_.size() != 1 || segments_.front().get() != start.segment ||
      start.segment->columns() != start.columns) {
    return;
  }
  const std::size_t n = slices_.size();
  const std::size_t dropped = start.slices + 1 - n;
  shift_bits_down(valid_, dropped);
  valid_.resize(std::max(valid_.size(), (n + 63) / 64 + 1), 0);
  valid_[(n - 1) / 64] |= std::uint64_t{1} << ((n - 1) % 64);
  const std::uint32_t ring = start.columns + 1;
  const auto mark = [&](std::uint32_t column, bool valid) {
    std::uint64_t& phase_word = valid_by_phase_[column % params_.k];
    const std::uint64_t bit = std::uint64_t{1} << (column / params_.k);
    phase_word = valid ? phase_word | bit : phase_word & ~bit;
  };
  for (std::size_t i = 0; i < dropped; ++i) mark(static_cast<std::uint32_t>((start.oldest_column + i) % ring), false);
  mark(slices_.front().column, true);
  valid_version_ = layout_version_;
}

// The target generation (docs/filters.md): ceil(rate * T / l) + 1. The reference measures the rate over the generation
// that just ended alone; with small generations and bursty arrivals that estimate is noisy, and the early end of
// over-long generations (insert()) only cuts one side of the noise, so generations would come out short on average and
// the filter would sit above k+l slices. The rate is therefore measured over the last kRateWindow completed
// generations, read off the slices' stamps and generation sizes (at least 1 ns).
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
  for (const auto& segment : segments_) {
    s.bits += segment->cell_bits();  // the slices' bits
    s.padding_bits += segment->storage_bits() - segment->cell_bits();  // free columns, rounding
  }
  s.elements = elements_in_window(now_ns);
  s.bits_per_element = s.elements == 0 ? 0.0 : static_cast<double>(s.bits) / static_cast<double>(s.elements);
  s.estimated_fpr = sliced_fpr(params_.k, fill);
  if (oldest_valid_stamp != kUnstamped) s.effective_window = Duration{elapsed(now_ns, oldest_valid_stamp)};
  return s;
}

}  // namespace bloomgate::filters
