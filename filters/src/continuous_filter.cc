// File: continuous_filter.cc
//
// Metadata payload (little-endian), validated field by field on restore:
//   u64 cells | u32 probes | u64 expected_per_ttl | f64 error_rate | i64 ttl_nanos | u8 refresh_on_duplicate |
//   u8 seen | i64 epoch_nanos | i64 latest_nanos | u64 tick | u64 sweep_cursor | u64 pass_start_tick |
//   u64 words
#include "continuous_filter.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "cell_estimates.h"
#include "paged_words.h"

namespace bloomgate::filters {
namespace {

using detail::PagedWords;

constexpr std::uint64_t kCellBits = 4;
constexpr std::uint64_t kCellsPerWord = 16;
constexpr std::uint64_t kCellMask = 0xF;
constexpr std::uint64_t kSlots = 15;
constexpr std::uint64_t kFreshTicks = 2;  // a cell written at most this many ticks ago is fresh
constexpr std::uint64_t kSweepDeadlineTicks = 6;
constexpr double kLiveTtls = 1.5;  // keys live at the end of a tick, in units of expected_per_ttl
constexpr std::uint64_t kMaxWords = std::uint64_t{1} << 30;

std::uint64_t words_for(std::uint64_t cells) { return (cells + kCellsPerWord - 1) / kCellsPerWord; }

std::uint64_t slot_of(std::uint64_t tick) { return tick % kSlots + 1; }

// Age in ticks of a non-zero cell, counted from the tick whose slot is `reference_slot`; exact under W.
std::uint64_t age_of(std::uint64_t cell, std::uint64_t reference_slot) {
  return (reference_slot + kSlots - cell) % kSlots;
}

bool is_fresh(std::uint64_t cell, std::uint64_t reference_slot, std::uint64_t ticks_after_reference) {
  return cell != 0 && ticks_after_reference + age_of(cell, reference_slot) <= kFreshTicks;
}

std::uint64_t cell_shift(std::uint64_t index) { return kCellBits * (index % kCellsPerWord); }

// Half a TTL brings about expected_per_ttl / 2 inserts, so at the nominal rate a pass takes about one tick.
std::uint64_t sweep_budget(std::uint64_t words, std::uint64_t expected_per_ttl) {
  const std::uint64_t inserts_per_tick = std::max<std::uint64_t>(1, expected_per_ttl / 2);
  return std::max<std::uint64_t>(1, (words + inserts_per_tick - 1) / inserts_per_tick);
}

// Throws std::invalid_argument when the options ask for more memory than the cap.
detail::CellSizing size_for(std::uint64_t expected_per_ttl, double error_rate) {
  const double live = kLiveTtls * static_cast<double>(std::max<std::uint64_t>(expected_per_ttl, 1));
  const auto sizing = detail::standard_sizing(live, error_rate, kMaxWords * kCellsPerWord);
  if (!sizing) {
    throw std::invalid_argument("continuous filter: expected_per_ttl and error_rate need more than 8 GiB of cells");
  }
  return *sizing;
}

SliceStats page_slice_stats(std::size_t page, std::uint64_t page_cells, std::uint64_t fresh) {
  SliceStats slice;
  slice.id = page + 1;
  slice.bits = kCellBits * page_cells;
  slice.fill_ratio = static_cast<double>(fresh) / static_cast<double>(page_cells);
  return slice;
}

void require(bool condition, const char* what) {
  if (!condition) throw FormatError(std::string("continuous filter metadata: ") + what);
}

// The metadata payload as written by meta_payload(), before validation.
struct StoredMeta {
  std::uint64_t cells;
  std::uint32_t probes;
  std::uint64_t expected_per_ttl;
  double error_rate;
  std::int64_t ttl_nanos;
  std::uint8_t refresh_on_duplicate;
  std::uint8_t seen;
  std::int64_t epoch_nanos;
  std::int64_t latest_nanos;
  std::uint64_t tick;
  std::uint64_t sweep_cursor;
  std::uint64_t pass_start_tick;
  std::uint64_t words;
};

StoredMeta read_meta(std::string_view payload) {
  ByteReader r(payload);
  StoredMeta m{};
  m.cells = r.u64("cells");
  m.probes = r.u32("probes");
  m.expected_per_ttl = r.u64("expected_per_ttl");
  m.error_rate = r.f64("error_rate");
  m.ttl_nanos = r.i64("ttl");
  m.refresh_on_duplicate = r.u8("refresh_on_duplicate");
  m.seen = r.u8("seen");
  m.epoch_nanos = r.i64("epoch");
  m.latest_nanos = r.i64("latest");
  m.tick = r.u64("tick");
  m.sweep_cursor = r.u64("sweep cursor");
  m.pass_start_tick = r.u64("pass start tick");
  m.words = r.u64("words");
  r.expect_end("continuous filter metadata");
  return m;
}

// Everything but the clock: the sizing must be the one the options give.
void check_parameters(const StoredMeta& m) {
  require(m.expected_per_ttl >= 1, "expected_per_ttl is 0");
  require(m.error_rate > 0.0 && m.error_rate < 1.0, "error_rate outside (0, 1)");
  require(m.ttl_nanos > 0, "ttl is not positive");
  require(m.refresh_on_duplicate <= 1 && m.seen <= 1, "flag is neither 0 nor 1");
  require(m.cells >= 1 && m.probes >= 1, "no cells or no probes");
  detail::CellSizing sizing{};
  try {
    sizing = size_for(m.expected_per_ttl, m.error_rate);
  } catch (const std::invalid_argument&) {
    throw FormatError("continuous filter metadata: filter exceeds the memory cap");
  }
  require(sizing.cells == m.cells && sizing.probes == m.probes,
          "cells or probes do not match expected_per_ttl and error_rate");
  require(m.words == words_for(m.cells), "word count does not match the cell count");
  require(m.sweep_cursor < m.words, "sweep cursor past the last word");
}

}  // namespace

// The metadata payload read_meta() reads.
std::string ContinuousFilter::meta_payload() const {
  ByteWriter w;
  w.u64(cells_);
  w.u32(probes_);
  w.u64(expected_per_ttl_);
  w.f64(error_rate_);
  w.i64(ttl_.count());
  w.u8(refresh_on_duplicate_ ? 1 : 0);
  w.u8(seen_ ? 1 : 0);
  w.i64(to_epoch_nanos(epoch_));
  w.i64(to_epoch_nanos(latest_));
  w.u64(tick_);
  w.u64(sweep_cursor_);
  w.u64(pass_start_tick_);
  w.u64(words_->size());
  return w.take();
}

ContinuousFilter::Config ContinuousFilter::config_for(const FilterOptions& options) {
  const auto [cells, probes] = size_for(options.expected_per_ttl, options.error_rate);
  return Config{cells, probes, options.expected_per_ttl, options.error_rate, options.ttl,
                options.refresh_on_duplicate};
}

ContinuousFilter::ContinuousFilter(const FilterOptions& options) : ContinuousFilter(config_for(options)) {}

ContinuousFilter::ContinuousFilter(const Config& config)
    : cells_(config.cells),
      probes_(config.probes),
      expected_per_ttl_(config.expected_per_ttl),
      error_rate_(config.error_rate),
      ttl_(config.ttl),
      refresh_on_duplicate_(config.refresh_on_duplicate),
      half_ttl_nanos_(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(config.ttl.count()) / 2)),
      sweep_words_per_insert_(sweep_budget(words_for(config.cells), config.expected_per_ttl)),
      words_(std::make_unique<PagedWords>(static_cast<std::size_t>(words_for(config.cells)))) {}

