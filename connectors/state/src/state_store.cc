// File: state_store.cc
#include "bloomgate/connectors/state_store.h"

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/snapshot.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>
#include <unordered_map>
#include <shared_mutex>
#include <string_view>
#include <utility>

#include "bloomgate/connectors/checkpoint_filter.h"
#include "bloomgate/connectors/state_environment.h"
#include "bloomgate/filters/format.h"
#include "state_layout.h"
#include "state_quarantine.h"
#include "state_reads.h"

namespace bloomgate::connectors {

using namespace state_layout;  // the key layout and the record codecs (state_layout.h)
using namespace state_reads;   // read options, errors and the restore's lookups (state_reads.h)

namespace {

constexpr std::size_t kWriteBufferSize = std::size_t{16} << 20;

// Deletes every snapshot band of the partition: a range delete, whatever their number.
rocksdb::Status delete_bands(rocksdb::WriteBatch& batch, const std::string& prefix) {
  return batch.DeleteRange(numbered_key(prefix, kBandKind, 0), record_key(prefix, static_cast<char>(kBandKind + 1)));
}

rocksdb::WriteOptions write_options() {
  rocksdb::WriteOptions options;
  options.sync = true;
  options.disableWAL = false;
  return options;
}

// RocksDB's info log, warnings and worse, handed to a function instead of a file.
class ForwardingLogger final : public rocksdb::Logger {
 public:
  explicit ForwardingLogger(StateStoreLog log)
      : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL), log_(std::move(log)) {}

  using rocksdb::Logger::Logv;
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < GetInfoLogLevel()) return;
    char line[2048];
    const int n = std::vsnprintf(line, sizeof line, format, ap);
    if (n < 0) return;
    const std::string_view message(line, std::min(static_cast<std::size_t>(n), sizeof line - 1));
    const std::string_view name = level == rocksdb::InfoLogLevel::ERROR_LEVEL   ? "error"
                                  : level == rocksdb::InfoLogLevel::FATAL_LEVEL ? "fatal"
                                                                                 : "warn";
    if (log_) {
      log_(name, message);
    } else {
      std::fprintf(stderr, "rocksdb %.*s: %.*s\n", static_cast<int>(name.size()), name.data(),
                   static_cast<int>(message.size()), message.data());
    }
  }

 private:
  StateStoreLog log_;
};

}  // namespace

std::string to_string(const PartitionId& id) { return id.topic + "-" + std::to_string(id.partition); }

StateEnvironment::StateEnvironment(std::shared_ptr<rocksdb::FileSystem> file_system)
    : env_(rocksdb::NewCompositeEnv(std::move(file_system))) {}
StateEnvironment::~StateEnvironment() = default;

StateStoreError::StateStoreError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}

const char* to_string(StateStoreError::Kind kind) noexcept {
  switch (kind) {
    case Kind::kLocked: return "locked";
    case Kind::kCorrupt: return "corrupt";
    case Kind::kIo: return "io";
    case Kind::kInvalidArgument: return "invalid-argument";
  }
  return "unknown";
}

