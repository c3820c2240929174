// File: bench/plain_tlbf.h
//
// Baseline for filter_bench's time-limited sweep: a deliberately plain time-limited Bloom filter, written
// from the algorithm of docs/filters.md ("Time-limited filter") the way a typical library would write it,
// with none of bloomgate's layout work. It exists only so that every figure of the sweep can be a ratio
// against a straightforward implementation of the same algorithm, timed in the same run on the same keys.
//
// What "plain" means here:
//  - one word array per slice (a std::deque of slices, newest first);
//  - two hash computations per key (XXH3-64 with two seeds), probe j = h1 + j * h2, bit = probe mod m_s;
//  - the slice with hash index j tests probe j (mod-k indexing), a new slice takes the index one below
//    its neighbour's;
//  - the query is the "k consecutive valid matches, jumping back by k on a miss" walk from the oldest
//    window, one slice after another;
//  - the generation size, target generation, new slice capacity and slice size of the adaptive sizing as written (generation size from the insertion region's room,
//    target generation from the last generation's rate, new slice capacity and size), the tail retired
//    when expired, the oldest slice kept while still valid.
// It uses the same (k, l) as the filter it is compared with (fpr.h's choose_sliced_params). It has no
// persistence, no caps beyond 4 (k + l) slices and no idle handling: the bench stream never idles.
// Thread-safety: none.
#pragma once

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include "bloomgate/filters/fpr.h"
#include "memory_accounting.h"

namespace bloomgate::bench {

class PlainTimeLimitedBloom {
 public:
  PlainTimeLimitedBloom(filters::SlicedParams params, std::uint64_t expected_per_ttl, std::int64_t ttl_ns)
      : k_(params.k), l_(params.l), ttl_ns_(ttl_ns), expected_(expected_per_ttl) {}

  bool test_and_insert(std::uint64_t key, std::int64_t now_ns) {
    if (slices_.empty()) create(now_ns);
    const Hashes h = hash(key);
    if (contains(h, now_ns)) return true;
    insert(h, now_ns);
    return false;
  }

  bool contains(std::uint64_t key, std::int64_t now_ns) const {
    return !slices_.empty() && contains(hash(key), now_ns);
  }

  std::uint64_t bits() const {
    std::uint64_t total = 0;
    for (const Slice& s : slices_) total += s.bits;
    return total;
  }
  // Every bit it holds: the object, the slices' deque and each slice's words at their capacity.
  std::uint64_t memory_bits() const {
    std::uint64_t bytes = sizeof(*this) + filters::detail::heap_bytes(slices_);
    for (const Slice& s : slices_) bytes += filters::detail::heap_bytes(s.words);
    return bytes * 8;
  }
  std::size_t slices() const { return slices_.size(); }

 private:
  struct Slice {
    std::vector<std::uint64_t> words;
    std::uint64_t bits = 0;
    std::uint64_t insertions = 0;
    std::uint32_t hash_index = 0;
    std::int64_t stamp = 0;  // 0: still being written (never expires)
    std::uint64_t generation = 0;  // insertions of the generation that ended when it was stamped

    std::uint64_t bit_of(std::uint64_t h1, std::uint64_t h2) const { return (h1 + hash_index * h2) % bits; }
    bool test(std::uint64_t h1, std::uint64_t h2) const {
      const std::uint64_t b = bit_of(h1, h2);
      return ((words[b / 64] >> (b % 64)) & 1U) != 0;
    }
    void set(std::uint64_t h1, std::uint64_t h2) {
      const std::uint64_t b = bit_of(h1, h2);
      words[b / 64] |= std::uint64_t{1} << (b % 64);
      ++insertions;
    }
  };
  struct Hashes {
    std::uint64_t h1;
    std::uint64_t h2;
  };

  static Hashes hash(std::uint64_t key) {
    return {XXH3_64bits_withSeed(&key, sizeof key, 0x706c61696e31ULL),
            XXH3_64bits_withSeed(&key, sizeof key, 0x706c61696e32ULL) | 1U};
  }
  static Slice make_slice(std::uint64_t bits, std::uint32_t hash_index) {
    Slice s;
    s.bits = bits;
    s.words.assign((bits + 63) / 64, 0);
    s.hash_index = hash_index;
    return s;
  }
  static std::uint64_t capacity(std::uint64_t bits) {
    return static_cast<std::uint64_t>(std::floor(static_cast<double>(bits) * std::log(2.0)));
  }
  std::uint64_t slice_bits(double insertions) const {
    return std::max<std::uint64_t>(2ULL * k_, static_cast<std::uint64_t>(std::ceil(insertions / std::log(2.0))));
  }
  bool expired(const Slice& s, std::int64_t now_ns) const { return s.stamp != 0 && s.stamp + ttl_ns_ < now_ns; }

