// The anchored search must give exactly the answer of the jump-back search of tlbf-spec.md b.5
// (k_consecutive_match), on every pattern of matching slices. Fixed seeds.
#include "bloomgate/filters/bit_slice.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <vector>

namespace bloomgate::filters::detail {
namespace {

// The reference search over slices whose every bit is set, so a position matches exactly when
// `is_valid` says so; the slice id carries the position.
bool reference(const std::vector<bool>& pattern, std::uint32_t k) {
  std::deque<BitSlice> slices;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    slices.emplace_back(i, 64, static_cast<std::uint32_t>(i % k));
    slices.back().words.assign(1, ~std::uint64_t{0});
  }
  const Probes probes(KeyHash{42}, k);
  return k_consecutive_match(slices, k, probes, [&](const BitSlice& s) { return pattern[s.id]; });
}

bool anchored(const std::vector<bool>& pattern, std::uint32_t k) {
  return anchored_match(
      pattern.size(), k, [&](std::size_t i) { return static_cast<bool>(pattern.at(i)); },
      [&](std::size_t i) { ASSERT_LT(i, pattern.size()) << "prefetch out of range"; });
}

TEST(AnchoredMatch, AgreesWithTheJumpBackSearchOnRandomPatterns) {
  std::mt19937_64 rng(7);
  int present = 0;
  for (int trial = 0; trial < 200'000; ++trial) {
    const std::uint32_t k = 1 + static_cast<std::uint32_t>(rng() % 20);
    const std::size_t n = rng() % (6 * k + 4);
    const double fill = 0.3 + 0.7 * std::uniform_real_distribution<double>()(rng);
    std::vector<bool> pattern(n);
    for (std::size_t i = 0; i < n; ++i) pattern[i] = std::uniform_real_distribution<double>()(rng) < fill;
    const bool expected = reference(pattern, k);
    ASSERT_EQ(anchored(pattern, k), expected) << "k=" << k << " n=" << n << " trial " << trial;
    present += expected ? 1 : 0;
  }
  EXPECT_GT(present, 20'000) << "the patterns must exercise both answers";
  EXPECT_LT(present, 180'000);
}

TEST(AnchoredMatch, FindsARunOfExactlyKAtEveryOffset) {
  for (std::uint32_t k = 1; k <= 12; ++k) {
    for (std::size_t n = k; n <= 5 * k; ++n) {
      for (std::size_t start = 0; start + k <= n; ++start) {
        std::vector<bool> pattern(n, false);
        for (std::size_t i = start; i < start + k; ++i) pattern[i] = true;
        ASSERT_TRUE(anchored(pattern, k)) << "k=" << k << " n=" << n << " start=" << start;
        pattern[start + k / 2] = false;
        ASSERT_FALSE(anchored(pattern, k)) << "k=" << k << " n=" << n << " start=" << start;
      }
    }
  }
}

}  // namespace
}  // namespace bloomgate::filters::detail