namespace {

// The value at `key`, nullopt when it is not stored.
std::optional<std::string> get_value(rocksdb::DB& db, const rocksdb::ReadOptions& options, const std::string& key,
                                     const std::string& context) {
  std::string value;
  const rocksdb::Status status = db.Get(options, key, &value);
  if (status.IsNotFound()) return std::nullopt;
  if (!status.ok()) fail(status, context);
  return value;
}

std::vector<PartitionCheckpoint> list_checkpoints(rocksdb::DB& db) {
  rocksdb::ReadOptions options = read_options();
  const rocksdb::Slice upper_bound(kKeyTagEnd.data(), kKeyTagEnd.size());
  options.iterate_upper_bound = &upper_bound;
  const std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(options));
  std::vector<PartitionCheckpoint> out;
  it->Seek(rocksdb::Slice(kKeyTag.data(), kKeyTag.size()));
  while (it->Valid()) {
    const std::string_view key(it->key().data(), it->key().size());
    const auto parsed = parse_key(key);
    if (!parsed) {
      throw StateStoreError(Kind::kCorrupt, "state store: a key under \"bgs1\" does not parse (" +
                                                std::to_string(key.size()) + " bytes)");
    }
    // 'c' sorts before every other kind: a partition's first key is its checkpoint, or it has none. A
    // restore note alone is a partition whose checkpoint was dropped (or not written yet): nothing to list.
    if (parsed->kind == kRestoreNoteKind) {
      it->Seek(partition_prefix(parsed->id, 1));
      continue;
    }
    if (parsed->kind != kCheckpointKind) {
      throw StateStoreError(Kind::kCorrupt,
                            "state store: " + to_string(parsed->id) + " has filter records without a checkpoint");
    }
    out.push_back(decode_checkpoint(key, std::string_view(it->value().data(), it->value().size()), parsed->id));
    it->Seek(partition_prefix(parsed->id, 1));  // past this partition's filter records
  }
  if (!it->status().ok()) fail(it->status(), "listing the stored partitions");
  return out;
}

rocksdb::Options database_options(const StateStoreOptions& options) {
  rocksdb::Options db_options;
  db_options.create_if_missing = true;
  db_options.paranoid_checks = true;
  db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  db_options.write_buffer_size = kWriteBufferSize;
  // The only reads are restores, which scan a partition's slices in key order: keep the kernel's readahead
  // (RocksDB's default advises random access on every table file it opens, which turns it off).
  db_options.advise_random_on_open = false;
  // No compression of new table files: filter slices are random bits, and decompressing the few blocks
  // Snappy did shrink cost a restore more than the bytes saved (docs/decisions/state-store-reads.md). Blocks
  // written compressed by an older version say so in their trailer and still read.
  db_options.compression = rocksdb::kNoCompression;
  db_options.info_log = std::make_shared<ForwardingLogger>(options.log);
  db_options.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  if (options.environment != nullptr) db_options.env = options.environment->env();
  // A store holds few table files: one thread opens them faster than RocksDB's default of 16.
  db_options.max_file_opening_threads = 1;
  rocksdb::BlockBasedTableOptions table_options;
  // Block checksums of new table files: a restore verifies every block it reads, and Debian's librocksdb
  // 7.8.3 computes XXH64 faster than XXH3. Each table file names its own checksum type, so files written
  // with kXXH3 still read.
  table_options.checksum = rocksdb::kxxHash64;
  table_options.max_auto_readahead_size = 0;  // no readahead of RocksDB's own: see scan_options()
  db_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table_options));
  return db_options;
}

std::unique_ptr<rocksdb::DB> open_database(const rocksdb::Options& db_options, const std::string& dir) {
  // Created here rather than by DB::Open, which logs an error about the missing directory first.
  if (const rocksdb::Status created = db_options.env->CreateDirIfMissing(dir); !created.ok()) {
    fail(created, "creating state directory " + dir);
  }
  rocksdb::DB* raw = nullptr;
  const rocksdb::Status status = rocksdb::DB::Open(db_options, dir, &raw);
  std::unique_ptr<rocksdb::DB> db(raw);
  if (status.ok()) return db;
  // RocksDB's posix environment reports a held LOCK as an IOError: "While lock file: <dir>/LOCK:
  // Resource temporarily unavailable" from fcntl (another process), or "lock hold by current process"
  // from its own table of locked files (another StateStore in this process).
  const std::string message = status.ToString();
  if (status.IsIOError() && message.find("lock hold by current process") != std::string::npos) {
    throw StateStoreError(Kind::kLocked,
                          "state directory " + dir + " is already open in this process (" + message + ")");
  }
  if (status.IsIOError() && message.find("While lock file") != std::string::npos) {
    throw StateStoreError(Kind::kLocked,
                          "state directory " + dir + " is in use by another bloomgate process (" + message + ")");
  }
  fail(status, "opening state directory " + dir);
}

