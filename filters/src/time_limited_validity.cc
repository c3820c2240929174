// File: filters/src/time_limited_validity.cc
//
// TimeLimitedFilter's validity cache: which slices are valid (valid_, oldest first, and valid_by_phase_, the
// same bits by the phase tables of the one segment), for every `now` in (valid_after_ns_, valid_until_ns_]
// at layout_version_. A query reads it; it is recomputed when the layout moved or the time left that span,
// and a slide in one segment carries it forward instead.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "time_limited_filter.h"

#include "tlbf_time.h"

namespace bloomgate::filters {
namespace {

using detail::BitSlice;
using detail::ColumnSegment;
using detail::ColumnSlice;
using detail::kUnstamped;

// Bit i + count of `words` to bit i (zeros come in at the top).
void shift_bits_down(std::vector<std::uint64_t>& words, std::size_t count) {
  const std::size_t skip = std::min(count / 64, words.size());
  words.erase(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(skip));
  words.resize(words.size() + skip, 0);
  const unsigned shift = count % 64;
  if (shift == 0) return;
  for (std::size_t i = 0; i < words.size(); ++i) {
    words[i] = (words[i] >> shift) | (i + 1 < words.size() ? words[i + 1] << (64 - shift) : 0);
  }
}

}  // namespace

// Recomputed when the layout changed or `now` left the span over which no slice changes state.
const std::vector<std::uint64_t>& TimeLimitedFilter::valid_bits(std::int64_t now_ns) const {
  if (valid_cache_current(now_ns)) [[likely]] {
    return valid_;
  }
  return recomputed_valid_bits(now_ns);
}

const std::vector<std::uint64_t>& TimeLimitedFilter::recomputed_valid_bits(std::int64_t now_ns) const {
  const std::size_t n = slices_.size();
  const bool time_alone = valid_version_ == layout_version_ && segments_.size() == 1;  // only `now` moved
  previous_valid_.swap(valid_);
  valid_.assign((n + 63) / 64 + 1, 0);
  // Locals, not the members: the loop's stores into valid_ would make the compiler store them every turn.
  std::uint64_t* valid = valid_.data();
  std::int64_t after = std::numeric_limits<std::int64_t>::min();
  std::int64_t until = std::numeric_limits<std::int64_t>::max();
  bool expired_unstamped = false;
  const std::int64_t last_insert = last_insert_ns_;
  const std::int64_t ttl = ttl_ns_;
  std::size_t i = n;  // the bit of the slice, oldest first
  for (const ColumnSlice* by_position : slices_by_position()) {
    const BitSlice& slice = *by_position;
    --i;
    const std::int64_t deadline = detail::expiry_deadline(slice.stamp_ns, last_insert, ttl);  // expired() past it
    if (now_ns <= deadline) {
      valid[i / 64] |= std::uint64_t{1} << (i % 64);
      until = std::min(until, deadline);
    } else {
      after = std::max(after, deadline);
      expired_unstamped |= slice.stamp_ns == kUnstamped;
    }
  }
  valid_after_ns_ = after;
  valid_until_ns_ = until;
  valid_has_expired_unstamped_ = expired_unstamped;
  valid_version_ = layout_version_;
  if (time_alone) {
    flip_changed_by_phase();
  } else {
    valid_by_phase_.assign(params_.k, 0);
    if (segments_.size() == 1) segments_.front()->valid_by_phase(valid_.data(), valid_by_phase_.data());
  }
  return valid_;
}

// The slices whose validity the time changed (usually the oldest valid one) flip their bit by phase.
void TimeLimitedFilter::flip_changed_by_phase() const {
  const ColumnSegment& segment = *segments_.front();
  for (std::size_t w = 0; w < valid_.size() && w < previous_valid_.size(); ++w) {
    for (std::uint64_t changed = valid_[w] ^ previous_valid_[w]; changed != 0; changed &= changed - 1) {
      const auto age = static_cast<std::uint32_t>(64 * w + static_cast<std::size_t>(std::countr_zero(changed)));
      const std::uint32_t column = segment.column_of_age(age);
      valid_by_phase_[column % params_.k] ^= std::uint64_t{1} << (column / params_.k);
    }
  }
}

TimeLimitedFilter::SlideStart TimeLimitedFilter::slide_start(std::int64_t now_ns) const noexcept {
  const bool one_segment = segments_.size() == 1;
  return {valid_cache_current(now_ns) && one_segment,
          one_segment ? segments_.front().get() : nullptr, one_segment ? segments_.front()->columns() : 0, slices_.size(),
          slices_.back().column};
}

// A slide in one segment that neither grew nor moved drops the oldest slices (the oldest columns of the ring,
// from start.oldest_column on) and adds one, valid (unstamped, and a slide comes at most T after the last
// insertion). The valid cache follows without a recompute: the other slices keep their validity, and its
// bounds stay safe (the new slice's deadline, the last insertion's plus T, is the latest; a dropped slice's
// deadline leaves valid_until_ns_ at most earlier than it could be, which recomputes sooner).
void TimeLimitedFilter::carry_valid_across(const SlideStart& start) {
  if (!start.valid_current || segments_.size() != 1 || segments_.front().get() != start.segment ||
      start.segment->columns() != start.columns) {
    return;
  }
  const std::size_t n = slices_.size();
  const std::size_t dropped = start.slices + 1 - n;
  shift_bits_down(valid_, dropped);
  valid_.resize(std::max(valid_.size(), (n + 63) / 64 + 1), 0);
  valid_[(n - 1) / 64] |= std::uint64_t{1} << ((n - 1) % 64);
  const std::uint32_t ring = start.columns + 1;
  const auto mark = [&](std::uint32_t column, bool valid) {
    std::uint64_t& phase_word = valid_by_phase_[column % params_.k];
    const std::uint64_t bit = std::uint64_t{1} << (column / params_.k);
    phase_word = valid ? phase_word | bit : phase_word & ~bit;
  };
  for (std::size_t i = 0; i < dropped; ++i) mark(static_cast<std::uint32_t>((start.oldest_column + i) % ring), false);
  mark(slices_.front().column, true);
  valid_version_ = layout_version_;
}

}  // namespace bloomgate::filters
