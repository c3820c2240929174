// File: state_topic_records.h
//
// A partition's checkpoints as records of a compacted Kafka topic (the state topic), and the restore that
// reads them back (docs/decisions/state-topic-records.md). Pure functions and small state over strings,
// without Kafka: a producer sends what StateTopicWriter plans, and a consumer of the state partition feeds
// what it reads to a StateTopicAssembler. The service does not write a state topic yet; this is its record
// layer, tested on its own (tests/connectors/state_topic_records_test.cc).
//
// Why epochs in the keys. Compaction keeps the newest value of each key, and a checkpoint is many records
// (metadata, slices, snapshot bands, each cut into chunks that fit one Kafka record). A record is written
// under a key that names the checkpoint epoch it was written at, and the partition's manifest, written
// last, lists every record of the checkpoint with its epoch, size and hash. A checkpoint interrupted before
// its manifest leaves the previous manifest's records untouched, so a restore reads the newest complete
// checkpoint and never mixes two. The records that a manifest no longer lists are deleted with tombstones
// only after that manifest is acknowledged (StateTopicPlan::tombstones_after_ack).
//
// Keys, UTF-8 text so the topic reads well in a console consumer, version 1:
//
//   bgst1/<topic>/<partition>/manifest                   the partition's newest manifest
//   bgst1/<topic>/<partition>/<kind><id>@<epoch>#<chunk>  one chunk of one record; kind m (metadata),
//                                                         s (slice), n (snapshot header), p (snapshot band)
//
// Kafka topic names hold only [a-zA-Z0-9._-], so '/' separates fields unambiguously. Every key of an input
// partition shares the prefix up to its last '/': its records all go to one partition of the state topic
// (state_topic_partition), so one partition's state is read from one partition of the state topic.
//
// Chunk value, version 1 (little-endian like filters/format.h):
//
//   offset  size  field
//   0       4     magic "BGSC"
//   4       1     version (1)
//   5       8     epoch
//   13      4     chunk index
//   17      4     chunk count
//   21      4     payload length n
//   25      n     payload: bytes [index x chunk size, ...) of the record (a filters/format.h record)
//   25+n    8     XXH3-64 (seed 0) of the key followed by bytes [0, 25+n)
//
// Manifest value, version 1:
//
//   0       4     magic "BGSM"
//   4       1     version (1)
//   5       8     epoch (of this checkpoint)
//   13      8     next_offset, 21 8 output_offset, 29 8 written_at_ms, 37 8 filter_time_ns (state_store.h)
//   45      4     entry count E
//   49      37 E  entries: kind (1), id (8), epoch written at (8), chunk count (4), record bytes (8),
//                 XXH3-64 (seed 0) of the record (8)
//   49+37E  8     XXH3-64 (seed 0) of the key followed by bytes [0, 49+37E)
//
// A key or value copied under another key fails its checksum, as in the state store.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "bloomgate/connectors/state_store.h"
#include "bloomgate/filters/filter.h"

