// File: stop_signals.h
//
// SIGTERM, SIGINT and SIGHUP ask the service to stop gracefully: the first one sets a flag the service
// loop polls and records which signal it was (the handler does nothing else: only lock-free atomics are
// async-signal-safe); a second one of the same signal, for an operator who does not want to wait, gets
// the default action and ends the process at once. SIGHUP is a stop, not a reload (the configuration is
// read once): a closed terminal or a supervisor's hang-up then flushes and commits like SIGTERM, where
// its default action would end the process without either.
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
  // "SIGTERM", "SIGINT" or "SIGHUP": the first signal that asked to stop; empty while none has.
  static const char* received_name() noexcept;
};

}  // namespace bloomgate::app