ContinuousFilter::~ContinuousFilter() = default;

TimePoint ContinuousFilter::clamp(TimePoint now) const noexcept { return seen_ ? std::max(now, latest_) : now; }

std::uint64_t ContinuousFilter::tick_at(TimePoint clamped_now) const noexcept {
  // Unsigned difference: exact even when epoch and now are at opposite ends of the int64 range.
  const std::uint64_t elapsed =
      static_cast<std::uint64_t>(to_epoch_nanos(clamped_now)) - static_cast<std::uint64_t>(to_epoch_nanos(epoch_));
  return elapsed / half_ttl_nanos_;
}

void ContinuousFilter::advance(TimePoint now) {
  if (!seen_) {
    seen_ = true;
    epoch_ = now;
    latest_ = now;
    return;
  }
  if (now <= latest_) return;
  latest_ = now;
  const std::uint64_t tick = tick_at(now);
  if (tick == tick_) return;
  if (tick - pass_start_tick_ >= kSweepDeadlineTicks) {
    sweep_all(tick - tick_);
    sweep_cursor_ = 0;
    pass_start_tick_ = tick;
  }
  tick_ = tick;
}

std::uint64_t ContinuousFilter::cell(std::uint64_t index) const noexcept {
  return ((*words_)[static_cast<std::size_t>(index / kCellsPerWord)] >> cell_shift(index)) & kCellMask;
}

