// File: age_partitioned_filter.h
//
// The age-partitioned Bloom filter (APBF, Shtul, Baquero and Almeida 2020): a sliding window over the last
// insertions, counted rather than timed. k+l slices of m bits each, newest first; an insertion sets one bit
// in each of S[0..k-1]; after every g insertions the oldest slice is dropped and an empty one is pushed at
// the front. A query reports present when k consecutive slices have the key's bit set (bit_slice.h's
// oldest_matching_run).
//
// Sizing for a window of w insertions: (k, l) from fpr.h for the error rate and level, g = ceil(w / l)
// so that the l*g >= w most recent insertions are always reported present, and m = ceil(k*g / ln 2) so a
// slice is half full when it leaves the insertion region. Bits per element: k(k+l)/(l ln 2), e.g. 26.0 at
// 1e-3 with level 5 (k=15, l=74). Insertions older than (l+1)*g are always forgotten.
//
// Time plays no part: `now` is accepted for the common interface and otherwise ignored.
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "bit_slice.h"
#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/fpr.h"
#include "bloomgate/filters/options.h"

namespace bloomgate::filters {

class AgePartitionedFilter final : public Filter {
 public:
  explicit AgePartitionedFilter(const FilterOptions& options);
  ~AgePartitionedFilter() override;

  FilterType type() const noexcept override { return FilterType::kAgePartitioned; }
  bool test_and_insert(KeyHash key, TimePoint now) override;
  bool contains(KeyHash key, TimePoint now) const override;
  FilterStats stats(TimePoint now) const override;
  FilterImage image(ImageScope scope) const override;
  void mark_persisted() override;
  using Filter::contains, Filter::test_and_insert;  // the string-key overloads beside these

  static std::unique_ptr<Filter> restore(const Record& meta, const SliceViews& slices);

  SlicedParams params() const noexcept { return params_; }
  std::uint64_t generation_size() const noexcept { return generation_size_; }
  std::uint64_t slice_bits() const noexcept { return slice_bits_; }

 private:
  struct Restored {};
  explicit AgePartitionedFilter(Restored) {}
  bool contains_probes(const detail::Probes& probes) const;
  void shift();

  SlicedParams params_;
  double error_rate_ = 0;
  std::uint64_t window_ = 0;
  bool refresh_on_duplicate_ = false;
  std::uint32_t level_ = 0;
  std::uint64_t generation_size_ = 0;
  std::uint64_t slice_bits_ = 0;
  std::uint64_t generation_inserted_ = 0;
  std::uint64_t next_slice_id_ = 1;
  std::deque<detail::BitSlice> slices_;
  std::vector<std::uint64_t> dropped_slice_ids_;
};

}  // namespace bloomgate::filters
