// File: bench/state_bench.cc
//
// The durable-state benchmark: how long the RocksDB state store takes to give back a
// time-limited filter holding ten million keys (1e-3), against reading the same number of bytes from a
// plain file on the same disk with read(2); and what a checkpoint costs, full and incremental (changed
// slices only), against writing the same bytes to a plain file with fdatasync. The rebuild from the input's
// history needs a broker and the service, so service_bench --rebuild measures it.
//
// Cold and warm: "cold" drops the files from the page cache before each timed read with
// posix_fadvise(POSIX_FADV_DONTNEED) after an fdatasync (no root needed; it drops clean pages only, so
// the residency left afterwards is measured with mincore and printed); "warm" reads them again at once.
// Both sides get the same treatment. The cold ratio is the headline figure.
//
// This is a benchmark, not a test: the 2x target is reported (PASS/MISS), never enforced. The program
// exits non-zero only when a figure it should have produced is missing or not a number, or the restored
// filter does not hold the keys it was given.

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bloomgate/app/temporary_directory.h"
#include "bloomgate/connectors/state_store.h"
#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"
#include "bloomgate/filters/time.h"
#include "bench_support.h"
#include "json_writer.h"
#include "state_bench.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for posix_spawn

namespace bloomgate::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using connectors::PartitionCheckpoint;
using connectors::PartitionId;
using connectors::StateStore;

constexpr std::int64_t kStartNs = 1'700'000'000'000'000'000;
constexpr std::int64_t kTtlNs = 600'000'000'000;  // 10 minutes of simulated time
constexpr std::size_t kReadChunk = 1 << 20;       // read(2) in 1 MiB chunks, as a file copy would

std::uint64_t key_of(const Config& c, std::uint64_t i) { return mix64(i + c.seed * 0x9e3779b97f4a7c15ULL); }

// ------------------------------------------------------------------------------------------------------
// Files and the page cache

std::uint64_t bytes_of(const std::vector<std::string>& files) {
  std::uint64_t total = 0;
  for (const std::string& f : files) total += fs::file_size(f);
  return total;
}

std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path().string());
  }
  return files;
}

// fdatasync then POSIX_FADV_DONTNEED: dirty pages cannot be dropped, so they are written first.
void drop_from_page_cache(const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY);
    if (fd < 0) continue;
    (void)::fdatasync(fd);
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// The share of the files' pages still in the page cache (mincore), to show how cold "cold" was.
double resident_share(const std::vector<std::string>& files) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::size_t pages = 0;
  std::size_t resident = 0;
  for (const std::string& f : files) {
    const std::size_t size = fs::file_size(f);
    const int fd = ::open(f.c_str(), O_RDONLY);
    if (fd < 0 || size == 0) {
      if (fd >= 0) ::close(fd);
      continue;
    }
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) continue;
    std::vector<unsigned char> in_core((size + page - 1) / page);
    if (::mincore(map, size, in_core.data()) == 0) {
      pages += in_core.size();
      for (unsigned char c : in_core) resident += c & 1U;
    }
    ::munmap(map, size);
  }
  return pages == 0 ? kNaN : static_cast<double>(resident) / static_cast<double>(pages);
}

}  // namespace

std::string filesystem_of(const std::string& dir) {
  struct statfs s {};
  if (::statfs(dir.c_str(), &s) != 0) return "?";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs (no disk: cold equals warm)";
    case 0x794c7630: return "overlayfs";
    default: {
      char text[32];
      std::snprintf(text, sizeof text, "f_type 0x%lx", static_cast<unsigned long>(s.f_type));
      return text;
    }
  }
}

namespace {

// The raw baseline: the same number of bytes written once (then synced) and read back with read(2).
void write_plain_file(const std::string& path, std::uint64_t bytes) {
  std::vector<char> chunk(kReadChunk, '\x5a');
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + path);
  for (std::uint64_t left = bytes; left > 0;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk.size()));
    if (::write(fd, chunk.data(), n) != static_cast<ssize_t>(n)) {
      ::close(fd);
      throw std::runtime_error("cannot write " + path);
    }
    left -= n;
  }
  (void)::fdatasync(fd);
  ::close(fd);
}

double time_plain_read(const std::string& path) {
  std::vector<char> buffer(kReadChunk);
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error("cannot open " + path);
  std::uint64_t sum = 0;
  ssize_t n = 0;
  while ((n = ::read(fd, buffer.data(), buffer.size())) > 0) sum += static_cast<unsigned char>(buffer[0]);
  ::close(fd);
  const double seconds = seconds_since(start);
  if (sum == 0) throw std::runtime_error("read nothing from " + path);
  return seconds;
}