// The pid of the process holding `dir`'s LOCK (RocksDB's fcntl write lock), without taking it: 0 when
// nobody holds it (or there is no LOCK file), -1 when a lock is held by an unknown owner (an OFD lock).
// A lock this process holds is not reported (fcntl locks never conflict with their own process).
pid_t lock_holder(const std::string& dir) {
  const std::string path = dir + "/LOCK";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct flock query {};
  query.l_type = F_WRLCK;
  query.l_whence = SEEK_SET;
  query.l_start = 0;
  query.l_len = 0;
  const int result = ::fcntl(fd, F_GETLK, &query);
  ::close(fd);
  if (result != 0 || query.l_type == F_UNLCK) return 0;
  return query.l_pid > 0 ? query.l_pid : -1;
}

}  // namespace

struct StateStore::Impl {
  std::string dir;
  bool read_only = false;  // open_read_only(): every write throws
  rocksdb::Options db_options;
  // Guards `db`: held shared by every use of the database, exclusively to close and reopen it.
  std::shared_mutex mutex;
  std::unique_ptr<rocksdb::DB> db;  // read-only or null while a reopen fails; see write()
  // Set when a write failed, cleared when the database is open for writing again.
  std::atomic<bool> reopen_before_write{false};
  std::atomic<std::uint64_t> quarantines{0};  // quarantine_and_reopen() calls so far
  // Partitions whose stored snapshot a restore found: their next checkpoint deletes its bands too.
  std::mutex snapshots_mutex;
  std::set<PartitionId> snapshots_found;

  void snapshot_found(const PartitionId& id) {
    const std::lock_guard lock(snapshots_mutex);
    snapshots_found.insert(id);
  }
  bool has_found_snapshot(const PartitionId& id) {
    const std::lock_guard lock(snapshots_mutex);
    return snapshots_found.contains(id);
  }
  void snapshots_deleted(const PartitionId& id) {
    const std::lock_guard lock(snapshots_mutex);
    snapshots_found.erase(id);
  }

  // Closes the database and opens it again for writing. When that fails it opens it read-only, which
  // writes nothing and so works on a full disk, to keep reads going, and rethrows. Requires `mutex`
  // held exclusively.
  void reopen_locked() {
    if (db) {
      db->Close().PermitUncheckedError();  // reports the failed write again; the WAL is replayed below
      db.reset();
    }
    try {
      db = open_database(db_options, dir);
      reopen_before_write.store(false);
    } catch (const StateStoreError&) {
      rocksdb::DB* raw = nullptr;
      if (rocksdb::DB::OpenForReadOnly(db_options, dir, &raw).ok()) db.reset(raw);
      throw;
    }
  }

  // Runs f(DB&) under the shared lock; opens the database first when it is closed.
  template <typename F>
  auto with_db(F&& f) {
    {
      std::shared_lock lock(mutex);
      if (db) return f(*db);
    }
    std::unique_lock exclusive(mutex);
    if (!db) {
      try {
        reopen_locked();
      } catch (const StateStoreError&) {
        if (!db) throw;
      }
    }
    return f(*db);
  }

