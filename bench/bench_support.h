// File: bench/bench_support.h
//
// Helpers every benchmark shares: NaN for a figure not measured, bytes per MiB, the median of repeated
// figures, same-run ratios and their PASS/MISS verdicts, and splitmix64's 64-bit mix (generated keys
// and partitions).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace bloomgate::bench {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kMiB = 1024.0 * 1024.0;

// The median of the values that are numbers (NaN entries, a repetition without a figure, are left out);
// NaN when none is.
inline double median(std::vector<double> values) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// splitmix64's finalizer: a bijection of 64-bit words, so distinct inputs give distinct keys.
inline std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// splitmix64's output for the state x: the finalizer of x plus its increment.
inline std::uint64_t splitmix64(std::uint64_t x) noexcept { return mix64(x + 0x9e3779b97f4a7c15ULL); }

// Seconds of the steady clock since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// a / b for two figures of one run; NaN when either is not a number or b is not positive.
inline double ratio(double a, double b) {
  return std::isfinite(a) && std::isfinite(b) && b > 0 ? a / b : std::numeric_limits<double>::quiet_NaN();
}

// PASS when `reached` is at most `limit` (a cost), MISS when above, n/a when it is not a number.
inline const char* verdict_at_most(double reached, double limit) {
  if (!std::isfinite(reached)) return "n/a";
  return reached <= limit ? "PASS" : "MISS";
}

// PASS when `reached` is at least `limit` (a speed), MISS when below, n/a when it is not a number.
inline const char* verdict_at_least(double reached, double limit) {
  if (!std::isfinite(reached)) return "n/a";
  return reached >= limit ? "PASS" : "MISS";
}

}  // namespace bloomgate::bench
