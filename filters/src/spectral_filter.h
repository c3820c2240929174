// File: spectral_filter.h
//
// The spectral Bloom filter (Cohen and Matias, SIGMOD 2003): a Bloom filter whose bits
// are counters, so that it estimates how often a key occurred, not only whether it did. As a Filter it
// answers "seen at all?" (count > 0) and has no time window: `now` only moves the clamped latest time.
//
// Counters. 16 bits, 4 to a 64-bit word, kept in pages of PagedWords (slice id = page index + 1).
// Counters saturate at 65535 and then stay there: once saturated the true value is unknown, so a saturated
// counter is neither incremented nor decremented again. Saturation can therefore only overestimate, never
// wrap to a small value or cause a false negative. 16 bits per counter is 16x the memory of a Bloom filter
// with the same m, bought for counts up to 65535 per counter.
//
// Positions. A key's counters are fast_range of its ProbeSequence values; repeated positions collapse, so an
// operation changes each distinct counter at most once and an insert and its delete stay symmetric.
//
// Sizing. The standard Bloom sizing for expected_per_ttl distinct keys in total at error_rate p:
//   m = ceil(-n ln p / (ln 2)^2),  k = round(ln 2 * m / n), clamped to 1..64; each counter table is capped at
//   2^31 counters (4 GiB).
// The membership false-positive rate is then about p once n distinct keys are in.
//
// Modes (FilterOptions::spectral_mode). count() is always the minimum of the key's counters (Minimum
// Selection query), except where Recurring Minimum says otherwise.
//   - Minimum Selection: add increments all of the key's counters, remove decrements them. Without
//     deletions count() never underestimates.
//   - Minimal Increase: add increments only the counters equal to the key's current minimum. Smaller
//     overestimates than MS and never an underestimate, but deleting would cause unbounded false negatives,
//     so remove() throws std::logic_error.
//   - Recurring Minimum: a primary SBF of m counters updated as in MS, plus a secondary SBF sized for n / 4
//     keys at p (the paper finds about 20% of keys with a single minimum) for the keys whose primary minimum
//     is attained by one counter only; a key enters the secondary at its primary minimum, then counts up
//     there. The secondary uses probe indices k, k + 1, ... of the same probe sequence, so its positions are
//     not a rescaling of the primary's. remove() decrements the primary, and the secondary too when the key's
//     secondary minimum is above 0 (the paper's "single minimum or present in the secondary, unless one of
//     its counters is 0" reduces to that). One deliberate deviation from the paper: a key with a single
//     primary minimum reads min(secondary, primary) rather than the secondary alone. The primary never
//     underestimates, so a secondary above it is an error of the secondary, and the answer is never worse.
//     RM can underestimate (a key whose minimum stops recurring later may read a secondary entry that missed
//     its earlier occurrences), but never to 0 for a key still inserted. On Zipf data it cuts the mean
//     signed error of MS about eightfold at design load, with a mean absolute error about equal to MS; at
//     2x design load and beyond its small secondary is swamped and its absolute error exceeds MS's.
// remove() of a key whose primary minimum is 0 returns false and changes nothing: that key was never added,
// and decrementing its counters would take occurrences away from other keys.
//
// Thread-safety: none; one filter per partition worker.
#pragma once

#include <cstdint>
#include <memory>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"

namespace bloomgate::filters {

namespace detail {
class PagedWords;
}

class SpectralFilter final : public Filter {
 public:
  explicit SpectralFilter(const FilterOptions& options);
  ~SpectralFilter() override;

  // Rebuilds a filter from its metadata record and its page records. Throws FormatError when the metadata
  // is malformed or inconsistent, or a page is missing or malformed.
  static std::unique_ptr<Filter> restore(const Record& meta, const SliceViews& slices);

  FilterType type() const noexcept override { return FilterType::kSpectral; }
  // True when the key occurred before; then records one more occurrence.
  bool test_and_insert(KeyHash key, TimePoint now) override;
  bool contains(KeyHash key, TimePoint now) const override;
  FilterStats stats(TimePoint now) const override;
  FilterImage image(ImageScope scope) const override;
  void mark_persisted() override;

  using Filter::contains, Filter::test_and_insert;  // the string-key overloads beside these

  // The estimated number of occurrences of the key.
  std::uint64_t count(KeyHash key) const;
  // Records one occurrence.
  void add(KeyHash key);
  // Takes one occurrence away; false when the key is absent. Throws std::logic_error in Minimal Increase.
  bool remove(KeyHash key);

  SpectralMode mode() const noexcept { return mode_; }
  std::uint64_t counters() const noexcept { return primary_.counters; }
  std::uint32_t probes() const noexcept { return primary_.probes; }
  std::uint64_t secondary_counters() const noexcept { return secondary_.counters; }

 private:
  // One counter array inside the shared word storage.
  struct Table {
    std::uint64_t first_counter = 0;
    std::uint64_t counters = 0;
    std::uint32_t first_probe = 0;
    std::uint32_t probes = 0;
  };
  struct Positions;
  struct Config {
    SpectralMode mode;
    std::uint64_t expected;
    double error_rate;
    Table primary;
    Table secondary;  // counters == 0 unless Recurring Minimum
  };
  explicit SpectralFilter(const Config& config);
  static Config config_for(SpectralMode mode, std::uint64_t expected, double error_rate);

  Positions positions(const Table& table, KeyHash key) const;
  std::uint64_t counter(std::uint64_t index) const noexcept;
  void set_counter(std::uint64_t index, std::uint64_t value);
  std::uint64_t minimum(const Positions& at) const;
  bool recurring_minimum(const Positions& at, std::uint64_t minimum) const;
  void increment(const Positions& at, std::uint64_t by);
  void increment_minima(const Positions& at);
  void decrement(const Positions& at);
  void add_recurring_minimum(KeyHash key);
  std::uint64_t nonzero_counters(std::uint64_t first, std::uint64_t end) const;
  std::uint64_t total_words() const noexcept;
  std::string meta_payload() const;
  bool padding_is_empty() const;

  SpectralMode mode_;
  std::uint64_t expected_;
  double error_rate_;
  Table primary_;
  Table secondary_;
  std::unique_ptr<detail::PagedWords> words_;
  bool seen_ = false;
  TimePoint latest_{};
};

}  // namespace bloomgate::filters
