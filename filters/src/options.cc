#include "bloomgate/filters/options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>

#include "age_partitioned_filter.h"
#include "aging_fingerprint_filter.h"
#include "bloom_filter.h"
#include "continuous_filter.h"
#include "scalable_bloom_filter.h"
#include "spectral_filter.h"
#include "time_limited_filter.h"

namespace bloomgate::filters {
namespace {


void require(bool condition, const char* option, const std::string& problem) {
  if (!condition) throw OptionError(option, problem);
}

std::string shortest(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// Bits of one of the k + l slices that take `insertions` keys each (half_fill_slice_bits, in a double for
// sizes beyond 64 bits).
double slice_bits(double insertions, std::uint32_t k, std::uint64_t max_bits) {
  constexpr double kExact = 0x1p62;  // half_fill_slice_bits' integer arithmetic holds below this
  const double bits = insertions < kExact ? static_cast<double>(half_fill_slice_bits(insertions, 2ULL * k))
                                          : insertions / std::log(2.0);
  return max_bits == 0 ? bits : std::min(bits, static_cast<double>(max_bits));
}

void require_sliced_size(const FilterOptions& o) {
  const double bits = sliced_creation_bits(o);
  if (bits <= static_cast<double>(kMaxSlicedCreationBits)) return;
  const bool by_window = o.type == FilterType::kAgePartitioned && o.window != 0;
  const std::uint64_t keys = by_window ? o.window : o.expected_per_ttl;
  const SlicedParams p = choose_sliced_params(o.error_rate, sliced_level(o));
  require(false, by_window ? "window" : "expected_per_ttl",
          std::to_string(keys) + " keys need " + format_bytes(bits / 8) + " of filter memory (" +
              std::string(filter_type_name(o.type)) + ", error_rate " + shortest(o.error_rate) + ", level " +
              std::to_string(sliced_level(o)) + ": " + std::to_string(p.k + p.l) +
              " slices), more than the " + format_bytes(static_cast<double>(kMaxSlicedCreationBits) / 8) +
              " a filter may take");
}

// The aging-fingerprint filter's first table: 16 bytes a bucket of four keys at most (27-bit fingerprints),
// sized for expected_per_ttl x 8/7 at its size load, within the cap of the sliced filters.
void require_aging_size(const FilterOptions& o) {
  require(o.error_rate >= kMinAgingFingerprintErrorRate, "error_rate",
          "below 1e-7 is not supported by aging_fingerprint (27-bit fingerprints at most), got " + shortest(o.error_rate));
  const double bytes = static_cast<double>(o.expected_per_ttl) * 8 / 7 / kAgingTuning.size_load *
                       (aging_fingerprint_bits(o.error_rate) + detail::kEpochCodeBits) / 8;
  require(bytes <= static_cast<double>(kMaxSlicedCreationBits) / 8, "expected_per_ttl",
          std::to_string(o.expected_per_ttl) + " keys need " + format_bytes(bytes) +
              " of filter memory (aging_fingerprint, error_rate " + shortest(o.error_rate) + "), more than the " +
              format_bytes(static_cast<double>(kMaxSlicedCreationBits) / 8) + " a filter may take");
}

}  // namespace

OptionError::OptionError(std::string option, const std::string& problem)
    : std::invalid_argument(option + " " + problem), option_(std::move(option)), problem_(problem) {}

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  std::size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.3g %s", bytes, kUnits[unit]);
  return text;
}

std::uint32_t sliced_level(const FilterOptions& options) {
  return options.level ? *options.level : space_optimal_level(options.error_rate);
}

double sliced_creation_bits(const FilterOptions& o) {
  if (o.type != FilterType::kTimeLimited && o.type != FilterType::kAgePartitioned) return 0;
  const SlicedParams p = choose_sliced_params(o.error_rate, sliced_level(o));
  double per_slice = 0;
  std::uint64_t max_bits = 0;
  if (o.type == FilterType::kTimeLimited) {
    per_slice = static_cast<double>(o.expected_per_ttl) * p.k / p.l;
    max_bits = o.max_slice_bits != 0 ? o.max_slice_bits : kDefaultMaxSliceBits;
  } else {
    const double window = static_cast<double>(o.window != 0 ? o.window : o.expected_per_ttl);
    per_slice = p.k * std::ceil(window / p.l);
  }
  return (p.k + p.l) * slice_bits(per_slice, p.k, max_bits);
}

void validate(const FilterOptions& o) {
  require(std::isfinite(o.error_rate) && o.error_rate > 0 && o.error_rate < 1, "error_rate",
          "must be in (0, 1), got " + std::to_string(o.error_rate));
  require(o.error_rate >= kMinErrorRate, "error_rate", "below 1e-12 is not supported, got " + shortest(o.error_rate));
  require(o.ttl.count() > 0, "ttl", "must be positive");
  require(o.expected_per_ttl > 0, "expected_per_ttl", "must be positive");
  require(!o.level || *o.level <= kMaxLevel, "level",
          "must be 0.." + std::to_string(kMaxLevel) + ", got " + std::to_string(o.level.value_or(0)));
  require(o.growth == 2 || o.growth == 4, "growth", "must be 2 or 4, got " + std::to_string(o.growth));
  require(o.tightening > 0 && o.tightening < 1, "tightening", "must be in (0, 1)");
  if (o.type == FilterType::kTimeLimited) {
    const SlicedParams p = choose_sliced_params(o.error_rate, sliced_level(o));
    require(o.max_slices == 0 || o.max_slices >= p.k + p.l, "max_slices",
            "must be at least k+l = " + std::to_string(p.k + p.l));
    require(o.max_slice_bits == 0 || o.max_slice_bits >= 64, "max_slice_bits", "must be at least 64");
  }
  require_sliced_size(o);
  if (o.type == FilterType::kAgingFingerprint) require_aging_size(o);
}

std::unique_ptr<Filter> make_filter(const FilterOptions& options) {
  validate(options);
  switch (options.type) {
    case FilterType::kTimeLimited: return std::make_unique<TimeLimitedFilter>(options);
    case FilterType::kAgePartitioned: return std::make_unique<AgePartitionedFilter>(options);
    case FilterType::kContinuous: return std::make_unique<ContinuousFilter>(options);
    case FilterType::kScalable: return std::make_unique<ScalableBloomFilter>(options);
    case FilterType::kBloom: return std::make_unique<BloomFilter>(options);
    case FilterType::kSpectral: return std::make_unique<SpectralFilter>(options);
    case FilterType::kAgingFingerprint: return std::make_unique<AgingFingerprintFilter>(options);
  }
  throw std::invalid_argument("unknown filter type " + std::to_string(static_cast<int>(options.type)));
}

}  // namespace bloomgate::filters
