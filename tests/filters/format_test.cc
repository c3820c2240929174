// The record envelope and the key hash: any change to the hash or its seed fails here, and must come with a
// new format version. Each filter's persisted fields are pinned in schema_test.cc.
#include "bloomgate/filters/format.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include "bloomgate/filters/hash.h"

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

}  // namespace
}  // namespace bloomgate::filters
