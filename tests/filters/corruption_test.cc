// Every filter type against damaged checkpoint records: each case runs once for every type (the test name
// ends with it), so a check one type makes and another forgets shows up as that type's failure. A case that
// only some types can have (padding cells, counted bits) is a suite of its own over those types. Every edit keeps
// the record's checksum valid, except where the checksum is what is tested, so only the filter's own
// validation can reject it. Keys are fixed (a counter or a fixed seed); nothing is random.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "age_partitioned_filter.h"
#include "aging_fingerprint_filter.h"
#include "bloom_filter.h"
#include "continuous_filter.h"
#include "bloomgate/filters/format.h"
#include "bloomgate/filters/options.h"
#include "scalable_bloom_filter.h"
#include "spectral_filter.h"
#include "time_limited_filter.h"
#include "checkpoint_store.h"
#include "filter_options.h"
#include "ground_truth.h"

namespace bloomgate::filters {
namespace {

using testing::CheckpointStore;
using testing::double_bits;
using testing::key_name;
using testing::payload_of;
using testing::put_le;
using testing::with_payload;

const TimePoint kStart = from_epoch_millis(1'700'000'000'000);

// One field of a metadata payload overwritten: `width` bytes little-endian at `offset`.
struct Patch {
  std::size_t offset;
  std::size_t width;
  std::uint64_t value;
};
Patch u8_at(std::size_t offset, std::uint64_t value) { return {offset, 1, value}; }
Patch u32_at(std::size_t offset, std::uint64_t value) { return {offset, 4, value}; }
Patch u64_at(std::size_t offset, std::uint64_t value) { return {offset, 8, value}; }
Patch i64_at(std::size_t offset, std::int64_t value) { return {offset, 8, static_cast<std::uint64_t>(value)}; }
Patch f64_at(std::size_t offset, double value) { return {offset, 8, double_bits(value)}; }

// Metadata no filter of the type can have written, and why.
struct ImpossibleMeta {
  const char* what;
  std::vector<Patch> patches;
};

struct FilterKind {
  using Restore = std::unique_ptr<Filter> (*)(const Record& meta, const SliceViews& slices);
  FilterKind() = default;
  FilterKind(const char* kind_name, FilterType type, double error_rate, std::uint64_t expected, Restore kind_restore)
      : name(kind_name), options(testing::options_for(type, error_rate, expected)), restore(kind_restore) {}

