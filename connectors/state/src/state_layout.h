// File: state_layout.h
//
// The state store's on-disk layout (state_store.h documents it): the keys of the version-1 layout, built
// and taken apart, and the checkpoint record's codec. Pure functions over strings, without RocksDB;
// state_store.cc is their only user.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bloomgate/connectors/state_store.h"
#include "bloomgate/filters/format.h"

namespace bloomgate::connectors::state_layout {

// "bgs1" 0x00: the version tag every key starts with; "bgs1" 0x01 is the first key past them.
constexpr std::string_view kKeyTag{"bgs1\0", 5};
constexpr std::string_view kKeyTagEnd{"bgs1\1", 5};

constexpr char kCheckpointKind = 'c';
constexpr char kMetaKind = 'm';
constexpr char kSnapshotKind = 'n';
constexpr char kBandKind = 'p';
constexpr char kRestoreNoteKind = 'r';
constexpr char kSliceKind = 's';

constexpr std::string_view kCheckpointMagic = "BGCP";
constexpr std::uint8_t kCheckpointVersion = 1;
constexpr std::size_t kCheckpointSize = 4 + 1 + 4 * 8 + 8;

// Big-endian, `width` bytes: keys sort by number.
void append_be(std::string& out, std::uint64_t value, std::size_t width);
std::uint64_t read_be(std::string_view in);

// Throws kInvalidArgument for an id no key can hold (an empty topic, one with a NUL byte, a negative partition).
void validate(const PartitionId& id);
// "bgs1" 0x00 topic 0x00 partition: the prefix of every key of one partition. The partition is
// non-negative, so the prefix of partition + 1 (as an unsigned 32-bit value) is the first key past it.
std::string partition_prefix(const PartitionId& id, std::uint32_t partition_delta = 0);
std::string record_key(std::string prefix, char kind);
std::string numbered_key(std::string prefix, char kind, std::uint64_t number);
std::string slice_key(const std::string& prefix, std::uint64_t slice_id);

// A key of the version-1 layout, taken apart. nullopt when it does not parse.
struct ParsedKey {
  PartitionId id;
  char kind;
};
std::optional<ParsedKey> parse_key(std::string_view key);

// The checkpoint record: magic, version, the four numbers, and a checksum over the key and the body.
std::string encode_checkpoint(std::string_view key, const PartitionCheckpoint& checkpoint);
// Throws kCorrupt for a record that is not one, naming the partition.
PartitionCheckpoint decode_checkpoint(std::string_view key, std::string_view record, const PartitionId& id);

// The restore note (state_store.h): magic, version, the time, the source's length and bytes, a checksum
// over the key and the body, as the checkpoint record.
constexpr std::string_view kRestoreNoteMagic = "BGRN";
constexpr std::uint8_t kRestoreNoteVersion = 1;
std::string encode_restore_note(std::string_view key, const RestoreNote& note);
// Throws kCorrupt for a record that is not one, naming the partition.
RestoreNote decode_restore_note(std::string_view key, std::string_view record, const PartitionId& id);

// Throws kCorrupt unless `record` is a valid filter record of the expected kind (and slice id).
void verify_filter_record(std::string_view record, filters::RecordKind kind, std::uint64_t slice_id,
                          const std::string& what);

}  // namespace bloomgate::connectors::state_layout