bool ContinuousFilter::fresh(KeyHash key, std::uint64_t ticks_after_current) const {
  const ProbeSequence probe(key);
  const std::uint64_t reference_slot = slot_of(tick_);
  for (std::uint32_t j = 0; j < probes_; ++j) {
    if (!is_fresh(cell(fast_range(probe(j), cells_)), reference_slot, ticks_after_current)) return false;
  }
  return true;
}

void ContinuousFilter::write(KeyHash key) {
  const ProbeSequence probe(key);
  const std::uint64_t slot = slot_of(tick_);
  for (std::uint32_t j = 0; j < probes_; ++j) {
    const std::uint64_t index = fast_range(probe(j), cells_);
    if (cell(index) == slot) continue;  // leaves the page clean when nothing changes
    std::uint64_t& word = words_->mut(static_cast<std::size_t>(index / kCellsPerWord));
    word = (word & ~(kCellMask << cell_shift(index))) | (slot << cell_shift(index));
  }
}

void ContinuousFilter::clear_stale(std::size_t word_index, std::uint64_t ticks_after_current) {
  const std::uint64_t word = (*words_)[word_index];
  if (word == 0) return;
  if (ticks_after_current > kFreshTicks) {  // all stale; also keeps the sums in is_fresh from overflowing
    words_->mut(word_index) = 0;
    return;
  }
  const std::uint64_t reference_slot = slot_of(tick_);
  std::uint64_t kept = 0;
  for (std::uint64_t i = 0; i < kCellsPerWord; ++i) {
    const std::uint64_t value = (word >> (kCellBits * i)) & kCellMask;
    if (is_fresh(value, reference_slot, ticks_after_current)) kept |= value << (kCellBits * i);
  }
  if (kept != word) words_->mut(word_index) = kept;
}

void ContinuousFilter::sweep_step() {
  for (std::uint64_t visited = 0; visited < sweep_words_per_insert_; ++visited) {
    clear_stale(sweep_cursor_, 0);
    if (++sweep_cursor_ == words_->size()) {
      sweep_cursor_ = 0;
      pass_start_tick_ = tick_;
    }
  }
}

void ContinuousFilter::sweep_all(std::uint64_t ticks_after_current) {
  for (std::size_t w = 0; w < words_->size(); ++w) clear_stale(w, ticks_after_current);
}

bool ContinuousFilter::test_and_insert(KeyHash key, TimePoint now) {
  advance(now);
  const bool present = fresh(key, 0);
  if (!present || refresh_on_duplicate_) write(key);
  sweep_step();
  return present;
}

bool ContinuousFilter::contains(KeyHash key, TimePoint now) const {
  if (!seen_) return false;
  const std::uint64_t ticks_after_current = tick_at(clamp(now)) - tick_;
  if (ticks_after_current > kFreshTicks) return false;
  return fresh(key, ticks_after_current);
}

std::uint64_t ContinuousFilter::fresh_cells(std::size_t first_word, std::size_t end_word,
                                            std::uint64_t ticks_after_current) const {
  const std::uint64_t reference_slot = slot_of(tick_);
  std::uint64_t fresh_count = 0;
  for (std::size_t w = first_word; w < end_word; ++w) {
    const std::uint64_t word = (*words_)[w];
    if (word == 0) continue;
    for (std::uint64_t i = 0; i < kCellsPerWord; ++i) {
      if (is_fresh((word >> (kCellBits * i)) & kCellMask, reference_slot, ticks_after_current)) ++fresh_count;
    }
  }
  return fresh_count;
}

