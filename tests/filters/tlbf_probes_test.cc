// The time-limited filter computes its probe values by differences (filters/src/tlbf_probes.h), upwards and
// downwards; they must be ProbeSequence's (hash.h), which persisted filters were written with. Keys from
// fixed-seed generators.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "bloomgate/filters/hash.h"
#include "tlbf_probes.h"

namespace bloomgate::filters {
namespace {

TEST(TlbfProbes, EqualProbeSequenceForEveryIndexAndK) {
  std::mt19937_64 rng(20);  // fixed seed
  for (int n = 0; n < 2000; ++n) {
    const KeyHash key{n < 3 ? std::uint64_t(n) * ~std::uint64_t{0} / 2 : rng()};
    const ProbeSequence sequence(key);
    detail::Probes probes;
    detail::probes_by_differences(key, detail::kMaxProbes, probes);
    for (std::uint32_t j = 0; j < detail::kMaxProbes; ++j) ASSERT_EQ(probes.value[j], sequence(j)) << "key " << key.value << " j " << j;
  }
}

// The one-segment query steps down from any hash index to 0 (then from k - 1 down): every start, every step.
TEST(TlbfProbes, DescendingFromEveryIndexEqualProbeSequence) {
  std::mt19937_64 rng(21);  // fixed seed
  for (int n = 0; n < 300; ++n) {
    const KeyHash key{n < 3 ? std::uint64_t(n) * ~std::uint64_t{0} / 2 : rng()};
    const ProbeSequence sequence(key);
    const std::uint64_t h2 = detail::second_probe_hash(key);
    for (std::uint32_t first = 0; first < detail::kMaxProbes; ++first) {
      detail::DescendingProbes down(key, h2, first);
      for (std::uint32_t j = first + 1; j-- > 0; down.step_down()) {
        ASSERT_EQ(down.value(), sequence(j)) << "key " << key.value << " from " << first << " at " << j;
      }
    }
  }
}

// KeyProbes computes the whole array only when asked, and then ProbeSequence's values.
TEST(TlbfProbes, KeyProbesValuesEqualProbeSequence) {
  const KeyHash key{0x9e3779b97f4a7c15ULL};
  const detail::KeyProbes probes(key, 16);
  const ProbeSequence sequence(key);
  for (std::uint32_t j = 0; j < 16; ++j) ASSERT_EQ(probes.values().value[j], sequence(j)) << j;
}

}  // namespace
}  // namespace bloomgate::filters
