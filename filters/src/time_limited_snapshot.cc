// File: time_limited_snapshot.cc
//
// Snapshots of the time-limited filter (filter.h, FilterSnapshot): the cells of its one segment as they lie,
// with what the slice records say of each slice but its words, so that a restore copies the cells instead of
// transposing every slice's words into them (docs/state.md, "Snapshots at a clean stop").
//
// Header record (RecordKind::kSnapshot, slice id 0). Payload, little-endian like format.h:
//
//   offset  size    field
//   0       8       checksum of the metadata record it belongs to (that record's last 8 bytes)
//   8       8       rows of the segment (every slice's size in bits)
//   16      4       columns of the segment
//   20      4       the ring's oldest column
//   24      8       words of the cells (ColumnSegment::storage_words)
//   32      4       words per band (kSnapshotBandBytes / 8; the last band holds the rest)
//   36      4       bands
//   40      8       slices n, as many as the metadata record lists
//   48      n x 44  per slice, newest first (the metadata record's order): id 8, insertions 8, hash index 4,
//                   stamp 8, generation insertions 8, set bits 8
//   48+44n  4       the cells' layout, kCellLayout (column_segment.h's phase tables); a header without it
//                   holds the rows-in-lines cells of earlier versions and is refused, so the store restores
//                   from the slices
//
// Band record (RecordKind::kSnapshotBand, slice id = band number): the header record's checksum (its last 8
// bytes: a band of another snapshot does not fit), then the band's words.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "time_limited_filter.h"

