#include "state_layout.h"

#include <xxhash.h>

namespace bloomgate::connectors::state_layout {
namespace {

using Kind = StateStoreError::Kind;

std::uint64_t checkpoint_checksum(std::string_view key, std::string_view body) {
  std::string covered;
  covered.reserve(key.size() + body.size());
  covered.append(key).append(body);
  return XXH3_64bits(covered.data(), covered.size());
}

}  // namespace

void append_be(std::string& out, std::uint64_t value, std::size_t width) {
  for (std::size_t i = width; i-- > 0;) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

std::uint64_t read_be(std::string_view in) {
  std::uint64_t value = 0;
  for (const char c : in) value = (value << 8) | static_cast<unsigned char>(c);
  return value;
}

void validate(const PartitionId& id) {
  if (id.topic.empty() || id.topic.find('\0') != std::string::npos) {
    throw StateStoreError(Kind::kInvalidArgument, "state store: topic name \"" + id.topic +
                                                      "\" is not valid (empty, or contains a NUL byte)");
  }
  if (id.partition < 0) {
    throw StateStoreError(Kind::kInvalidArgument,
                          "state store: partition " + std::to_string(id.partition) + " of topic " + id.topic +
                              " is negative");
  }
}

std::string partition_prefix(const PartitionId& id, std::uint32_t partition_delta) {
  std::string key(kKeyTag);
  key += id.topic;
  key.push_back('\0');
  append_be(key, static_cast<std::uint32_t>(id.partition) + partition_delta, 4);
  return key;
}

std::string record_key(std::string prefix, char kind) {
  prefix.push_back(kind);
  return prefix;
}

std::string numbered_key(std::string prefix, char kind, std::uint64_t number) {
  prefix.push_back(kind);
  append_be(prefix, number, 8);
  return prefix;
}

std::string slice_key(const std::string& prefix, std::uint64_t slice_id) {
  return numbered_key(prefix, kSliceKind, slice_id);
}

std::optional<ParsedKey> parse_key(std::string_view key) {
  if (!key.starts_with(kKeyTag)) return std::nullopt;
  const std::size_t topic_end = key.find('\0', kKeyTag.size());
  if (topic_end == std::string_view::npos || topic_end == kKeyTag.size()) return std::nullopt;
  if (key.size() < topic_end + 1 + 4 + 1) return std::nullopt;
  const std::uint64_t partition = read_be(key.substr(topic_end + 1, 4));
  if (partition > 0x7FFFFFFFU) return std::nullopt;
  ParsedKey parsed{PartitionId{std::string(key.substr(kKeyTag.size(), topic_end - kKeyTag.size())),
                               static_cast<std::int32_t>(partition)},
                   key[topic_end + 5]};
  return parsed;
}

std::string encode_checkpoint(std::string_view key, const PartitionCheckpoint& checkpoint) {
  filters::ByteWriter w;
  w.bytes(kCheckpointMagic);
  w.u8(kCheckpointVersion);
  w.i64(checkpoint.next_offset);
  w.i64(checkpoint.output_offset);
  w.i64(checkpoint.written_at_ms);
  w.i64(checkpoint.filter_time_ns);
  std::string record = w.take();
  filters::ByteWriter sum;
  sum.u64(checkpoint_checksum(key, record));
  record += sum.take();
  return record;
}

PartitionCheckpoint decode_checkpoint(std::string_view key, std::string_view record, const PartitionId& id) {
  const auto corrupt = [&](const std::string& what) {
    return StateStoreError(Kind::kCorrupt, "state store: the checkpoint record of " + to_string(id) + " " + what);
  };
  if (record.size() != kCheckpointSize) {
    throw corrupt("has " + std::to_string(record.size()) + " bytes, expected " + std::to_string(kCheckpointSize));
  }
  filters::ByteReader r(record);
  if (r.bytes(4, "magic") != kCheckpointMagic) throw corrupt("does not start with \"BGCP\"");
  if (const std::uint8_t version = r.u8("version"); version != kCheckpointVersion) {
    throw corrupt("has version " + std::to_string(version) + ", this build reads version " +
                  std::to_string(kCheckpointVersion));
  }
  PartitionCheckpoint checkpoint;
  checkpoint.id = id;
  checkpoint.next_offset = r.i64("next offset");
  checkpoint.output_offset = r.i64("output offset");
  checkpoint.written_at_ms = r.i64("written at");
  checkpoint.filter_time_ns = r.i64("filter time");
  if (r.u64("checksum") != checkpoint_checksum(key, record.substr(0, kCheckpointSize - 8))) {
    throw corrupt("fails its checksum");
  }
  return checkpoint;
}

std::string encode_restore_note(std::string_view key, const RestoreNote& note) {
  if (note.source.size() > 255) {
    throw StateStoreError(Kind::kInvalidArgument, "state store: a restore source of " +
                                                      std::to_string(note.source.size()) + " bytes (at most 255)");
  }
  filters::ByteWriter w;
  w.bytes(kRestoreNoteMagic);
  w.u8(kRestoreNoteVersion);
  w.i64(note.restored_at_ms);
  w.u8(static_cast<std::uint8_t>(note.source.size()));
  w.bytes(note.source);
  std::string record = w.take();
  filters::ByteWriter sum;
  sum.u64(checkpoint_checksum(key, record));
  return record + sum.take();
}

RestoreNote decode_restore_note(std::string_view key, std::string_view record, const PartitionId& id) {
  const auto corrupt = [&](const std::string& what) {
    return StateStoreError(Kind::kCorrupt, "state store: the restore note of " + to_string(id) + " " + what);
  };
  try {
    filters::ByteReader r(record);
    if (r.bytes(4, "magic") != kRestoreNoteMagic) throw corrupt("does not start with \"BGRN\"");
    if (const std::uint8_t version = r.u8("version"); version != kRestoreNoteVersion) {
      throw corrupt("has version " + std::to_string(version) + ", this build reads version " +
                    std::to_string(kRestoreNoteVersion));
    }
    RestoreNote note;
    note.id = id;
    note.restored_at_ms = r.i64("restored at");
    note.source = std::string(r.bytes(r.u8("source length"), "source"));
    const std::size_t body = record.size() - r.remaining();
    if (r.u64("checksum") != checkpoint_checksum(key, record.substr(0, body))) throw corrupt("fails its checksum");
    r.expect_end("the restore note");
    return note;
  } catch (const filters::FormatError& e) {
    throw corrupt(std::string("does not parse: ") + e.what());
  }
}

void verify_filter_record(std::string_view record, filters::RecordKind kind, std::uint64_t slice_id,
                          const std::string& what) {
  filters::Record parsed{};
  try {
    parsed = filters::decode_single_record(record);
  } catch (const filters::FormatError& e) {
    throw StateStoreError(Kind::kCorrupt, "state store: " + what + " is damaged: " + e.what());
  }
  if (parsed.kind != kind || parsed.slice_id != slice_id) {
    throw StateStoreError(Kind::kCorrupt, "state store: " + what + " holds the record of another " +
                                              (parsed.kind == filters::RecordKind::kMeta ? "metadata" : "slice") +
                                              " (slice id " + std::to_string(parsed.slice_id) + ")");
  }
}

}  // namespace bloomgate::connectors::state_layout
