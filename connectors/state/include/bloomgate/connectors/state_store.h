// File: state_store.h
//
// The durable state of the service: for each input partition, its filter's records (one metadata record
// and one record per slice, filters/format.h) and its checkpoint (where that filter state stands in the
// input and in the output). One RocksDB database per state directory holds every partition.
//
// Why one WriteBatch per checkpoint (docs/state.md, "The three facts and the one rule"): the filter state S, the
// next input offset C and the acknowledged output offset must move together. write_checkpoint() puts the
// filter's metadata record, its changed slices, the deletes of its dropped slices and the checkpoint record
// in one batch, written with the WAL and fdatasync before it returns: after a crash a partition's state is
// either the whole new checkpoint or the whole previous one, never a mix. Only after it returns may the
// caller commit C to Kafka; when it throws, the caller must not.
//
// Durability and corruption (RocksDB 7.8):
//   - WAL on, WriteOptions::sync = true: a checkpoint that returned survives a crash of the process or of
//     the machine.
//   - wal_recovery_mode = kTolerateCorruptedTailRecords: a WAL whose last record is incomplete (a crash in
//     the middle of a write that never returned) opens at the previous checkpoint; corruption anywhere else
//     in the WAL refuses to open (kCorrupt) rather than silently rolling back to an older state, which the
//     default kPointInTimeRecovery would do. A log cut short later (a damaged disk) looks the same as that
//     torn tail and opens at its last whole record: older checkpoints, which the service notices against
//     the group's committed offset and reconciles (docs/state.md, "The write-ahead log's recovery mode").
//   - paranoid_checks: open fails (kCorrupt) when a table file or the MANIFEST does not verify.
//   - block checksums (XXH3) are verified on every read: a damaged data block throws kCorrupt from read(),
//     restore_filter(), slices() or list(), never a wrong value. The checkpoint record has its own checksum.
//     Filter records carry theirs too (format.h): restore_filter() leaves it to filters::restore, which
//     verifies every record once (a failure there is a FormatError: the bytes are as they were written,
//     RocksDB's checksums say so); read() and slices() verify the records they hand out themselves.
//   - a failed write (kIo: a full disk, EIO) stops RocksDB's writes; the next write closes and reopens
//     the database (RocksDB 7.8's own resume can reuse the failed WAL writer: facebook/rocksdb#11643),
//     and until that succeeds the database stays readable, opened read-only. While the volume has less
//     than one write buffer (16 MiB) free, write_checkpoint() fails at once without trying.
//   - RocksDB's info log goes to StateStoreOptions::log, not to a LOG file on the state volume (see there).
// What to do with kCorrupt: a damaged table file (the message names an .sst) also fails every compaction
// that reads it, which stops all writes, so drop() is no remedy: close the store, quarantine() the
// directory and rebuild every partition. drop() is for a partition whose records are intact but unusable
// (filters::restore rejects them) or whose state is to be rebuilt: it deletes a range and reads nothing.
//
// Key layout, version 1 (all keys start with the version tag, so a later layout can live beside it):
//
//   "bgs1" 0x00  topic  0x00  partition (4 bytes, big-endian)  kind (1 byte)  [slice id (8 bytes, big-endian)]
//
//   kind 'c': the checkpoint record (below);  'm': the filter's metadata record;  's': a slice record,
//   followed by its id;  'n': the filter's snapshot header and 'p': its bands, followed by the band number
//   (write_snapshot; format.h and filters/src/time_limited_snapshot.cc for the records);  'r': the restore
//   note (below; a store written before it existed has none, and reads as such). Kafka topic names
//   never contain 0x00, so the 0x00 after the topic keeps "a" and "ab" apart, and the fixed-width
//   partition keeps partition 1 apart from 256. Every key of a partition shares the prefix up to the kind
//   byte; drop() deletes that range, list() skips from one partition's 'c' key to the next partition.
//
// Checkpoint record, version 1 (little-endian like format.h, 45 bytes):
//
//   offset  size  field
//   0       4     magic "BGCP"
//   4       1     version (1)
//   5       8     next_offset        (i64)
//   13      8     output_offset      (i64)
//   21      8     written_at_ms      (i64)
//   29      8     filter_time_ns     (i64)
//   37      8     XXH3-64 (seed 0) of the record's key followed by bytes [0, 37): a record copied under
//                 another partition's key fails its checksum too.
//
// Restore note, version 1 (write_restore_notes; little-endian, 14 + n + 8 bytes):
//
//   0       4     magic "BGRN"
//   4       1     version (1)
//   5       8     restored_at_ms     (i64)
//   13      1     source length n
//   14      n     source             ("local", "state_topic", "rebuild": where the service took the state from)
//   14+n    8     XXH3-64 (seed 0) of the record's key followed by bytes [0, 14+n)
//
// Ownership: a StateStore owns the open database and its LOCK file: a second StateStore on the same
// directory, in this process or another, fails with kLocked until the first is destroyed.
//
// Thread-safety: every method may be called from any thread concurrently (RocksDB's DB is thread-safe;
// a reopen after a failed write waits for the calls in flight). Checkpoints of one partition must come
// from one thread at a time (its partition worker), as must a restore against concurrent writes of the
// same partition: read() and restore_filter() (or slices()) are separate reads.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bloomgate/filters/filter.h"

