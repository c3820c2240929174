// File: filters/src/tlbf_time.h
//
// Internal to filters/: the time-limited filter's arithmetic on nanosecond timestamps, which saturates
// instead of overflowing (a stream may carry any timestamp), and the expiry of a slice as a deadline.
#pragma once

#include <cstdint>
#include <limits>

#include "bit_slice.h"

namespace bloomgate::filters::detail {

inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return b > 0 ? std::numeric_limits<std::int64_t>::max() : kUnstamped;
  return out;
}

// now - then without signed overflow, saturating at the int64 range.
inline std::int64_t elapsed(std::int64_t now, std::int64_t then) noexcept {
  std::int64_t out;
  if (__builtin_sub_overflow(now, then, &out)) {
    return now > then ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
  }
  return out;
}

// The last time at which a slice stamped `stamp_ns` is valid (ttl_ns >= 0): a slice still being written
// (kUnstamped) counts as stamped with the last insertion, so an idle filter forgets its current generation
// like every other, and before the first insertion nothing expires.
inline std::int64_t expiry_deadline(std::int64_t stamp_ns, std::int64_t last_insert_ns, std::int64_t ttl_ns) noexcept {
  const std::int64_t stamp = stamp_ns != kUnstamped ? stamp_ns : last_insert_ns;
  return stamp == kUnstamped ? std::numeric_limits<std::int64_t>::max() : saturating_add(stamp, ttl_ns);
}

}  // namespace bloomgate::filters::detail
