// File: column_restore.h
//
// Internal to filters/ (namespace detail): the scatter of a large time-limited filter's restore, run while
// the store is still reading its records.
//
// A restore reads one slice record after another, each holding one slice's own words, and the filter keeps
// those slices as the columns of a segment (column_segment.h): every 64 columns are one 64 x 64 transpose
// per block of 64 rows. Scattering them only after the last record would leave that work, most of a restore's
// CPU, for after the disk has finished, so a second thread scatters each run of 64 columns as
// soon as its records have all been decoded, while the reading goes on (the runs that completed while it
// was busy in one sweep over the segment); after the last record only the last run is left, split by
// blocks between both threads.
//
// It covers the steady state, where every slice has the same size and the filter is one segment with room
// for its slices. The segment is opened for that at the first record;
// a record of another size (several segments, a rate change less than a TTL ago), more slices than a
// segment holds or a filter too small to be worth a thread give up, and finish() returns nullptr: the
// caller then scatters the slices itself.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "bit_slice.h"
#include "column_segment.h"

namespace bloomgate::filters::detail {

class ColumnRestore {
 public:
  // A restore of `count` slices with `k` hash indexes.
  ColumnRestore(std::size_t count, std::uint32_t k) : count_(count), k_(k), words_(count, nullptr) {}
  ~ColumnRestore();
  ColumnRestore(const ColumnRestore&) = delete;
  ColumnRestore& operator=(const ColumnRestore&) = delete;

  // The decoded slice of age rank `age` (0 = the oldest, its column); its words must stay where they are
  // until finish() has returned or this is destroyed.
  void add(std::size_t age, const BitSlice& slice);
  // Every slice added: the segment holding them all as columns 0 (oldest) to count - 1, or nullptr when
  // they are not one segment's (see above). Rethrows what the thread failed with (std::bad_alloc).
  std::unique_ptr<ColumnSegment> finish();

 private:
  // Runs of columns, all scattered in one sweep over the blocks [block_begin, block_end).
  struct Job {
    std::vector<std::size_t> runs;
    std::uint64_t block_begin;
    std::uint64_t block_end;
  };

  void start(const BitSlice& first);
  void give_up();
  void run_worker();
  void run(const Job& job);
  std::size_t run_begin(std::size_t run) const noexcept;
  std::size_t run_end(std::size_t run) const noexcept;

  const std::size_t count_;
  const std::uint32_t k_;
  std::uint64_t rows_ = 0;
  bool given_up_ = false;
  std::vector<const std::uint64_t*> words_;  // by age rank
  std::size_t first_run_ = 64;               // columns of the first run; the others have 64
  std::vector<std::uint32_t> added_;         // per run
  std::size_t runs_done_ = 0;                // runs with all their columns added
  std::size_t last_run_ = 0;                 // the one completed last, left to finish()

  // Shared with the thread. It opens the segment first; the caller reads it only once the thread is idle.
  std::mutex mutex_;
  std::condition_variable wake_;  // a job, or stop
  std::condition_variable idle_;  // the queue empty and no job running
  std::deque<Job> queue_;         // the thread takes all the queued jobs of one block range at once
  bool busy_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::unique_ptr<ColumnSegment> segment_;
  std::thread worker_;  // last: started once the rest exists
};

}  // namespace bloomgate::filters::detail