  const char* name = "";
  // The filter whose records every case damages: built from `options`, then fed fixed keys by `feed`.
  FilterOptions options;
  std::function<void(Filter& filter)> feed;
  Restore restore = nullptr;
  // The fields the type validates, each set to something it must reject.
  std::function<std::vector<ImpossibleMeta>(const Filter& filled)> impossible;
  // Sets a padding cell past the last real one in the last slice's payload (PaddingCells only).
  std::function<void(const Filter& filled, std::string& payload)> set_padding;
};

// Bloom: 500 keys in a 1000-key filter at 1e-3 (k = 10 slices of 4096 bits, one page). Metadata offsets as
// in bloom_filter.h.
FilterKind bloom_kind() {
  constexpr std::size_t kCapacityAt = 0, kErrorAt = 8, kProbesAt = 16, kSliceBitsAt = 20, kInsertionsAt = 28;
  FilterKind kind("bloom", FilterType::kBloom, 1e-3, 1000, &BloomFilter::restore);
  kind.feed = [](Filter& filter) {
    for (std::uint64_t i = 0; i < 500; ++i) {
      filter.test_and_insert(testing::seeded_key("present", 0x5eed0001, i), kStart);
    }
  };
  kind.impossible = [](const Filter&) -> std::vector<ImpossibleMeta> {
    return {
        {"capacity 0", {u64_at(kCapacityAt, 0)}},
        {"error rate 0", {f64_at(kErrorAt, 0.0)}},
        {"error rate 1", {f64_at(kErrorAt, 1.0)}},
        {"error rate NaN", {f64_at(kErrorAt, std::nan(""))}},
        {"no probes", {u32_at(kProbesAt, 0)}},
        {"65 probes", {u32_at(kProbesAt, 65)}},
        {"pages no longer the size the metadata implies", {u32_at(kProbesAt, 9)}},
        {"slice bits 0", {u64_at(kSliceBitsAt, 0)}},
        {"slice bits not a multiple of 64", {u64_at(kSliceBitsAt, 100)}},
        {"slice bits past the cap", {u64_at(kSliceBitsAt, std::uint64_t{1} << 60)}},
        {"a 16 GiB filter: its missing last page is found before allocating",
         {u64_at(kSliceBitsAt, (BloomFilter::kMaxBits / 10) & ~std::uint64_t{63})}},
        {"same 640 words, not the sizing of n = 1000 and P = 1e-3",
         {u32_at(kProbesAt, 5), u64_at(kSliceBitsAt, 8192)}},
        {"capacity that needs larger slices", {u64_at(kCapacityAt, 5000)}},
        {"more insertions than bits", {u64_at(kInsertionsAt, std::uint64_t{1} << 62)}},
        {"bits set by no insertion", {u64_at(kInsertionsAt, 0)}},
        {"10 keys cannot set ~5000 bits", {u64_at(kInsertionsAt, 10)}},
    };
  };
  return kind;
}

// Scalable: 1000 keys from n0 = 100 at 1e-2 with growth 2 (four sub-filters). Offsets as in
// scalable_bloom_filter.h.
FilterKind scalable_kind() {
  constexpr std::size_t kInitialCapacityAt = 0, kErrorAt = 8, kGrowthAt = 16, kTighteningAt = 20, kCountAt = 28;
  constexpr std::size_t kCapacity = 0, kError = 8, kProbes = 16, kSliceBits = 20, kInsertions = 28;
  const auto sub_filter_at = [](std::size_t index) { return 32 + 36 * index; };
  FilterKind kind("scalable", FilterType::kScalable, 1e-2, 100, &ScalableBloomFilter::restore);
  kind.options.growth = 2;
  kind.feed = [](Filter& filter) {
    for (std::uint64_t inserted = 0, i = 0; inserted < 1000; ++i) {
      if (!filter.test_and_insert(testing::seeded_key("present", 0x5eed0003, i), kStart)) ++inserted;
    }
  };
  kind.impossible = [=](const Filter&) -> std::vector<ImpossibleMeta> {
    return {
        {"initial capacity 0", {u64_at(kInitialCapacityAt, 0)}},
        {"sub-filter capacities no longer follow n0", {u64_at(kInitialCapacityAt, 101)}},
        {"error rate 0", {f64_at(kErrorAt, 0.0)}},
        {"error rate NaN", {f64_at(kErrorAt, std::nan(""))}},
        {"sub-filter errors no longer follow P", {f64_at(kErrorAt, 0.02)}},
        {"growth 3", {u32_at(kGrowthAt, 3)}},
        {"growth 4, not the sub-filters'", {u32_at(kGrowthAt, 4)}},
        {"tightening 1", {f64_at(kTighteningAt, 1.0)}},
        {"tightening not the sub-filters'", {f64_at(kTighteningAt, 0.8)}},
        {"no sub-filter", {u32_at(kCountAt, 0)}},
        {"a sub-filter's bytes left unread", {u32_at(kCountAt, 3)}},
        {"reads past the end", {u32_at(kCountAt, 5)}},
        {"more sub-filters than the cap", {u32_at(kCountAt, 65)}},
        {"count 2^32 - 1", {u32_at(kCountAt, 0xFFFFFFFF)}},
        {"sub-filter 1 capacity", {u64_at(sub_filter_at(1) + kCapacity, 201)}},
        {"sub-filter 1 error", {f64_at(sub_filter_at(1) + kError, 0.01 * 0.1 * 0.91)}},
        {"sub-filter 0 without probes", {u32_at(sub_filter_at(0) + kProbes, 0)}},
        {"sub-filter 0 with 65 probes", {u32_at(sub_filter_at(0) + kProbes, 65)}},
        {"sub-filter 0 record no longer the size", {u32_at(sub_filter_at(0) + kProbes, 11)}},
        {"sub-filter 0 slice bits 0", {u64_at(sub_filter_at(0) + kSliceBits, 0)}},
        {"sub-filter 0 slice bits 100", {u64_at(sub_filter_at(0) + kSliceBits, 100)}},
        {"sub-filter 0 slice bits past the cap",
         {u64_at(sub_filter_at(0) + kSliceBits, std::uint64_t{1} << 60)}},
        {"a 2 GiB sub-filter: its short record is found before allocating",
         {u64_at(sub_filter_at(0) + kSliceBits,
                 (ScalableBloomFilter::kMaxSubFilterBits / 10) & ~std::uint64_t{63})}},
        {"sub-filter 0 as 5 x 8192 bits, the size of its 10 x 4096",
         {u32_at(sub_filter_at(0) + kProbes, 5), u64_at(sub_filter_at(0) + kSliceBits, 8192)}},
        {"a full sub-filter holds less than its capacity", {u64_at(sub_filter_at(0) + kInsertions, 99)}},
        {"the newest sub-filter holds nothing", {u64_at(sub_filter_at(3) + kInsertions, 0)}},
        {"the newest sub-filter past its capacity while it can grow",
         {u64_at(sub_filter_at(3) + kInsertions, 801)}},
        {"one key cannot set ~3000 bits", {u64_at(sub_filter_at(3) + kInsertions, 1)}},
    };
  };
  return kind;
}

// Continuous: 20,000 keys a millisecond apart in a filter for 100,000 per TTL at 1e-3 (several pages).
// Offsets as in continuous_filter.cc.
FilterKind continuous_kind() {
  constexpr std::size_t kCellsAt = 0, kProbesAt = 8, kExpectedAt = 12, kErrorRateAt = 20, kTtlAt = 28,
                        kRefreshAt = 36, kSeenAt = 37, kLatestAt = 46, kTickAt = 54, kCursorAt = 62,
                        kPassStartAt = 70, kWordsAt = 78;
  FilterKind kind("continuous", FilterType::kContinuous, 0.001, 100'000, &ContinuousFilter::restore);
  kind.feed = [](Filter& filter) {
    for (int i = 0; i < 20'000; ++i) filter.test_and_insert(key_name(i), kStart + testing::milliseconds(i));
  };
  kind.impossible = [=](const Filter& filled) -> std::vector<ImpossibleMeta> {
    const auto& filter = dynamic_cast<const ContinuousFilter&>(filled);
    const std::uint64_t cells = filter.cells();
    return {
        {"no cells", {u64_at(kCellsAt, 0)}},
        {"cells off by one", {u64_at(kCellsAt, cells + 1)}},
        {"huge cell count", {u64_at(kCellsAt, std::uint64_t{1} << 62)}},
        {"no probes", {u32_at(kProbesAt, 0)}},
        {"probes off by one", {u32_at(kProbesAt, filter.probes() + 1)}},
        {"expected 0", {u64_at(kExpectedAt, 0)}},
        {"huge expected", {u64_at(kExpectedAt, std::uint64_t{1} << 60)}},
        {"error rate 0", {f64_at(kErrorRateAt, 0.0)}},
        {"error rate 1", {f64_at(kErrorRateAt, 1.0)}},
        {"error rate NaN", {f64_at(kErrorRateAt, std::nan(""))}},
        {"ttl 0", {i64_at(kTtlAt, 0)}},
        {"negative ttl", {i64_at(kTtlAt, -1)}},
        {"refresh flag 2", {u8_at(kRefreshAt, 2)}},
        {"seen flag 2", {u8_at(kSeenAt, 2)}},
        {"unused filter with a clock", {u8_at(kSeenAt, 0)}},
        {"latest before epoch", {i64_at(kLatestAt, to_epoch_nanos(kStart) - 1)}},
        {"tick does not match time", {u64_at(kTickAt, 1'000)}},
        {"cursor past the end", {u64_at(kCursorAt, std::uint64_t{1} << 40)}},
        {"pass starts after now", {u64_at(kPassStartAt, 1'000)}},
        {"word count", {u64_at(kWordsAt, (cells + 15) / 16 + 1)}},
        {"huge word count", {u64_at(kWordsAt, std::uint64_t{1} << 62)}},
    };
  };
  kind.set_padding = [](const Filter& filled, std::string& payload) {
    ASSERT_NE(dynamic_cast<const ContinuousFilter&>(filled).cells() % 16, 0U);
    payload[payload.size() - 1] = static_cast<char>(0x10);  // a cell in the last word's top half-byte
  };
  return kind;
}

// Spectral (Recurring Minimum, the mode with both tables): 20,000 keys in a filter for 20,001 at 1e-3.
// Offsets as in spectral_filter.cc.
FilterKind spectral_kind() {
  constexpr std::size_t kModeAt = 0, kExpectedAt = 1, kErrorRateAt = 9, kPrimaryCountersAt = 17,
                        kPrimaryProbesAt = 25, kSecondaryCountersAt = 29, kSecondaryProbesAt = 37, kSeenAt = 41,
                        kWordsAt = 50;
  FilterKind kind("spectral", FilterType::kSpectral, 0.001, 20'001, &SpectralFilter::restore);
  kind.options.spectral_mode = SpectralMode::kRecurringMinimum;
  kind.feed = [](Filter& filter) {
    for (std::uint64_t key = 0; key < 20'000; ++key) filter.test_and_insert(key_name(key), kStart);
  };
  kind.impossible = [=](const Filter& filled) -> std::vector<ImpossibleMeta> {
    const auto& filter = dynamic_cast<const SpectralFilter&>(filled);
    return {
        {"mode 0", {u8_at(kModeAt, 0)}},
        {"mode 4", {u8_at(kModeAt, 4)}},
        {"Minimum Selection with a secondary table", {u8_at(kModeAt, 1)}},
        {"expected 0", {u64_at(kExpectedAt, 0)}},
        {"huge expected", {u64_at(kExpectedAt, std::uint64_t{1} << 60)}},
        {"error rate 0", {f64_at(kErrorRateAt, 0.0)}},
        {"error rate 1.5", {f64_at(kErrorRateAt, 1.5)}},
        {"error rate NaN", {f64_at(kErrorRateAt, std::nan(""))}},
        {"no counters", {u64_at(kPrimaryCountersAt, 0)}},
        {"counters off by one", {u64_at(kPrimaryCountersAt, filter.counters() + 1)}},
        {"huge counters", {u64_at(kPrimaryCountersAt, std::uint64_t{1} << 62)}},
        {"no probes", {u32_at(kPrimaryProbesAt, 0)}},
        {"too many probes", {u32_at(kPrimaryProbesAt, 1'000)}},
        {"Recurring Minimum without a secondary table", {u64_at(kSecondaryCountersAt, 0)}},
        {"secondary without probes", {u32_at(kSecondaryProbesAt, 0)}},
        {"seen flag 2", {u8_at(kSeenAt, 2)}},
        {"unused filter with a clock", {u8_at(kSeenAt, 0)}},
        {"word count", {u64_at(kWordsAt, 1)}},
        {"huge word count", {u64_at(kWordsAt, std::uint64_t{1} << 62)}},
    };
  };
  kind.set_padding = [](const Filter& filled, std::string& payload) {
    ASSERT_NE(dynamic_cast<const SpectralFilter&>(filled).secondary_counters() % 4, 0U);
    payload[payload.size() - 1] = static_cast<char>(0x01);  // the last word's top counter
  };
  return kind;
}

// Time-limited: 3,000 keys 7 ms apart in a filter for 1,000 per 10 s TTL at 1e-2. Offsets as in
// time_limited_records.cc's meta_record.
FilterKind time_limited_kind() {
  constexpr std::size_t kKAt = 0, kLAt = 4, kTtlAt = 12, kSliceCountAt = 117, kSliceIdsAt = 125;
  FilterKind kind("time_limited", FilterType::kTimeLimited, 0.01, 1000, &TimeLimitedFilter::restore);
  kind.feed = [](Filter& filter) {
    for (int i = 0; i < 3000; ++i) filter.test_and_insert(key_name(i), kStart + testing::milliseconds(7 * i));
  };
  kind.impossible = [=](const Filter& filled) -> std::vector<ImpossibleMeta> {
    const std::uint64_t slices = filled.stats(kStart).slices;
    return {
        {"k 0", {u32_at(kKAt, 0)}},
        {"k 65", {u32_at(kKAt, 65)}},
        {"l 0", {u32_at(kLAt, 0)}},
        {"ttl 0", {i64_at(kTtlAt, 0)}},
        {"negative ttl", {i64_at(kTtlAt, -1)}},
        {"no slices", {u64_at(kSliceCountAt, 0)}},
        {"more slices than it lists", {u64_at(kSliceCountAt, slices + 1)}},
        {"a slice id nothing holds", {u64_at(kSliceIdsAt, std::uint64_t{1} << 40)}},
    };
  };
  return kind;
}

// Age-partitioned: 3,000 keys in a window of 1,000 at 1e-2. Offsets as in age_partitioned_filter.cc.
FilterKind age_partitioned_kind() {
  constexpr std::size_t kKAt = 0, kLAt = 4, kGenerationSizeAt = 29, kSliceBitsAt = 37,
                        kGenerationInsertedAt = 45, kSliceIdsAt = 61;
  FilterKind kind("age_partitioned", FilterType::kAgePartitioned, 0.01, 1000, &AgePartitionedFilter::restore);
  kind.feed = [](Filter& filter) {
    for (int i = 0; i < 3000; ++i) filter.test_and_insert(key_name(i), kStart);
  };
  kind.impossible = [=](const Filter& filled) -> std::vector<ImpossibleMeta> {
    const auto& filter = dynamic_cast<const AgePartitionedFilter&>(filled);
    return {
        {"k 0", {u32_at(kKAt, 0)}},
        {"k 65", {u32_at(kKAt, 65)}},
        {"l 0", {u32_at(kLAt, 0)}},
        {"generation size 0", {u64_at(kGenerationSizeAt, 0)}},
        {"more inserted than a generation holds",
         {u64_at(kGenerationInsertedAt, filter.generation_size() + 1)}},
        {"slice bits 0", {u64_at(kSliceBitsAt, 0)}},
        {"slice bits not the slices'", {u64_at(kSliceBitsAt, filter.slice_bits() + 64)}},
        {"slice bits past the cap", {u64_at(kSliceBitsAt, std::uint64_t{1} << 62)}},
        {"a slice id nothing holds", {u64_at(kSliceIdsAt, std::uint64_t{1} << 40)}},
    };
  };
  return kind;
}

// Aging fingerprint: 12,000 keys 1 ms apart in a filter for 5,000 per 10 s TTL at 1e-3, so its first table
// fills and a second one follows (two tables, the older retired). Offsets as in aging_fingerprint_records.cc.
FilterKind aging_fingerprint_kind() {
  constexpr std::size_t kVersionAt = 0, kErrorRateAt = 1, kTtlAt = 9, kExpectedAt = 17, kRefreshAt = 25,
                        kSizeLoadAt = 26, kGrowLoadAt = 34, kMaxKicksAt = 42, kSeenAt = 46, kOriginAt = 47,
                        kEpochAt = 63, kNextSerialAt = 135, kTableCountAt = 143, kBucketsAt = 155,
                        kFingerprintBitsAt = 163, kRetiredAt = 164, kRetiredEpochAt = 165, kCursorAt = 173,
                        kStashAt = 181;
  FilterKind kind("aging_fingerprint", FilterType::kAgingFingerprint, 0.001, 5'000, &AgingFingerprintFilter::restore);
  kind.feed = [](Filter& filter) {
    for (int i = 0; i < 12'000; ++i) filter.test_and_insert(key_name(i), kStart + testing::milliseconds(i));
  };
  kind.impossible = [=](const Filter& filled) -> std::vector<ImpossibleMeta> {
    EXPECT_EQ(dynamic_cast<const AgingFingerprintFilter&>(filled).tables(), 2U);
    return {
        {"layout version 2", {u8_at(kVersionAt, 2)}},
        {"error rate 0", {f64_at(kErrorRateAt, 0.0)}},
        {"error rate 1", {f64_at(kErrorRateAt, 1.0)}},
        {"error rate NaN", {f64_at(kErrorRateAt, std::nan(""))}},
        {"ttl 0", {i64_at(kTtlAt, 0)}},
        {"negative ttl", {i64_at(kTtlAt, -1)}},
        {"expected 0", {u64_at(kExpectedAt, 0)}},
        {"refresh flag 2", {u8_at(kRefreshAt, 2)}},
        {"size load 0", {f64_at(kSizeLoadAt, 0.0)}},
        {"size load above grow load", {f64_at(kSizeLoadAt, 0.99)}},
        {"grow load 1", {f64_at(kGrowLoadAt, 1.0)}},
        {"huge max kicks", {u32_at(kMaxKicksAt, 0xffffffff)}},
        {"seen flag 2", {u8_at(kSeenAt, 2)}},
        {"unused filter with a clock", {u8_at(kSeenAt, 0)}},
        {"origin after latest", {i64_at(kOriginAt, to_epoch_nanos(kStart) + 1'000'000'000'000)}},
        {"epoch does not match time", {u64_at(kEpochAt, 1'000)}},
        {"next serial 0", {u64_at(kNextSerialAt, 0)}},
        {"no tables", {u32_at(kTableCountAt, 0)}},
        {"more tables than it lists", {u32_at(kTableCountAt, 3)}},
        {"25 tables", {u32_at(kTableCountAt, 25)}},
        {"no buckets", {u64_at(kBucketsAt, 0)}},
        {"buckets not the pages'", {u64_at(kBucketsAt, std::uint64_t{1} << 20)}},
        {"huge bucket count", {u64_at(kBucketsAt, std::uint64_t{1} << 60)}},
        {"fingerprint bits 3", {u8_at(kFingerprintBitsAt, 3)}},
        {"fingerprint bits 28", {u8_at(kFingerprintBitsAt, 28)}},
        {"older table not retired", {u8_at(kRetiredAt, 0)}},
        {"retired flag 2", {u8_at(kRetiredAt, 2)}},
        {"retired after the present", {u64_at(kRetiredEpochAt, 1'000)}},
        {"cursor past the end", {u64_at(kCursorAt, std::uint64_t{1} << 40)}},
        {"a stash longer than it lists", {u8_at(kStashAt, 9)}},
    };
  };
  kind.set_padding = [](const Filter&, std::string& payload) {
    payload[payload.size() - 1] = static_cast<char>(0x01);  // the table's last spare word
  };
  return kind;
}

class Corruption : public ::testing::TestWithParam<FilterKind (*)()> {
 protected:
  void SetUp() override {
    kind_ = GetParam()();
    filter_ = make_filter(kind_.options);
    kind_.feed(*filter_);
    store_ = CheckpointStore(filter_->image(ImageScope::kFull));
    ASSERT_FALSE(store_.slices().empty());
  }

  void expect_rejected_meta_record(const std::string& record, const std::string& what) const {
    EXPECT_THROW(store_.restore(record), FormatError) << what;
  }
  void expect_rejected_meta(const std::string& payload, const std::string& what) const {
    expect_rejected_meta_record(with_payload(store_.meta(), payload), what);
  }
  void expect_rejected_slice(std::uint64_t id, const std::optional<std::string>& record, const char* what) const {
    EXPECT_THROW(store_.with_slice(id, record).restore(), FormatError) << what;
  }
  // The metadata record given straight to the type's own restore.
  void expect_restore_rejects(const std::string& meta_record, const char* what) const {
    EXPECT_THROW(kind_.restore(decode_single_record(meta_record), SliceViews::of(store_.lookup())), FormatError)
        << what;
  }

  FilterKind kind_;
  std::unique_ptr<Filter> filter_;
  CheckpointStore store_;
};

TEST_P(Corruption, IntactRecordsRestore) { EXPECT_EQ(serialize(*store_.restore()), serialize(*filter_)); }

TEST_P(Corruption, TruncatedOrPaddedMetadataIsRejected) {
  const std::string payload = payload_of(store_.meta());
  for (std::size_t length = 0; length < payload.size(); ++length) {
    expect_rejected_meta(payload.substr(0, length), "truncated to " + std::to_string(length));
  }
  expect_rejected_meta(payload + '\0', "trailing byte");
  std::string flipped = store_.meta();
  flipped[flipped.size() / 2] ^= 0x01;
  expect_rejected_meta_record(flipped, "checksum");
  expect_rejected_meta_record(store_.meta().substr(0, store_.meta().size() - 1), "cut record");
}

TEST_P(Corruption, ImpossibleMetadataValuesAreRejected) {
  for (const ImpossibleMeta& impossible : kind_.impossible(*filter_)) {
    std::string payload = payload_of(store_.meta());
    for (const Patch& patch : impossible.patches) put_le(payload, patch.offset, patch.value, patch.width);
    expect_rejected_meta(payload, impossible.what);
  }
}

TEST_P(Corruption, BadSliceRecordsAreRejected) {
  const std::uint64_t first_id = store_.slices().begin()->first;
  const std::uint64_t last_id = store_.slices().rbegin()->first;
  const std::string first = store_.slices().begin()->second;
  const std::string words = payload_of(first);
  const FilterType other = kind_.options.type == FilterType::kBloom ? FilterType::kScalable : FilterType::kBloom;
  expect_rejected_slice(first_id, std::nullopt, "missing first slice");
  expect_rejected_slice(last_id, std::nullopt, "missing last slice");
  expect_rejected_slice(first_id, first.substr(0, first.size() - 3), "truncated record");
  std::string flipped = first;
  flipped[kRecordHeaderSize + 11] ^= 0x40;
  expect_rejected_slice(first_id, flipped, "checksum");
  expect_rejected_slice(first_id, with_payload(first, words.substr(0, words.size() - 8)), "a word short");
  expect_rejected_slice(first_id, with_payload(first, words.substr(0, words.size() - 1)), "a byte short");
  expect_rejected_slice(first_id, with_payload(first, words + std::string(8, '\0')), "a word long");
  expect_rejected_slice(first_id, encode_record(RecordKind::kSlice, kind_.options.type, first_id + 1000, words),
                        "another slice id");
  expect_rejected_slice(first_id, encode_record(RecordKind::kSlice, other, first_id, words), "another type");
  expect_rejected_slice(first_id, encode_record(RecordKind::kMeta, kind_.options.type, first_id, words),
                        "a meta record");
}

// Every type's own restore checks the metadata record's kind, type and id: filters::restore dispatches on
// the type, so this matters to a caller of the type's restore.
class OwnMetadata : public Corruption {};

TEST_P(OwnMetadata, MetadataOfAnotherTypeOrKindIsRejected) {
  const Record meta = decode_single_record(store_.meta());
  const FilterType other = kind_.options.type == FilterType::kBloom ? FilterType::kScalable : FilterType::kBloom;
  expect_restore_rejects(encode_record(RecordKind::kMeta, other, 0, meta.payload), "another type");
  expect_restore_rejects(encode_record(RecordKind::kSlice, kind_.options.type, 0, meta.payload), "a slice record");
  expect_restore_rejects(encode_record(RecordKind::kMeta, kind_.options.type, 1, meta.payload), "a slice id");
}

// The types whose metadata counts insertions, each of which set at least one bit: a slice whose bits are all
// cleared contradicts it.
class CountedBits : public Corruption {};

TEST_P(CountedBits, ASliceWithItsBitsClearedIsRejected) {
  for (const auto& [id, record] : store_.slices()) {
    std::string words = payload_of(record);
    words.assign(words.size(), '\0');
    expect_rejected_slice(id, with_payload(record, words), "bits lost");
  }
}

// The types whose last word holds cells past the last real one, which must stay empty.
class PaddingCells : public Corruption {};

TEST_P(PaddingCells, APaddingCellSetIsRejected) {
  const auto& [last_id, last] = *store_.slices().rbegin();
  std::string words = payload_of(last);
  kind_.set_padding(*filter_, words);
  expect_rejected_slice(last_id, with_payload(last, words), "padding cell set");
}

std::string kind_name(const ::testing::TestParamInfo<FilterKind (*)()>& kind) { return kind.param().name; }

INSTANTIATE_TEST_SUITE_P(Kinds, Corruption,
                         ::testing::Values(&bloom_kind, &scalable_kind, &continuous_kind, &spectral_kind,
                                           &time_limited_kind, &age_partitioned_kind, &aging_fingerprint_kind),
                         kind_name);
INSTANTIATE_TEST_SUITE_P(Kinds, OwnMetadata,
                         ::testing::Values(&bloom_kind, &scalable_kind, &continuous_kind, &spectral_kind,
                                           &time_limited_kind, &age_partitioned_kind, &aging_fingerprint_kind),
                         kind_name);
INSTANTIATE_TEST_SUITE_P(Kinds, CountedBits, ::testing::Values(&bloom_kind, &scalable_kind), kind_name);
INSTANTIATE_TEST_SUITE_P(Kinds, PaddingCells,
                         ::testing::Values(&continuous_kind, &spectral_kind, &aging_fingerprint_kind), kind_name);

}  // namespace
}  // namespace bloomgate::filters
