#include "bit_slice.h"

#include <bit>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <optional>
#include <utility>

#include "popcount.h"

namespace bloomgate::filters::detail {

double BitSlice::measured_fill() const noexcept {
  if (bits == 0) return 0.0;
  return static_cast<double>(popcount_words(words.data(), words.size())) / static_cast<double>(bits);
}

std::string BitSlice::encode(FilterType type) const {
  ByteWriter w;
  w.u64(bits);
  w.u64(insertions);
  w.u32(hash_index);
  w.i64(stamp_ns);
  w.u64(generation_insertions);
  w.words(words);
  return encode_record(RecordKind::kSlice, type, id, w.take());
}

namespace {

// Reads little-endian 64-bit words from bytes, for constructing a slice's words straight from a record
// (no zero-filling first).
class LittleEndianWords {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = std::uint64_t;
  using difference_type = std::ptrdiff_t;
  using pointer = const std::uint64_t*;
  using reference = std::uint64_t;

  LittleEndianWords() = default;
  explicit LittleEndianWords(const char* at) : at_(at) {}
  std::uint64_t operator*() const noexcept {
    std::uint64_t w;
    std::memcpy(&w, at_, sizeof w);
    if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    return w;
  }
  LittleEndianWords& operator++() noexcept {
    at_ += 8;
    return *this;
  }
  LittleEndianWords operator++(int) noexcept {
    LittleEndianWords before = *this;
    at_ += 8;
    return before;
  }
  friend bool operator==(const LittleEndianWords&, const LittleEndianWords&) = default;
  friend difference_type operator-(const LittleEndianWords& a, const LittleEndianWords& b) noexcept {
    return (a.at_ - b.at_) / 8;
  }

 private:
  const char* at_ = nullptr;
};

}  // namespace

BitSlice BitSlice::decode(std::string_view record, FilterType type, std::uint64_t expected_id, std::uint32_t k,
                          const std::shared_ptr<SliceArena>& arena) {
  const Record rec = decode_single_record(record);
  if (rec.kind != RecordKind::kSlice || rec.type != type || rec.slice_id != expected_id) {
    throw FormatError("slice record " + std::to_string(rec.slice_id) + " is not slice " +
                      std::to_string(expected_id) + " of this " + filter_type_name(type) + " filter");
  }
  ByteReader r(rec.payload);
  BitSlice slice;
  slice.id = rec.slice_id;
  slice.bits = r.u64("slice bits");
  if (slice.bits == 0 || slice.bits > kMaxSliceBitsOnDisk) {
    throw FormatError("slice " + std::to_string(expected_id) + " has an impossible size of " +
                      std::to_string(slice.bits) + " bits");
  }
  slice.insertions = r.u64("slice insertions");
  slice.hash_index = r.u32("slice hash index");
  if (slice.hash_index >= k) throw FormatError("slice hash index out of range");
  slice.stamp_ns = r.i64("slice stamp");
  slice.generation_insertions = r.u64("slice generation insertions");
  const std::uint64_t word_count = (slice.bits + 63) / 64;
  if (r.remaining() != word_count * 8) throw FormatError("slice words do not match its size");
  const std::string_view bytes = r.bytes(word_count * 8, "slice words");
  Words words{WordAllocator<std::uint64_t>(arena)};
  words.assign(LittleEndianWords(bytes.data()), LittleEndianWords(bytes.data() + bytes.size()));
  slice.words = std::move(words);
  slice.dirty = false;
  return slice;
}

SliceStats slice_stats(const BitSlice& slice, bool expired) {
  SliceStats s;
  s.id = slice.id;
  s.bits = slice.bits;
  s.insertions = slice.insertions;
  s.fill_ratio = slice.measured_fill();
  s.expired = expired;
  if (slice.stamp_ns != kUnstamped) s.stamp = from_epoch_nanos(slice.stamp_ns);
  return s;
}

}  // namespace bloomgate::filters::detail
