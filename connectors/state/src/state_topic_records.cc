#include "bloomgate/connectors/state_topic_records.h"

#include <xxhash.h>

#include <algorithm>

#include "bloomgate/filters/format.h"

namespace bloomgate::connectors {
namespace {

using filters::ByteReader;
using filters::ByteWriter;
using filters::FormatError;

constexpr std::string_view kChunkMagic = "BGSC";
constexpr std::string_view kManifestMagic = "BGSM";
constexpr std::size_t kChunkHeaderSize = 4 + 1 + 8 + 4 + 4 + 4;
constexpr std::size_t kChecksumSize = 8;
constexpr char kMetaKind = 'm';
constexpr char kSliceKind = 's';
constexpr char kSnapshotKind = 'n';
constexpr char kBandKind = 'p';

std::uint64_t hash_of(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

// XXH3 of the key followed by the value's bytes before the checksum.
std::uint64_t keyed_checksum(std::string_view key, std::string_view covered) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, key.data(), key.size());
  XXH3_64bits_update(state, covered.data(), covered.size());
  const std::uint64_t sum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return sum;
}

std::string seal(std::string_view key, ByteWriter& w) {
  std::string value = w.take();
  ByteWriter sum;
  sum.u64(keyed_checksum(key, value));
  return value + sum.take();
}

// The value's bytes before its checksum, once the checksum verifies.
std::string_view verified_body(std::string_view key, std::string_view value, const char* what) {
  if (value.size() < kChecksumSize) throw FormatError(std::string(what) + " is shorter than its checksum");
  const std::string_view body = value.substr(0, value.size() - kChecksumSize);
  ByteReader trailer(value.substr(body.size()));
  if (trailer.u64("checksum") != keyed_checksum(key, body)) {
    throw FormatError(std::string(what) + " fails its checksum (damaged, truncated or under another key)");
  }
  return body;
}

void expect_magic(ByteReader& r, std::string_view magic, const char* what) {
  if (r.bytes(magic.size(), what) != magic) {
    throw FormatError(std::string(what) + " has no " + std::string(magic) + " magic");
  }
  if (const std::uint8_t version = r.u8("version"); version != kStateTopicVersion) {
    throw FormatError(std::string(what) + " has version " + std::to_string(version) + ", expected 1");
  }
}

std::string partition_prefix(const PartitionId& id) {
  return std::string(kStateTopicKeyTag) + "/" + id.topic + "/" + std::to_string(id.partition) + "/";
}

std::string describe(const StateRecordName& name) {
  switch (name.kind) {
    case kMetaKind: return "the metadata record";
    case kSnapshotKind: return "the snapshot header";
    case kBandKind: return "snapshot band " + std::to_string(name.id);
    default: return "slice " + std::to_string(name.id);
  }
}

}  // namespace

std::int32_t state_topic_partition(const PartitionId& id) noexcept { return id.partition; }

std::string state_topic_manifest_key(const PartitionId& id) { return partition_prefix(id) + "manifest"; }

std::string state_topic_chunk_key(const PartitionId& id, const StateRecordName& name, std::uint64_t epoch,
                                  std::uint32_t chunk) {
  return partition_prefix(id) + name.kind + std::to_string(name.id) + "@" + std::to_string(epoch) + "#" +
         std::to_string(chunk);
}

std::string encode_state_chunk(std::string_view key, std::uint64_t epoch, std::uint32_t index, std::uint32_t count,
                               std::string_view payload) {
  ByteWriter w;
  w.bytes(kChunkMagic);
  w.u8(kStateTopicVersion);
  w.u64(epoch);
  w.u32(index);
  w.u32(count);
  w.u32(static_cast<std::uint32_t>(payload.size()));
  w.bytes(payload);
  return seal(key, w);
}

std::string encode_state_manifest(std::string_view key, const StateManifest& manifest) {
  ByteWriter w;
  w.bytes(kManifestMagic);
  w.u8(kStateTopicVersion);
  w.u64(manifest.epoch);
  w.i64(manifest.checkpoint.next_offset);
  w.i64(manifest.checkpoint.output_offset);
  w.i64(manifest.checkpoint.written_at_ms);
  w.i64(manifest.checkpoint.filter_time_ns);
  w.u32(static_cast<std::uint32_t>(manifest.entries.size()));
  for (const ManifestEntry& e : manifest.entries) {
    w.u8(static_cast<std::uint8_t>(e.name.kind));
    w.u64(e.name.id);
    w.u64(e.epoch);
    w.u32(e.chunks);
    w.u64(e.bytes);
    w.u64(e.hash);
  }
  return seal(key, w);
}