  // Writes a batch with the WAL and fdatasync. After a failed write RocksDB stops writing until it is
  // resumed, and 7.8's resume (its own after a full disk, or DB::Resume()) can keep the WAL writer that
  // failed, so the next write fails again or, in Debian's assert-enabled build, aborts the process
  // (facebook/rocksdb#11643, #12998). So the next write closes and reopens the database instead, which
  // starts a new WAL and replays the old one (the failed record, if any of it reached the disk, is its
  // incomplete tail). While the volume lacks the room to reopen (a write buffer), it fails at once.
  void write(rocksdb::WriteBatch& batch, const std::string& context) {
    if (read_only) throw StateStoreError(Kind::kInvalidArgument, "state store: " + context + ": opened read-only");
    {
      std::shared_lock lock(mutex);
      if (db && !reopen_before_write.load()) {
        const rocksdb::Status status = db->Write(write_options(), &batch);
        if (status.ok()) return;
        reopen_before_write.store(true);
        fail(status, context);
      }
    }
    std::unique_lock exclusive(mutex);
    if (!db || reopen_before_write.load()) {
      std::uint64_t free_space = 0;
      const std::uint64_t needed = kWriteBufferSize + batch.GetDataSize();
      if (db_options.env->GetFreeSpace(dir, &free_space).ok() && free_space < needed) {
        throw StateStoreError(Kind::kIo, "state store: " + context + ": the state volume has " +
                                             std::to_string(free_space) + " bytes free, reopening the database " +
                                             "after a failed write needs " + std::to_string(needed));
      }
      reopen_locked();
    }
    const rocksdb::Status status = db->Write(write_options(), &batch);
    if (!status.ok()) {
      reopen_before_write.store(true);
      fail(status, context);
    }
  }

  // The value at `key`, nullopt when it is not stored.
  std::optional<std::string> get(const std::string& key, const std::string& context) {
    return with_db([&](rocksdb::DB& database) { return get_value(database, read_options(), key, context); });
  }
};

StateStore::StateStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StateStore::~StateStore() {
  if (impl_ && impl_->db) impl_->db->Close().PermitUncheckedError();
}

std::unique_ptr<StateStore> StateStore::open(const std::string& dir, const StateStoreOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->db_options = database_options(options);
  state_quarantine::finish_interrupted(dir);
  impl->db = open_database(impl->db_options, dir);
  return std::unique_ptr<StateStore>(new StateStore(std::move(impl)));
}

std::unique_ptr<StateStore> StateStore::open_read_only(const std::string& dir, const StateStoreOptions& options) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    throw StateStoreError(Kind::kInvalidArgument, "state store: " + dir + " is not a directory" +
                                                      (error ? " (" + error.message() + ")" : std::string()));
  }
  if (!std::filesystem::exists(std::filesystem::path(dir) / "CURRENT", error)) {
    throw StateStoreError(Kind::kInvalidArgument,
                          "state store: " + dir + " holds no state database (no RocksDB CURRENT file)");
  }
  if (const pid_t holder = lock_holder(dir); holder != 0) {
    throw StateStoreError(Kind::kLocked, "state directory " + dir + " is in use by a running bloomgate process" +
                                             (holder > 0 ? " (pid " + std::to_string(holder) + ")" : std::string()) +
                                             "; stop it first, or inspect a copy of the directory");
  }
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->read_only = true;
  impl->db_options = database_options(options);
  impl->db_options.create_if_missing = false;
  rocksdb::DB* raw = nullptr;
  const rocksdb::Status status = rocksdb::DB::OpenForReadOnly(impl->db_options, dir, &raw);
  impl->db.reset(raw);
  if (!status.ok()) fail(status, "opening state directory " + dir + " read-only");
  return std::unique_ptr<StateStore>(new StateStore(std::move(impl)));
}

const std::string& StateStore::dir() const noexcept { return impl_->dir; }

std::string StateStore::quarantine(const std::string& dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    throw StateStoreError(Kind::kInvalidArgument, "state store: cannot quarantine " + dir + ": not a directory");
  }
  return state_quarantine::move_contents_aside(dir);
}

std::string StateStore::quarantine_and_reopen() {
  std::unique_lock exclusive(impl_->mutex);
  if (impl_->db) {
    impl_->db->Close().PermitUncheckedError();  // the directory is going aside: what it still reports is moot
    impl_->db.reset();
  }
  const std::string moved = quarantine(impl_->dir);
  impl_->quarantines.fetch_add(1);
  {
    const std::lock_guard lock(impl_->snapshots_mutex);
    impl_->snapshots_found.clear();
  }
  impl_->db = open_database(impl_->db_options, impl_->dir);
  impl_->reopen_before_write.store(false);
  return moved;
}

