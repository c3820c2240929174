// File: tlbf_sizing.h
//
// The time-limited filter's sizing arithmetic, stateless and apart from any layout
// (as the Bloom mathematics of fpr.h): how large a generation is, how many insertions a new slice will take
// and how many bits that asks for, and when a new slice shares the newest segment's rows or opens a
// segment with headroom. The formulas and their reasons are in docs/filters.md, "Sizing the time-limited
// filter"; time_limited_slides.cc applies them to its slices.
#pragma once

#include <cstdint>
#include <span>

namespace bloomgate::filters::tlbf {

// Generation size (docs/filters.md, "Generation size"): the largest g such that slice i of the insertion
// region (i = 0 the newest, k of them) can still take g insertions in each of the k - i generations it has
// left there: min over i of ceil(capacity_left[i] / (k - i)), clamped to [1, max_generation].
std::uint64_t generation_size(std::span<const std::uint64_t> capacity_left, std::uint64_t max_generation);

// Target generation (docs/filters.md, "Target generation"): `inserted` insertions over `elapsed_ns` (at
// least 1 ns) make a rate; the target is that rate over one period T / l, rounded up, at most `growth_limit`,
// plus one; at or above max_generation it is max_generation.
std::uint64_t target_generation(double inserted, std::int64_t elapsed_ns, double period_ns, double growth_limit,
                                std::uint64_t max_generation);

// New slice capacity (docs/filters.md, "New slice capacity"): the insertions a new slice will receive over
// its k generations when generations target `target` insertions but slices still in the insertion region
// cap them. capacity_left[j - 1] is the room of the slice that will be at position j (1 .. k-1) once the new
// one is pushed.
std::uint64_t new_slice_capacity(std::span<const std::uint64_t> capacity_left, std::uint32_t k, std::uint64_t target);

// Slice size (docs/filters.md, "Slice size"): ceil(capacity / ln 2) bits, so that `capacity` insertions
// fill it to one half; at least 2k, at most max_bits. Not rounded to words: a segment's rows need not be.
std::uint64_t slice_bits(std::uint64_t capacity, std::uint32_t k, std::uint64_t max_bits);

// Whether a slice asked to be `bits` bits shares a segment of `rows` rows (docs/filters.md, "Segments"):
// exactly equal for a restore, else within [rows - rows / 8, rows + rows / 64].
bool shares_rows(std::uint64_t rows, std::uint64_t bits, bool exact_size) noexcept;

// The rows of a segment opened for slices asked to be `bits` bits, the newest segment having `newest_rows`:
// `bits` plus headroom of 2.5 relative standard deviations (`deviation`) of the asked sizes, between 1/128
// and 1/8, or, when the sizes grew past the newest segment's (a rate ramp), as much again as they grew, up
// to 1/4, or `ramp_headroom` (RampTracker::open) when that is more; at least `bits`, at most max_bits.
std::uint64_t segment_rows(std::uint64_t bits, std::uint64_t newest_rows, double deviation, std::uint64_t max_bits,
                           double ramp_headroom = 0);

// The relative standard deviation of the asked sizes before their spread has been observed: the Poisson
// noise of a rate counted over `rate_window` generations of g = bits ln 2 / k insertions.
double poisson_deviation(std::uint64_t bits, std::uint32_t k, std::uint64_t rate_window);

// The running mean and variance of the sizes asked at the slides, weighted exponentially over about 16
// slides (not persisted: a restored filter starts afresh).
class AskSpread {
 public:
  void record(std::uint64_t bits) noexcept;
  // The relative standard deviation once 32 sizes were seen, else a negative number.
  double deviation() const noexcept;

 private:
  std::uint64_t seen_ = 0;
  double mean_ = 0;
  double variance_ = 0;
};

// A rate ramp (docs/filters.md, "Segments"): the asked sizes rise past one segment after another. A segment
// holds k - 1 slices before it grows, so a segment that a ramp opens gets the headroom of the growth
// expected over k - 1 slides, and takes every ask from the one it was opened for up to its rows while the
// asks do not fall: a ramp then fills a few segments instead of opening one every slide or two, each with k
// columns of which one or two hold slices. Not persisted: a restored filter starts afresh.
class RampTracker {
 public:
  // A segment opens for an ask of `bits`; `grew`: the ask lies above the newest segment's band. Returns the
  // headroom the segment gets for the ramp, 0 when the asks are not ramping: the second opening in a row
  // because the asks grew extrapolates their growth per slide since the first one over k - 1 slides, at
  // most 1/2.
  double open(std::uint64_t bits, bool grew, std::uint32_t k) noexcept;
  // Whether the newest segment, of `rows` rows, takes an ask of `bits` as a ramp segment.
  bool takes(std::uint64_t bits, std::uint64_t rows) const noexcept;
  // Every slide, after the ask is placed.
  void asked(std::uint64_t bits) noexcept;

 private:
  std::uint64_t streak_first_ask_ = 0;  // 0: the newest segment did not open because the asks grew
  std::uint64_t streak_slides_ = 0;
  std::uint64_t ramp_opened_for_ = 0;   // 0: the newest segment is not a ramp segment
  std::uint64_t last_ask_ = 0;
};

}  // namespace bloomgate::filters::tlbf
