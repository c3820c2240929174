#include <map>
#include <memory>
#include <optional>
#include <string>

#include "age_partitioned_filter.h"
#include "aging_fingerprint_filter.h"
#include "bloom_filter.h"
#include "continuous_filter.h"
#include "scalable_bloom_filter.h"
#include "spectral_filter.h"
#include "bloomgate/filters/filter.h"
#include "time_limited_filter.h"

namespace bloomgate::filters {

std::string serialize(const Filter& filter) {
  const FilterImage image = filter.image(ImageScope::kFull);
  std::string out = image.meta;
  for (const auto& slice : image.slices) out += slice.record;
  return out;
}

std::unique_ptr<Filter> deserialize(std::string_view blob) {
  std::string_view rest = blob;
  const std::string_view meta_bytes = rest;
  const Record meta = decode_record(rest);
  if (meta.kind != RecordKind::kMeta) throw FormatError("a filter blob must start with its metadata record");
  const std::string_view meta_record = meta_bytes.substr(0, meta_bytes.size() - rest.size());
  std::map<std::uint64_t, std::string_view> slices;
  while (!rest.empty()) {
    const std::string_view before = rest;
    const Record slice = decode_record(rest);
    if (slice.kind != RecordKind::kSlice || slice.type != meta.type) {
      throw FormatError("a filter blob holds a record of another filter");
    }
    if (!slices.emplace(slice.slice_id, before.substr(0, before.size() - rest.size())).second) {
      throw FormatError("a filter blob holds slice " + std::to_string(slice.slice_id) + " twice");
    }
  }
  // Views into the blob, which outlives the restore.
  return restore(meta_record, SliceViews([&](std::uint64_t id) -> std::optional<std::string_view> {
    const auto it = slices.find(id);
    if (it == slices.end()) return std::nullopt;
    return it->second;
  }));
}

SliceViews SliceViews::of(SliceLookup lookup) {
  // The copy of the last call, shared by the copies of the SliceViews: a view lives until the next call.
  auto held = std::make_shared<std::optional<std::string>>();
  return SliceViews([lookup = std::move(lookup), held](std::uint64_t id) -> std::optional<std::string_view> {
    *held = lookup(id);
    if (!*held) return std::nullopt;
    return std::string_view(**held);
  });
}

std::unique_ptr<Filter> restore(std::string_view meta_record, const SliceLookup& lookup) {
  return restore(meta_record, SliceViews::of(lookup));
}

std::unique_ptr<Filter> restore(std::string_view meta_record, const SliceViews& lookup) {
  const Record meta = decode_single_record(meta_record);
  if (meta.kind != RecordKind::kMeta) throw FormatError("expected a filter metadata record");
  switch (meta.type) {
    case FilterType::kTimeLimited: return TimeLimitedFilter::restore(meta, lookup);
    case FilterType::kAgePartitioned: return AgePartitionedFilter::restore(meta, lookup);
    case FilterType::kContinuous: return ContinuousFilter::restore(meta, lookup);
    case FilterType::kScalable: return ScalableBloomFilter::restore(meta, lookup);
    case FilterType::kBloom: return BloomFilter::restore(meta, lookup);
    case FilterType::kSpectral: return SpectralFilter::restore(meta, lookup);
    case FilterType::kAgingFingerprint: return AgingFingerprintFilter::restore(meta, lookup);
  }
  throw FormatError(std::string("cannot restore a filter of type ") + filter_type_name(meta.type));
}

std::unique_ptr<Filter> restore_snapshot(std::string_view meta_record, std::string_view header, const SliceViews& bands) {
  const Record meta = decode_single_record(meta_record);
  if (meta.kind != RecordKind::kMeta) throw FormatError("expected a filter metadata record");
  if (meta.type != FilterType::kTimeLimited) {
    throw FormatError(std::string("a ") + filter_type_name(meta.type) + " filter has no snapshots");
  }
  return TimeLimitedFilter::restore_snapshot(meta, meta_record, header, bands);
}

}  // namespace bloomgate::filters