namespace bloomgate::filters {
namespace {

using detail::BitSlice;
using detail::ColumnSegment;
using detail::ColumnSlice;

constexpr std::size_t kBandWords = kSnapshotBandBytes / 8;
constexpr std::uint64_t kMaxSnapshotSlices = 1ULL << 20;
constexpr std::uint32_t kCellLayout = 2;
// A snapshot spares a restore the transposes of its slice records, which matter for large filters only: a
// filter whose slices are smaller restores from its records, as it always did.
constexpr std::uint64_t kMinSnapshotRows = 1ULL << 16;

// The record's checksum, its last 8 bytes (format.h): what binds a snapshot to its records.
std::uint64_t checksum_of(std::string_view record) {
  if (record.size() < kRecordTrailerSize) throw FormatError("record too short to carry a checksum");
  ByteReader r(record.substr(record.size() - kRecordTrailerSize));
  return r.u64("record checksum");
}

struct SnapshotHeader {
  std::uint64_t meta_checksum = 0;
  std::uint64_t rows = 0;
  std::uint32_t columns = 0;
  std::uint32_t oldest = 0;
  std::uint64_t words = 0;
  std::uint32_t band_words = 0;
  std::uint32_t bands = 0;
  std::vector<BitSlice> slices;  // newest first, without words
  std::vector<std::uint64_t> set_bits;
};

SnapshotHeader parse_header(const Record& header) {
  if (header.kind != RecordKind::kSnapshot || header.type != FilterType::kTimeLimited) {
    throw FormatError("not a time-limited filter's snapshot header");
  }
  ByteReader r(header.payload);
  SnapshotHeader h;
  h.meta_checksum = r.u64("snapshot metadata checksum");
  h.rows = r.u64("snapshot rows");
  h.columns = r.u32("snapshot columns");
  h.oldest = r.u32("snapshot oldest column");
  h.words = r.u64("snapshot words");
  h.band_words = r.u32("snapshot band words");
  h.bands = r.u32("snapshot bands");
  const std::uint64_t count = r.u64("snapshot slice count");
  if (h.rows == 0 || h.rows > detail::kMaxSliceBitsOnDisk || h.columns == 0 ||
      h.columns > kMaxSnapshotSlices || h.oldest > h.columns || count == 0 || count > h.columns ||
      h.band_words == 0 || h.bands != (h.words + h.band_words - 1) / h.band_words) {
    throw FormatError("time-limited filter snapshot has an impossible shape");
  }
  h.slices.resize(count);
  h.set_bits.resize(count);
  for (std::uint64_t p = 0; p < count; ++p) {
    BitSlice& slice = h.slices[p];
    slice.id = r.u64("snapshot slice id");
    slice.bits = h.rows;
    slice.insertions = r.u64("snapshot slice insertions");
    slice.hash_index = r.u32("snapshot slice hash index");
    slice.stamp_ns = r.i64("snapshot slice stamp");
    slice.generation_insertions = r.u64("snapshot slice generation insertions");
    slice.dirty = false;
    h.set_bits[p] = r.u64("snapshot slice set bits");
    if (h.set_bits[p] > h.rows) throw FormatError("time-limited filter snapshot slice has more set bits than bits");
  }
  if (r.remaining() == 0) {
    throw FormatError("time-limited filter snapshot holds the cells of an earlier layout (rows in lines)");
  }
  if (const std::uint32_t layout = r.u32("snapshot cell layout"); layout != kCellLayout) {
    throw FormatError("time-limited filter snapshot has cell layout " + std::to_string(layout) + ", not " +
                      std::to_string(kCellLayout));
  }
  r.expect_end("time-limited filter snapshot header");
  return h;
}

}  // namespace

std::optional<FilterSnapshot> TimeLimitedFilter::snapshot() const {
  settle_region();
  count_set_bits();
  if (segments_.size() != 1 || segments_.front()->rows() < kMinSnapshotRows || slices_.empty()) {
    return std::nullopt;
  }
  const ColumnSegment& segment = *segments_.front();
  const std::size_t words = segment.storage_words();
  const auto bands = static_cast<std::uint32_t>((words + kBandWords - 1) / kBandWords);
  ByteWriter w;
  w.u64(checksum_of(meta_record()));
  w.u64(segment.rows());
  w.u32(segment.columns());
  w.u32(segment.column_of_age(0));
  w.u64(words);
  w.u32(static_cast<std::uint32_t>(kBandWords));
  w.u32(bands);
  w.u64(slices_.size());
  for (const ColumnSlice& slice : slices_) {
    w.u64(slice.id);
    w.u64(slice.insertions);
    w.u32(slice.hash_index);
    w.i64(slice.stamp_ns);
    w.u64(slice.generation_insertions);
    w.u64(slice.set_bits);
  }
  w.u32(kCellLayout);
  FilterSnapshot out;
  out.header = encode_record(RecordKind::kSnapshot, type(), 0, w.take());
  const std::uint64_t header_checksum = checksum_of(out.header);
  out.bands.reserve(bands);
  for (std::uint32_t band = 0; band < bands; ++band) {
    const std::size_t begin = std::size_t{band} * kBandWords;
    ByteWriter b;
    b.u64(header_checksum);
    b.words(std::span(segment.cells() + begin, std::min(words - begin, kBandWords)));
    out.bands.push_back(encode_record(RecordKind::kSnapshotBand, type(), band, b.take()));
  }
  return out;
}

std::unique_ptr<Filter> TimeLimitedFilter::restore_snapshot(const Record& meta, std::string_view meta_record,
                                                            std::string_view header_record, const SliceViews& bands) {
  const SnapshotHeader h = parse_header(decode_single_record(header_record));
  if (h.meta_checksum != checksum_of(meta_record)) return nullptr;
  std::vector<std::uint64_t> ids;
  std::unique_ptr<TimeLimitedFilter> f = from_meta(meta, ids);
  if (ids.size() != h.slices.size()) throw FormatError("time-limited filter snapshot lists other slices");
  if (h.columns > ColumnSegment::max_slices(f->params_.k)) {
    throw FormatError("time-limited filter snapshot has more columns than a segment holds");
  }
  for (std::size_t p = 0; p < ids.size(); ++p) {
    if (h.slices[p].id != ids[p] || h.slices[p].hash_index >= f->params_.k) {
      throw FormatError("time-limited filter snapshot slice " + std::to_string(h.slices[p].id) +
                        " does not match the metadata record");
    }
  }
  auto segment = std::make_unique<ColumnSegment>(h.rows, h.columns, f->params_.k);
  if (segment->storage_words() != h.words) throw FormatError("time-limited filter snapshot has another cell count");
  // The band views are RocksDB's blocks, verified by the store; each record's checksum is verified here too.
  const std::uint64_t header_checksum = checksum_of(header_record);
  for (std::uint32_t band = 0; band < h.bands; ++band) {
    const auto view = bands(band);
    if (!view) throw FormatError("time-limited filter snapshot band " + std::to_string(band) + " is missing");
    const Record rec = decode_single_record(*view);
    if (rec.kind != RecordKind::kSnapshotBand || rec.type != FilterType::kTimeLimited || rec.slice_id != band) {
      throw FormatError("record " + std::to_string(rec.slice_id) + " is not band " + std::to_string(band) +
                        " of a time-limited filter snapshot");
    }
    ByteReader r(rec.payload);
    if (r.u64("snapshot band header checksum") != header_checksum) {
      throw FormatError("time-limited filter snapshot band " + std::to_string(band) + " belongs to another snapshot");
    }
    const std::size_t begin = std::size_t{band} * h.band_words;
    const std::size_t count = std::min<std::size_t>(h.words - begin, h.band_words);
    if (r.remaining() != count * 8) throw FormatError("time-limited filter snapshot band has the wrong size");
    r.words(std::span(segment->cells() + begin, count), "snapshot band words");
  }
  segment->start_ring_at(h.oldest);
  f->segments_.push_back(std::move(segment));
  for (std::size_t p = h.slices.size(); p-- > 0;) f->place_restored(h.slices[p], h.set_bits[p]);
  return f;
}

}  // namespace bloomgate::filters
