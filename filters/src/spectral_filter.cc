// File: spectral_filter.cc
//
// Storage: the primary counters fill words [0, ceil(m / 4)); the secondary ones (Recurring Minimum only)
// start at the next word. Counters past the end of each table are padding and always 0.
//
// Metadata payload (little-endian), validated field by field on restore:
//   u8 mode | u64 expected | f64 error_rate | u64 primary_counters | u32 primary_probes |
//   u64 secondary_counters | u32 secondary_probes | u8 seen | i64 latest_nanos | u64 words
#include "spectral_filter.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "cell_estimates.h"
#include "paged_words.h"

namespace bloomgate::filters {
namespace {

using detail::PagedWords;

constexpr std::uint64_t kCounterBits = 16;
constexpr std::uint64_t kCountersPerWord = 4;
constexpr std::uint64_t kCounterMax = 0xFFFF;
constexpr std::uint32_t kMaxProbes = 64;
constexpr std::uint64_t kMaxCountersPerTable = std::uint64_t{1} << 31;  // 4 GiB
constexpr std::uint64_t kSecondaryShare = 4;  // the secondary is sized for expected / 4 keys

std::uint64_t words_for(std::uint64_t counters) { return (counters + kCountersPerWord - 1) / kCountersPerWord; }

std::uint64_t counter_shift(std::uint64_t index) { return kCounterBits * (index % kCountersPerWord); }

// Throws std::invalid_argument when the options ask for more memory than the cap.
std::pair<std::uint64_t, std::uint32_t> size_for(std::uint64_t expected, double error_rate) {
  const double keys = static_cast<double>(std::max<std::uint64_t>(expected, 1));
  const auto sizing = detail::standard_sizing(keys, error_rate, kMaxCountersPerTable);
  if (!sizing) {
    throw std::invalid_argument("spectral filter: expected_per_ttl and error_rate need more than 4 GiB of counters");
  }
  return {sizing->cells, sizing->probes};
}

bool known_mode(std::uint8_t mode) {
  return mode >= static_cast<std::uint8_t>(SpectralMode::kMinimumSelection) &&
         mode <= static_cast<std::uint8_t>(SpectralMode::kRecurringMinimum);
}

void require(bool condition, const char* what) {
  if (!condition) throw FormatError(std::string("spectral filter metadata: ") + what);
}

// The metadata payload as written by meta_payload(), before validation.
struct StoredMeta {
  std::uint8_t mode;
  std::uint64_t expected;
  double error_rate;
  std::uint64_t primary_counters;
  std::uint32_t primary_probes;
  std::uint64_t secondary_counters;
  std::uint32_t secondary_probes;
  std::uint8_t seen;
  std::int64_t latest_nanos;
  std::uint64_t words;
};

StoredMeta read_meta(std::string_view payload) {
  ByteReader r(payload);
  StoredMeta m{};
  m.mode = r.u8("mode");
  m.expected = r.u64("expected");
  m.error_rate = r.f64("error_rate");
  m.primary_counters = r.u64("primary counters");
  m.primary_probes = r.u32("primary probes");
  m.secondary_counters = r.u64("secondary counters");
  m.secondary_probes = r.u32("secondary probes");
  m.seen = r.u8("seen");
  m.latest_nanos = r.i64("latest");
  m.words = r.u64("words");
  r.expect_end("spectral filter metadata");
  return m;
}

}  // namespace

// The metadata payload read_meta() reads.
std::string SpectralFilter::meta_payload() const {
  ByteWriter w;
  w.u8(static_cast<std::uint8_t>(mode_));
  w.u64(expected_);
  w.f64(error_rate_);
  w.u64(primary_.counters);
  w.u32(primary_.probes);
  w.u64(secondary_.counters);
  w.u32(secondary_.probes);
  w.u8(seen_ ? 1 : 0);
  w.i64(to_epoch_nanos(latest_));
  w.u64(words_->size());
  return w.take();
}

// A key's distinct counter indices in one table, ascending.
struct SpectralFilter::Positions {
  std::array<std::uint64_t, kMaxProbes> index{};
  std::size_t size = 0;

