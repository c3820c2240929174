// What the time-based filters (continuous, time-limited, aging-fingerprint) promise alike. Against an exact TTL set: a key
// recorded within the TTL is always reported present, at a steady rate, at random rates and through bursts
// and long silences, with and without refresh_on_duplicate. Every stream uses a fixed seed (the filter
// type's base plus the case's number), so a failure reproduces exactly. And any timestamp or key length is
// handled. Each type's own behaviour is in its own test file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"
#include "filter_options.h"
#include "ground_truth.h"

namespace bloomgate::filters {
namespace {

using testing::Phase;
using testing::milliseconds;
using testing::replay;
using testing::seconds;

const TimePoint kStart = from_epoch_millis(1'700'000'000'000);
constexpr Duration kTtl = seconds(10);

class TimeBasedFilter : public ::testing::TestWithParam<FilterType> {
 protected:
  std::unique_ptr<Filter> filter(double error_rate) const {
    return make_filter(testing::options_for(GetParam(), error_rate, 1'000, kTtl));
  }
};

TEST_P(TimeBasedFilter, ExtremeTimestampsDoNotOverflow) {
  const auto filter = this->filter(0.01);
  const TimePoint earliest = from_epoch_nanos(std::numeric_limits<std::int64_t>::min() + 1);
  const TimePoint latest = from_epoch_nanos(std::numeric_limits<std::int64_t>::max());
  EXPECT_FALSE(filter->test_and_insert(std::string_view("old"), earliest));
  EXPECT_TRUE(filter->contains(std::string_view("old"), earliest));
  EXPECT_FALSE(filter->contains(std::string_view("old"), latest));
  EXPECT_FALSE(filter->test_and_insert(std::string_view("future"), latest));
  EXPECT_FALSE(filter->contains(std::string_view("old"), latest));
  EXPECT_TRUE(filter->test_and_insert(std::string_view("future"), latest));
  EXPECT_TRUE(filter->contains(std::string_view("future"), kStart)) << "clamped to the latest time seen";
  EXPECT_GE(filter->stats(latest).elements, 1U);
}

TEST_P(TimeBasedFilter, EmptyTinyAndHugeKeys) {
  const auto filter = this->filter(0.001);
  const std::string huge(1 << 20, 'x');
  for (const std::string& key : {std::string(), std::string("a"), std::string(1, '\0'), huge}) {
    EXPECT_FALSE(filter->test_and_insert(key, kStart)) << key.size();
    EXPECT_TRUE(filter->test_and_insert(key, kStart + seconds(1))) << key.size();
  }
  EXPECT_FALSE(filter->contains(huge + "y", kStart));
}

TEST_P(TimeBasedFilter, QueriesDoNotChangeState) {
  const auto filter = this->filter(0.01);
  for (int i = 0; i < 5000; ++i) filter->test_and_insert(testing::key_name(i), kStart + milliseconds(i));
  const std::string before = serialize(*filter);
  for (int i = 0; i < 5000; ++i) (void)filter->contains(testing::key_name(i), kStart + seconds(1000));
  (void)filter->stats(kStart + seconds(1000));
  EXPECT_EQ(serialize(*filter), before);
}

INSTANTIATE_TEST_SUITE_P(Types, TimeBasedFilter, ::testing::Values(FilterType::kContinuous, FilterType::kTimeLimited, FilterType::kAgingFingerprint),
                         [](const auto& param_info) { return std::string(filter_type_name(param_info.param)); });

class NoFalseNegatives : public ::testing::TestWithParam<std::tuple<FilterType, bool>> {
 protected:
  FilterType type() const { return std::get<0>(GetParam()); }
  bool refresh() const { return std::get<1>(GetParam()); }
  std::uint64_t seed(std::uint64_t case_number) const {
    switch (type()) {
      case FilterType::kContinuous: return 110 + case_number;
      case FilterType::kAgingFingerprint: return 210 + case_number;
      default: return 10 + case_number;
    }
  }

  std::unique_ptr<Filter> filter(double error_rate, std::uint64_t expected) const {
    return make_filter(testing::options_for(type(), error_rate, expected, kTtl, refresh()));
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
                         ::testing::Combine(::testing::Values(FilterType::kContinuous, FilterType::kTimeLimited, FilterType::kAgingFingerprint),
                                            ::testing::Bool()),
                         [](const auto& param_info) {
                           return std::string(filter_type_name(std::get<0>(param_info.param))) +
                                  (std::get<1>(param_info.param) ? "_refresh" : "_no_refresh");
                         });

}  // namespace
}  // namespace bloomgate::filters
