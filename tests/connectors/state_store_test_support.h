// What the state store's tests share: a temporary directory, a small time-limited filter, keys inserted on
// a clock, checkpoints taken as the service takes them, and the file damage the fault tests apply.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bloomgate/connectors/state_store.h"
#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"

namespace bloomgate::connectors::state_test {
namespace fs = std::filesystem;
using filters::Filter;
using filters::FilterImage;
using filters::ImageScope;
using filters::TimePoint;
using Kind = StateStoreError::Kind;
using std::chrono::milliseconds;
using std::chrono::seconds;

inline const TimePoint kStart = filters::from_epoch_millis(1'700'000'000'000);

// A directory under testing::TempDir(), removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir();
    if (!pattern.empty() && pattern.back() != '/') pattern.push_back('/');
    pattern += "bloomgate-state-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern + " failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string path(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline filters::FilterOptions tlbf_options() {
  filters::FilterOptions o;
  o.type = filters::FilterType::kTimeLimited;
  o.error_rate = 0.01;
  o.ttl = seconds(10);
  o.expected_per_ttl = 2'000;
  return o;
}

inline std::string key_name(const std::string& prefix, std::uint64_t i) { return prefix + "-key-" + std::to_string(i); }

// Inserts keys prefix-key-first .. first+count-1, one every `step` from `start`; returns the last time.
inline TimePoint insert_keys(Filter& filter, const std::string& prefix, std::uint64_t first, std::uint64_t count,
                      TimePoint start, milliseconds step) {
  TimePoint now = start;
  for (std::uint64_t i = 0; i < count; ++i) {
    now = start + step * static_cast<std::int64_t>(i);
    filter.test_and_insert(key_name(prefix, first + i), now);
  }
  return now;
}

// 400,000 keys per TTL of 10 s for 30 s: slices of 78,720 bits, all columns of one segment, the filter a
// clean stop snapshots (filters/src/time_limited_snapshot.cc).
inline std::unique_ptr<Filter> snapshotting_filter(TimePoint& now) {
  filters::FilterOptions o = tlbf_options();
  o.expected_per_ttl = 400'000;
  auto filter = filters::make_filter(o);
  for (std::uint64_t i = 0; i < 1'200'000; ++i) {
    now = kStart + std::chrono::microseconds(25) * static_cast<std::int64_t>(i);
    filter->test_and_insert(key_name("s", i), now);
  }
  return filter;
}

inline PartitionCheckpoint make_checkpoint(const PartitionId& id, std::int64_t next_offset, TimePoint now) {
  PartitionCheckpoint c;
  c.id = id;
  c.next_offset = next_offset;
  c.output_offset = next_offset * 10 + 7;
  c.written_at_ms = 1'700'000'000'000 + next_offset;
  c.filter_time_ns = filters::to_epoch_nanos(now);
  return c;
}

// One checkpoint as the service takes it: the changed records, then mark_persisted once durable.
inline CheckpointWrite checkpoint(StateStore& store, Filter& filter, const PartitionCheckpoint& c,
                           FilterImage* image_out = nullptr) {
  FilterImage image = filter.image(ImageScope::kChangedSinceLastPersist);
  const CheckpointWrite written = store.write_checkpoint(c, image);
  filter.mark_persisted();
  if (image_out != nullptr) *image_out = std::move(image);
  return written;
}

inline std::unique_ptr<Filter> restore(const StateStore& store, const PartitionId& id) {
  const auto stored = store.read(id);
  if (!stored) return nullptr;
  return filters::restore(stored->filter_meta, store.slices(id));
}

inline std::vector<fs::path> files_with_extension(const std::string& dir, const std::string& extension) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == extension) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Inverts `count` bytes of the file at `offset`.
inline void flip_bytes(const fs::path& file, std::uint64_t offset, std::size_t count) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f) << file;
  std::string bytes(count, '\0');
  f.seekg(static_cast<std::streamoff>(offset));
  f.read(bytes.data(), static_cast<std::streamsize>(count));
  for (char& c : bytes) c = static_cast<char>(~c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(count));
  ASSERT_TRUE(f) << file;
}
}  // namespace bloomgate::connectors::state_test
