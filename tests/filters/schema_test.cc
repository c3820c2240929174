// Schema tests: for each filter type and parameter setting, a tiny filter fed a handful of fixed keys, and
// what it persists read field by field: the envelope of every record (format.h), the metadata fields by name
// and the set bits or non-zero cells of every slice. A change of format fails here naming the field that
// moved, and must come with a new format version (format.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/format.h"
#include "bloomgate/filters/options.h"
#include "filter_options.h"
#include "record_fields.h"

namespace bloomgate::filters {
namespace {

using testing::envelope;
using testing::Fields;
using std::chrono::seconds;

const TimePoint kStart = from_epoch_millis(1'700'000'000'000);

using Reader = std::string (*)(std::string_view payload);

// One line for each record of a full image: the metadata record's envelope and fields, then each slice
// record's, in image order.
std::vector<std::string> described(const FilterImage& image, Reader meta, Reader slice) {
  std::vector<std::string> lines{"meta " + envelope(image.meta),
                                 "meta " + meta(decode_single_record(image.meta).payload)};
  for (const FilterImage::Slice& record : image.slices) {
    lines.push_back("slice " + envelope(record.record));
    lines.push_back("slice " + slice(decode_single_record(record.record).payload));
  }
  return lines;
}

void expect_lines(const std::vector<std::string>& actual, const std::vector<std::string>& expected) {
  EXPECT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
    EXPECT_EQ(actual[i], expected[i]) << "record line " << i;
  }
}

// A filter of `type` for 3 keys at 1e-1 (TTL 10 s).
FilterOptions tiny_options(FilterType type) { return testing::options_for(type, 0.1, 3); }

// Three keys, one of them seen twice, a second apart.
FilterImage tiny_image(const FilterOptions& options) {
  const auto filter = make_filter(options);
  for (int i = 0; i < 4; ++i) filter->test_and_insert("key-" + std::to_string(i % 3), kStart + seconds(i));
  return filter->image(ImageScope::kFull);
}

// Level 0, the fewest slices: (k, l) = (4, 3) at 1e-1.
FilterImage tiny_sliced_image(FilterType type) {
  FilterOptions options = tiny_options(type);
  options.level = 0;
  return tiny_image(options);
}

std::string bit_slice(std::string_view payload) {
  return Fields(payload).u64("bits").u64("insertions").u32("hash index").i64("stamp").u64("generation insertions")
      .bits("set").str();
}

std::string set_bits(std::string_view payload) { return Fields(payload).bits("set").str(); }

TEST(Schema, TimeLimited) {
  const auto meta = [](std::string_view payload) {
    return Fields(payload).u32("k").u32("l").u32("level").i64("ttl").f64("error rate").u64("expected")
        .u8("refresh").u64("max slices").u64("max slice bits").u64("max generation size").u64("generation size")
        .u64("generation remaining").u64("generation inserted").i64("generation start").i64("last insert")
        .i64("latest now").u64("next slice id").u64("slice count").u64s("slice ids").str();
  };
  expect_lines(described(tiny_sliced_image(FilterType::kTimeLimited), meta, bit_slice),
      {
      "meta BGFR version=1 kind=1 type=1 seed=626c6f6f6d676174 id=0 length=181 checksum=xxh3",
      "meta k=4 l=3 level=0 ttl=10000000000 error rate=0.1 expected=3 refresh=0 max slices=28 "
        "max slice bits=8589934592 max generation size=4294967296 generation size=11 generation remaining=8 "
        "generation inserted=3 generation start=1700000000000000000 last insert=1700000002000000000 "
        "latest now=1700000003000000000 next slice id=15 slice count=7 slice ids=[8 9 10 11 12 13 14]",
      "slice BGFR version=1 kind=2 type=1 seed=626c6f6f6d676174 id=8 length=44 checksum=xxh3",
      "slice bits=64 insertions=3 hash index=0 stamp=-9223372036854775808 generation insertions=0 set={3 22 47}",
      "slice BGFR version=1 kind=2 type=1 seed=626c6f6f6d676174 id=9 length=44 checksum=xxh3",
      "slice bits=64 insertions=3 hash index=1 stamp=-9223372036854775808 generation insertions=0 set={20 37 43}",
      "slice BGFR version=1 kind=2 type=1 seed=626c6f6f6d676174 id=10 length=44 checksum=xxh3",
      "slice bits=64 insertions=3 hash index=2 stamp=-9223372036854775808 generation insertions=0 set={24 25 29}",
      "slice BGFR version=1 kind=2 type=1 seed=626c6f6f6d676174 id=11 length=44 checksum=xxh3",
      "slice bits=64 insertions=3 hash index=3 stamp=-9223372036854775808 generation insertions=0 set={5 16 22}",
      "slice BGFR version=1 kind=2 type=1 seed=626c6f6f6d676174 id=12 length=44 checksum=xxh3",
      "slice bits=64 insertions=0 hash index=0 stamp=1700000000000000000 generation insertions=0 set={}",
      "slice BGFR version=1 kind=2 type=1 seed=626c6f6f6d676174 id=13 length=44 checksum=xxh3",
      "slice bits=64 insertions=0 hash index=1 stamp=-9223372036854775808 generation insertions=0 set={}",
      "slice BGFR version=1 kind=2 type=1 seed=626c6f6f6d676174 id=14 length=44 checksum=xxh3",
      "slice bits=64 insertions=0 hash index=2 stamp=-9223372036854775808 generation insertions=0 set={}"
      });
}

TEST(Schema, AgePartitioned) {
  const auto meta = [](std::string_view payload) {
    return Fields(payload).u32("k").u32("l").u32("level").f64("error rate").u64("window").u8("refresh")
        .u64("generation size").u64("slice bits").u64("generation inserted").u64("next slice id")
        .u64s("slice ids").str();
  };
  expect_lines(described(tiny_sliced_image(FilterType::kAgePartitioned), meta, bit_slice),
      {
      "meta BGFR version=1 kind=1 type=2 seed=626c6f6f6d676174 id=0 length=117 checksum=xxh3",
      "meta k=4 l=3 level=0 error rate=0.1 window=3 refresh=0 generation size=1 slice bits=64 "
        "generation inserted=1 next slice id=10 slice ids=[9 8 1 2 3 4 5]",
      "slice BGFR version=1 kind=2 type=2 seed=626c6f6f6d676174 id=9 length=44 checksum=xxh3",
      "slice bits=64 insertions=1 hash index=2 stamp=-9223372036854775808 generation insertions=0 set={24}",
      "slice BGFR version=1 kind=2 type=2 seed=626c6f6f6d676174 id=8 length=44 checksum=xxh3",
      "slice bits=64 insertions=2 hash index=3 stamp=-9223372036854775808 generation insertions=0 set={5 22}",
      "slice BGFR version=1 kind=2 type=2 seed=626c6f6f6d676174 id=1 length=44 checksum=xxh3",
      "slice bits=64 insertions=3 hash index=0 stamp=-9223372036854775808 generation insertions=0 set={3 22 47}",
      "slice BGFR version=1 kind=2 type=2 seed=626c6f6f6d676174 id=2 length=44 checksum=xxh3",
      "slice bits=64 insertions=3 hash index=1 stamp=-9223372036854775808 generation insertions=1 set={20 37 43}",
      "slice BGFR version=1 kind=2 type=2 seed=626c6f6f6d676174 id=3 length=44 checksum=xxh3",
      "slice bits=64 insertions=2 hash index=2 stamp=-9223372036854775808 generation insertions=1 set={25 29}",
      "slice BGFR version=1 kind=2 type=2 seed=626c6f6f6d676174 id=4 length=44 checksum=xxh3",
      "slice bits=64 insertions=1 hash index=3 stamp=-9223372036854775808 generation insertions=1 set={16}",
      "slice BGFR version=1 kind=2 type=2 seed=626c6f6f6d676174 id=5 length=44 checksum=xxh3",
      "slice bits=64 insertions=0 hash index=0 stamp=-9223372036854775808 generation insertions=0 set={}"
      });
}

TEST(Schema, Bloom) {
  const auto meta = [](std::string_view payload) {
    return Fields(payload).u64("capacity").f64("error rate").u32("k").u64("slice bits").u64("insertions").str();
  };
  expect_lines(described(tiny_image(tiny_options(FilterType::kBloom)), meta, set_bits),
      {
      "meta BGFR version=1 kind=1 type=5 seed=626c6f6f6d676174 id=0 length=36 checksum=xxh3",
      "meta capacity=3 error rate=0.1 k=4 slice bits=4096 insertions=3",
      "slice BGFR version=1 kind=2 type=5 seed=626c6f6f6d676174 id=1 length=2048 checksum=xxh3",
      "slice set={226 1428 3014 5394 6485 6870 9783 9805 10077 12665 13324 13717}"
      });
}

// Capacity 2 for three keys: the third key opens a second sub-filter.
TEST(Schema, ScalableAfterOneGrowth) {
  FilterOptions options = tiny_options(FilterType::kScalable);
  options.expected_per_ttl = 2;
  const auto meta = [](std::string_view payload) {
    return Fields(payload).u64("n0").f64("error rate").u32("growth").f64("tightening").u32("count")
        .u64("capacity").f64("error").u32("k").u64("slice bits").u64("insertions")
        .u64("capacity").f64("error").u32("k").u64("slice bits").u64("insertions").str();
  };
  expect_lines(described(tiny_image(options), meta, set_bits),
      {
      "meta BGFR version=1 kind=1 type=4 seed=626c6f6f6d676174 id=0 length=104 checksum=xxh3",
      "meta n0=2 error rate=0.1 growth=2 tightening=0.9 count=2 capacity=2 error=0.009999999999999998 k=7 "
        "slice bits=4096 insertions=2 capacity=4 error=0.009 k=7 slice bits=4096 insertions=1",
      "slice BGFR version=1 kind=2 type=4 seed=626c6f6f6d676174 id=1 length=3584 checksum=xxh3",
      "slice set={1428 3014 5394 6870 9805 10077 13324 13717 17367 18608 21313 24012 26507 26560}",
      "slice BGFR version=1 kind=2 type=4 seed=626c6f6f6d676174 id=2 length=3584 checksum=xxh3",
      "slice set={226 6485 9783 12665 16661 23641 27756}"
      });
}

TEST(Schema, ContinuousWithRefresh) {
  FilterOptions options = tiny_options(FilterType::kContinuous);
  options.refresh_on_duplicate = true;
  const auto meta = [](std::string_view payload) {
    return Fields(payload).u64("cells").u32("probes").u64("expected").f64("error rate").i64("ttl").u8("refresh")
        .u8("seen").i64("epoch").i64("latest").u64("tick").u64("sweep cursor").u64("pass start tick")
        .u64("words").str();
  };
  const auto cells = [](std::string_view payload) { return Fields(payload).cells("cells", 4).str(); };
  expect_lines(described(tiny_image(options), meta, cells),
      {
      "meta BGFR version=1 kind=1 type=3 seed=626c6f6f6d676174 id=0 length=86 checksum=xxh3",
      "meta cells=22 probes=3 expected=3 error rate=0.1 ttl=10000000000 refresh=1 seen=1 "
        "epoch=1700000000000000000 latest=1700000003000000000 tick=0 sweep cursor=0 pass start tick=0 words=2",
      "slice BGFR version=1 kind=2 type=3 seed=626c6f6f6d676174 id=1 length=16 checksum=xxh3",
      "slice cells={1:1 6:1 7:1 8:1 10:1 12:1 14:1 16:1}"
      });
}

std::string spectral_meta(std::string_view payload) {
  return Fields(payload).u8("mode").u64("expected").f64("error rate").u64("counters").u32("probes")
      .u64("secondary counters").u32("secondary probes").u8("seen").i64("latest").u64("words").str();
}

std::string counters(std::string_view payload) { return Fields(payload).cells("counters", 16).str(); }

FilterImage tiny_spectral(SpectralMode mode) {
  FilterOptions options = tiny_options(FilterType::kSpectral);
  options.spectral_mode = mode;
  return tiny_image(options);
}

TEST(Schema, SpectralMinimumSelection) {
  expect_lines(described(tiny_spectral(SpectralMode::kMinimumSelection), spectral_meta, counters),
      {
      "meta BGFR version=1 kind=1 type=6 seed=626c6f6f6d676174 id=0 length=58 checksum=xxh3",
      "meta mode=1 expected=3 error rate=0.1 counters=15 probes=3 secondary counters=0 secondary probes=0 "
        "seen=1 latest=1700000003000000000 words=4",
      "slice BGFR version=1 kind=2 type=6 seed=626c6f6f6d676174 id=1 length=32 checksum=xxh3",
      "slice counters={0:1 4:2 5:3 6:1 8:1 10:1 11:1}"
      });
}

TEST(Schema, SpectralMinimalIncrease) {
  expect_lines(described(tiny_spectral(SpectralMode::kMinimalIncrease), spectral_meta, counters),
      {
      "meta BGFR version=1 kind=1 type=6 seed=626c6f6f6d676174 id=0 length=58 checksum=xxh3",
      "meta mode=2 expected=3 error rate=0.1 counters=15 probes=3 secondary counters=0 secondary probes=0 "
        "seen=1 latest=1700000003000000000 words=4",
      "slice BGFR version=1 kind=2 type=6 seed=626c6f6f6d676174 id=1 length=32 checksum=xxh3",
      "slice counters={0:1 4:2 5:2 6:1 8:1 10:1 11:1}"
      });
}

TEST(Schema, SpectralRecurringMinimum) {
  expect_lines(described(tiny_spectral(SpectralMode::kRecurringMinimum), spectral_meta, counters),
      {
      "meta BGFR version=1 kind=1 type=6 seed=626c6f6f6d676174 id=0 length=58 checksum=xxh3",
      "meta mode=3 expected=3 error rate=0.1 counters=15 probes=3 secondary counters=5 secondary probes=3 "
        "seen=1 latest=1700000003000000000 words=6",
      "slice BGFR version=1 kind=2 type=6 seed=626c6f6f6d676174 id=1 length=48 checksum=xxh3",
      "slice counters={0:1 4:2 5:3 6:1 8:1 10:1 11:1 17:2}"
      });
}

// Aging fingerprint at 1e-1: one table of 128 buckets of 7-bit fingerprints (10-bit slots), three keys in it
// (two written in epoch 8, one in epoch 9, code 1; the last call, in epoch 10, swept the region to 10); its
// page is the region's stamp word, then the buckets' bits and the two spare words.
TEST(Schema, AgingFingerprint) {
  const auto meta = [](std::string_view payload) {
    return Fields(payload).u8("layout").f64("error rate").i64("ttl").u64("expected").u8("refresh")
        .f64("size load").f64("grow load").u32("max kicks").u8("seen").i64("origin").i64("latest").u64("epoch")
        .u64("inserts 0").u64("inserts 1").u64("inserts 2").u64("inserts 3").u64("inserts 4").u64("inserts 5")
        .u64("inserts 6").u64("inserts 7").u64("next serial").u32("tables").u64("serial").u64("buckets")
        .u8("fingerprint bits").u8("retired").u64("retired epoch").u64("sweep cursor").u8("stash").str();
  };
  const auto page = [](std::string_view payload) { return Fields(payload).u64("stamp").bits("set").str(); };
  expect_lines(described(tiny_image(tiny_options(FilterType::kAgingFingerprint)), meta, page),
      {
      "meta BGFR version=1 kind=1 type=7 seed=626c6f6f6d676174 id=0 length=182 checksum=xxh3",
      "meta layout=1 error rate=0.1 ttl=10000000000 expected=3 refresh=0 size load=0.95 grow load=0.97 "
        "max kicks=500 seen=1 origin=1700000000000000000 latest=1700000003000000000 epoch=10 inserts 0=2 "
        "inserts 1=1 inserts 2=0 inserts 3=0 inserts 4=0 inserts 5=0 inserts 6=0 inserts 7=0 next serial=2 "
        "tables=1 serial=1 buckets=128 fingerprint bits=7 retired=0 retired epoch=0 sweep cursor=0 stash=0",
      "slice BGFR version=1 kind=2 type=7 seed=626c6f6f6d676174 id=4294967297 length=664 checksum=xxh3",
      "slice stamp=10 set={680 684 685 688 689 1205 1209 4603 4607 4608}"
      });
}

}  // namespace
}  // namespace bloomgate::filters