namespace bloomgate::connectors {

class StateEnvironment;  // state_environment.h

struct PartitionId {
  std::string topic;
  std::int32_t partition = 0;
  auto operator<=>(const PartitionId&) const = default;
};

// "topic-3", as Kafka names a partition in its logs.
std::string to_string(const PartitionId& id);

// One partition's checkpoint: written atomically with the filter records, read back whole.
struct PartitionCheckpoint {
  PartitionId id;
  std::int64_t next_offset = -1;    // the next input offset to process
  std::int64_t output_offset = -1;  // everything forwarded from this input partition was acknowledged in
                                    // the output partition below this offset (exclusive); -1: unknown
  std::int64_t written_at_ms = 0;   // wall clock when the checkpoint was taken
  std::int64_t filter_time_ns = 0;  // the filter's present (event time) at the checkpoint
  friend bool operator==(const PartitionCheckpoint&, const PartitionCheckpoint&) = default;
};

// What read() returns: the checkpoint and the filter's metadata record, both from the same checkpoint.
// The slices come from StateStore::slices(id).
struct StoredPartition {
  PartitionCheckpoint checkpoint;
  std::string filter_meta;
};

// One partition's part of a group commit (write_checkpoints): its checkpoint and the filter image taken at it.
struct PartitionImage {
  PartitionCheckpoint checkpoint;
  filters::FilterImage image;
};

// How restore_filter() restored a filter.
struct RestoreReport {
  bool from_snapshot = false;     // from the snapshot a clean stop wrote, not from the slice records
  std::string snapshot_ignored;   // why a stored snapshot was not used; empty when none was stored or it was
};

// Where a partition's state came from when it was last assigned, and when: for `bloomgate inspect`.
struct RestoreNote {
  PartitionId id;
  std::string source;              // the service's name for it: "local", "state_topic", "rebuild"
  std::int64_t restored_at_ms = 0; // wall clock
  friend bool operator==(const RestoreNote&, const RestoreNote&) = default;
};

// What one partition's checkpoint wrote, for the checkpoint metrics.
struct CheckpointWrite {
  std::uint64_t bytes = 0;           // size of the WriteBatch: keys, values and RocksDB's framing
  std::uint64_t slices_written = 0;  // slice records put
  std::uint64_t slices_deleted = 0;  // dropped slices deleted
};

class StateStoreError : public std::runtime_error {
 public:
  enum class Kind {
    kLocked,           // the directory is held by another StateStore (another process, or this one)
    kCorrupt,          // a checksum failed or a record does not parse: quarantine, rebuild
    kIo,               // the file system failed, including a full disk (RocksDB NoSpace): retry later
    kInvalidArgument,  // the caller's mistake: a bad partition id, an empty filter image
  };
  StateStoreError(Kind kind, const std::string& message);
  [[nodiscard]] Kind kind() const noexcept { return kind_; }