StateManifest decode_state_manifest(std::string_view key, std::string_view value) {
  ByteReader r(verified_body(key, value, "the state manifest"));
  expect_magic(r, kManifestMagic, "the state manifest");
  StateManifest m;
  m.epoch = r.u64("epoch");
  m.checkpoint.next_offset = r.i64("next_offset");
  m.checkpoint.output_offset = r.i64("output_offset");
  m.checkpoint.written_at_ms = r.i64("written_at_ms");
  m.checkpoint.filter_time_ns = r.i64("filter_time_ns");
  const std::uint32_t count = r.u32("entry count");
  for (std::uint32_t i = 0; i < count; ++i) {
    ManifestEntry e;
    e.name.kind = static_cast<char>(r.u8("entry kind"));
    e.name.id = r.u64("entry id");
    e.epoch = r.u64("entry epoch");
    e.chunks = r.u32("entry chunks");
    e.bytes = r.u64("entry bytes");
    e.hash = r.u64("entry hash");
    if (e.chunks == 0) throw FormatError("the state manifest lists " + describe(e.name) + " with no chunks");
    m.entries.push_back(e);
  }
  r.expect_end("the state manifest");
  return m;
}

std::uint64_t next_state_epoch(std::uint64_t previous, std::int64_t now_ms) noexcept {
  const std::uint64_t from_clock = now_ms > 0 ? static_cast<std::uint64_t>(now_ms) << 10 : 0;
  return std::max(previous + 1, from_clock);
}

StateTopicWriter::StateTopicWriter(PartitionId id, std::size_t chunk_bytes)
    : id_(std::move(id)), chunk_bytes_(std::max<std::size_t>(chunk_bytes, 1)) {}

void StateTopicWriter::resume_from(StateManifest manifest) { manifest_ = std::move(manifest); }

void StateTopicWriter::add_record(StateTopicPlan& plan, std::map<StateRecordName, ManifestEntry>& entries,
                                  StateRecordName name, std::string_view record) const {
  ManifestEntry entry{name, plan.epoch, 0, record.size(), hash_of(record)};
  const std::size_t chunks = std::max<std::size_t>(1, (record.size() + chunk_bytes_ - 1) / chunk_bytes_);
  entry.chunks = static_cast<std::uint32_t>(chunks);
  for (std::uint32_t c = 0; c < entry.chunks; ++c) {
    std::string key = state_topic_chunk_key(id_, name, plan.epoch, c);
    const std::string_view payload = record.substr(c * chunk_bytes_, chunk_bytes_);
    std::string value = encode_state_chunk(key, plan.epoch, c, entry.chunks, payload);
    plan.bytes += key.size() + value.size();
    plan.records.push_back({std::move(key), std::move(value)});
  }
  entries[name] = entry;
}

StateTopicPlan StateTopicWriter::plan(const PartitionCheckpoint& checkpoint, const filters::FilterImage& image,
                                      std::int64_t now_ms, const filters::FilterSnapshot* snapshot) {
  StateTopicPlan plan;
  plan.epoch = next_state_epoch(manifest_ ? manifest_->epoch : 0, now_ms);
  std::map<StateRecordName, ManifestEntry> entries;
  std::map<StateRecordName, ManifestEntry> previous;
  if (manifest_) {
    for (const ManifestEntry& e : manifest_->entries) previous[e.name] = e;
    // Slices unchanged since the last checkpoint stay listed at the epoch they were written at; the
    // snapshot belongs to one checkpoint only, so it never carries over.
    for (const auto& [name, e] : previous) {
      if (name.kind == kSliceKind) entries[name] = e;
    }
    for (std::uint64_t id : image.dropped_slice_ids) entries.erase({kSliceKind, id});
  }
  add_record(plan, entries, {kMetaKind, 0}, image.meta);
  for (const filters::FilterImage::Slice& slice : image.slices) {
    add_record(plan, entries, {kSliceKind, slice.id}, slice.record);
  }
  if (snapshot != nullptr) {
    add_record(plan, entries, {kSnapshotKind, 0}, snapshot->header);
    for (std::size_t b = 0; b < snapshot->bands.size(); ++b) {
      add_record(plan, entries, {kBandKind, b}, snapshot->bands[b]);
    }
  }
  StateManifest manifest{plan.epoch, checkpoint, {}};
  for (const auto& [name, e] : entries) manifest.entries.push_back(e);
  std::string key = state_topic_manifest_key(id_);
  std::string value = encode_state_manifest(key, manifest);
  plan.bytes += key.size() + value.size();
  plan.records.push_back({std::move(key), std::move(value)});
  for (const auto& [name, old] : previous) {
    const auto kept = entries.find(name);
    if (kept != entries.end() && kept->second.epoch == old.epoch) continue;
    for (std::uint32_t c = 0; c < old.chunks; ++c) {
      plan.tombstones_after_ack.push_back({state_topic_chunk_key(id_, name, old.epoch, c), std::nullopt});
    }
  }
  manifest_ = std::move(manifest);
  return plan;
}

