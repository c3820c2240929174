// File: input_rebuilder.h
//
// Step 3 of the state invariant (docs/state.md): a partition that has a committed position C but no
// usable filter (a new machine, state lost or quarantined) gets its filter back by reading its own input
// history, the changelog of the filter: the records whose times lie within one TTL before record C-1's,
// up to C, are handed to `insert` (the caller decides each without producing anything).
//
// Times are the live path's (EventClock, event_clock.h): record C-1's time is its timestamp capped at now
// + max_future_skew (now with processing time, or when it has none), and each record read is timed by an
// EventClock of its own over the read, so a record the live path judged at a raised time (after a
// future-stamped one) is not skipped for its raw timestamp. A future-stamped record C-1 therefore cannot
// push the window past the records the live filter still holds.
//
// Where the read starts: the offset of time (the time of C-1) - TTL, asked with ListOffsets by time;
// when the cluster cannot answer that (the embedded broker does not implement it), the input's low
// watermark, and records older than the window are read and skipped. When retention has already deleted
// part of the window, the result says so (history_truncated) and the caller warns: those keys are not
// in the filter.
//
// A bounded read with a short-lived consumer of its own (manual assignment; it never joins or commits for
// a group), as the output reconciler does. Thread-safety: none needed; runs on the restore thread
// (assignment.h), and stops with SideReadCancelled once options.cancel is set.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "bloomgate/app/event_clock.h"
#include "bloomgate/config/config.h"
#include "bloomgate/connectors/admin.h"
#include "bloomgate/connectors/client_hooks.h"
#include "bloomgate/connectors/kafka_config.h"
#include "bloomgate/connectors/message.h"
#include "output_reconciler.h"

namespace bloomgate::app {

struct RebuildRequest {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t end_offset = 0;                 // C: the committed offset; the read stops before it
  std::chrono::milliseconds ttl{0};            // the pipeline's TTL: how far back the window reaches
  config::TimeSource time = config::TimeSource::kEvent;  // kProcessing: the window ends now
  EventClock::Now now;                         // processing time (the service's: the wall clock)
};

struct RebuildResult {
  std::int64_t from_offset = -1;       // where the read started
  std::int64_t window_start_ms = -1;   // records older than this were skipped; -1: nothing to read
  std::uint64_t inserted = 0;          // records handed to `insert`
  std::uint64_t skipped = 0;           // records read but timed before the window
  bool history_truncated = false;      // retention deleted records the window needs
  double seconds = 0;
};

// Progress while reading: records read so far and how many the read covers in all (end - start).
using RebuildProgress = std::function<void(std::uint64_t read, std::uint64_t total)>;

struct RebuildOptions : SideReaderOptions {
  std::chrono::milliseconds progress_interval{1'000};
};

// Reads the window and calls `insert` for each record in it, in offset order. Throws std::runtime_error
// when the input cannot be asked or read to end_offset in time: the caller must not guess.
RebuildResult rebuild_from_input(const RebuildRequest& request, const connectors::Admin& admin,
                                 const RebuildOptions& options,
                                 const std::function<void(connectors::ConsumedMessage&)>& insert,
                                 const RebuildProgress& progress);

}  // namespace bloomgate::app