 private:
  Kind kind_;
};

const char* to_string(StateStoreError::Kind kind) noexcept;

// RocksDB's own log lines, warnings and worse: level is "warn", "error" or "fatal". Called from RocksDB's
// threads, so it must be thread-safe.
using StateStoreLog = std::function<void(std::string_view level, std::string_view message)>;

struct StateStoreOptions {
  // The file system to keep the files on; nullptr is the local one. Tests pass a fault-injecting one
  // (state_environment.h); it must outlive the StateStore.
  const StateEnvironment* environment = nullptr;
  // Where RocksDB's log goes; empty: stderr. Never to a LOG file in the state directory: Debian's
  // librocksdb 7.8 is built with assertions on, and its file logger aborts the process on the first
  // log line after a failed write to a full disk (WritableFileWriter's `sync_without_flush_called_`).
  StateStoreLog log;
};

class StateStore {
 public:
  // Opens the database in `dir`, creating it (and `dir`, one level) if missing; a quarantine a crash
  // interrupted is finished first (quarantine()). Throws StateStoreError:
  // kLocked when another StateStore holds the directory, kCorrupt when the database does not verify,
  // kIo otherwise.
  static std::unique_ptr<StateStore> open(const std::string& dir, const StateStoreOptions& options = {});

  // Opens an existing database for reading only (`bloomgate inspect`): creates nothing, writes nothing
  // (RocksDB replays the WAL in memory), and takes no LOCK, so it is refused instead while a process holds
  // the directory's LOCK (a running service): kLocked, naming the directory and the holder's pid. Throws
  // kInvalidArgument when `dir` is not a directory or holds no database, kCorrupt when it does not verify,
  // kIo otherwise. Writes (write_checkpoint, drop, flush) on it throw kInvalidArgument.
  static std::unique_ptr<StateStore> open_read_only(const std::string& dir, const StateStoreOptions& options = {});

  ~StateStore();
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  const std::string& dir() const noexcept;

  // Writes, in one synced WriteBatch: the image's metadata record and slice records, the deletes of its
  // dropped slices, and the checkpoint record. `image` is normally filter.image(kChangedSinceLastPersist);
  // call filter.mark_persisted() only after this returns. Throws kIo (with RocksDB's message, "No space
  // left on device" for a full disk), kCorrupt (the database found damage while writing), or
  // kInvalidArgument (a bad id, an image without a valid metadata record). After kIo or kCorrupt the
  // checkpoint is not readable, but a write that reached the WAL and then failed to sync may reappear
  // after a reopen: either state is whole and consistent, and the caller neither commits the offset nor
  // marks the filter persisted (its next image then holds these changes again).
  CheckpointWrite write_checkpoint(const PartitionCheckpoint& checkpoint, const filters::FilterImage& image);

  // A group commit: the checkpoints of several partitions (distinct ids) in ONE synced WriteBatch, so a
  // member owning many partitions pays one fdatasync per checkpoint interval instead of one per partition.
  // Each partition's records lie whole inside the batch, so each stays as atomic as with write_checkpoint,
  // and the batch is written whole or not at all: when this throws (as write_checkpoint does) none of the
  // checkpoints is written, and the caller commits and marks persisted none of them. Returns what each
  // partition wrote, in the order given; `bytes` is its share of the batch.
  std::vector<CheckpointWrite> write_checkpoints(std::span<const PartitionImage> partitions);

  // The partition's checkpoint and filter metadata record; nullopt when it was never checkpointed (or was
  // dropped). Throws kCorrupt when either record fails its checksum or only one of them exists.
  std::optional<StoredPartition> read(const PartitionId& id) const;

