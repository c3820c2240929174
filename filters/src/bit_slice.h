// File: bit_slice.h
//
// Internal to filters/ (namespace detail): the pieces the age-partitioned family (age-partitioned and
// time-limited filters) shares: a bit slice, the per-key probe values, the "k consecutive matches, jumping
// back" query, and the slice record.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/format.h"
#include "bloomgate/filters/hash.h"
#include "slice_memory.h"

namespace bloomgate::filters::detail {

inline constexpr std::int64_t kUnstamped = std::numeric_limits<std::int64_t>::min();
inline constexpr std::uint32_t kMaxProbes = 64;
// A slice larger than this is refused when reading a record: 2^36 bits is 8 GiB.
inline constexpr std::uint64_t kMaxSliceBitsOnDisk = 1ULL << 36;

// The k probe values of one key, one per hash index j (RedisBloom's mod-k indexing): the slice with hash
// index j tests bit fast_range(probe[j], bits).
struct Probes {
  Probes() noexcept = default;  // for arrays of keys ahead; assigned before use
  explicit Probes(KeyHash key, std::uint32_t k) noexcept {
    const ProbeSequence sequence(key);
    for (std::uint32_t j = 0; j < k; ++j) value[j] = sequence(j);
  }
  // Only value[0..k) is written and read, so the array is deliberately not zeroed: this runs per key.
  std::array<std::uint64_t, kMaxProbes> value;
};

struct BitSlice {
  std::uint64_t id = 0;
  std::uint64_t bits = 0;        // m_s
  std::uint64_t insertions = 0;  // n_s
  std::uint32_t hash_index = 0;  // j_s
  std::int64_t stamp_ns = kUnstamped;  // t_s: time of the last insertion it receives; kUnstamped while written
  std::uint64_t generation_insertions = 0;  // insertions of the generation that ended when it was stamped
  Words words;  // slice_memory.h: from the restore's arena, or the heap
  bool dirty = true;  // changed since the last persisted checkpoint

  BitSlice() = default;
  BitSlice(std::uint64_t slice_id, std::uint64_t slice_bits, std::uint32_t index)
      : id(slice_id), bits(slice_bits), hash_index(index), words((slice_bits + 63) / 64, 0) {}

  std::uint64_t bit_of(const Probes& probes) const noexcept { return fast_range(probes.value[hash_index], bits); }

  bool test(const Probes& probes) const noexcept {
    const std::uint64_t b = bit_of(probes);
    return ((words[b >> 6] >> (b & 63)) & 1U) != 0;
  }

  void set(const Probes& probes) noexcept {
    const std::uint64_t b = bit_of(probes);
    words[b >> 6] |= std::uint64_t{1} << (b & 63);
    ++insertions;
    dirty = true;
  }

  void prefetch(const Probes& probes) const noexcept { __builtin_prefetch(&words[bit_of(probes) >> 6]); }

  double measured_fill() const noexcept;

  std::string encode(FilterType type) const;
  // Reads a slice record and checks it is the slice `expected_id` of a filter of `type` with `k` hash indexes:
  // its checksum is verified, then its words are copied once, from `record` into the slice's memory, which
  // comes from `arena` while it has room (slice_memory.h).
  static BitSlice decode(std::string_view record, FilterType type, std::uint64_t expected_id, std::uint32_t k,
                         const std::shared_ptr<SliceArena>& arena = nullptr);
};

// The query: the first window of k consecutive slices, each valid and with the key's bit set, among `slices`
// (newest first), searching from the oldest window: the index of that window's newest slice, or -1 when
// there is none. After a miss at position p every window containing p fails, so the search jumps to the
// window ending just below p and keeps the matches already seen there. oldest_matching_run is the walk
// over positions 0 (newest) to slice_count-1, `holds(p)` saying whether slice p is valid and has the
// key's bit; oldest_matching_window asks the slices themselves.
template <typename Holds>
std::int64_t oldest_matching_run(std::size_t slice_count, std::uint32_t k, Holds holds) {
  const auto n = static_cast<std::int64_t>(slice_count);
  const auto run = static_cast<std::int64_t>(k);
  std::int64_t i = n - run;
  std::int64_t matched_above = 0;
  std::int64_t matched = 0;
  while (i >= 0) {
    if (holds(static_cast<std::size_t>(i))) {
      if (matched_above + ++matched == run) return i - matched + 1;
      ++i;
    } else {
      i -= run;
      matched_above = matched;
      matched = 0;
    }
  }
  return -1;
}

template <typename Slices, typename IsValid>
std::int64_t oldest_matching_window(const Slices& slices, std::uint32_t k, const Probes& probes, IsValid is_valid) {
  return oldest_matching_run(slices.size(), k, [&](std::size_t p) {
    const auto& slice = slices[p];
    return is_valid(slice) && slice.test(probes);
  });
}

template <typename IsValid>
bool k_consecutive_match(const std::deque<BitSlice>& slices, std::uint32_t k, const Probes& probes,
                         IsValid is_valid) {
  return oldest_matching_window(slices, k, probes, is_valid) >= 0;
}

// Keys a batched test-and-insert looks ahead: their first lines are requested this many keys early.
inline constexpr std::size_t kBatchLookahead = 4;

// Slice stats shared by the family.
SliceStats slice_stats(const BitSlice& slice, bool expired);

}  // namespace bloomgate::filters::detail