double time_plain_write(const std::string& path, std::uint64_t bytes) {
  const auto start = Clock::now();
  write_plain_file(path, bytes);  // includes its fdatasync, as a checkpoint includes the WAL's
  return seconds_since(start);
}

// ------------------------------------------------------------------------------------------------------
// The filter and the store

filters::FilterOptions filter_options(const Config& c) {
  filters::FilterOptions o;
  o.type = filters::FilterType::kTimeLimited;
  o.error_rate = c.error_rate;
  o.ttl = std::chrono::nanoseconds(kTtlNs);
  o.expected_per_ttl = c.keys;
  return o;
}

// c.keys distinct keys spread evenly over one TTL: all still within the window at the end.
std::unique_ptr<filters::Filter> build_filter(const Config& c) {
  auto filter = filters::make_filter(filter_options(c));
  const std::int64_t step = std::max<std::int64_t>(1, kTtlNs / static_cast<std::int64_t>(c.keys));
  for (std::uint64_t i = 0; i < c.keys; ++i) {
    filter->test_and_insert(filters::KeyHash{key_of(c, i)},
                            filters::from_epoch_nanos(kStartNs + static_cast<std::int64_t>(i) * step));
  }
  return filter;
}

std::int64_t end_ns(const Config& c) {
  return kStartNs + static_cast<std::int64_t>(c.keys) * std::max<std::int64_t>(1, kTtlNs / static_cast<std::int64_t>(c.keys));
}

const PartitionId kPartition{"bench-input", 0};

CheckpointFigures checkpoint(StateStore& store, filters::Filter& filter, filters::ImageScope scope, std::int64_t offset,
                             const std::string& plain) {
  PartitionCheckpoint cp;
  cp.id = kPartition;
  cp.next_offset = offset;
  cp.output_offset = offset;
  CheckpointFigures f;
  const auto start = Clock::now();
  const filters::FilterImage image = filter.image(scope);  // part of the cost: the service builds it too
  const connectors::CheckpointWrite written = store.write_checkpoint(cp, image);
  f.seconds = seconds_since(start);
  filter.mark_persisted();
  f.bytes = written.bytes;
  f.slices_written = written.slices_written;
  f.slices_total = filter.image(filters::ImageScope::kFull).slices.size();
  f.raw_write_seconds = time_plain_write(plain, image.record_bytes());
  return f;
}

// Open the store, read the partition's records and rebuild its filter: what a restart does per partition.
struct RestoreTiming {
  double seconds = kNaN;        // all of it
  double open_seconds = kNaN;   // StateStore::open alone (RocksDB's recovery, MANIFEST, table readers)
  double fetch_seconds = kNaN;  // inside read() and the slice lookups: RocksDB reading the records
};

RestoreTiming time_restore(const std::string& db, std::unique_ptr<filters::Filter>& out, bool from_snapshot) {
  RestoreTiming t;
  const auto start = Clock::now();
  auto store = StateStore::open(db);
  t.open_seconds = seconds_since(start);
  const auto read_started = Clock::now();
  const auto stored = store->read(kPartition);
  if (!stored) throw std::runtime_error("the checkpoint is not in the store");
  double fetch = seconds_since(read_started);
  if (from_snapshot) {
    // What a start after a clean stop does: restore_filter finds the snapshot and copies its bands into
    // place. Its reads are not timed apart (they are one Get per band inside the filter's restore).
    connectors::RestoreReport report;
    out = store->restore_filter(kPartition, stored->filter_meta, &report);
    if (!report.from_snapshot) throw std::runtime_error("the snapshot was not used: " + report.snapshot_ignored);
    t.seconds = seconds_since(start);
    t.fetch_seconds = kNaN;
    return t;
  }
  // What StateStore::restore_filter does, with the time spent inside the store's lookups (RocksDB reading
  // and checking blocks) measured apart; the rest of filters::restore is verifying and copying the slices.
  store->with_slices(kPartition, [&](const filters::SliceViews& views) {
    const filters::SliceViews timed([&](std::uint64_t id) {
      const auto at = Clock::now();
      auto record = views(id);
      fetch += seconds_since(at);
      return record;
    });
    out = filters::restore(stored->filter_meta, timed);
  });
  t.seconds = seconds_since(start);
  t.fetch_seconds = fetch;
  return t;
}

