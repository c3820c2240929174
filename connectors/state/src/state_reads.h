// File: state_reads.h
//
// How the state store reads RocksDB: its read options, its errors (a rocksdb::Status as a StateStoreError),
// and the two zero-copy lookups a restore hands to filters::restore: SliceCursor over a partition's slice
// records, BandReader over a snapshot's bands. state_store.cc is their only user.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bloomgate/connectors/state_store.h"
#include "bloomgate/filters/format.h"
#include "state_layout.h"

namespace bloomgate::connectors::state_reads {

using Kind = StateStoreError::Kind;

Kind kind_of(const rocksdb::Status& status);
// Throws the StateStoreError the status means, with `context` in its message.
[[noreturn]] void fail(const rocksdb::Status& status, const std::string& context);
// Every read verifies RocksDB's block checksums.
rocksdb::ReadOptions read_options();
// A restore reads a partition's slice records with one forward scan (with_slices, and the copying slices()),
// bypassing the block cache: it reads each block once. No readahead of RocksDB's own (readahead_size 0,
// and max_auto_readahead_size 0 in database_options()): each slice record is one data block of ~200 KiB,
// read with one pread(2) straight into the block's buffer, and the kernel's readahead keeps the disk ahead
// of the scan (the table files are not advised random). docs/decisions/state-store-reads.md has the
// figures, and what was tried instead.
rocksdb::ReadOptions scan_options();

// The slice lookup of with_slices(): one iterator over the partition's slice keys, created at the first
// lookup, moved forward by later ones. A view is of the value in the iterator's current block, which stays
// valid until the iterator moves (the next lookup). RocksDB verifies the block checksums as it reads;
// the records' own checksums are left to filters::restore, which verifies each once.
class SliceCursor {
 public:
  SliceCursor(rocksdb::DB& db, const PartitionId& id)
      : db_(db),
        prefix_(state_layout::partition_prefix(id)),
        name_(to_string(id)),
        end_(state_layout::record_key(prefix_, static_cast<char>(state_layout::kSliceKind + 1))),
        upper_bound_(end_) {
    options_ = scan_options();
    options_.iterate_upper_bound = &upper_bound_;
  }

  std::optional<std::string_view> find(std::uint64_t slice_id) {
    key_ = state_layout::slice_key(prefix_, slice_id);
    const rocksdb::Slice target(key_);
    if (!it_) {
      it_.reset(db_.NewIterator(options_));
      it_->Seek(target);
    } else if (!(it_->Valid() && it_->key() == target)) {
      // Ascending lookups (time_limited's restore) find the next slice one step on; anything else seeks.
      if (it_->Valid() && it_->key().compare(target) < 0) it_->Next();
      if (!(it_->Valid() && it_->key() == target)) it_->Seek(target);
    }
    const std::string what = "slice " + std::to_string(slice_id) + " of " + name_;
    if (!it_->status().ok()) fail(it_->status(), "reading " + what);
    if (!it_->Valid() || it_->key() != target) return std::nullopt;
    const std::string_view record(it_->value().data(), it_->value().size());
    // Which record this is, without its checksum (restore verifies that): another slice's record under
    // this key is damage the store reports, like a failed block checksum.
    filters::Record parsed{};
    try {
      parsed = filters::peek_single_record(record);
    } catch (const filters::FormatError& e) {
      throw StateStoreError(Kind::kCorrupt, "state store: " + what + " is damaged: " + e.what());
    }
    if (parsed.kind != filters::RecordKind::kSlice || parsed.slice_id != slice_id) {
      throw StateStoreError(Kind::kCorrupt, "state store: " + what + " holds the record of another " +
                                                (parsed.kind == filters::RecordKind::kMeta ? "metadata" : "slice") +
                                                " (slice id " + std::to_string(parsed.slice_id) + ")");
    }
    return record;
  }

 private:
  rocksdb::DB& db_;
  const std::string prefix_;
  const std::string name_;
  const std::string end_;
  const rocksdb::Slice upper_bound_;
  rocksdb::ReadOptions options_;
  std::string key_;
  std::unique_ptr<rocksdb::Iterator> it_;  // last: destroyed before the bound it points to
};

// The band lookup of a snapshot restore: one Get per band, its value pinned (no copy) until the next one,
// on the restoring thread (reading ahead on other threads gained nothing: docs/decisions/state-store-reads.md).
class BandReader {
 public:
  BandReader(rocksdb::DB& db, const PartitionId& id)
      : db_(db), prefix_(state_layout::partition_prefix(id)), name_(to_string(id)) {}

  std::optional<std::string_view> find(std::uint64_t band) {
    value_.Reset();
    const std::string key = state_layout::numbered_key(prefix_, state_layout::kBandKind, band);
    const rocksdb::Status status = db_.Get(scan_options(), db_.DefaultColumnFamily(), key, &value_);
    if (status.IsNotFound()) return std::nullopt;
    if (!status.ok()) fail(status, "reading snapshot band " + std::to_string(band) + " of " + name_);
    return std::string_view(value_.data(), value_.size());
  }

 private:
  rocksdb::DB& db_;
  const std::string prefix_;
  const std::string name_;
  rocksdb::PinnableSlice value_;
};

}  // namespace bloomgate::connectors::state_reads