  // The restore path: the partition's filter, filters::restore(filter_meta, views of its slice records),
  // where filter_meta is read(id)->filter_meta. The slices are read by one forward scan of the partition's
  // keys (with_slices), each handed to the filter as a view of RocksDB's block, verified once by RocksDB's
  // block checksum and once by the filter (its record checksum) and copied once, into the filter. Throws
  // kCorrupt when RocksDB finds damage or a slice key holds another record than its own (the restored
  // filter is never built from damaged bytes), kIo when a read fails, and filters::FormatError when the
  // records are intact in the store but the filter rejects them (a missing slice, a bad record checksum,
  // inconsistent fields).
  //
  // When the partition has a snapshot (write_snapshot) taken at this metadata record, the filter comes from
  // it instead: one read of each band, copied into place, no rebuilding of the layout. A snapshot of
  // another checkpoint, or one the filter rejects (filters::FormatError), is passed over for the slices,
  // and `report` says why; RocksDB damage in a band is kCorrupt as above.
  std::unique_ptr<filters::Filter> restore_filter(const PartitionId& id, std::string_view filter_meta,
                                                  RestoreReport* report = nullptr) const;

  // Writes the partition's snapshot (filters::Filter::snapshot) in one synced batch, replacing any earlier
  // one; returns the batch's size. Call it after the checkpoint it belongs to was written, at a clean stop:
  // every later checkpoint of the partition deletes it, so a snapshot is only ever found beside the
  // checkpoint it was taken at (and the filter checks that too). Throws as write_checkpoint().
  std::uint64_t write_snapshot(const PartitionId& id, const filters::FilterSnapshot& snapshot);

  // Calls use(views) with views of the partition's slice records (filters::SliceViews): nullopt for a slice
  // that is not stored; kCorrupt as restore_filter(). Lifetime: the views, and each view until the lookup's
  // next call, are valid only inside `use`, which holds a RocksDB iterator (and the store's database) for
  // its duration: `use` must not call this StateStore. The lookups see the partition as it was at the
  // first one. Ascending ids are one forward scan (Next()); any other order seeks.
  void with_slices(const PartitionId& id, const std::function<void(const filters::SliceViews&)>& use) const;

  // Looks up the partition's slice records by id, copying each (restore_filter() does not): nullopt for a
  // slice that is not stored; throws kCorrupt for a damaged one (bad envelope, or another slice's record).
  // Valid while this StateStore lives. The first lookup reads all of the partition's slice records in one
  // scan and holds them until they are looked up: the lookup sees the slices as they were at its first call.
  filters::SliceLookup slices(const PartitionId& id) const;

  // Writes the notes (distinct ids; a source of at most 255 bytes) in one synced batch, each replacing the
  // partition's earlier one. Throws as write_checkpoint().
  void write_restore_notes(std::span<const RestoreNote> notes);
  // The partition's restore note; nullopt when none was written (or the partition was dropped since).
  // Throws kCorrupt when it is damaged.
  std::optional<RestoreNote> read_restore_note(const PartitionId& id) const;

  // Removes everything stored for the partition (its snapshot and restore note too), in one synced batch (a range delete: it
  // reads nothing).
  void drop(const PartitionId& id);

  // The checkpoint of every stored partition, ordered by topic and partition (for `bloomgate inspect`).
  // Throws kCorrupt when a checkpoint record is damaged.
  std::vector<PartitionCheckpoint> list() const;

  // Sets the contents of a state directory that is not open aside, into "<dir>/quarantine-<UTC time>"
  // (never renaming `dir` itself, which may be a mount point; the newest 3 quarantines are kept, older ones
  // removed; src/state_quarantine.h has the steps and what a crash between them leaves), and returns that
  // folder's path; open(dir) then starts empty. Throws kIo when a move fails, kInvalidArgument when there
  // is no such directory.
  static std::string quarantine(const std::string& dir);

  // The quarantine of an open store, for every thread using it at once: waits for the calls in progress,
  // closes the database, moves the directory's contents aside (as quarantine(dir)) and opens an empty database in its
  // place, which every later call uses. Returns where the damaged directory went. Throws as quarantine() and
  // open(). Every call counts in quarantines().
  std::string quarantine_and_reopen();

  // How many times quarantine_and_reopen() has run on this store: a user that remembers the count learns
  // when the state it had written went aside with the directory (its next checkpoint must write whole).
  std::uint64_t quarantines() const noexcept;

  // Writes the memtables to table files and waits. Not needed for durability (the WAL has every
  // checkpoint); tests use it to put the data in .sst files.
  void flush();

 private:
  struct Impl;
  class SliceReader;
  explicit StateStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace bloomgate::connectors
