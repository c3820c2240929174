#include "shutdown_deadline.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "bloomgate/app/exit_codes.h"

namespace bloomgate::app {

namespace {
// How often the watcher looks at the stop flag (a signal handler can only set an atomic).
constexpr std::chrono::milliseconds kStopPollInterval{50};
}  // namespace

ShutdownDeadline::ShutdownDeadline(const std::atomic<bool>& stop_requested, std::chrono::milliseconds grace)
    : watcher_([this, &stop_requested, grace] { watch(stop_requested, grace); }) {}

ShutdownDeadline::~ShutdownDeadline() {
  {
    const std::lock_guard lock(mutex_);
    done_ = true;
  }
  done_changed_.notify_all();
  watcher_.join();
}

void ShutdownDeadline::watch(const std::atomic<bool>& stop_requested, std::chrono::milliseconds grace) {
  std::unique_lock lock(mutex_);
  while (!done_ && !stop_requested.load()) done_changed_.wait_for(lock, kStopPollInterval);
  if (done_) return;
  if (done_changed_.wait_for(lock, grace, [this] { return done_; })) return;
  spdlog::error("shutdown: still stopping when the grace period of {} ms ran out (a broker that does not answer?); "
                "exiting now: the next start resumes at the last commit",
                grace.count());
  spdlog::default_logger()->flush();
  _exit(kExitServiceFailed);
}

}  // namespace bloomgate::app
