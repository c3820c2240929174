// What every filter type promises through the common interface, run over all of them: answers, a
// read-only query, and a serialized form that round-trips and rejects damage. Fixed seeds.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <span>
#include <vector>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"
#include "checkpoint_store.h"
#include "filter_options.h"
#include "ground_truth.h"

namespace bloomgate::filters {
namespace {

using testing::CheckpointStore;
using testing::key_name;

const TimePoint kStart = from_epoch_millis(1'700'000'000'000);

class FilterContract : public ::testing::TestWithParam<FilterType> {
 protected:
  std::unique_ptr<Filter> make(std::uint64_t expected = 2'000) const {
    return make_filter(testing::options_for(GetParam(), 0.01, expected));
  }
  // 3000 sightings of 2000 keys over 3 seconds.
  static void fill(Filter& filter) {
    for (int i = 0; i < 3000; ++i) filter.test_and_insert(key_name(i % 2000), kStart + std::chrono::milliseconds(i));
  }
};

TEST_P(FilterContract, ANewKeyIsAbsentThenPresent) {
  auto filter = make();
  EXPECT_EQ(filter->type(), GetParam());
  EXPECT_FALSE(filter->contains(std::string_view("k"), kStart));
  EXPECT_FALSE(filter->test_and_insert(std::string_view("k"), kStart));
  EXPECT_TRUE(filter->contains(std::string_view("k"), kStart + std::chrono::seconds(1)));
  EXPECT_TRUE(filter->test_and_insert(std::string_view("k"), kStart + std::chrono::seconds(1)));
}

// Only the time-limited and aging-fingerprint filters keep timestamps to tell a duplicate's age by; the others say nothing
// rather than a made-up age. Otherwise the answers and the state are those of test_and_insert.
TEST_P(FilterContract, WithAgeAnswersLikeTestAndInsert) {
  auto aged = make();
  auto plain = make();
  fill(*aged);
  fill(*plain);
  const TimePoint later = kStart + std::chrono::seconds(4);
  for (int i = 1900; i < 2100; ++i) {
    const Sighting sighting = aged->test_and_insert_with_age(key_name(i), later);
    EXPECT_EQ(sighting.present, plain->test_and_insert(key_name(i), later)) << i;
    const bool keeps_time = GetParam() == FilterType::kTimeLimited || GetParam() == FilterType::kAgingFingerprint;
    EXPECT_EQ(sighting.age.has_value(), sighting.present && keeps_time) << i;
  }
  EXPECT_EQ(serialize(*aged), serialize(*plain));
}

TEST_P(FilterContract, StatsNameTheFilter) {
  auto filter = make();
  fill(*filter);
  const FilterStats s = filter->stats(kStart + std::chrono::seconds(3));
  EXPECT_EQ(s.type, GetParam());
  EXPECT_GT(s.bits, 0U);
  EXPECT_GT(s.elements, 0U);
  EXPECT_GT(s.bits_per_element, 0.0);
  EXPECT_DOUBLE_EQ(s.target_fpr, 0.01);
  EXPECT_GT(s.estimated_fpr, 0.0);
  EXPECT_LT(s.estimated_fpr, 0.05);
}

TEST_P(FilterContract, SerializedFilterAnswersTheSame) {
  auto filter = make();
  fill(*filter);
  const std::string blob = serialize(*filter);
  auto copy = deserialize(blob);
  ASSERT_EQ(copy->type(), GetParam());
  EXPECT_EQ(serialize(*copy), blob);
  const TimePoint later = kStart + std::chrono::seconds(4);
  for (int i = 0; i < 4000; ++i) {
    ASSERT_EQ(copy->contains(key_name(i), later), filter->contains(key_name(i), later)) << i;
  }
  // Both go on identically.
  for (int i = 4000; i < 4500; ++i) {
    ASSERT_EQ(copy->test_and_insert(key_name(i), later), filter->test_and_insert(key_name(i), later)) << i;
  }
}

TEST_P(FilterContract, ABatchAnswersAndEndsLikeOneCallPerKey) {
  auto one_by_one = make();
  auto batched = make();
  // 20,000 sightings of 6,000 keys over 20 s (two TTLs, so slides happen inside batches), in batches of
  // 1 to 700 keys.
  std::mt19937_64 rng(11);
  std::vector<KeyHash> keys;
  std::vector<TimePoint> times;
  for (int i = 0; i < 20'000; ++i) {
    keys.push_back(hash_key(key_name(rng() % 6'000)));
    times.push_back(kStart + std::chrono::milliseconds(i));
  }
  std::size_t begin = 0;
  while (begin < keys.size()) {
    const std::size_t size = std::min<std::size_t>(1 + rng() % 700, keys.size() - begin);
    std::unique_ptr<bool[]> answers(new bool[size]);
    batched->test_and_insert_batch(std::span(keys).subspan(begin, size), std::span(times).subspan(begin, size),
                                   std::span(answers.get(), size));
    for (std::size_t i = 0; i < size; ++i) {
      ASSERT_EQ(answers[i], one_by_one->test_and_insert(keys[begin + i], times[begin + i])) << begin + i;
    }
    begin += size;
  }
  EXPECT_EQ(serialize(*batched), serialize(*one_by_one));
}

TEST_P(FilterContract, TruncatedBlobsAreRejected) {
  auto filter = make(200);
  fill(*filter);
  const std::string blob = serialize(*filter);
  // Every cut inside the first records and a spread of cuts through the rest.
  for (std::size_t n = 0; n < blob.size(); n += (n < 512 ? 1 : 61)) {
    EXPECT_THROW(deserialize(std::string_view(blob).substr(0, n)), FormatError) << n;
  }
}

TEST_P(FilterContract, CorruptedBlobsAreRejected) {
  auto filter = make(200);
  fill(*filter);
  const std::string blob = serialize(*filter);
  std::mt19937_64 rng(99);  // fixed seed: the same 300 flipped bytes every run
  for (int trial = 0; trial < 300; ++trial) {
    std::string bad = blob;
    const std::size_t at = rng() % bad.size();
    bad[at] = static_cast<char>(bad[at] ^ static_cast<char>(1 + rng() % 255));
    EXPECT_THROW(deserialize(bad), FormatError) << at;
  }
  EXPECT_THROW(deserialize("not a filter at all"), FormatError);
  EXPECT_THROW(deserialize(""), FormatError);
}

TEST_P(FilterContract, ACheckpointRestoresFromItsRecords) {
  auto filter = make();
  fill(*filter);
  CheckpointStore store;
  const FilterImage full = store.checkpoint(*filter, ImageScope::kFull);
  EXPECT_TRUE(filter->image(ImageScope::kChangedSinceLastPersist).slices.size() < full.slices.size() ||
              full.slices.size() == 1);
  EXPECT_EQ(serialize(*store.restore()), serialize(*filter));
  store.slices().erase(store.slices().begin());
  EXPECT_THROW(store.restore(), FormatError) << "a missing slice is an error";
}

INSTANTIATE_TEST_SUITE_P(AllTypes, FilterContract,
                         ::testing::Values(FilterType::kTimeLimited, FilterType::kAgePartitioned,
                                           FilterType::kContinuous, FilterType::kScalable, FilterType::kBloom,
                                           FilterType::kSpectral, FilterType::kAgingFingerprint),
                         [](const auto& type_info) { return std::string(filter_type_name(type_info.param)); });

}  // namespace
}  // namespace bloomgate::filters
