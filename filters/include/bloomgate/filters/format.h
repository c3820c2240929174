// File: format.h
//
// The on-disk format of every filter: a filter is persisted as records, one metadata record and one
// record per slice, so a checkpoint rewrites only the slices that changed.
//
// Every record has the same envelope. Integers are little-endian.
//
//   offset  size  field
//   0       4     magic "BGFR"
//   4       2     format version (kFormatVersion)
//   6       1     record kind (RecordKind)
//   7       1     filter type (FilterType)
//   8       8     hash seed the filter was built with (kHashSeed)
//   16      8     slice id (0 in a metadata record)
//   24      4     payload length n
//   28      n     payload, owned by the filter type
//   28+n    8     XXH3-64 (seed 0) of bytes [0, 28+n)
//
// A whole filter serialized as one blob is its metadata record followed by its slice records.
//
// Snapshot records (kinds 3 and 4, filter.h's FilterSnapshot) hold a filter's memory as it lies, written at a
// clean stop beside the slice records so the next start skips rebuilding its layout. They are optional: a
// reader that finds none, or one that belongs to another metadata record, restores from the slices. The
// envelope is the same; the payloads belong to the filter type (time_limited_snapshot.cc for the one type
// that writes them).
// Anything that does not parse, carries an unknown version, kind or type, another hash seed, or fails its
// checksum is rejected with FormatError, never read past its end.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bloomgate/filters/filter_types.h"

namespace bloomgate::filters {

inline constexpr std::uint16_t kFormatVersion = 1;
inline constexpr std::size_t kRecordHeaderSize = 28;
inline constexpr std::size_t kRecordTrailerSize = 8;

enum class RecordKind : std::uint8_t { kMeta = 1, kSlice = 2, kSnapshot = 3, kSnapshotBand = 4 };

class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Appends little-endian fields to a byte string.
class ByteWriter {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u16(std::uint16_t v) { fixed(v); }
  void u32(std::uint32_t v) { fixed(v); }
  void u64(std::uint64_t v) { fixed(v); }
  void i64(std::int64_t v) { fixed(static_cast<std::uint64_t>(v)); }
  void f64(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    fixed(bits);
  }
  void words(std::span<const std::uint64_t> ws) {
    for (std::uint64_t w : ws) fixed(w);
  }
  void bytes(std::string_view b) { out_.append(b); }
  std::string take() { return std::move(out_); }
  std::size_t size() const { return out_.size(); }

 private:
  template <typename T>
  void fixed(T v) {
    for (std::size_t i = 0; i < sizeof(T); ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  }
  std::string out_;
};

// Reads little-endian fields; every read past the end throws FormatError naming what was being read.
class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  std::uint8_t u8(const char* what) { return static_cast<std::uint8_t>(fixed<1>(what)); }
  std::uint16_t u16(const char* what) { return static_cast<std::uint16_t>(fixed<2>(what)); }
  std::uint32_t u32(const char* what) { return static_cast<std::uint32_t>(fixed<4>(what)); }
  std::uint64_t u64(const char* what) { return fixed<8>(what); }
  std::int64_t i64(const char* what) { return static_cast<std::int64_t>(fixed<8>(what)); }
  double f64(const char* what) {
    std::uint64_t bits = fixed<8>(what);
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  void words(std::span<std::uint64_t> out, const char* what) {
    need(out.size() * 8, what);
    if constexpr (std::endian::native == std::endian::little) {
      // The stored order is the host's: one copy (restores copy whole slices through here).
      if (!out.empty()) std::memcpy(out.data(), in_.data() + pos_, out.size() * 8);
      pos_ += out.size() * 8;
    } else {
      for (auto& w : out) w = fixed<8>(what);
    }
  }
  std::string_view bytes(std::size_t n, const char* what) {
    need(n, what);
    std::string_view b = in_.substr(pos_, n);
    pos_ += n;
    return b;
  }
  std::size_t remaining() const { return in_.size() - pos_; }
  // Throws when bytes are left over: a payload must be consumed exactly.
  void expect_end(const char* what) const;

 private:
  void need(std::size_t n, const char* what) const;
  template <std::size_t N>
  std::uint64_t fixed(const char* what) {
    need(N, what);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < N; ++i)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[pos_ + i])) << (8 * i);
    pos_ += N;
    return v;
  }
  std::string_view in_;
  std::size_t pos_ = 0;
};

struct Record {
  RecordKind kind;
  FilterType type;
  std::uint64_t slice_id;
  std::string_view payload;  // points into the bytes it was parsed from
};

// Wraps a payload in the envelope above.
std::string encode_record(RecordKind kind, FilterType type, std::uint64_t slice_id, std::string_view payload);

// Parses one record from the front of `bytes`, verifies it, and advances `bytes` past it.
Record decode_record(std::string_view& bytes);

// Parses exactly one record that must fill `bytes`.
Record decode_single_record(std::string_view bytes);

// decode_single_record without computing the checksum: every other check of the envelope (magic, version,
// kind, type, hash seed, length), for a caller that only needs to know which record it holds before
// handing it to restore(), which verifies the checksum.
Record peek_single_record(std::string_view bytes);

// Throws FormatError unless `meta` is the metadata record (kind kMeta, slice id 0) of a filter of `type`.
// Each filter type's restore checks this itself, so a record handed to the wrong type's restore is rejected.
void expect_meta_record(const Record& meta, FilterType type);

}  // namespace bloomgate::filters
