#include "column_restore.h"

#include <algorithm>
#include <system_error>
#include <utility>

namespace bloomgate::filters::detail {
namespace {

// Below 1 MiB of bits the whole scatter is short enough that a thread could save little beyond its own start
// and handovers (docs/decisions/tlbf-phase-tables.md, "Persistence").
constexpr std::uint64_t kMinThreadedBits = 1ULL << 23;

}  // namespace

ColumnRestore::~ColumnRestore() {
  if (!worker_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
    queue_.clear();
  }
  wake_.notify_one();
  worker_.join();
}

void ColumnRestore::add(std::size_t age, const BitSlice& slice) {
  if (given_up_) return;
  if (!worker_.joinable()) start(slice);
  if (given_up_) return;
  if (slice.bits != rows_ || age >= count_ || words_[age] != nullptr) {
    give_up();
    return;
  }
  words_[age] = slice.words.data();
  const std::size_t run = age < first_run_ ? 0 : 1 + (age - first_run_) / 64;
  if (++added_[run] < run_end(run) - run_begin(run)) return;
  // The run that completes the filter is left to finish(), which splits it: the thread would take it whole.
  if (++runs_done_ == added_.size()) {
    last_run_ = run;
    return;
  }
  {
    const std::lock_guard lock(mutex_);
    queue_.push_back(Job{{run}, 0, (rows_ + 63) / 64});
  }
  wake_.notify_one();
}

// Runs of 64 columns, the short one (count % 64) first: the store's ascending ids are mostly oldest first,
// so the runs the thread scatters while records are still read complete earlier, and the one left for the
// end costs a pass over the segment whatever its width.
std::size_t ColumnRestore::run_begin(std::size_t run) const noexcept { return run == 0 ? 0 : first_run_ + 64 * (run - 1); }
std::size_t ColumnRestore::run_end(std::size_t run) const noexcept { return first_run_ + 64 * run; }

void ColumnRestore::start(const BitSlice& first) {
  rows_ = first.bits;
  if (count_ == 0 || count_ > ColumnSegment::max_slices(k_) || rows_ * count_ / count_ != rows_ ||
      rows_ * count_ < kMinThreadedBits) {
    given_up_ = true;
    return;
  }
  first_run_ = count_ % 64 == 0 ? 64 : count_ % 64;
  added_.assign((count_ + 63) / 64, 0);
  busy_ = true;  // opening the segment, before anything waits for the thread
  try {
    worker_ = std::thread([this] { run_worker(); });
  } catch (const std::system_error&) {
    busy_ = false;
    given_up_ = true;  // no thread: the caller scatters
  }
}

// The thread stops after its current job; what it did is discarded with the segment.
void ColumnRestore::give_up() {
  given_up_ = true;
  const std::lock_guard lock(mutex_);
  queue_.clear();
}

void ColumnRestore::run_worker() {
  std::unique_lock lock(mutex_, std::defer_lock);
  try {
    auto segment = std::make_unique<ColumnSegment>(rows_, static_cast<std::uint32_t>(count_), k_);
    lock.lock();
    segment_ = std::move(segment);
  } catch (...) {
    lock.lock();
    error_ = std::current_exception();
  }
  for (;;) {
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    while (!queue_.empty() && queue_.front().block_begin == job.block_begin &&
           queue_.front().block_end == job.block_end) {
      job.runs.insert(job.runs.end(), queue_.front().runs.begin(), queue_.front().runs.end());
      queue_.pop_front();
    }
    busy_ = true;
    lock.unlock();
    if (!error_) run(job);  // error_ is only written by this thread
    lock.lock();
  }
}

void ColumnRestore::run(const Job& job) {
  std::vector<ColumnSegment::ColumnRun> runs;
  for (const std::size_t run : job.runs) {
    const std::size_t begin = run_begin(run);
    runs.push_back({static_cast<std::uint32_t>(begin),
                    std::span<const std::uint64_t* const>(words_.data() + begin, run_end(run) - begin)});
  }
  segment_->scatter_runs(runs, job.block_begin, job.block_end);
}

// The runs still queued and the last one are split by blocks: the thread sweeps the first half, this one
// the second, split where no word holds rows of both (ColumnSegment::shared_word_free).
std::unique_ptr<ColumnSegment> ColumnRestore::finish() {
  if (!worker_.joinable()) return nullptr;
  std::unique_lock lock(mutex_);
  Job left{{}, 0, 0};
  for (const Job& job : queue_) left.runs.insert(left.runs.end(), job.runs.begin(), job.runs.end());
  queue_.clear();
  if (runs_done_ == added_.size()) left.runs.push_back(last_run_);
  idle_.wait(lock, [this] { return !busy_; });
  if (error_) std::rethrow_exception(error_);
  if (given_up_ || runs_done_ != added_.size()) return nullptr;
  const std::uint64_t blocks = (rows_ + 63) / 64;
  const std::uint64_t half = segment_->shared_word_free(blocks / 2);
  queue_.push_back(Job{left.runs, 0, half});
  left.block_begin = half;
  left.block_end = blocks;
  lock.unlock();
  wake_.notify_one();
  run(left);
  lock.lock();
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
  if (error_) std::rethrow_exception(error_);
  return std::move(segment_);
}

}  // namespace bloomgate::filters::detail
