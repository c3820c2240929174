// The time-limited filter computes its probe values by differences (filters/src/tlbf_probes.h); they must be
// ProbeSequence's (hash.h), which persisted filters were written with. Keys from a fixed-seed generator.
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
    const detail::Probes probes = detail::probes_by_differences(key, detail::kMaxProbes);
    for (std::uint32_t j = 0; j < detail::kMaxProbes; ++j) ASSERT_EQ(probes.value[j], sequence(j)) << "key " << key.value << " j " << j;
  }
}

}  // namespace
}  // namespace bloomgate::filters
