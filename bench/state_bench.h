// File: bench/state_bench.h
//
// What state_bench's run (state_bench.cc) hands to its report (state_bench_report.cc): the options, the
// figures of one checkpoint and one restore, and the results of the whole run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_support.h"

namespace bloomgate::bench {

struct Config {
  bool quick = false;
  std::uint64_t keys = 10'000'000;
  double error_rate = 1e-3;
  double changed_share = 0.01;  // the incremental checkpoint follows this share of the keys, one second later
  int reps = 5;
  std::uint64_t seed = 0x57a7e'b3ac4ULL;
  std::string dir;  // where the store and the plain file go; empty: a temporary directory
  std::string json;
  // Each timed restore in a new process (this program again, with --restore-child): what a restart does.
  // In one process a restore reuses the memory the previous repetition's filter gave back to malloc, which
  // a restarting service does not have.
  bool fresh_process = false;
  std::string restore_child;  // internal: restore the store in this directory, print the timing, exit
  bool child_from_snapshot = false;  // internal: the child restores through StateStore::restore_filter
  double target = 2.0;
};

struct CheckpointFigures {
  double seconds = kNaN;
  double raw_write_seconds = kNaN;  // the same bytes to a plain file + fdatasync
  std::uint64_t bytes = 0;          // the WriteBatch
  std::uint64_t slices_written = 0;
  std::uint64_t slices_total = 0;
};

struct RestoreFigures {
  double restore_seconds = kNaN;
  double open_seconds = kNaN;
  double fetch_seconds = kNaN;
  double raw_read_seconds = kNaN;
  double resident_store = kNaN;  // page-cache residency of the store's files just before the timed restore
  double resident_plain = kNaN;
};

struct Results {
  std::uint64_t keys = 0;
  double filter_mib = kNaN;
  std::uint64_t slices = 0;
  double build_seconds = kNaN;
  std::uint64_t image_bytes = 0;  // the filter's records: what the plain file holds
  std::uint64_t store_bytes = 0;  // the store's files after a flush
  CheckpointFigures full;
  CheckpointFigures incremental;
  double snapshot_seconds = kNaN;  // Filter::snapshot + write_snapshot + flush, as a clean stop does
  std::uint64_t snapshot_bytes = 0;
  RestoreFigures cold;  // from the slice records: a start after a crash
  RestoreFigures warm;
  RestoreFigures cold_snapshot;  // from the snapshot: a start after a clean stop
  RestoreFigures warm_snapshot;
  bool verified = false;
};

// The file system holding `dir` (ext4, tmpfs, ...), as the report names it.
std::string filesystem_of(const std::string& dir);

// The human-readable report with the targets' PASS/MISS, and the same figures as JSON.
void print(const Config& c, const std::string& dir, const Results& r);
std::string to_json(const Config& c, const std::string& dir, const Results& r);

// The figures a run should have produced and did not (an empty list: all there).
std::vector<std::string> missing_figures(const Results& r);

}  // namespace bloomgate::bench
