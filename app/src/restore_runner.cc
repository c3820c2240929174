#include "restore_runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace bloomgate::app {

RestoreRunner::RestoreRunner(Work work) : work_(std::move(work)) {}

void RestoreRunner::submit(std::shared_ptr<RestoreJob> job) {
  std::lock_guard lock(mutex_);
  if (stopped_) {
    job->cancelled = true;
    finished_.push_back(std::move(job));
    return;
  }
  queued_.push_back(std::move(job));
  if (!thread_.joinable()) thread_ = std::jthread([this](std::stop_token stop) { run(std::move(stop)); });
  changed_.notify_all();
}

std::vector<std::shared_ptr<RestoreJob>> RestoreRunner::take_finished() {
  std::lock_guard lock(mutex_);
  return std::exchange(finished_, {});
}

bool RestoreRunner::wait_finished(const RestoreJob& job, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  const auto finished = [&] {
    const bool queued = std::any_of(queued_.begin(), queued_.end(), [&](const auto& q) { return q.get() == &job; });
    return !queued && running_.get() != &job;
  };
  return changed_.wait_until(lock, deadline, finished);
}

void RestoreRunner::stop() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    for (const auto& job : queued_) job->cancelled = true;
    if (running_) running_->cancelled = true;
  }
  if (!thread_.joinable()) return;
  thread_.request_stop();
  changed_.notify_all();
  thread_.join();
}

// One job after another. A job cancelled before it starts is finished without running. The work function
// catches what its job throws; this catch-all only keeps an exception from ending the process.
void RestoreRunner::run(std::stop_token stop) {
  while (true) {
    std::shared_ptr<RestoreJob> job;
    {
      std::unique_lock lock(mutex_);
      if (!changed_.wait(lock, stop, [&] { return !queued_.empty(); })) {
        for (auto& queued : queued_) {
          queued->cancelled = true;
          finished_.push_back(std::move(queued));
        }
        queued_.clear();
        return;
      }
      job = std::move(queued_.front());
      queued_.pop_front();
      running_ = job;
    }
    if (!job->cancelled) {
      try {
        work_(*job);
      } catch (...) {
        job->failure = "the restore thread caught an unknown exception";
      }
    }
    std::lock_guard lock(mutex_);
    running_.reset();
    finished_.push_back(std::move(job));
    changed_.notify_all();
  }
}

}  // namespace bloomgate::app