// --fresh-process: the restore timed by a child process (--restore-child), its figures read from its
// output: "restore <seconds> <open> <fetch> <verified 0|1>".
RestoreTiming time_restore_in_child(const Config& c, const std::string& db, bool from_snapshot, bool& verified) {
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error("pipe failed");
  const std::string keys = std::to_string(c.keys);
  const std::string seed = std::to_string(c.seed);
  char error_rate[32];
  std::snprintf(error_rate, sizeof error_rate, "%.17g", c.error_rate);
  std::vector<std::string> args = {"state_bench", "--restore-child", db, "--keys", keys, "--seed", seed,
                                   "--error-rate", error_rate};
  if (from_snapshot) args.emplace_back("--child-from-snapshot");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  std::string text;
  char buffer[256];
  ssize_t n = 0;
  while (spawned == 0 && (n = ::read(out[0], buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  if (spawned != 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("the restore child failed: " + text);
  }
  RestoreTiming t;
  int held = 0;
  if (std::sscanf(text.c_str(), "restore %lf %lf %lf %d", &t.seconds, &t.open_seconds, &t.fetch_seconds, &held) != 4) {
    throw std::runtime_error("the restore child printed no timing: " + text);
  }
  verified = held == 1;
  return t;
}

// Every key of the first checkpoint must still be there (no false negatives within the TTL).
bool holds_keys(const filters::Filter& filter, const Config& c) {
  const std::uint64_t step = std::max<std::uint64_t>(1, c.keys / 10'000);
  const auto now = filters::from_epoch_nanos(end_ns(c));
  for (std::uint64_t i = 0; i < c.keys; i += step) {
    if (!filter.contains(filters::KeyHash{key_of(c, i)}, now)) return false;
  }
  return true;
}

// ------------------------------------------------------------------------------------------------------
// The run

// A copy of the store at `db` with the filter's snapshot written after its last checkpoint, as a clean stop
// leaves it; the time and bytes of writing the snapshot go to `res`. False when the filter has no snapshot
// (its slices are not one segment's: fewer keys, whose slice sizes have not settled within the TTL).
bool write_snapshot_store(const std::string& db, const std::string& snapshot_db, const filters::Filter& filter,
                          Results& res) {
  fs::copy(db, snapshot_db, fs::copy_options::recursive);
  auto store = StateStore::open(snapshot_db);
  const auto start = Clock::now();
  const std::optional<filters::FilterSnapshot> snapshot = filter.snapshot();
  if (!snapshot) return false;
  res.snapshot_bytes = store->write_snapshot(kPartition, *snapshot);
  store->flush();
  res.snapshot_seconds = seconds_since(start);
  return true;
}

RestoreFigures measure_restore(const std::string& db, const std::string& plain, const Config& c, bool cold,
                               bool from_snapshot, bool& verified) {
  std::vector<double> restore, open, fetch, raw, res_store, res_plain;
  for (int r = 0; r < c.reps; ++r) {
    // Alternate which side goes first, so neither always follows the other's cache traffic.
    for (int side = 0; side < 2; ++side) {
      if (((side + r) % 2) == 0) {
        if (cold) drop_from_page_cache(files_under(db));
        res_store.push_back(resident_share(files_under(db)));
        RestoreTiming t;
        if (c.fresh_process) {
          t = time_restore_in_child(c, db, from_snapshot, verified);
        } else {
          std::unique_ptr<filters::Filter> restored;
          t = time_restore(db, restored, from_snapshot);
          verified = holds_keys(*restored, c);
        }
        restore.push_back(t.seconds);
        open.push_back(t.open_seconds);
        fetch.push_back(t.fetch_seconds);
      } else {
        if (cold) drop_from_page_cache({plain});
        res_plain.push_back(resident_share({plain}));
        raw.push_back(time_plain_read(plain));
      }
    }
  }
  return {median(restore), median(open), median(fetch), median(raw), median(res_store), median(res_plain)};
}

Results run_all(const Config& c, const std::string& dir) {
  Results res;
  res.keys = c.keys;
  const std::string db = dir + "/state";
  const std::string plain = dir + "/plain.bin";
  auto start = Clock::now();
  std::unique_ptr<filters::Filter> filter = build_filter(c);
  res.build_seconds = seconds_since(start);
  const filters::FilterStats stats = filter->stats(filters::from_epoch_nanos(end_ns(c)));
  res.filter_mib = static_cast<double>(stats.memory_bytes) / kMiB;  // every byte the filter holds
  res.slices = stats.slices;
  res.image_bytes = filter->image(filters::ImageScope::kFull).record_bytes();
  {
    auto store = StateStore::open(db);
    res.full = checkpoint(*store, *filter, filters::ImageScope::kFull, 1, plain);
    // One more second of input at the same rate as the keys above plus the changed share, then the
    // incremental checkpoint writes only the slices those insertions touched.
    const auto changed = static_cast<std::uint64_t>(c.changed_share * static_cast<double>(c.keys));
    const std::int64_t t0 = end_ns(c);
    for (std::uint64_t i = 0; i < changed; ++i) {
      filter->test_and_insert(filters::KeyHash{key_of(c, c.keys + i)},
                              filters::from_epoch_nanos(t0 + 1'000'000'000 * static_cast<std::int64_t>(i + 1) /
                                                                 static_cast<std::int64_t>(changed)));
    }
    res.incremental = checkpoint(*store, *filter, filters::ImageScope::kChangedSinceLastPersist, 2, plain);
    store->flush();  // restore then reads table files, as after a restart long after the checkpoint
  }
  res.store_bytes = bytes_of(files_under(db));
  const std::string snapshot_db = dir + "/state-snapshot";
  const bool snapshotted = write_snapshot_store(db, snapshot_db, *filter, res);
  filter.reset();
  write_plain_file(plain, res.image_bytes);
  bool verified[4] = {false, false, true, true};
  res.cold = measure_restore(db, plain, c, true, false, verified[0]);
  res.warm = measure_restore(db, plain, c, false, false, verified[1]);
  if (snapshotted) {
    res.cold_snapshot = measure_restore(snapshot_db, plain, c, true, true, verified[2]);
    res.warm_snapshot = measure_restore(snapshot_db, plain, c, false, true, verified[3]);
  }
  res.verified = verified[0] && verified[1] && verified[2] && verified[3];
  return res;
}

int run(Config c) {
  if (!c.restore_child.empty()) {
    std::unique_ptr<filters::Filter> restored;
    const RestoreTiming t = time_restore(c.restore_child, restored, c.child_from_snapshot);
    std::printf("restore %.9f %.9f %.9f %d\n", t.seconds, t.open_seconds, t.fetch_seconds,
                holds_keys(*restored, c) ? 1 : 0);
    return 0;
  }
  if (c.quick) {
    c.keys = std::min<std::uint64_t>(c.keys, 1'000'000);
    c.reps = std::min(c.reps, 3);
  }
  std::unique_ptr<app::TemporaryDirectory> temporary;
  std::string dir = c.dir;
  if (dir.empty()) {
    temporary = std::make_unique<app::TemporaryDirectory>("state_bench");
    dir = temporary->path();
  } else if (std::filesystem::exists(std::filesystem::path(dir) / "state")) {
    // A store left by an earlier run would be restored with its stale table files, and inflate the reads.
    std::fprintf(stderr, "state_bench: %s/state exists (an earlier run?): remove it or choose another --dir\n",
                 dir.c_str());
    return 2;
  }
  const auto started = Clock::now();
  const Results r = run_all(c, dir);
  print(c, dir, r);
  std::fprintf(stderr, "state_bench: done in %.1f s\n", seconds_since(started));
  if (!c.json.empty() && !write_json_file(c.json, to_json(c, dir, r), "state_bench")) return 2;
  const std::vector<std::string> missing = missing_figures(r);
  for (const std::string& m : missing) std::fprintf(stderr, "state_bench: missing or not a number: %s\n", m.c_str());
  return missing.empty() ? 0 : 1;
}

}  // namespace
}  // namespace bloomgate::bench

int main(int argc, char** argv) {
  bloomgate::bench::Config c;
  CLI::App app{"state_bench: restore and checkpoint of a time-limited filter in the RocksDB state store, against "
               "plain reads and writes of the same bytes"};
  app.add_flag("--quick", c.quick, "one million keys, 3 repetitions (seconds)");
  app.add_option("--keys", c.keys, "distinct keys in the filter (default ten million)")->check(CLI::PositiveNumber);
  app.add_option("--error-rate", c.error_rate, "the filter's error rate")->check(CLI::Range(1e-9, 0.5));
  app.add_option("--changed-share", c.changed_share, "keys added before the incremental checkpoint, as a share")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--reps", c.reps, "timed repetitions (the median is reported)")->check(CLI::PositiveNumber);
  app.add_option("--seed", c.seed, "seed of the keys");
  app.add_option("--dir", c.dir, "directory for the store and the plain file (default: a temporary directory)");
  app.add_option("--target", c.target, "the cold restore ratio reported as PASS or MISS");
  app.add_option("--json", c.json, "also write every figure as JSON to this file");
  app.add_flag("--fresh-process", c.fresh_process,
               "time each restore in a new process, as after a restart (default: all in this process)");
  app.add_option("--restore-child", c.restore_child, "internal: time one restore of DIR/state's store")->group("");
  app.add_flag("--child-from-snapshot", c.child_from_snapshot, "internal: the child restores from the snapshot")->group("");
  CLI11_PARSE(app, argc, argv);
  try {
    return bloomgate::bench::run(c);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "state_bench: %s\n", e.what());
    return 2;
  }
}