  const std::uint64_t* begin() const { return index.data(); }
  const std::uint64_t* end() const { return index.data() + size; }
};

SpectralFilter::Config SpectralFilter::config_for(SpectralMode mode, std::uint64_t expected, double error_rate) {
  Config config{mode, expected, error_rate, Table{}, Table{}};
  std::tie(config.primary.counters, config.primary.probes) = size_for(expected, error_rate);
  if (mode == SpectralMode::kRecurringMinimum) {
    const std::uint64_t secondary_keys = std::max<std::uint64_t>(1, (expected + kSecondaryShare - 1) / kSecondaryShare);
    std::tie(config.secondary.counters, config.secondary.probes) = size_for(secondary_keys, error_rate);
    config.secondary.first_counter = words_for(config.primary.counters) * kCountersPerWord;
    config.secondary.first_probe = config.primary.probes;
  }
  return config;
}

SpectralFilter::SpectralFilter(const FilterOptions& options)
    : SpectralFilter(config_for(options.spectral_mode, options.expected_per_ttl, options.error_rate)) {}

SpectralFilter::SpectralFilter(const Config& config)
    : mode_(config.mode),
      expected_(config.expected),
      error_rate_(config.error_rate),
      primary_(config.primary),
      secondary_(config.secondary),
      words_(std::make_unique<PagedWords>(
          static_cast<std::size_t>(words_for(config.primary.counters) + words_for(config.secondary.counters)))) {}

SpectralFilter::~SpectralFilter() = default;

std::uint64_t SpectralFilter::total_words() const noexcept {
  return words_for(primary_.counters) + words_for(secondary_.counters);
}

SpectralFilter::Positions SpectralFilter::positions(const Table& table, KeyHash key) const {
  const ProbeSequence probe(key);
  Positions at;
  for (std::uint32_t j = 0; j < table.probes; ++j) {
    at.index[at.size++] = table.first_counter + fast_range(probe(table.first_probe + j), table.counters);
  }
  const auto first = at.index.begin();
  const auto last = first + static_cast<std::ptrdiff_t>(at.size);
  std::sort(first, last);
  at.size = static_cast<std::size_t>(std::unique(first, last) - first);
  return at;
}

std::uint64_t SpectralFilter::counter(std::uint64_t index) const noexcept {
  return ((*words_)[static_cast<std::size_t>(index / kCountersPerWord)] >> counter_shift(index)) & kCounterMax;
}

void SpectralFilter::set_counter(std::uint64_t index, std::uint64_t value) {
  std::uint64_t& word = words_->mut(static_cast<std::size_t>(index / kCountersPerWord));
  word = (word & ~(kCounterMax << counter_shift(index))) | (value << counter_shift(index));
}

std::uint64_t SpectralFilter::minimum(const Positions& at) const {
  std::uint64_t lowest = kCounterMax;
  for (std::uint64_t index : at) lowest = std::min(lowest, counter(index));
  return lowest;
}

bool SpectralFilter::recurring_minimum(const Positions& at, std::uint64_t lowest) const {
  return std::count_if(at.begin(), at.end(), [&](std::uint64_t index) { return counter(index) == lowest; }) >= 2;
}

void SpectralFilter::increment(const Positions& at, std::uint64_t by) {
  for (std::uint64_t index : at) {
    const std::uint64_t value = counter(index);
    if (value != kCounterMax) set_counter(index, std::min(kCounterMax, value + by));
  }
}

void SpectralFilter::increment_minima(const Positions& at) {
  const std::uint64_t lowest = minimum(at);
  if (lowest == kCounterMax) return;
  for (std::uint64_t index : at) {
    if (counter(index) == lowest) set_counter(index, lowest + 1);
  }
}

void SpectralFilter::decrement(const Positions& at) {
  for (std::uint64_t index : at) {
    const std::uint64_t value = counter(index);
    if (value != 0 && value != kCounterMax) set_counter(index, value - 1);
  }
}

void SpectralFilter::add_recurring_minimum(KeyHash key) {
  const Positions primary = positions(primary_, key);
  increment(primary, 1);
  const std::uint64_t primary_min = minimum(primary);
  if (recurring_minimum(primary, primary_min)) return;
  // A single minimum hints at a Bloom error: the secondary keeps a count of this key of its own, starting
  // from the primary's estimate the first time.
  const Positions secondary = positions(secondary_, key);
  increment(secondary, minimum(secondary) > 0 ? 1 : primary_min);
}

void SpectralFilter::add(KeyHash key) {
  switch (mode_) {
    case SpectralMode::kMinimumSelection: increment(positions(primary_, key), 1); return;
    case SpectralMode::kMinimalIncrease: increment_minima(positions(primary_, key)); return;
    case SpectralMode::kRecurringMinimum: add_recurring_minimum(key); return;
  }
}

std::uint64_t SpectralFilter::count(KeyHash key) const {
  const Positions primary = positions(primary_, key);
  const std::uint64_t primary_min = minimum(primary);
  if (mode_ != SpectralMode::kRecurringMinimum || recurring_minimum(primary, primary_min)) return primary_min;
  // The paper answers the secondary minimum; a secondary inflated past the primary's upper bound is a Bloom
  // error of the secondary itself, so the smaller of the two is never the worse answer.
  const std::uint64_t secondary_min = minimum(positions(secondary_, key));
  return secondary_min > 0 ? std::min(secondary_min, primary_min) : primary_min;
}

bool SpectralFilter::remove(KeyHash key) {
  if (mode_ == SpectralMode::kMinimalIncrease) {
    throw std::logic_error("spectral filter: Minimal Increase does not support deletions");
  }
  const Positions primary = positions(primary_, key);
  if (minimum(primary) == 0) return false;
  decrement(primary);
  if (mode_ == SpectralMode::kRecurringMinimum) {
    const Positions secondary = positions(secondary_, key);
    if (minimum(secondary) > 0) decrement(secondary);
  }
  return true;
}

bool SpectralFilter::test_and_insert(KeyHash key, TimePoint now) {
  latest_ = seen_ ? std::max(now, latest_) : now;
  seen_ = true;
  const bool present = count(key) > 0;
  add(key);
  return present;
}

bool SpectralFilter::contains(KeyHash key, TimePoint /*now*/) const { return count(key) > 0; }

std::uint64_t SpectralFilter::nonzero_counters(std::uint64_t first, std::uint64_t end) const {
  std::uint64_t nonzero = 0;
  for (std::uint64_t index = first; index < end; ++index) {
    if (counter(index) != 0) ++nonzero;
  }
  return nonzero;
}

FilterStats SpectralFilter::stats(TimePoint /*now*/) const {
  FilterStats stats;
  stats.type = FilterType::kSpectral;
  stats.k = primary_.probes;
  stats.slices = words_->pages();
  stats.bits = kCounterBits * (primary_.counters + secondary_.counters);
  stats.target_fpr = error_rate_;
  const std::uint64_t all_counters = words_->size() * kCountersPerWord;
  for (std::size_t p = 0; p < words_->pages(); ++p) {
    const std::uint64_t first = p * PagedWords::kWordsPerPage * kCountersPerWord;
    const std::uint64_t end = std::min(first + PagedWords::kWordsPerPage * kCountersPerWord, all_counters);
    SliceStats slice;
    slice.id = p + 1;
    slice.bits = kCounterBits * (end - first);
    slice.fill_ratio = static_cast<double>(nonzero_counters(first, end)) / static_cast<double>(end - first);
    stats.slice_stats.push_back(slice);
  }
  const double fill =
      static_cast<double>(nonzero_counters(0, primary_.counters)) / static_cast<double>(primary_.counters);
  detail::set_fill_estimates(stats, fill, primary_.counters, primary_.probes);
  stats.memory_bytes = sizeof(*this) + sizeof(detail::PagedWords) + words_->memory_bytes();
  set_per_element_figures(stats);
  return stats;
}

FilterImage SpectralFilter::image(ImageScope scope) const {
  return words_->image(FilterType::kSpectral, scope, meta_payload());
}

void SpectralFilter::mark_persisted() { words_->mark_clean(); }

std::unique_ptr<Filter> SpectralFilter::restore(const Record& meta, const SliceViews& lookup) {
  expect_meta_record(meta, FilterType::kSpectral);
  const StoredMeta stored = read_meta(meta.payload);
  require(known_mode(stored.mode), "unknown mode");
  require(stored.expected >= 1, "expected is 0");
  require(stored.error_rate > 0.0 && stored.error_rate < 1.0, "error_rate outside (0, 1)");
  require(stored.seen <= 1 && (stored.seen == 1 || stored.latest_nanos == 0), "time of an unused filter is set");
  Config config{};
  try {
    config = config_for(static_cast<SpectralMode>(stored.mode), stored.expected, stored.error_rate);
  } catch (const std::invalid_argument&) {
    throw FormatError("spectral filter metadata: filter exceeds the memory cap");
  }
  require(config.primary.counters == stored.primary_counters && config.primary.probes == stored.primary_probes &&
              config.secondary.counters == stored.secondary_counters &&
              config.secondary.probes == stored.secondary_probes,
          "counters or probes do not match mode, expected and error_rate");
  require(stored.words == words_for(config.primary.counters) + words_for(config.secondary.counters),
          "word count does not match");
  PagedWords::require_last_page(FilterType::kSpectral, stored.words, lookup);

  std::unique_ptr<SpectralFilter> filter(new SpectralFilter(config));
  filter->seen_ = stored.seen == 1;
  filter->latest_ = from_epoch_nanos(stored.latest_nanos);
  filter->words_->load_pages(FilterType::kSpectral, lookup);
  require(filter->padding_is_empty(), "counters beyond the end of a table are not 0");
  return filter;
}

bool SpectralFilter::padding_is_empty() const {
  const std::uint64_t primary_end = words_for(primary_.counters) * kCountersPerWord;
  const std::uint64_t secondary_end =
      secondary_.counters > 0 ? secondary_.first_counter + secondary_.counters : primary_end;
  return nonzero_counters(primary_.counters, primary_end) == 0 &&
         nonzero_counters(secondary_end, words_->size() * kCountersPerWord) == 0;
}

}  // namespace bloomgate::filters
