// File: input_rebuilder.h
//
// Step 3 of the state invariant (docs/state.md, "Rebuild"): a partition assigned without usable local
// state (it comes from another member, or its state was lost or set aside) starts at its committed
// offset with an empty filter, which has forgotten every key of the last TTL. The input topic is the
// changelog: the events from (the partition's present - TTL) up to the start offset are read again and
// handed to the caller, who decides them (inserting their keys) without producing anything.
//
// The present is the timestamp of the last record before the start offset (event time), or the wall
// clock (processing time); Kafka's time index (offsetsForTimes) gives the first offset of the window.
// A broker without a time index (the embedded one) is scanned from the low watermark instead, and the
// records before the first one inside the window are skipped: the same records, read at a higher cost.
// A bounded read with a short-lived consumer of its own (manual assignment, never joins or commits).
//
// Thread-safety: none needed; a plain function on the service thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bloomgate/connectors/admin.h"
#include "bloomgate/connectors/message.h"
#include "output_reconciler.h"

namespace bloomgate::app {

struct RebuildRequest {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t until = 0;               // the start offset: events before it are replayed
  std::chrono::milliseconds window{0};  // the pipeline's TTL
  bool processing_time = false;         // the window ends at the wall clock, not at the last record's time
};

struct RebuildResult {
  std::int64_t from = -1;        // the first offset replayed (== until: nothing to replay)
  std::int64_t until = -1;
  std::uint64_t events = 0;      // records handed to the sink
  // The input's oldest record is younger than the window's start: retention has already deleted part of
  // the window, so keys seen only there are forgotten.
  bool truncated = false;
  // The broker's time index gave no answer, so the input was scanned from its low watermark; `skipped`
  // records before the window were read but not handed over.
  bool scanned = false;
  std::uint64_t skipped = 0;
};

// Called for every replayed record, with the index of its request.
using RebuildSink = std::function<void(std::size_t request, const connectors::ConsumedMessage& message)>;

// One result per request, in the same order. Throws std::runtime_error when the input cannot be asked or
// read in time (options.idle_timeout without a record while some are still unread).
std::vector<RebuildResult> rebuild_from_inputs(const std::vector<RebuildRequest>& requests,
                                               const connectors::Admin& admin, const ReconcileOptions& options,
                                               const RebuildSink& sink);

}  // namespace bloomgate::app
