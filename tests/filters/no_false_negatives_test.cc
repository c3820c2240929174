// The time-based filters (continuous, time-limited) against an exact TTL set: a key recorded within the
// TTL is always reported present, at a steady rate, at random rates and through bursts and long silences,
// with and without refresh_on_duplicate. Every stream uses a fixed seed (the filter type's base plus the
// case's number), so a failure reproduces exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"
#include "ground_truth.h"

namespace bloomgate::filters {
namespace {

using testing::Phase;
using testing::milliseconds;
using testing::replay;
using testing::seconds;

const TimePoint kStart = from_epoch_millis(1'700'000'000'000);
constexpr Duration kTtl = seconds(10);

class NoFalseNegatives : public ::testing::TestWithParam<std::tuple<FilterType, bool>> {
 protected:
  FilterType type() const { return std::get<0>(GetParam()); }
  bool refresh() const { return std::get<1>(GetParam()); }
  std::uint64_t seed(std::uint64_t case_number) const {
    return (type() == FilterType::kContinuous ? 110 : 10) + case_number;
  }

  std::unique_ptr<Filter> filter(double error_rate, std::uint64_t expected) const {
    FilterOptions o;
    o.type = type();
    o.error_rate = error_rate;
    o.ttl = kTtl;
    o.expected_per_ttl = expected;
    o.refresh_on_duplicate = refresh();
    return make_filter(o);
  }
};

TEST_P(NoFalseNegatives, SteadyRate) {
  const auto out = replay(*filter(0.01, 10'000), kTtl, kStart, {{seconds(60), 1000}}, 0.3, 15'000, false, seed(1),
                          refresh());
  EXPECT_GT(out.events, 50'000U);
  EXPECT_EQ(out.false_negatives, 0U);
}

TEST_P(NoFalseNegatives, RandomRates) {
  std::mt19937_64 rng(seed(2));
  std::vector<Phase> phases;
  for (int i = 0; i < 24; ++i) {
    phases.push_back({milliseconds(2500), 10.0 * std::pow(10.0, 3.0 * static_cast<double>(rng() % 1000) / 1000.0)});
  }
  const auto out = replay(*filter(0.01, 1'000), kTtl, kStart, phases, 0.3, 5'000, true, seed(3), refresh());
  EXPECT_GT(out.events, 10'000U);
  EXPECT_EQ(out.false_negatives, 0U);
}

TEST_P(NoFalseNegatives, BurstsAndSilences) {
  const std::vector<Phase> phases = {{seconds(30), 100},  {seconds(5), 10'000}, {seconds(20), 100},
                                     {seconds(2), 20'000}, {seconds(1), 0.5},    {seconds(90), 0.05},
                                     {seconds(30), 100}};
  const auto out = replay(*filter(0.001, 1'000), kTtl, kStart, phases, 0.4, 3'000, true, seed(4), refresh());
  EXPECT_GT(out.events, 50'000U);
  EXPECT_EQ(out.false_negatives, 0U);
}

INSTANTIATE_TEST_SUITE_P(TimeBased, NoFalseNegatives,
                         ::testing::Combine(::testing::Values(FilterType::kContinuous, FilterType::kTimeLimited),
                                            ::testing::Bool()),
                         [](const auto& param_info) {
                           return std::string(filter_type_name(std::get<0>(param_info.param))) +
                                  (std::get<1>(param_info.param) ? "_refresh" : "_no_refresh");
                         });

}  // namespace
}  // namespace bloomgate::filters
