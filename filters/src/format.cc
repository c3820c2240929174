#include "bloomgate/filters/format.h"

#include <xxhash.h>
#ifdef BLOOMGATE_XXH3_DISPATCH
// libxxhash's runtime dispatch (the header maps XXH3_64bits to XXH3_64bits_dispatch): the same hash with
// the widest vector unit the CPU has, instead of the SSE2 code of a baseline x86-64 build. A record's
// checksum covers its whole payload, so this is most of what verifying a restored filter costs (figures in
// bench/README.md); the values are the same, which the schema tests pin.
#include <xxh_x86dispatch.h>
#endif

#include <algorithm>
#include <string>

#include "bloomgate/filters/hash.h"

namespace bloomgate::filters {
namespace {

constexpr std::uint32_t kMagic = 0x52464742;  // "BGFR" read as little-endian

bool known_type(std::uint8_t t) {
  return std::any_of(kFilterTypes.begin(), kFilterTypes.end(),
                     [t](const FilterTypeInfo& info) { return static_cast<std::uint8_t>(info.type) == t; });
}

}  // namespace

void ByteReader::need(std::size_t n, const char* what) const {
  if (n > remaining()) {
    throw FormatError("truncated filter data: " + std::string(what) + " needs " + std::to_string(n) +
                      " bytes at offset " + std::to_string(pos_) + ", only " + std::to_string(remaining()) +
                      " left");
  }
}

void ByteReader::expect_end(const char* what) const {
  if (remaining() != 0) {
    throw FormatError(std::string(what) + ": " + std::to_string(remaining()) + " unexpected trailing bytes");
  }
}

std::string encode_record(RecordKind kind, FilterType type, std::uint64_t slice_id, std::string_view payload) {
  if (payload.size() > UINT32_MAX) throw FormatError("record payload exceeds 4 GiB");
  ByteWriter w;
  w.u32(kMagic);
  w.u16(kFormatVersion);
  w.u8(static_cast<std::uint8_t>(kind));
  w.u8(static_cast<std::uint8_t>(type));
  w.u64(kHashSeed);
  w.u64(slice_id);
  w.u32(static_cast<std::uint32_t>(payload.size()));
  w.bytes(payload);
  std::string out = w.take();
  ByteWriter trailer;
  trailer.u64(XXH3_64bits(out.data(), out.size()));
  out += trailer.take();
  return out;
}

namespace {

// The envelope of the record at the front of `bytes`; its checksum is verified when `verify` is set.
Record parse_record(std::string_view& bytes, bool verify) {
  ByteReader r(bytes);
  if (r.u32("record magic") != kMagic) throw FormatError("not a bloomgate filter record (bad magic)");
  const std::uint16_t version = r.u16("format version");
  if (version != kFormatVersion) {
    throw FormatError("unsupported filter format version " + std::to_string(version) + " (this build reads " +
                      std::to_string(kFormatVersion) + ")");
  }
  const std::uint8_t kind = r.u8("record kind");
  if (kind < static_cast<std::uint8_t>(RecordKind::kMeta) || kind > static_cast<std::uint8_t>(RecordKind::kSnapshotBand)) {
    throw FormatError("unknown record kind " + std::to_string(kind));
  }
  const std::uint8_t type = r.u8("filter type");
  if (!known_type(type)) throw FormatError("unknown filter type " + std::to_string(type));
  const std::uint64_t seed = r.u64("hash seed");
  if (seed != kHashSeed) throw FormatError("filter was built with another hash seed");
  const std::uint64_t slice_id = r.u64("slice id");
  const std::uint32_t length = r.u32("payload length");
  const std::string_view payload = r.bytes(length, "record payload");
  const std::uint64_t stored = r.u64("record checksum");
  const std::size_t covered = kRecordHeaderSize + length;
  if (verify && XXH3_64bits(bytes.data(), covered) != stored) throw FormatError("filter record checksum mismatch");
  bytes.remove_prefix(covered + kRecordTrailerSize);
  return Record{static_cast<RecordKind>(kind), static_cast<FilterType>(type), slice_id, payload};
}

}  // namespace

Record decode_record(std::string_view& bytes) { return parse_record(bytes, true); }

Record decode_single_record(std::string_view bytes) {
  Record rec = decode_record(bytes);
  if (!bytes.empty()) throw FormatError("unexpected bytes after a filter record");
  return rec;
}

Record peek_single_record(std::string_view bytes) {
  Record rec = parse_record(bytes, false);
  if (!bytes.empty()) throw FormatError("unexpected bytes after a filter record");
  return rec;
}

void expect_meta_record(const Record& meta, FilterType type) {
  if (meta.kind != RecordKind::kMeta || meta.type != type || meta.slice_id != 0) {
    throw FormatError(std::string("record is not the metadata of a ") + filter_type_name(type) + " filter");
  }
}

}  // namespace bloomgate::filters