std::uint64_t StateStore::quarantines() const noexcept { return impl_->quarantines.load(); }

namespace {

// Appends one partition's checkpoint to `batch`: its slice records, the deletes of its dropped slices, its
// metadata record and its checkpoint record. Throws kInvalidArgument for a bad id or image.
CheckpointWrite append_checkpoint(rocksdb::WriteBatch& batch, const PartitionCheckpoint& checkpoint,
                                  const filters::FilterImage& image, bool delete_snapshot_bands) {
  validate(checkpoint.id);
  const std::string name = to_string(checkpoint.id);
  try {
    const filters::Record meta = filters::decode_single_record(image.meta);
    if (meta.kind != filters::RecordKind::kMeta) throw filters::FormatError("it is a slice record");
  } catch (const filters::FormatError& e) {
    throw StateStoreError(Kind::kInvalidArgument,
                          "state store: the filter image of " + name + " has no valid metadata record: " + e.what());
  }

  const std::string prefix = partition_prefix(checkpoint.id);
  const std::size_t size_before = batch.GetDataSize();
  CheckpointWrite written;
  const auto check = [&](const rocksdb::Status& status) {
    if (!status.ok()) fail(status, "building the checkpoint of " + name);
  };
  // Puts before deletes, as filters' own checkpoint model applies an image.
  for (const auto& slice : image.slices) {
    check(batch.Put(slice_key(prefix, slice.id), slice.record));
    ++written.slices_written;
  }
  for (const std::uint64_t id : image.dropped_slice_ids) {
    check(batch.Delete(slice_key(prefix, id)));
    ++written.slices_deleted;
  }
  check(batch.Put(record_key(prefix, kMetaKind), image.meta));
  // A snapshot is of the filter at one metadata record; whatever this checkpoint changed, it is no longer
  // the stored filter's. Its header goes (cheap: one small delete per checkpoint), and its bands too once a
  // restore has found it (the first checkpoint after a start from a snapshot).
  check(batch.Delete(record_key(prefix, kSnapshotKind)));
  if (delete_snapshot_bands) check(delete_bands(batch, prefix));
  const std::string checkpoint_key = record_key(prefix, kCheckpointKind);
  check(batch.Put(checkpoint_key, encode_checkpoint(checkpoint_key, checkpoint)));
  written.bytes = batch.GetDataSize() - size_before;
  return written;
}

}  // namespace

CheckpointWrite StateStore::write_checkpoint(const PartitionCheckpoint& checkpoint,
                                             const filters::FilterImage& image) {
  rocksdb::WriteBatch batch;
  const bool bands = impl_->has_found_snapshot(checkpoint.id);
  const CheckpointWrite written = append_checkpoint(batch, checkpoint, image, bands);
  impl_->write(batch, "writing the checkpoint of " + to_string(checkpoint.id));
  if (bands) impl_->snapshots_deleted(checkpoint.id);
  return written;
}

std::vector<CheckpointWrite> StateStore::write_checkpoints(std::span<const PartitionImage> partitions) {
  rocksdb::WriteBatch batch;
  std::vector<CheckpointWrite> written;
  written.reserve(partitions.size());
  std::vector<PartitionId> with_bands;
  for (const PartitionImage& partition : partitions) {
    const bool bands = impl_->has_found_snapshot(partition.checkpoint.id);
    written.push_back(append_checkpoint(batch, partition.checkpoint, partition.image, bands));
    if (bands) with_bands.push_back(partition.checkpoint.id);
  }
  if (partitions.empty()) return written;
  impl_->write(batch, "writing the checkpoints of " + std::to_string(partitions.size()) + " partition(s) from " +
                          to_string(partitions.front().checkpoint.id));
  for (const PartitionId& id : with_bands) impl_->snapshots_deleted(id);
  return written;
}

