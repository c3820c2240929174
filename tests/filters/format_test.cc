// The record envelope, and schema tests that pin the persisted bytes: any change to the hash, the seed,
// the bit layout or the format fails here, and must come with a new format version.
#include "bloomgate/filters/format.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/hash.h"
#include "bloomgate/filters/options.h"

namespace bloomgate::filters {
namespace {

TEST(Hash, IsXxh3WithTheFixedSeed) {
  EXPECT_EQ(kHashSeed, 0x626c6f6f6d676174ULL);
  EXPECT_EQ(hash_key("").value, XXH3_64bits_withSeed("", 0, kHashSeed));
  EXPECT_EQ(hash_key("order-42").value, 4383449752185539790ULL);
}

TEST(Record, RoundTrip) {
  const std::string bytes = encode_record(RecordKind::kSlice, FilterType::kBloom, 7, "payload");
  EXPECT_EQ(bytes.size(), kRecordHeaderSize + 7 + kRecordTrailerSize);
  EXPECT_EQ(bytes.substr(0, 4), "BGFR");
  const Record r = decode_single_record(bytes);
  EXPECT_EQ(r.kind, RecordKind::kSlice);
  EXPECT_EQ(r.type, FilterType::kBloom);
  EXPECT_EQ(r.slice_id, 7U);
  EXPECT_EQ(r.payload, "payload");
}

TEST(Record, RejectsEveryTruncation) {
  const std::string bytes = encode_record(RecordKind::kMeta, FilterType::kTimeLimited, 0, "some payload");
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_THROW(decode_single_record(std::string_view(bytes).substr(0, n)), FormatError) << n;
  }
}

TEST(Record, RejectsEverySingleByteCorruption) {
  const std::string bytes = encode_record(RecordKind::kMeta, FilterType::kTimeLimited, 0, "some payload");
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    EXPECT_THROW(decode_single_record(bad), FormatError) << i;
  }
}

TEST(Record, ErrorsSayWhatIsWrong) {
  std::string bytes = encode_record(RecordKind::kMeta, FilterType::kBloom, 0, "x");
  std::string wrong_version = bytes;
  wrong_version[4] = 9;
  try {
    decode_single_record(wrong_version);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(), "unsupported filter format version 9 (this build reads 1)");
  }
  try {
    decode_single_record(bytes.substr(0, 20));
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(), "truncated filter data: slice id needs 8 bytes at offset 16, only 4 left");
  }
  EXPECT_THROW(decode_single_record(bytes + "x"), FormatError);
  EXPECT_THROW(decode_single_record(""), FormatError);
}

// Builds a small filter of the given type from fixed keys and times.
std::unique_ptr<Filter> pinned_filter(FilterType type) {
  FilterOptions o;
  o.type = type;
  o.error_rate = 0.01;
  o.ttl = std::chrono::seconds(10);
  o.expected_per_ttl = 200;
  auto filter = make_filter(o);
  const TimePoint start = from_epoch_millis(1'700'000'000'000);
  for (int i = 0; i < 500; ++i) {
    filter->test_and_insert("key-" + std::to_string(i % 350), start + std::chrono::milliseconds(37 * i));
  }
  return filter;
}

TEST(Schema, TimeLimitedBytesArePinned) {
  const std::string blob = serialize(*pinned_filter(FilterType::kTimeLimited));
  // The metadata record's envelope: magic, version 1, kind meta, type time_limited, the seed
  // ("bloomgat" little-endian), slice id 0.
  const std::string header("BGFR\x01\x00\x01\x01" "tagmoolb" "\0\0\0\0\0\0\0\0", 24);
  EXPECT_EQ(blob.substr(0, 24), header);
  // The record format is unchanged since version 1; the slice sizes in it are the sizing's (eq (8) not
  // rounded to words, sizes shared within a segment: time_limited_filter.cc).
  EXPECT_EQ(blob.size(), 9713U);
  EXPECT_EQ(XXH3_64bits(blob.data(), blob.size()), 6610085423922477284ULL);
}

TEST(Schema, AgePartitionedBytesArePinned) {
  const std::string blob = serialize(*pinned_filter(FilterType::kAgePartitioned));
  EXPECT_EQ(blob.size(), 8897U);
  EXPECT_EQ(XXH3_64bits(blob.data(), blob.size()), 13227166126274738646ULL);
}

}  // namespace
}  // namespace bloomgate::filters
