// File: bloom_filter.h
//
// The classic Bloom filter, in its partitioned form (python-bloomfilter's BloomFilter):
// a fixed capacity and no notion of time. It is the baseline the time-based filters are measured against,
// and the choice when a stream's whole key set is bounded and known in advance.
//
// Sizing, from options.expected_per_ttl (n, taken as the total number of keys) and options.error_rate (P):
//   k = ceil(log2(1/P)) slices, each of ceil(n * |ln P| / (k * (ln 2)^2)) bits rounded up to a multiple
//   of 64 and to at least 4096 (smaller slices let a key's probe positions correlate and push the FPR
//   above the estimate; see src/partitioned_bloom.h); hash j of a key indexes slice j. At n insertions
//   every slice is about half full and the FPR is about P. For example, n = 10^6 and P = 1e-2 give
//   k = 7 and 9,585,408 bits (1.14 MiB, 9.59 bits per key); P = 1e-3 gives k = 10 and 14,377,600 bits
//   (1.71 MiB, 14.38 bits per key).
// Past n insertions the filter keeps accepting keys (python-bloomfilter raises instead) and its FPR rises;
// stats().estimated_fpr, computed from the measured fill, shows it.
// Memory is capped at kMaxBits (2^37 bits, 16 GiB); options that need more are rejected.
//
// Persistence: the bits live in 64 KiB pages; page p is slice record p + 1, so a checkpoint rewrites only
// the pages written since the last mark_persisted(). The metadata payload is, little-endian:
//   offset 0  u64 capacity n      offset 8  f64 error rate P     offset 16 u32 k
//   offset 20 u64 slice bits      offset 28 u64 insertions       (36 bytes)
// Invariants checked on restore: k and slice bits are exactly what the sizing above gives for the stored
// n and P (so 1 <= k <= 64, slice bits a multiple of 64 of at least 4096, k * slice bits <= kMaxBits);
// every page is present with exactly its size; insertions <= set bits <= k * insertions (each counted
// insertion set at least one new bit and at most k).
//
// `now` is ignored: the window is unbounded, and refresh_on_duplicate has nothing to refresh.
// Thread-safety: none; one filter per partition worker.
#pragma once

#include <cstdint>
#include <memory>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/format.h"
#include "bloomgate/filters/options.h"

namespace bloomgate::filters {

namespace detail {
class PartitionedBloom;
}

class BloomFilter final : public Filter {
 public:
  static constexpr std::uint64_t kMaxBits = std::uint64_t{1} << 37;

  // Throws std::invalid_argument when the sizing exceeds kMaxBits or needs more than 64 probes.
  explicit BloomFilter(const FilterOptions& options);
  ~BloomFilter() override;

  // Rebuilds a filter from its metadata record and its page records; throws FormatError when either is
  // missing, corrupt or inconsistent. Allocates only after the last page is found with the right size.
  static std::unique_ptr<Filter> restore(const Record& meta, const SliceViews& slices);

  FilterType type() const noexcept override { return FilterType::kBloom; }
  bool test_and_insert(KeyHash key, TimePoint now) override;
  bool contains(KeyHash key, TimePoint now) const override;
  FilterStats stats(TimePoint now) const override;
  FilterImage image(ImageScope scope) const override;
  void mark_persisted() override;

  using Filter::contains, Filter::test_and_insert;  // the string-key overloads beside these

 private:
  explicit BloomFilter(std::unique_ptr<detail::PartitionedBloom> bits);

  std::string meta_payload() const;

  std::unique_ptr<detail::PartitionedBloom> bits_;
};

}  // namespace bloomgate::filters