std::optional<StoredPartition> StateStore::read(const PartitionId& id) const {
  validate(id);
  const std::string name = to_string(id);
  const std::string prefix = partition_prefix(id);
  const std::string checkpoint_key = record_key(prefix, kCheckpointKind);
  std::optional<std::string> checkpoint;
  std::optional<std::string> meta;
  impl_->with_db([&](rocksdb::DB& db) {
    // One snapshot for both records, so they come from the same checkpoint.
    rocksdb::ManagedSnapshot snapshot(&db);
    rocksdb::ReadOptions options = read_options();
    options.snapshot = snapshot.snapshot();
    checkpoint = get_value(db, options, checkpoint_key, "reading the checkpoint of " + name);
    meta = get_value(db, options, record_key(prefix, kMetaKind), "reading the filter metadata of " + name);
  });
  if (!checkpoint && !meta) return std::nullopt;
  if (!checkpoint || !meta) {
    throw StateStoreError(Kind::kCorrupt, "state store: " + name + " has a " +
                                              (checkpoint ? "checkpoint without filter metadata"
                                                          : "filter metadata record without a checkpoint"));
  }
  verify_filter_record(*meta, filters::RecordKind::kMeta, 0, "the filter metadata record of " + name);
  return StoredPartition{decode_checkpoint(checkpoint_key, *checkpoint, id), std::move(*meta)};
}

// The slice records of one partition, read by one scan; shared by the copies of its SliceLookup.
class StateStore::SliceReader {
 public:
  SliceReader(Impl& impl, const PartitionId& id) : impl_(impl), prefix_(partition_prefix(id)), name_(to_string(id)) {}

  // A record is handed out once from the scan (moved, not copied); a second lookup of it reads it again.
  std::optional<std::string> lookup(std::uint64_t slice_id) {
    if (!scanned_) scan();
    const std::string what = "slice " + std::to_string(slice_id) + " of " + name_;
    std::optional<std::string> record;
    if (auto node = records_.extract(slice_id)) {
      record = std::move(node.mapped());
      handed_out_.push_back(slice_id);
    } else if (std::find(handed_out_.begin(), handed_out_.end(), slice_id) != handed_out_.end()) {
      record = impl_.get(slice_key(prefix_, slice_id), "reading " + what);
    }
    if (record) verify_filter_record(*record, filters::RecordKind::kSlice, slice_id, what);
    return record;
  }

 private:
  void scan() {
    const std::string first = slice_key(prefix_, 0);
    const std::string end = record_key(prefix_, static_cast<char>(kSliceKind + 1));
    impl_.with_db([&](rocksdb::DB& db) {
      rocksdb::ReadOptions options = scan_options();
      const rocksdb::Slice upper_bound(end);
      options.iterate_upper_bound = &upper_bound;
      const std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(options));
      for (it->Seek(first); it->Valid(); it->Next()) {
        const std::string_view key(it->key().data(), it->key().size());
        if (key.size() != first.size()) {
          throw StateStoreError(Kind::kCorrupt, "state store: a slice key of " + name_ + " has " +
                                                    std::to_string(key.size()) + " bytes");
        }
        records_.emplace(read_be(key.substr(prefix_.size() + 1)), it->value().ToString());
      }
      if (!it->status().ok()) fail(it->status(), "reading the slices of " + name_);
    });
    scanned_ = true;
  }

  Impl& impl_;
  const std::string prefix_;
  const std::string name_;
  bool scanned_ = false;
  std::unordered_map<std::uint64_t, std::string> records_;
  std::vector<std::uint64_t> handed_out_;
};

void StateStore::with_slices(const PartitionId& id,
                             const std::function<void(const filters::SliceViews&)>& use) const {
  validate(id);
  impl_->with_db([&](rocksdb::DB& db) {
    SliceCursor cursor(db, id);
    use(filters::SliceViews([&cursor](std::uint64_t slice_id) { return cursor.find(slice_id); }));
  });
}

