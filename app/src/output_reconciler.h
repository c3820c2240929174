// File: output_reconciler.h
//
// Step 2 of the state invariant (docs/state.md): after a restore, which input offsets beyond the
// checkpoint were already delivered to the output? Every record the service forwards carries its
// source header (bloomgate.source, "<topic>/<partition>/<offset>"), so reading the output partition from
// the checkpoint's output offset up to its high watermark names exactly those input offsets.
//
// A bounded read with a short-lived consumer of its own (manual assignment: it never joins or commits
// for a group). Each output partition is read once for all the requests on it, from the lowest start
// offset, up to the high watermark asked for when the read starts; records produced after that belong
// to the service itself (it has not produced anything for these partitions yet).
//
// Thread-safety: none needed; a plain function, run on the restore thread (assignment.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bloomgate/connectors/admin.h"
#include "bloomgate/connectors/client_hooks.h"
#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/kafka_config.h"

namespace bloomgate::app {

struct ReconcileRequest {
  std::string input_topic;
  std::int32_t input_partition = 0;
  std::string output_topic;
  std::int32_t output_partition = 0;
  // Read the output partition from here (the checkpoint's output offset); -1: read nothing, only report
  // the output's high watermark.
  std::int64_t output_from = -1;
  std::int64_t input_from = 0;  // collect the input offsets at or after this one (the checkpoint's next offset)
};

struct ReconcileResult {
  // Input offset -> the output offset of the first record forwarded for it, for the input offsets at or
  // after input_from that the output already holds.
  std::map<std::int64_t, std::int64_t> delivered;
  std::int64_t output_end = -1;  // the output partition's high watermark when the read started
  std::int64_t read_from = -1;   // where the read started (output_from, or the low watermark if later)
  std::uint64_t records_read = 0;  // records of the output partition read for this request's range
  // Records from output_from on had already been deleted (retention) or never existed (output_from
  // beyond the high watermark): the answer is partial, and the caller says so.
  bool output_truncated = false;
  bool output_behind = false;  // output_from > output_end: the output lost records the checkpoint counted
};

// The options of a short-lived reader outside the group (the output reconciler, the input rebuilder).
struct SideReaderOptions {
  connectors::KafkaConfig config;  // brokers and the user's kafka.properties
  connectors::ClientHooks hooks;
  std::string group_id;            // required by the consumer; never joined, never committed for
  // The read fails when no record arrives for this long while records it must read are still unread (a
  // slow but moving read is not cut off).
  std::chrono::milliseconds idle_timeout{30'000};
  std::chrono::milliseconds request_timeout{10'000};  // one watermark or offset question
  // Checked between two polls of the read; once true the read stops with SideReadCancelled. Null: never.
  const std::atomic<bool>* cancel = nullptr;
};

// A read stopped because its `cancel` flag was set (the partition it was for was revoked, or the service
// is stopping): nothing it read may be used.
class SideReadCancelled : public std::runtime_error {
 public:
  SideReadCancelled() : std::runtime_error("cancelled") {}
};

// Throws SideReadCancelled once `options.cancel` is set.
inline void throw_if_cancelled(const SideReaderOptions& options) {
  if (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed)) throw SideReadCancelled();
}
using ReconcileOptions = SideReaderOptions;

// A consumer for such a reader, with end-of-partition events on: a partition whose last offsets hold no
// readable record (compaction, transaction markers) is still known to be read to its end. Its fetches wait
// at most 10 ms at the end of a partition (fetch.wait.max.ms, whatever kafka.properties says): the reader
// stops there, so a longer wait only delays it.
std::unique_ptr<connectors::Consumer> open_side_reader(const SideReaderOptions& options);

// One result per request, in the same order. Throws std::runtime_error when the watermarks cannot be
// asked or the output cannot be read to its high watermark in time: the caller must not guess.
std::vector<ReconcileResult> reconcile_outputs(const std::vector<ReconcileRequest>& requests,
                                               const connectors::Admin& admin, const ReconcileOptions& options);

}  // namespace bloomgate::app