FilterStats ContinuousFilter::stats(TimePoint now) const {
  FilterStats stats;
  stats.type = FilterType::kContinuous;
  stats.k = probes_;
  stats.slices = words_->pages();
  stats.bits = kCellBits * cells_;
  stats.target_fpr = error_rate_;
  stats.effective_window = ttl_;
  // Beyond 2 ticks nothing is fresh; the cap keeps the sum in is_fresh far from overflow.
  const std::uint64_t ticks_after_current =
      seen_ ? std::min<std::uint64_t>(tick_at(clamp(now)) - tick_, kSlots) : kSlots;
  std::uint64_t fresh_total = 0;
  for (std::size_t p = 0; p < words_->pages(); ++p) {
    const std::size_t first = p * PagedWords::kWordsPerPage;
    const std::size_t end = std::min(first + PagedWords::kWordsPerPage, words_->size());
    const std::uint64_t page_fresh = fresh_cells(first, end, ticks_after_current);
    const std::uint64_t page_cells =
        std::min<std::uint64_t>(cells_ - first * kCellsPerWord, (end - first) * kCellsPerWord);
    fresh_total += page_fresh;
    stats.slice_stats.push_back(page_slice_stats(p, page_cells, page_fresh));
  }
  const double fill = static_cast<double>(fresh_total) / static_cast<double>(cells_);
  detail::set_fill_estimates(stats, fill, cells_, probes_);
  stats.memory_bytes = sizeof(*this) + sizeof(detail::PagedWords) + words_->memory_bytes();
  set_per_element_figures(stats);
  return stats;
}

FilterImage ContinuousFilter::image(ImageScope scope) const {
  return words_->image(FilterType::kContinuous, scope, meta_payload());
}

void ContinuousFilter::mark_persisted() { words_->mark_clean(); }

std::unique_ptr<Filter> ContinuousFilter::restore(const Record& meta, const SliceViews& lookup) {
  expect_meta_record(meta, FilterType::kContinuous);
  const StoredMeta stored = read_meta(meta.payload);
  check_parameters(stored);
  PagedWords::require_last_page(FilterType::kContinuous, stored.words, lookup);

  std::unique_ptr<ContinuousFilter> filter(
      new ContinuousFilter(Config{stored.cells, stored.probes, stored.expected_per_ttl, stored.error_rate,
                                  Duration{stored.ttl_nanos}, stored.refresh_on_duplicate == 1}));
  filter->seen_ = stored.seen == 1;
  filter->epoch_ = from_epoch_nanos(stored.epoch_nanos);
  filter->latest_ = from_epoch_nanos(stored.latest_nanos);
  filter->tick_ = stored.tick;
  filter->sweep_cursor_ = static_cast<std::size_t>(stored.sweep_cursor);
  filter->pass_start_tick_ = stored.pass_start_tick;
  require(filter->state_is_consistent(), "clock or sweep state is inconsistent");
  filter->words_->load_pages(FilterType::kContinuous, lookup);
  require(filter->padding_is_empty(), "cells beyond the last one are not empty");
  return filter;
}

bool ContinuousFilter::state_is_consistent() const {
  if (!seen_) {
    return tick_ == 0 && sweep_cursor_ == 0 && pass_start_tick_ == 0 && to_epoch_nanos(epoch_) == 0 &&
           to_epoch_nanos(latest_) == 0;
  }
  return latest_ >= epoch_ && tick_at(latest_) == tick_ && pass_start_tick_ <= tick_ &&
         tick_ - pass_start_tick_ < kSweepDeadlineTicks;
}

bool ContinuousFilter::padding_is_empty() const {
  const std::uint64_t padding_cells = words_->size() * kCellsPerWord - cells_;
  if (padding_cells == 0) return true;
  return ((*words_)[words_->size() - 1] >> (kCellBits * (kCellsPerWord - padding_cells))) == 0;
}

}  // namespace bloomgate::filters