namespace bloomgate::connectors {

inline constexpr std::string_view kStateTopicKeyTag = "bgst1";
inline constexpr std::uint8_t kStateTopicVersion = 1;
// The largest payload one chunk carries by default: leaves room under the broker's default
// message.max.bytes (1 MiB plus framing) for the key, the chunk header and the record batch's framing.
inline constexpr std::size_t kDefaultStateChunkBytes = 900 * 1024;

// The state topic's partition that holds `id`'s records: the input partition's number, so a state topic
// with as many partitions as the largest input topic holds each input partition in one of its own.
std::int32_t state_topic_partition(const PartitionId& id) noexcept;

// One record of a checkpoint, named as in the state store's layout.
struct StateRecordName {
  char kind = 'm';  // 'm' metadata, 's' slice, 'n' snapshot header, 'p' snapshot band
  std::uint64_t id = 0;
  auto operator<=>(const StateRecordName&) const = default;
};

// What a manifest says of one record.
struct ManifestEntry {
  StateRecordName name;
  std::uint64_t epoch = 0;  // the checkpoint epoch it was written at, which its chunks' keys carry
  std::uint32_t chunks = 0;
  std::uint64_t bytes = 0;
  std::uint64_t hash = 0;  // XXH3-64, seed 0, of the whole record
  friend bool operator==(const ManifestEntry&, const ManifestEntry&) = default;
};

struct StateManifest {
  std::uint64_t epoch = 0;
  PartitionCheckpoint checkpoint;
  std::vector<ManifestEntry> entries;  // ordered by name
  friend bool operator==(const StateManifest&, const StateManifest&) = default;
};

// One Kafka record to produce: a key and a value, or a tombstone (no value).
struct StateTopicRecord {
  std::string key;
  std::optional<std::string> value;
};

struct StateTopicPlan {
  std::uint64_t epoch = 0;
  // The chunks of every record written at this epoch, then the manifest last: produce them in this order
  // to the one state partition (state_topic_partition), with an idempotent producer and acks=all.
  std::vector<StateTopicRecord> records;
  // The records the new manifest no longer lists (replaced or dropped): produce these only once every
  // record above is acknowledged, or the previous checkpoint could lose records a restore still needs.
  std::vector<StateTopicRecord> tombstones_after_ack;
  std::uint64_t bytes = 0;  // keys and values of `records`
};

std::string state_topic_manifest_key(const PartitionId& id);
std::string state_topic_chunk_key(const PartitionId& id, const StateRecordName& name, std::uint64_t epoch,
                                  std::uint32_t chunk);
std::string encode_state_chunk(std::string_view key, std::uint64_t epoch, std::uint32_t index, std::uint32_t count,
                               std::string_view payload);
std::string encode_state_manifest(std::string_view key, const StateManifest& manifest);
// Throws filters::FormatError naming what is wrong (magic, version, length, checksum).
StateManifest decode_state_manifest(std::string_view key, std::string_view value);

// The epoch of the next checkpoint: greater than `previous`, and taken from the wall clock (milliseconds,
// shifted by 10 bits) so that two owners of a partition one after another, neither of which read the
// other's manifest, do not write the same keys.
std::uint64_t next_state_epoch(std::uint64_t previous, std::int64_t now_ms) noexcept;

// Plans one partition's checkpoints as state-topic records. It holds the manifest last planned; a writer
// without one (new, or after reset()) treats the next image as the whole filter, so pass a full image
// (filters::ImageScope::kFull) first: an incremental one would leave the unchanged slices out of the manifest.
class StateTopicWriter {
 public:
  explicit StateTopicWriter(PartitionId id, std::size_t chunk_bytes = kDefaultStateChunkBytes);

  // Continues from a manifest read back from the state topic (its records stay listed until replaced).
  void resume_from(StateManifest manifest);
  void reset() { manifest_.reset(); }
  bool has_baseline() const noexcept { return manifest_.has_value(); }

  // The records of a checkpoint: its metadata, changed slices and dropped slices, and optionally the
  // snapshot a clean stop takes at it. The manifest is planned as the new baseline at once: a caller whose
  // produce fails calls reset() and sends a full image next.
  StateTopicPlan plan(const PartitionCheckpoint& checkpoint, const filters::FilterImage& image, std::int64_t now_ms,
                      const filters::FilterSnapshot* snapshot = nullptr);

 private:
  void add_record(StateTopicPlan& plan, std::map<StateRecordName, ManifestEntry>& entries, StateRecordName name,
                  std::string_view record) const;

  PartitionId id_;
  std::size_t chunk_bytes_;
  std::optional<StateManifest> manifest_;
};

// A checkpoint read back whole from the state topic.
struct StateTopicCheckpoint {
  StateManifest manifest;
  std::string meta;                          // the filter's metadata record
  std::map<std::uint64_t, std::string> slices;  // slice records by id
  std::optional<filters::FilterSnapshot> snapshot;
};

// Why no checkpoint could be read back, for the log and the fallback to a rebuild.
struct StateTopicGap {
  std::string reason;
};

// Reads one input partition's checkpoint from its state partition's records, fed in offset order from the
// beginning (records of other input partitions are passed over). finish() verifies the newest manifest
// against the chunks it lists and returns the checkpoint, or why it cannot: no manifest, a chunk missing
// (an embedded broker that dropped old records, a tombstone), truncated or damaged, a size or hash that
// does not match. A damaged manifest makes the partition's state unreadable: the caller rebuilds.
class StateTopicAssembler {
 public:
  explicit StateTopicAssembler(PartitionId id);

  // `value` nullopt is a tombstone.
  void add(std::string_view key, const std::optional<std::string_view>& value);
  std::variant<StateTopicCheckpoint, StateTopicGap> finish() const;

  std::uint64_t bytes_read() const noexcept { return bytes_read_; }

 private:
  std::optional<std::string> assemble(const StateManifest& manifest, const ManifestEntry& entry,
                                      std::string& gap) const;

  PartitionId id_;
  std::string prefix_;
  std::string manifest_key_;
  std::optional<std::string> manifest_;  // the newest manifest's value
  std::map<std::string, std::string, std::less<>> chunks_;  // chunk key -> value, tombstones erased
  std::uint64_t bytes_read_ = 0;
};

}  // namespace bloomgate::connectors
