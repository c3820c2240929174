// Test support for schema tests: a record's envelope (format.h) and its payload read field by field, as
// text an expectation can list, so a change of format shows which field moved.
#pragma once

#include <xxhash.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "bloomgate/filters/format.h"

namespace bloomgate::filters::testing {

// Reads a payload one little-endian field at a time and renders "name=value" for each, so an expectation
// lists the fields in their order; a field that moved or changed width shows up as the first wrong value.
class Fields {
 public:
  explicit Fields(std::string_view payload) : rest_(payload) {}

  Fields& u8(const char* name) { return add(name, std::to_string(take(1))); }
  Fields& u16(const char* name) { return add(name, std::to_string(take(2))); }
  Fields& u32(const char* name) { return add(name, std::to_string(take(4))); }
  Fields& u64(const char* name) { return add(name, std::to_string(take(8))); }
  Fields& i64(const char* name) { return add(name, std::to_string(static_cast<std::int64_t>(take(8)))); }
  Fields& hex64(const char* name) {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(take(8)));
    return add(name, text);
  }
  Fields& f64(const char* name) {
    const std::uint64_t bits = take(8);
    double value;
    std::memcpy(&value, &bits, sizeof value);
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text, value).ptr;  // shortest text that reads back
    return add(name, std::string(text, end));
  }
  // The rest of the payload as an array of `cell_bits`-bit cells in 64-bit words: the non-zero ones as
  // "index:value" (index only for 1-bit cells, the set bits).
  Fields& cells(const char* name, unsigned cell_bits) {
    std::string listed;
    const std::uint64_t mask = cell_bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << cell_bits) - 1;
    for (std::uint64_t word = 0; rest_.size() >= 8; ++word) {
      const std::uint64_t value = take(8);
      for (unsigned cell = 0; cell < 64 / cell_bits; ++cell) {
        const std::uint64_t content = (value >> (cell * cell_bits)) & mask;
        if (content == 0) continue;
        listed += (listed.empty() ? "" : " ") + std::to_string(word * (64 / cell_bits) + cell);
        if (cell_bits > 1) listed += ":" + std::to_string(content);
      }
    }
    return add(name, "{" + listed + "}");
  }
  Fields& bits(const char* name) { return cells(name, 1); }
  // The rest of the payload as a list of u64.
  Fields& u64s(const char* name) {
    std::string listed;
    while (rest_.size() >= 8) listed += (listed.empty() ? "" : " ") + std::to_string(take(8));
    return add(name, "[" + listed + "]");
  }

  // The fields read, and "+N bytes" when the payload is longer than the fields listed.
  std::string str() const { return rest_.empty() ? text_ : text_ + " +" + std::to_string(rest_.size()) + " bytes"; }

 private:
  std::uint64_t take(std::size_t width) {
    std::uint64_t value = 0;
    if (rest_.size() < width) {
      rest_ = {};
      return ~std::uint64_t{0};  // reads past the end render as the largest value
    }
    for (std::size_t i = 0; i < width; ++i) value |= std::uint64_t{static_cast<unsigned char>(rest_[i])} << (8 * i);
    rest_.remove_prefix(width);
    return value;
  }
  Fields& add(const char* name, const std::string& value) {
    text_ += (text_.empty() ? "" : " ") + std::string(name) + "=" + value;
    return *this;
  }

  std::string_view rest_;
  std::string text_;
};

// The envelope of a record (format.h), read by hand rather than by decode_record, and whether its trailer
// is the XXH3-64 (seed 0) of everything before it.
inline std::string envelope(std::string_view record) {
  if (record.size() < kRecordHeaderSize + kRecordTrailerSize) return "shorter than an envelope";
  std::uint64_t trailer = 0;
  std::memcpy(&trailer, record.data() + record.size() - kRecordTrailerSize, sizeof trailer);
  const bool checksum_ok = trailer == XXH3_64bits(record.data(), record.size() - kRecordTrailerSize);
  return std::string(record.substr(0, 4)) + " " +
         Fields(record.substr(4, kRecordHeaderSize - 4)).u16("version").u8("kind").u8("type").hex64("seed")
             .u64("id").u32("length").str() +
         (checksum_ok ? " checksum=xxh3" : " checksum=wrong");
}

}  // namespace bloomgate::filters::testing
