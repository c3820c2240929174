#include "bloomgate/filters/options.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "bloomgate/filters/age_partitioned_filter.h"
#include "bloomgate/filters/bloom_filter.h"
#include "bloomgate/filters/continuous_filter.h"
#include "bloomgate/filters/scalable_bloom_filter.h"
#include "bloomgate/filters/spectral_filter.h"
#include "bloomgate/filters/time_limited_filter.h"

namespace bloomgate::filters {
namespace {

constexpr double kMinErrorRate = 1e-12;

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument(message);
}

}  // namespace

std::uint32_t sliced_level(const FilterOptions& options) {
  return options.level ? *options.level : space_optimal_level(options.error_rate);
}

void validate(const FilterOptions& o) {
  require(std::isfinite(o.error_rate) && o.error_rate > 0 && o.error_rate < 1,
          "error_rate must be in (0, 1), got " + std::to_string(o.error_rate));
  require(o.error_rate >= kMinErrorRate, "error_rate below 1e-12 is not supported");
  require(o.ttl.count() > 0, "ttl must be positive");
  require(o.expected_per_ttl > 0, "expected_per_ttl must be positive");
  require(!o.level || *o.level <= kMaxLevel, "level must be 0..6, got " + std::to_string(o.level.value_or(0)));
  require(o.growth == 2 || o.growth == 4, "growth must be 2 or 4, got " + std::to_string(o.growth));
  require(o.tightening > 0 && o.tightening < 1, "tightening must be in (0, 1)");
  if (o.type == FilterType::kTimeLimited) {
    const SlicedParams p = choose_sliced_params(o.error_rate, sliced_level(o));
    require(o.max_slices == 0 || o.max_slices >= p.k + p.l,
            "max_slices must be at least k+l = " + std::to_string(p.k + p.l));
    require(o.max_slice_bits == 0 || o.max_slice_bits >= 64, "max_slice_bits must be at least 64");
  }
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
  }
  throw std::invalid_argument("unknown filter type " + std::to_string(static_cast<int>(options.type)));
}

std::optional<FilterType> parse_filter_type(std::string_view name) {
  for (FilterType t : {FilterType::kTimeLimited, FilterType::kAgePartitioned, FilterType::kContinuous,
                       FilterType::kScalable, FilterType::kBloom, FilterType::kSpectral}) {
    if (name == filter_type_name(t)) return t;
  }
  return std::nullopt;
}

}  // namespace bloomgate::filters
