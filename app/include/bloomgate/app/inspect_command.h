// File: inspect_command.h
//
// `bloomgate inspect --state-dir DIR [--format text|json]`: what a state directory holds, per stored
// input partition (docs/state.md): its checkpoint (next input offset, output offset, when it was written)
// and its filter as restored from the stored records (type, slices, fill, bits, elements, estimated FPR
// at the filter's own present, the event time of the checkpoint).
//
// The store is opened read-only (StateStore::open_read_only): nothing in the directory changes, and a
// directory held by a running service is refused (exit 1) rather than read while it is being written.
// A missing directory, one without a database, or a corrupt store: a message naming the path, exit 1.
// A partition whose filter records do not restore is printed with its error, and the exit code is 1.
//
// JSON: one object, {"state_dir", "inspected_at", "partitions": [...]}; strings escaped by json_string()
// (control characters as \u00XX, invalid UTF-8 replaced by U+FFFD), non-finite numbers as null.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bloomgate/connectors/state_store.h"
#include "bloomgate/filters/filter.h"

namespace bloomgate::app {

enum class InspectFormat { kText, kJson };

struct InspectOptions {
  std::string state_dir;
  InspectFormat format = InspectFormat::kText;
};

// The fill of a filter's slices (set bits or non-zero cells over all of them, per slice), over the
// slices that still count: time-based filters' expired slices are left out.
struct FillSummary {
  std::size_t slices = 0;  // slices counted
  double min = 0;
  double mean = 0;
  double max = 0;
};

struct InspectedPartition {
  connectors::PartitionCheckpoint checkpoint;
  std::optional<filters::FilterStats> filter;  // nothing when its records did not restore
  FillSummary fill;
  std::string error;                           // why the filter did not restore; empty when it did
  // Where the service took the partition's state from at its last assignment, and when; nothing when the
  // store holds no note (written by a version before notes, or the partition started empty).
  std::optional<connectors::RestoreNote> last_restore;
  std::string last_restore_error;  // why the note could not be read; empty when it could (or there is none)
};

struct InspectReport {
  std::string state_dir;
  std::int64_t inspected_at_ms = 0;  // wall clock, for the checkpoints' ages
  std::vector<InspectedPartition> partitions;  // ordered by topic and partition
};

// Reads every stored partition. Throws connectors::StateStoreError when the store cannot be opened or
// listed (kLocked, kInvalidArgument, kCorrupt, kIo); a partition whose filter does not restore is
// reported with its error instead.
InspectReport inspect_state(const std::string& state_dir, std::int64_t now_ms);

std::string render_text(const InspectReport& report);
std::string render_json(const InspectReport& report);

// `text` as a JSON string literal, quotes included.
std::string json_string(std::string_view text);

// "2026-11-22T06:30:01.123Z".
std::string utc_time(std::int64_t epoch_ms);

// Runs the command: the report on `out`, errors on `err`; 0, or 1 when the store (or a partition) could
// not be read.
int run_inspect_command(const InspectOptions& options, std::ostream& out, std::ostream& err);

}  // namespace bloomgate::app
