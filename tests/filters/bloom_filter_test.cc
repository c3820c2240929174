// Unit tests of the classic (partitioned) Bloom filter: sizing, false negatives, measured FPR, persistence
// and rejection of corrupt records.
//
// Keys are deterministic strings built from the fixed seed kSeed and a counter, so every run inserts and
// queries the same keys and prints the same figures. No test measures time.
#include "bloomgate/filters/bloom_filter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "bloomgate/filters/format.h"
#include "bloomgate/filters/options.h"
#include "checkpoint_store.h"
#include "ground_truth.h"

namespace bloomgate::filters {
namespace {

using testing::CheckpointStore;
using testing::double_bits;
using testing::edited;
using testing::measured_fpr;
using testing::put_le;

constexpr TimePoint kNow{};  // the filter ignores time
constexpr std::uint64_t kSeed = 0x5eed0001;

std::string key(std::string_view kind, std::uint64_t i) { return testing::seeded_key(kind, kSeed, i); }

FilterOptions bloom_options(std::uint64_t capacity, double error_rate) {
  FilterOptions options;
  options.type = FilterType::kBloom;
  options.expected_per_ttl = capacity;
  options.error_rate = error_rate;
  return options;
}

// Metadata payload offsets, as documented in bloom_filter.h.
constexpr std::size_t kCapacityAt = 0;
constexpr std::size_t kErrorAt = 8;
constexpr std::size_t kProbesAt = 16;
constexpr std::size_t kSliceBitsAt = 20;
constexpr std::size_t kInsertionsAt = 28;
constexpr std::size_t kMetaPayloadSize = 36;

void expect_equal_stats(const Filter& a, const Filter& b) {
  const FilterStats sa = a.stats(kNow);
  const FilterStats sb = b.stats(kNow);
  EXPECT_EQ(sa.k, sb.k);
  EXPECT_EQ(sa.slices, sb.slices);
  EXPECT_EQ(sa.bits, sb.bits);
  EXPECT_EQ(sa.elements, sb.elements);
  EXPECT_EQ(sa.target_fpr, sb.target_fpr);
  EXPECT_EQ(sa.estimated_fpr, sb.estimated_fpr);
}

TEST(BloomFilter, SizingFollowsTheFormula) {
  // n = 10^6, P = 1e-3: k = ceil(log2 1000) = 10; each slice ceil(10^6 * ln 1000 / (10 * ln^2 2)) = 1,437,759
  // bits, rounded up to 1,437,760; 14,377,600 bits in 28 pages of 64 KiB.
  BloomFilter filter(bloom_options(1'000'000, 1e-3));
  const FilterStats stats = filter.stats(kNow);
  EXPECT_EQ(stats.type, FilterType::kBloom);
  EXPECT_EQ(stats.k, 10U);
  EXPECT_EQ(stats.l, 0U);
  EXPECT_EQ(stats.bits, 14'377'600U);
  EXPECT_EQ(stats.slices, 28U);
  EXPECT_EQ(stats.slice_stats.size(), 28U);
  EXPECT_EQ(stats.elements, 0U);
  EXPECT_EQ(stats.target_fpr, 1e-3);
  EXPECT_EQ(stats.estimated_fpr, 0.0);
  EXPECT_FALSE(stats.effective_window.has_value());

  // n = 10^6, P = 1e-2: k = 7, 1,369,344 bits per slice.
  EXPECT_EQ(BloomFilter(bloom_options(1'000'000, 1e-2)).stats(kNow).bits, 7U * 1'369'344U);
}

TEST(BloomFilter, RejectsSizesPastTheCap) {
  EXPECT_THROW(BloomFilter{bloom_options(std::uint64_t{1} << 40, 1e-3)}, std::invalid_argument);
  EXPECT_THROW(BloomFilter{bloom_options(1000, 1e-30)}, std::invalid_argument);  // needs 100 probes
}

struct SizingCase {
  std::uint64_t capacity;
  double error_rate;
};

class BloomFilterAtCapacity : public ::testing::TestWithParam<SizingCase> {};

TEST_P(BloomFilterAtCapacity, NoFalseNegativesAndFprNearTarget) {
  const double target = GetParam().error_rate;
  const std::uint64_t capacity = GetParam().capacity;
  BloomFilter filter(bloom_options(capacity, target));
  for (std::uint64_t i = 0; i < capacity; ++i) filter.test_and_insert(key("present", i), kNow);
  for (std::uint64_t i = 0; i < capacity; ++i) ASSERT_TRUE(filter.contains(key("present", i), kNow)) << i;

  // 4000 / P absent keys (400 times the 10 / P minimum) put about 4000 expected false positives in the
  // sample, so the 1.1x bound is several standard deviations wide.
  const auto queries = static_cast<std::uint64_t>(4000.0 / target);
  const double measured = measured_fpr(filter, "absent", kSeed, queries, kNow);
  const FilterStats stats = filter.stats(kNow);
  std::cout << "[ figures  ] bloom P=" << target << " n=" << capacity << " k=" << stats.k
            << " bits/key=" << stats.bits_per_element << " insertions=" << stats.elements
            << " measured FPR=" << measured << " (" << measured / target << " x P) over " << queries
            << " absent keys, estimated FPR=" << stats.estimated_fpr << "\n";
  EXPECT_LE(measured, 1.1 * target);
  EXPECT_GT(measured, 0.5 * target);  // the filter is not oversized either
  EXPECT_NEAR(stats.estimated_fpr, measured, 0.1 * measured);
  EXPECT_LE(stats.elements, capacity);
  // Keys taken for false positives while filling are not counted: about P / 2 of them on average.
  EXPECT_GT(static_cast<double>(stats.elements), static_cast<double>(capacity) * (1.0 - target));
}

// 3000 keys put the slices just above the 4096-bit minimum, the smallest size where probe positions could
// still correlate (see partitioned_bloom.h).
INSTANTIATE_TEST_SUITE_P(Sizes, BloomFilterAtCapacity,
                         ::testing::Values(SizingCase{100'000, 1e-2}, SizingCase{100'000, 1e-3},
                                           SizingCase{3000, 1e-2}, SizingCase{3000, 1e-3}),
                         [](const ::testing::TestParamInfo<SizingCase>& case_info) {
                           return "n" + std::to_string(case_info.param.capacity) + "_P" +
                                  std::to_string(
                                      static_cast<int>(std::lround(-std::log10(case_info.param.error_rate))));
                         });

TEST(BloomFilter, DuplicateIsReportedAndCountedOnce) {
  BloomFilter filter(bloom_options(1000, 1e-3));
  EXPECT_FALSE(filter.test_and_insert("k", kNow));
  EXPECT_TRUE(filter.test_and_insert("k", kNow));
  EXPECT_TRUE(filter.contains("k", kNow));
  EXPECT_EQ(filter.stats(kNow).elements, 1U);
}

TEST(BloomFilter, EmptyAndOneMebibyteKeys) {
  BloomFilter filter(bloom_options(1000, 1e-3));
  const std::string big(std::size_t{1} << 20, 'x');
  EXPECT_FALSE(filter.contains("", kNow));
  EXPECT_FALSE(filter.test_and_insert("", kNow));
  EXPECT_TRUE(filter.test_and_insert("", kNow));
  EXPECT_FALSE(filter.test_and_insert(big, kNow));
  EXPECT_TRUE(filter.test_and_insert(big, kNow));
  EXPECT_TRUE(filter.contains(big, kNow));
  EXPECT_EQ(filter.stats(kNow).elements, 2U);
}

TEST(BloomFilter, TimeIsIgnored) {
  BloomFilter filter(bloom_options(1000, 1e-3));
  const TimePoint late = from_epoch_millis(1'000'000'000'000);
  EXPECT_FALSE(filter.test_and_insert("k", late));
  EXPECT_TRUE(filter.contains("k", kNow));
  EXPECT_TRUE(filter.test_and_insert("k", late + std::chrono::hours(24 * 365)));
}

TEST(BloomFilter, FullImageRoundTrips) {
  BloomFilter filter(bloom_options(1'000'000, 1e-3));
  for (std::uint64_t i = 0; i < 50'000; ++i) filter.test_and_insert(key("present", i), kNow);
  const FilterImage image = filter.image(ImageScope::kFull);
  EXPECT_EQ(image.slices.size(), 28U);
  EXPECT_TRUE(image.dropped_slice_ids.empty());
  const CheckpointStore store(filter.image(ImageScope::kFull));
  const auto restored = store.restore();
  ASSERT_EQ(restored->type(), FilterType::kBloom);
  for (std::uint64_t i = 0; i < 50'000; ++i) ASSERT_TRUE(restored->contains(key("present", i), kNow)) << i;
  expect_equal_stats(filter, *restored);
  for (std::uint64_t i = 0; i < 10'000; ++i) {
    ASSERT_EQ(filter.test_and_insert(key("later", i), kNow),
              restored->test_and_insert(key("later", i), kNow));
  }
  expect_equal_stats(filter, *restored);
  // Restored pages are as durable as the store they came from.
  EXPECT_TRUE(BloomFilter::restore(decode_single_record(store.meta()), store.lookup())
                  ->image(ImageScope::kChangedSinceLastPersist)
                  .slices.empty());
}

TEST(BloomFilter, CheckpointWritesOnlyDirtyPages) {
  BloomFilter filter(bloom_options(1'000'000, 1e-3));
  for (std::uint64_t i = 0; i < 1000; ++i) filter.test_and_insert(key("present", i), kNow);
  CheckpointStore store(filter.image(ImageScope::kFull));
  filter.mark_persisted();
  EXPECT_TRUE(filter.image(ImageScope::kChangedSinceLastPersist).slices.empty());

  EXPECT_TRUE(filter.test_and_insert(key("present", 7), kNow));  // a duplicate writes nothing
  EXPECT_TRUE(filter.image(ImageScope::kChangedSinceLastPersist).slices.empty());

  ASSERT_FALSE(filter.test_and_insert("one more key", kNow));
  const FilterImage changed = filter.image(ImageScope::kChangedSinceLastPersist);
  std::cout << "[ figures  ] bloom checkpoint after one insertion writes " << changed.slices.size()
            << " of 28 pages\n";
  EXPECT_GE(changed.slices.size(), 1U);
  EXPECT_LE(changed.slices.size(), 10U);  // at most one page per probe
  for (const auto& slice : changed.slices) {
    EXPECT_GE(slice.id, 1U);
    EXPECT_LE(slice.id, 28U);
  }
  store.apply(changed);
  filter.mark_persisted();
  const auto restored = store.restore();
  EXPECT_TRUE(restored->contains("one more key", kNow));
  expect_equal_stats(filter, *restored);
}

class BloomFilterCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    for (std::uint64_t i = 0; i < 500; ++i) filter_.test_and_insert(key("present", i), kNow);
    store_ = CheckpointStore(filter_.image(ImageScope::kFull));
    ASSERT_EQ(store_.slices().size(), 1U);  // a 1000-key filter at 1e-3 fits in one page
  }
  void expect_rejected_meta(const std::string& meta) const {
    EXPECT_THROW(BloomFilter::restore(decode_single_record(meta), store_.lookup()), FormatError);
  }
  void expect_rejected_meta_field(std::size_t offset, std::uint64_t value, std::size_t width) const {
    expect_rejected_meta(edited(store_.meta(), [&](std::string& p) { put_le(p, offset, value, width); }));
  }
  void expect_rejected_page(const std::optional<std::string>& page) const {
    EXPECT_THROW(store_.with_slice(1, page).restore(), FormatError);
  }

  BloomFilter filter_{bloom_options(1000, 1e-3)};
  CheckpointStore store_;
};

TEST_F(BloomFilterCorruption, IntactStoreRestores) { EXPECT_NO_THROW(store_.restore()); }

TEST_F(BloomFilterCorruption, TruncatedOrPaddedMetaIsRejected) {
  ASSERT_EQ(decode_single_record(store_.meta()).payload.size(), kMetaPayloadSize);
  for (std::size_t length = 0; length < kMetaPayloadSize; ++length) {
    expect_rejected_meta(edited(store_.meta(), [&](std::string& p) { p.resize(length); }));
  }
  expect_rejected_meta(edited(store_.meta(), [](std::string& p) { p.push_back('\0'); }));
  std::string cut = store_.meta();
  cut.pop_back();
  EXPECT_THROW(decode_single_record(cut), FormatError);
}

TEST_F(BloomFilterCorruption, ImpossibleMetaFieldsAreRejected) {
  expect_rejected_meta_field(kCapacityAt, 0, 8);
  expect_rejected_meta_field(kErrorAt, double_bits(0.0), 8);
  expect_rejected_meta_field(kErrorAt, double_bits(1.0), 8);
  expect_rejected_meta_field(kErrorAt, double_bits(std::numeric_limits<double>::quiet_NaN()), 8);
  expect_rejected_meta_field(kProbesAt, 0, 4);
  expect_rejected_meta_field(kProbesAt, 65, 4);
  expect_rejected_meta_field(kProbesAt, 9, 4);  // the pages no longer have the size the metadata implies
  expect_rejected_meta_field(kSliceBitsAt, 0, 8);
  expect_rejected_meta_field(kSliceBitsAt, 100, 8);
  expect_rejected_meta_field(kSliceBitsAt, std::uint64_t{1} << 60, 8);
  // Same 640 words, so the page fits, but not the sizing of n = 1000, P = 1e-3 (k = 10, 4096-bit slices).
  expect_rejected_meta(edited(store_.meta(), [](std::string& p) {
    put_le(p, kProbesAt, 5, 4);
    put_le(p, kSliceBitsAt, 8192, 8);
  }));
  expect_rejected_meta_field(kCapacityAt, 5000, 8);  // would need larger slices
  // More insertions than bits; bits set by no insertion; 10 keys cannot set ~5000 bits.
  expect_rejected_meta_field(kInsertionsAt, std::uint64_t{1} << 62, 8);
  expect_rejected_meta_field(kInsertionsAt, 0, 8);
  expect_rejected_meta_field(kInsertionsAt, 10, 8);
}

TEST_F(BloomFilterCorruption, CorruptSizeFailsBeforeAllocating) {
  // Claims a 16 GiB filter; the missing last page is found before anything that size is allocated.
  expect_rejected_meta_field(kSliceBitsAt, (BloomFilter::kMaxBits / 10) & ~std::uint64_t{63}, 8);
}

TEST_F(BloomFilterCorruption, WrongRecordKindOrTypeIsRejected) {
  const Record meta = decode_single_record(store_.meta());
  expect_rejected_meta(encode_record(RecordKind::kMeta, FilterType::kScalable, 0, meta.payload));
  expect_rejected_meta(encode_record(RecordKind::kSlice, FilterType::kBloom, 0, meta.payload));
  expect_rejected_meta(encode_record(RecordKind::kMeta, FilterType::kBloom, 1, meta.payload));
}

TEST_F(BloomFilterCorruption, BadPagesAreRejected) {
  const std::string& page = store_.slices().at(1);
  const Record rec = decode_single_record(page);
  expect_rejected_page(std::nullopt);
  expect_rejected_page(edited(page, [](std::string& p) { p.resize(p.size() - 8); }));
  expect_rejected_page(edited(page, [](std::string& p) { p.resize(p.size() - 1); }));
  expect_rejected_page(edited(page, [](std::string& p) { p.append(8, '\0'); }));
  expect_rejected_page(edited(page, [](std::string& p) { p.assign(p.size(), '\0'); }));  // bits lost
  expect_rejected_page(encode_record(RecordKind::kSlice, FilterType::kBloom, 2, rec.payload));
  expect_rejected_page(encode_record(RecordKind::kSlice, FilterType::kScalable, 1, rec.payload));
  expect_rejected_page(encode_record(RecordKind::kMeta, FilterType::kBloom, 1, rec.payload));
  std::string flipped = page;
  flipped[kRecordHeaderSize + 3] = static_cast<char>(flipped[kRecordHeaderSize + 3] ^ 0x10);
  expect_rejected_page(flipped);
}

}  // namespace
}  // namespace bloomgate::filters