std::unique_ptr<filters::Filter> StateStore::restore_filter(const PartitionId& id, std::string_view filter_meta,
                                                            RestoreReport* report) const {
  validate(id);
  RestoreReport ignored;
  RestoreReport& out = report != nullptr ? *report : ignored;
  const std::string name = to_string(id);
  const std::optional<std::string> header =
      impl_->get(record_key(partition_prefix(id), kSnapshotKind), "reading the snapshot of " + name);
  if (header) impl_->snapshot_found(id);
  const auto with_bands = [&](const std::function<void(const filters::SliceViews&)>& use) {
    impl_->with_db([&](rocksdb::DB& db) {
      BandReader bands(db, id);
      use(filters::SliceViews([&bands](std::uint64_t band) { return bands.find(band); }));
    });
  };
  const auto with_slice_views = [&](const std::function<void(const filters::SliceViews&)>& use) { with_slices(id, use); };
  return restore_checkpoint_filter(filter_meta, header ? std::optional<std::string_view>(*header) : std::nullopt,
                                   with_bands, with_slice_views, out);
}

std::uint64_t StateStore::write_snapshot(const PartitionId& id, const filters::FilterSnapshot& snapshot) {
  validate(id);
  const std::string prefix = partition_prefix(id);
  const std::string name = to_string(id);
  rocksdb::WriteBatch batch;
  const auto check = [&](const rocksdb::Status& status) {
    if (!status.ok()) fail(status, "building the snapshot of " + name);
  };
  check(delete_bands(batch, prefix));  // an older snapshot may have had more
  for (std::size_t band = 0; band < snapshot.bands.size(); ++band) {
    check(batch.Put(numbered_key(prefix, kBandKind, band), snapshot.bands[band]));
  }
  check(batch.Put(record_key(prefix, kSnapshotKind), snapshot.header));
  impl_->write(batch, "writing the snapshot of " + name);
  impl_->snapshot_found(id);  // the next checkpoint deletes it whole
  return batch.GetDataSize();
}

void StateStore::write_restore_notes(std::span<const RestoreNote> notes) {
  if (notes.empty()) return;
  rocksdb::WriteBatch batch;
  for (const RestoreNote& note : notes) {
    validate(note.id);
    const std::string key = record_key(partition_prefix(note.id), kRestoreNoteKind);
    const rocksdb::Status status = batch.Put(key, encode_restore_note(key, note));
    if (!status.ok()) fail(status, "building the restore note of " + to_string(note.id));
  }
  impl_->write(batch, "writing " + std::to_string(notes.size()) + " restore note(s)");
}

std::optional<RestoreNote> StateStore::read_restore_note(const PartitionId& id) const {
  validate(id);
  const std::string key = record_key(partition_prefix(id), kRestoreNoteKind);
  const std::optional<std::string> record = impl_->get(key, "reading the restore note of " + to_string(id));
  if (!record) return std::nullopt;
  return decode_restore_note(key, *record, id);
}

filters::SliceLookup StateStore::slices(const PartitionId& id) const {
  validate(id);
  return [reader = std::make_shared<SliceReader>(*impl_, id)](std::uint64_t slice_id) {
    return reader->lookup(slice_id);
  };
}

void StateStore::drop(const PartitionId& id) {
  validate(id);
  rocksdb::WriteBatch batch;
  const rocksdb::Status status = batch.DeleteRange(partition_prefix(id), partition_prefix(id, 1));
  if (!status.ok()) fail(status, "dropping " + to_string(id));
  impl_->write(batch, "dropping " + to_string(id));
}

std::vector<PartitionCheckpoint> StateStore::list() const {
  return impl_->with_db([](rocksdb::DB& db) { return list_checkpoints(db); });
}

void StateStore::flush() {
  if (impl_->read_only) throw StateStoreError(Kind::kInvalidArgument, "state store: flushing " + impl_->dir + ": opened read-only");
  impl_->with_db([&](rocksdb::DB& db) {
    const rocksdb::Status status = db.Flush(rocksdb::FlushOptions());
    if (!status.ok()) fail(status, "flushing " + impl_->dir);
  });
}

}  // namespace bloomgate::connectors
