#include "tlbf_sizing.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace bloomgate::filters::tlbf {
namespace {

// docs/filters.md, "Segments": the band a shared size may lie in, and the headroom of a new segment.
constexpr std::uint64_t kShareBelow = 8;
constexpr std::uint64_t kShareAbove = 64;
constexpr double kHeadroomDeviations = 2.5;
constexpr double kMinHeadroom = 1.0 / 128;
constexpr double kMaxHeadroom = 0.125;
constexpr double kMaxRampHeadroom = 0.25;
constexpr std::uint64_t kAskMemory = 16;  // slides
constexpr double kMaxRampSegmentHeadroom = 0.5;

std::uint64_t ceil_div(double numerator, double denominator) {
  const double q = std::ceil(numerator / denominator);
  return q <= 0 ? 0 : static_cast<std::uint64_t>(q);
}

}  // namespace

std::uint64_t generation_size(std::span<const std::uint64_t> capacity_left, std::uint64_t max_generation) {
  const auto k = static_cast<double>(capacity_left.size());
  std::uint64_t g = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t i = 0; i < capacity_left.size(); ++i) {
    g = std::min(g, ceil_div(static_cast<double>(capacity_left[i]), k - static_cast<double>(i)));
  }
  return std::clamp<std::uint64_t>(g, 1, max_generation);
}

std::uint64_t target_generation(double inserted, std::int64_t elapsed_ns, double period_ns, double growth_limit,
                                std::uint64_t max_generation) {
  const double dt = static_cast<double>(std::max<std::int64_t>(elapsed_ns, 1));
  const double target = std::min(std::ceil(inserted * period_ns / dt), growth_limit) + 1;
  return target >= static_cast<double>(max_generation) ? max_generation : static_cast<std::uint64_t>(target);
}

// Generations are filled greedily from the newest: while some slice j of the region cannot take `target` in
// each of the generations it has left before the new slice's (its share), the generations up to j take
// that share instead, and the search goes on over the generations before it.
std::uint64_t new_slice_capacity(std::span<const std::uint64_t> capacity_left, std::uint32_t k, std::uint64_t target) {
  std::uint64_t generations_left = k;
  double committed = 0;
  while (generations_left > 1) {
    double best = std::numeric_limits<double>::infinity();
    std::uint64_t best_position = 0;
    for (std::uint64_t j = 1; j < generations_left; ++j) {
      const double room = static_cast<double>(capacity_left[j - 1]) - committed;
      const double share = std::max(0.0, std::ceil(room / static_cast<double>(generations_left - j)));
      if (share < best) {
        best = share;
        best_position = j;
      }
    }
    if (static_cast<double>(target) <= best) break;
    committed += best * static_cast<double>(generations_left - best_position);
    generations_left = best_position;
  }
  return static_cast<std::uint64_t>(committed) + generations_left * target;
}

std::uint64_t slice_bits(std::uint64_t capacity, std::uint32_t k, std::uint64_t max_bits) {
  const auto bits = static_cast<std::uint64_t>(std::ceil(static_cast<double>(capacity) / std::log(2.0)));
  return std::min(std::max<std::uint64_t>(2ULL * k, bits), max_bits);
}

bool shares_rows(std::uint64_t rows, std::uint64_t bits, bool exact_size) noexcept {
  if (exact_size) return rows == bits;
  return bits >= rows - rows / kShareBelow && bits <= rows + rows / kShareAbove;
}

std::uint64_t segment_rows(std::uint64_t bits, std::uint64_t newest_rows, double deviation, std::uint64_t max_bits,
                           double ramp_headroom) {
  const double growth =
      std::clamp(static_cast<double>(bits) / static_cast<double>(newest_rows) - 1, 0.0, kMaxRampHeadroom);
  const double headroom =
      std::max({std::clamp(kHeadroomDeviations * deviation, kMinHeadroom, kMaxHeadroom), growth, ramp_headroom});
  const auto rows = static_cast<std::uint64_t>(std::ceil(static_cast<double>(bits) * (1 + headroom)));
  return std::max(bits, std::min(rows, max_bits));
}

double poisson_deviation(std::uint64_t bits, std::uint32_t k, std::uint64_t rate_window) {
  const double generation = std::max(1.0, static_cast<double>(bits) * std::log(2.0) / k);
  return 1 / std::sqrt(static_cast<double>(rate_window) * generation);
}

void AskSpread::record(std::uint64_t bits) noexcept {
  const double x = static_cast<double>(bits);
  if (seen_++ == 0) {
    mean_ = x;
    variance_ = 0;
    return;
  }
  const double alpha = 1.0 / static_cast<double>(kAskMemory);
  const double d = x - mean_;
  mean_ += alpha * d;
  variance_ = (1 - alpha) * (variance_ + alpha * d * d);
}

double AskSpread::deviation() const noexcept {
  if (seen_ < 2 * kAskMemory || mean_ <= 0) return -1;
  return std::sqrt(variance_) / mean_;
}

double RampTracker::open(std::uint64_t bits, bool grew, std::uint32_t k) noexcept {
  ramp_opened_for_ = 0;
  if (!grew) {
    streak_first_ask_ = 0;
    return 0;
  }
  if (streak_first_ask_ == 0 || streak_slides_ == 0 || bits <= streak_first_ask_) {
    streak_first_ask_ = bits;
    streak_slides_ = 0;
    return 0;
  }
  const double per_slide = std::pow(static_cast<double>(bits) / static_cast<double>(streak_first_ask_),
                                    1.0 / static_cast<double>(streak_slides_));
  ramp_opened_for_ = bits;
  return std::min(kMaxRampSegmentHeadroom, std::pow(per_slide, static_cast<double>(k - 1)) - 1);
}

bool RampTracker::takes(std::uint64_t bits, std::uint64_t rows) const noexcept {
  return ramp_opened_for_ != 0 && bits >= ramp_opened_for_ && bits >= last_ask_ && bits <= rows + rows / kShareAbove;
}

void RampTracker::asked(std::uint64_t bits) noexcept {
  last_ask_ = bits;
  if (streak_first_ask_ != 0) ++streak_slides_;
}

}  // namespace bloomgate::filters::tlbf
