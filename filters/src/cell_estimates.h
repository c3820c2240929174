// Internal: the standard Bloom filter formulas the single-array filters with cells of several bits
// (continuous, spectral) share: the sizing for n keys at a false-positive rate, and what a measured fill
// ratio says about the keys inside.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "bloomgate/filters/filter.h"

namespace bloomgate::filters::detail {

struct CellSizing {
  std::uint64_t cells;
  std::uint32_t probes;
};

// m = ceil(-keys ln p / (ln 2)^2) cells and k = round(ln 2 * m / keys) probes, clamped to 1..64: the false-
// positive rate is about p once `keys` distinct keys are in. nullopt when m would exceed max_cells.
inline std::optional<CellSizing> standard_sizing(double keys, double error_rate, std::uint64_t max_cells) {
  const double ln2 = std::log(2.0);
  const double cells = std::ceil(-keys * std::log(error_rate) / (ln2 * ln2));
  if (!(cells >= 1.0) || cells > static_cast<double>(max_cells)) return std::nullopt;
  const double probes = std::clamp(std::round(ln2 * cells / keys), 1.0, 64.0);
  return CellSizing{static_cast<std::uint64_t>(cells), static_cast<std::uint32_t>(probes)};
}

// Sets stats.elements (distinct keys behind the fill ratio, Swamidass and Baldi's estimate) and estimated_fpr
// (fill^k) from the fraction `fill` of `cells` cells in use. The per-element figures are the caller's, once
// memory_bytes is set (set_per_element_figures).
inline void set_fill_estimates(FilterStats& stats, double fill, std::uint64_t cells, std::uint32_t probes) {
  const double elements = fill >= 1.0 ? static_cast<double>(cells)
                                      : -static_cast<double>(cells) / static_cast<double>(probes) * std::log1p(-fill);
  stats.elements = static_cast<std::uint64_t>(std::llround(elements));
  stats.estimated_fpr = std::pow(fill, probes);
}

}  // namespace bloomgate::filters::detail
