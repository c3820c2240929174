// File: shutdown_deadline.h
//
// The backstop of `shutdown.grace_period`: once a stop is requested, the process ends within the grace period
// whatever it is waiting on. The service's own shutdown steps (flush, commit, checkpoint) are bounded by the
// grace period already; what is not is inside librdkafka: closing a consumer whose coordinator is gone, or
// destroying a client whose brokers do not answer. When the period runs out with the service still stopping,
// the deadline logs that, flushes the log and ends the process with exit code 1 (`_exit`, so no destructor
// can block again). Nothing is lost by that: an input offset is committed only after its checkpoint and
// output are durable (docs/state.md), so the next start resumes at the last commit.
//
// Ownership: owns a watcher thread, stopped and joined by the destructor. Thread-safety: none needed.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace bloomgate::app {

class ShutdownDeadline {
 public:
  // Watches `stop_requested`; `grace` after it turns true, ends the process unless destroyed first.
  ShutdownDeadline(const std::atomic<bool>& stop_requested, std::chrono::milliseconds grace);
  ~ShutdownDeadline();
  ShutdownDeadline(const ShutdownDeadline&) = delete;
  ShutdownDeadline& operator=(const ShutdownDeadline&) = delete;

 private:
  void watch(const std::atomic<bool>& stop_requested, std::chrono::milliseconds grace);

  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::thread watcher_;  // last: starts once the members it uses exist
};

}  // namespace bloomgate::app
