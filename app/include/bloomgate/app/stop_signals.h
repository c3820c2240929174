// File: stop_signals.h
//
// SIGTERM and SIGINT ask the service to stop gracefully: the first one sets a flag the service loop
// polls (the handler does nothing else: only lock-free atomics are async-signal-safe); a second one,
// for an operator who does not want to wait, gets the default action and ends the process at once.
//
// One instance per process, for as long as the service runs; the destructor restores the previous
// handlers. Not thread-safe to construct; the flag may be read from any thread.
#pragma once

#include <atomic>

namespace bloomgate::app {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  const std::atomic<bool>& requested() const noexcept;
};

}  // namespace bloomgate::app
