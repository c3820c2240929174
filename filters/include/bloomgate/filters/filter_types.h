// File: filter_types.h
//
// Every filter type, its name and the bounds of the options that choose one: the one list that the
// records' type byte (format.h), make_filter, the service's configuration (config/) and the CLI share.
// A new type is one row of kFilterTypes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace bloomgate::filters {

// The byte a record's envelope stores (format.h): values are never reused.
enum class FilterType : std::uint8_t {
  kTimeLimited = 1,
  kAgePartitioned = 2,
  kContinuous = 3,
  kScalable = 4,
  kBloom = 5,
  kSpectral = 6,
  kAgingFingerprint = 7,
};

struct FilterTypeInfo {
  FilterType type;
  std::string_view name;  // in `filter.type`, `bloomgate filter --type`, inspect and the logs
};

// In the order the documentation lists them: the product's filter first.
inline constexpr std::array<FilterTypeInfo, 7> kFilterTypes{{
    {FilterType::kTimeLimited, "time_limited"},
    {FilterType::kAgePartitioned, "age_partitioned"},
    {FilterType::kContinuous, "continuous"},
    {FilterType::kScalable, "scalable"},
    {FilterType::kBloom, "bloom"},
    {FilterType::kSpectral, "spectral"},
    {FilterType::kAgingFingerprint, "aging_fingerprint"},
}};

// The (k, l) levels of the time-limited and age-partitioned filters (fpr.h): 0..kMaxTableLevel are the
// published table's rows, kMaxLevel one k further.
inline constexpr std::uint32_t kMaxTableLevel = 5;
inline constexpr std::uint32_t kMaxLevel = 6;
// The smallest target false-positive rate any type accepts; every type also needs it below 1.
inline constexpr double kMinErrorRate = 1e-12;
// aging_fingerprint's: its longest fingerprints (27 bits) reach about 6e-8.
inline constexpr double kMinAgingFingerprintErrorRate = 1e-7;

constexpr const char* filter_type_name(FilterType type) noexcept {
  for (const FilterTypeInfo& info : kFilterTypes) {
    if (info.type == type) return info.name.data();
  }
  return "unknown";
}

constexpr std::optional<FilterType> parse_filter_type(std::string_view name) noexcept {
  for (const FilterTypeInfo& info : kFilterTypes) {
    if (info.name == name) return info.type;
  }
  return std::nullopt;
}

// "time_limited, age_partitioned, ..., spectral": for help texts and errors.
inline std::string filter_type_list() {
  std::string out;
  for (const FilterTypeInfo& info : kFilterTypes) {
    if (!out.empty()) out += ", ";
    out += info.name;
  }
  return out;
}

}  // namespace bloomgate::filters
