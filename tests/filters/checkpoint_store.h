// Test support for the checkpoint records of every filter type: an in-memory checkpoint store that
// applies FilterImages and restores filters from them, a comparison of a restored filter's stats with the
// original's, and helpers that edit records while keeping their checksum valid, so that only a filter's own
// validation can reject the result.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/format.h"

namespace bloomgate::filters::testing {

// What a checkpoint leaves in durable storage: the latest metadata record and the slice records by id.
class CheckpointStore {
 public:
  using Slices = std::map<std::uint64_t, std::string>;

  CheckpointStore() = default;
  // A store holding one image, typically a filter's ImageScope::kFull image.
  explicit CheckpointStore(const FilterImage& image) { apply(image); }

  // Writes an image as a checkpoint does: the metadata record, the changed slice records, and the
  // deletion of the slices the filter dropped.
  void apply(const FilterImage& image) {
    meta_ = image.meta;
    for (const auto& slice : image.slices) slices_[slice.id] = slice.record;
    for (std::uint64_t id : image.dropped_slice_ids) slices_.erase(id);
  }

  // One checkpoint of `filter`: takes its image of `scope`, applies it and marks the filter persisted.
  // Returns the image.
  FilterImage checkpoint(Filter& filter, ImageScope scope) {
    FilterImage image = filter.image(scope);
    apply(image);
    filter.mark_persisted();
    return image;
  }

  const std::string& meta() const { return meta_; }
  // The slice records, open to editing by corruption tests.
  Slices& slices() { return slices_; }
  const Slices& slices() const { return slices_; }

  // A copy of this store with slice `id` replaced by `record`, or removed when there is no record.
  CheckpointStore with_slice(std::uint64_t id, const std::optional<std::string>& record) const {
    CheckpointStore copy = *this;
    if (record) {
      copy.slices_[id] = *record;
    } else {
      copy.slices_.erase(id);
    }
    return copy;
  }

  // Looks slices up in this store; valid as long as the store is.
  SliceLookup lookup() const {
    return [this](std::uint64_t id) -> std::optional<std::string> {
      const auto it = slices_.find(id);
      if (it == slices_.end()) return std::nullopt;
      return it->second;
    };
  }

  // Restores whatever filter type the metadata record names, through bloomgate::filters::restore.
  std::unique_ptr<Filter> restore() const { return restore(meta_); }
  // The same with another metadata record (an edited one, say) against this store's slices.
  std::unique_ptr<Filter> restore(std::string_view meta_record) const {
    return filters::restore(meta_record, lookup());
  }

 private:
  std::string meta_;
  Slices slices_;
};

// A restored filter describes itself as the original does: the same figures and, slice by slice, the same
// ids, insertions and fill.
inline void expect_equal_stats(TimePoint now, const Filter& original, const Filter& restored) {
  // k, slices, bits, elements, target and estimated FPR; then id, insertions and fill of each slice.
  const auto figures = [](const FilterStats& s) {
    return std::tuple(s.k, s.slices, s.bits, s.elements, s.target_fpr, s.estimated_fpr);
  };
  const auto per_slice = [](const FilterStats& stats) {
    std::vector<std::tuple<std::uint64_t, std::uint64_t, double>> slices;
    for (const SliceStats& slice : stats.slice_stats) slices.emplace_back(slice.id, slice.insertions, slice.fill_ratio);
    return slices;
  };
  const FilterStats original_stats = original.stats(now);
  const FilterStats restored_stats = restored.stats(now);
  EXPECT_EQ(figures(original_stats), figures(restored_stats));
  EXPECT_EQ(per_slice(original_stats), per_slice(restored_stats));
}

// The payload of a record.
inline std::string payload_of(const std::string& record) {
  return std::string(decode_single_record(record).payload);
}

// Re-wraps a record around another payload, keeping its kind, type and slice id, with a valid checksum.
inline std::string with_payload(const std::string& record, const std::string& payload) {
  const Record rec = decode_single_record(record);
  return encode_record(rec.kind, rec.type, rec.slice_id, payload);
}

// The record with its payload changed in place by edit(std::string&), with a valid checksum.
template <typename Edit>
std::string edited(const std::string& record, Edit edit) {
  std::string payload = payload_of(record);
  edit(payload);
  return with_payload(record, payload);
}

// Writes the low `width` bytes of `value` little-endian at `offset`, as the record formats store integers.
inline void put_le(std::string& payload, std::size_t offset, std::uint64_t value, std::size_t width) {
  for (std::size_t i = 0; i < width; ++i) {
    payload.at(offset + i) = static_cast<char>((value >> (8 * i)) & 0xFF);
  }
}

// The payload with `value` written over its field at `offset`, in the field's own width sizeof(T).
template <typename T>
std::string patched(std::string payload, std::size_t offset, T value) {
  put_le(payload, offset, static_cast<std::uint64_t>(value), sizeof(T));
  return payload;
}

// The bit pattern of a double, as the record formats store it.
inline std::uint64_t double_bits(double value) {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline std::string patched_f64(const std::string& payload, std::size_t offset, double value) {
  return patched(payload, offset, double_bits(value));
}

}  // namespace bloomgate::filters::testing