StateTopicAssembler::StateTopicAssembler(PartitionId id)
    : id_(std::move(id)), prefix_(partition_prefix(id_)), manifest_key_(state_topic_manifest_key(id_)) {}

void StateTopicAssembler::add(std::string_view key, const std::optional<std::string_view>& value) {
  if (!key.starts_with(prefix_)) return;
  bytes_read_ += key.size() + (value ? value->size() : 0);
  if (key == manifest_key_) {
    if (value) {
      manifest_ = std::string(*value);
    } else {
      manifest_.reset();
    }
    return;
  }
  if (value) {
    chunks_.insert_or_assign(std::string(key), std::string(*value));
  } else if (const auto it = chunks_.find(key); it != chunks_.end()) {
    chunks_.erase(it);
  }
}

std::optional<std::string> StateTopicAssembler::assemble(const StateManifest& manifest, const ManifestEntry& entry,
                                                         std::string& gap) const {
  std::string record;
  for (std::uint32_t c = 0; c < entry.chunks; ++c) {
    const std::string key = state_topic_chunk_key(id_, entry.name, entry.epoch, c);
    const auto it = chunks_.find(key);
    if (it == chunks_.end()) {
      gap = "chunk " + std::to_string(c) + " of " + describe(entry.name) + " (epoch " + std::to_string(entry.epoch) +
            ") is missing";
      return std::nullopt;
    }
    try {
      ByteReader r(verified_body(key, it->second, "a state chunk"));
      expect_magic(r, kChunkMagic, "a state chunk");
      const std::uint64_t epoch = r.u64("epoch");
      const std::uint32_t index = r.u32("chunk index");
      const std::uint32_t count = r.u32("chunk count");
      const std::string_view payload = r.bytes(r.u32("payload length"), "payload");
      r.expect_end("a state chunk");
      if (epoch != entry.epoch || index != c || count != entry.chunks) {
        throw FormatError("its header disagrees with its key");
      }
      record.append(payload);
    } catch (const FormatError& e) {
      gap = "chunk " + std::to_string(c) + " of " + describe(entry.name) + ": " + e.what();
      return std::nullopt;
    }
  }
  if (record.size() != entry.bytes || hash_of(record) != entry.hash) {
    gap = describe(entry.name) + " does not match manifest epoch " + std::to_string(manifest.epoch) + " (size or hash)";
    return std::nullopt;
  }
  return record;
}

std::variant<StateTopicCheckpoint, StateTopicGap> StateTopicAssembler::finish() const {
  if (!manifest_) return StateTopicGap{"no manifest for " + to_string(id_)};
  StateTopicCheckpoint out;
  try {
    out.manifest = decode_state_manifest(manifest_key_, *manifest_);
    out.manifest.checkpoint.id = id_;
  } catch (const FormatError& e) {
    return StateTopicGap{e.what()};
  }
  std::string gap;
  for (const ManifestEntry& entry : out.manifest.entries) {
    std::optional<std::string> record = assemble(out.manifest, entry, gap);
    if (!record) return StateTopicGap{gap};
    switch (entry.name.kind) {
      case kMetaKind: out.meta = std::move(*record); break;
      case kSliceKind: out.slices.emplace(entry.name.id, std::move(*record)); break;
      case kSnapshotKind: out.snapshot.emplace().header = std::move(*record); break;
      case kBandKind:
        if (!out.snapshot) out.snapshot.emplace();
        out.snapshot->bands.push_back(std::move(*record));
        break;
      default:
        return StateTopicGap{"the manifest lists a record of unknown kind '" + std::string(1, entry.name.kind) + "'"};
    }
  }
  if (out.meta.empty()) {
    return StateTopicGap{"the manifest of epoch " + std::to_string(out.manifest.epoch) + " lists no metadata record"};
  }
  return out;
}

}  // namespace bloomgate::connectors