  bool contains(const Hashes& h, std::int64_t now_ns) const {
    const auto n = static_cast<std::int64_t>(slices_.size());
    const auto k = static_cast<std::int64_t>(k_);
    std::int64_t i = n - k;
    std::int64_t matched_above = 0;
    std::int64_t matched = 0;
    while (i >= 0) {
      const Slice& s = slices_[static_cast<std::size_t>(i)];
      if (!expired(s, now_ns) && s.test(h.h1, h.h2)) {
        if (matched_above + ++matched == k) return true;
        ++i;
      } else {
        i -= k;
        matched_above = matched;
        matched = 0;
      }
    }
    return false;
  }

  void create(std::int64_t now_ns) {
    const std::uint64_t bits = slice_bits(static_cast<double>(expected_) * k_ / l_);
    for (std::uint32_t p = 0; p < k_ + l_; ++p) slices_.push_back(make_slice(bits, p % k_));
    slices_[k_].stamp = now_ns;
    generation_ = remaining_ = next_generation_size();
  }

  void insert(const Hashes& h, std::int64_t now_ns) {
    if (remaining_ == 0) slide(now_ns);
    for (std::uint32_t p = 0; p < k_; ++p) slices_[p].set(h.h1, h.h2);
    if (--remaining_ == 0) {
      slices_[k_ - 1].stamp = now_ns;
      slices_[k_ - 1].generation = generation_;
    }
  }

  // Eq (5).
  std::uint64_t next_generation_size() const {
    std::uint64_t g = std::numeric_limits<std::uint64_t>::max();
    for (std::uint32_t i = 0; i < k_; ++i) {
      const Slice& s = slices_[i];
      const double room = static_cast<double>(capacity(s.bits)) - static_cast<double>(s.insertions);
      g = std::min(g, static_cast<std::uint64_t>(std::max(0.0, std::ceil(room / (k_ - i)))));
    }
    return std::max<std::uint64_t>(g, 1);
  }

  void slide(std::int64_t now_ns) {
    // Eq (6): the rate of the generation that just ended.
    const std::int64_t dt = std::max<std::int64_t>(1, slices_[k_ - 1].stamp - slices_[k_].stamp);
    const double period = static_cast<double>(ttl_ns_) / l_;
    const auto target = static_cast<std::uint64_t>(std::ceil(static_cast<double>(generation_) * period / static_cast<double>(dt))) + 1;
    while (slices_.size() > k_ + l_ && expired(slices_.back(), now_ns)) slices_.pop_back();
    const Slice& oldest = slices_.back();
    if (expired(oldest, now_ns) || oldest.insertions == 0 || slices_.size() >= 4ULL * (k_ + l_)) slices_.pop_back();
    const std::uint32_t index = (slices_.front().hash_index + k_ - 1) % k_;
    slices_.push_front(make_slice(slice_bits(static_cast<double>(new_slice_capacity(target))), index));
    generation_ = remaining_ = next_generation_size();
  }

  // Eq (7), after the shift and before the new slice is pushed: the future position j is slices_[j - 1].
  std::uint64_t new_slice_capacity(std::uint64_t target) const {
    std::uint64_t left = k_;
    double committed = 0;
    while (left > 1) {
      double best = std::numeric_limits<double>::infinity();
      std::uint64_t best_j = 0;
      for (std::uint64_t j = 1; j < left; ++j) {
        const Slice& s = slices_[j - 1];
        const double room = static_cast<double>(capacity(s.bits)) - static_cast<double>(s.insertions) - committed;
        const double share = std::max(0.0, std::ceil(room / static_cast<double>(left - j)));
        if (share < best) {
          best = share;
          best_j = j;
        }
      }
      if (static_cast<double>(target) <= best) break;
      committed += best * static_cast<double>(left - best_j);
      left = best_j;
    }
    return static_cast<std::uint64_t>(committed) + left * target;
  }

  std::uint32_t k_;
  std::uint32_t l_;
  std::int64_t ttl_ns_;
  std::uint64_t expected_;
  std::deque<Slice> slices_;  // newest first
  std::uint64_t generation_ = 0;
  std::uint64_t remaining_ = 0;
};

}  // namespace bloomgate::bench
