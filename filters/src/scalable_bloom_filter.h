// File: scalable_bloom_filter.h
//
// The scalable Bloom filter (Almeida, Baquero, Preguiça and Hutchison 2007; python-bloomfilter's
// ScalableBloomFilter): a list of partitioned Bloom filters that grows when the newest one is full, for
// streams whose total key count is not known in advance. No notion of time:
// keys are remembered for the filter's whole life, `now` is ignored and refresh_on_duplicate has nothing
// to refresh.
//
// Growth rule, with n0 = options.expected_per_ttl, P = options.error_rate, s = options.growth (2 or 4)
// and r = options.tightening (default 0.9):
//   sub-filter i has capacity n0 * s^i and error P * (1 - r) * r^i, each sized as in bloom_filter.h
//   (k_i = ceil(log2(1 / error_i)) slices). The errors sum to P * (1 - r) * (1 + r + r^2 + ...) < P, so
//   the compound FPR 1 - prod(1 - fpr_i) stays below P however many sub-filters there are.
//   A new sub-filter is added when a key is to be inserted and the newest one holds capacity insertions.
//   Example, n0 = 1000, P = 1e-3, s = 2: sub-filter 0 has k = 14 and 57,344 bits (slices have at least
//   4096 bits); sub-filter 10 holds 1,024,000 keys with k = 15 and 21,876,480 bits; the eleven together
//   take 5.2 MiB, 42 bits per key once sub-filter 10 is created, 21 once it is full.
// test_and_insert: present in any sub-filter (newest first, where most recent keys are) -> true, nothing
// written; otherwise the key goes into the newest sub-filter only.
//
// Memory is bounded: a sub-filter may not exceed kMaxSubFilterBits (2^34 bits, 2 GiB, which keeps its
// record under the 4 GiB payload limit), nor may there be more than kMaxSubFilters. When the next
// sub-filter would break either limit, growth stops and the newest one keeps absorbing insertions past its
// capacity; its FPR then rises, and stats().estimated_fpr shows it. With s = 2 the total stays below
// about twice the cap. Options whose first sub-filter already exceeds the cap are rejected.
//
// Persistence: sub-filter i is slice record i + 1 holding its whole bit array. Only the newest sub-filter
// receives insertions, so a checkpoint rewrites only it (two after a growth) plus the metadata. A large
// newest sub-filter is thus one large record, up to 2 GiB; the cost is accepted for the simple layout.
// The metadata payload is, little-endian:
//   offset 0  u64 n0     offset 8  f64 P     offset 16 u32 s     offset 20 f64 r     offset 28 u32 count
//   then per sub-filter, 36 bytes from offset 32 + 36 * i:
//   u64 capacity, f64 error, u32 k, u64 slice bits, u64 insertions
// Invariants checked on restore: 1 <= count <= kMaxSubFilters; capacity and error of sub-filter i follow
// the growth rule, and its k and slice bits the sizing of bloom_filter.h; every sub-filter but the newest
// holds exactly its capacity; the newest holds at least one insertion (one created it) unless it is the
// first, and no more than its capacity unless growth has stopped; each record matches its metadata in
// size; insertions <= set bits <= k * insertions.
//
// Thread-safety: none; one filter per partition worker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/format.h"
#include "bloomgate/filters/options.h"

namespace bloomgate::filters {

class ScalableBloomFilter final : public Filter {
 public:
  static constexpr std::uint64_t kMaxSubFilterBits = std::uint64_t{1} << 34;
  static constexpr std::size_t kMaxSubFilters = 64;

  // The inputs of the growth rule, fixed for the filter's life.
  struct Parameters {
    std::uint64_t initial_capacity = 0;  // n0
    double error_rate = 0;               // P, the bound on the compound FPR
    std::uint32_t growth = 2;            // s
    double tightening = 0.9;             // r
  };

  // Throws std::invalid_argument when growth is not 2 or 4, tightening is not in (0, 1), or the first
  // sub-filter would exceed kMaxSubFilterBits.
  explicit ScalableBloomFilter(const FilterOptions& options);
  ~ScalableBloomFilter() override;

  // Rebuilds a filter from its metadata record and its sub-filter records; throws FormatError when either
  // is missing, corrupt or inconsistent. Each sub-filter is allocated only once its record is in hand
  // and has the size the metadata promises.
  static std::unique_ptr<Filter> restore(const Record& meta, const SliceViews& slices);

  FilterType type() const noexcept override { return FilterType::kScalable; }
  bool test_and_insert(KeyHash key, TimePoint now) override;
  bool contains(KeyHash key, TimePoint now) const override;
  FilterStats stats(TimePoint now) const override;
  FilterImage image(ImageScope scope) const override;
  void mark_persisted() override;

  using Filter::contains, Filter::test_and_insert;  // the string-key overloads beside these

 private:
  struct SubFilter;

  ScalableBloomFilter(const Parameters& parameters, std::vector<SubFilter> sub_filters);

  bool contains_key(KeyHash key) const noexcept;
  // Adds the next sub-filter; false when the limits above forbid it.
  bool grow();
  std::string meta_payload() const;

  Parameters parameters_;
  std::vector<SubFilter> sub_filters_;  // oldest first; never empty
};

}  // namespace bloomgate::filters
