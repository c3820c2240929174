// File: options.h
//
// How a filter is chosen and sized. One struct serves every filter type so that the CLI and the service
// configuration map onto it directly; each type reads the fields that concern it and ignores the others.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "bloomgate/filters/filter.h"

namespace bloomgate::filters {

enum class SpectralMode : std::uint8_t {
  kMinimumSelection = 1,  // insert increments all k counters; supports deletions
  kMinimalIncrease = 2,   // insert increments only the minimal counters; no deletions
  kRecurringMinimum = 3,  // primary plus secondary filter; supports deletions
};

struct FilterOptions {
  FilterType type = FilterType::kTimeLimited;
  double error_rate = 0.001;                      // target false-positive rate, in (0, 1)
  Duration ttl = std::chrono::minutes(10);        // time-based filters: how long a key is remembered
  std::uint64_t expected_per_ttl = 1'000'000;     // keys per TTL (time-based) or in total (bloom, spectral);
                                                  // a sizing hint that the time-limited filter adapts from
  std::uint64_t window = 0;                       // age_partitioned: count window; 0 means expected_per_ttl
  bool refresh_on_duplicate = false;              // a duplicate extends the key's lifetime

  // time_limited and age_partitioned: the (k, l) level, 0..6 (fpr.h: 0..5 are the published table's rows).
  // Higher levels probe more slices per query; bits per element fall up to level 5 or 6, then rise. Unset:
  // the level with the fewest bits per element for the error rate (space_optimal_level: 5 at 1e-2, 6 at
  // 1e-3 and 1e-4).
  std::optional<std::uint32_t> level;
  // time_limited: hard caps that keep memory bounded whatever the input rate (0 picks a default:
  // 4 x (k + l) slices, 2^33 bits per slice, 2^32 insertions per generation).
  std::uint64_t max_slices = 0;
  std::uint64_t max_slice_bits = 0;
  std::uint64_t max_generation_size = 0;

  // scalable: growth factor of each new filter (2 or 4) and tightening ratio of its error rate.
  std::uint32_t growth = 2;
  double tightening = 0.9;

  // spectral
  SpectralMode spectral_mode = SpectralMode::kMinimumSelection;
};

// The level a time-limited or age-partitioned filter uses: options.level, or space_optimal_level.
std::uint32_t sliced_level(const FilterOptions& options);

// The time-limited filter's default cap on one slice (FilterOptions::max_slice_bits = 0): 1 GiB.
inline constexpr std::uint64_t kDefaultMaxSliceBits = std::uint64_t{1} << 33;
// The most a time-limited or age-partitioned filter may allocate when it is made, as the bloom filter's
// cap: 16 GiB.
inline constexpr std::uint64_t kMaxSlicedCreationBits = std::uint64_t{1} << 37;

// The bits a time-limited or age-partitioned filter allocates when it is made: its k + l slices sized
// for expected_per_ttl (or window) keys. A double, because options far out of range need more than 2^64.
// 0 for the other types, which check their own caps when they are made.
double sliced_creation_bits(const FilterOptions& options);

// "6.4 GiB", "512 KiB": bytes with a binary unit, 3 significant digits.
std::string format_bytes(double bytes);

// What validate() throws: which option (its FilterOptions name, "error_rate") and what is wrong with it;
// what() is both ("error_rate must be in (0, 1), got 0.000000").
class OptionError : public std::invalid_argument {
 public:
  OptionError(std::string option, const std::string& problem);
  const std::string& option() const noexcept { return option_; }
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::string option_;
  std::string problem_;
};

// Throws OptionError naming the offending option.
void validate(const FilterOptions& options);

// Validates, then builds the filter the options describe.
std::unique_ptr<Filter> make_filter(const FilterOptions& options);

}  // namespace bloomgate::filters
