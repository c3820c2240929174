// File: state_topic_restore.h
//
// Where an assigned partition's state comes from (docs/state.md, "Where a partition's state comes from"):
// the local checkpoint when it is current; otherwise the state topic's checkpoint (state.topic), when it is
// whole and further ahead than the local one; otherwise a rebuild from the input.
//
// "Current": the local checkpoint's next offset is at or past the group's committed offset (or the group
// has no commit for the partition). Every commit follows a checkpoint, so a local checkpoint behind the
// commit means another member (or this one, before losing its disk) went further: the state topic may hold
// that member's checkpoint. When the committed offset cannot be asked, the local checkpoint is not known to
// be current, and the state topic is read too.
//
// The read: a side reader (output_reconciler.h) assigned to the one state partition that holds the input
// partition (state_topic_partition), from its low watermark to the high watermark asked at the start, fed
// to a StateTopicAssembler. It is bounded like the other side reads: each watermark question by the
// request timeout, the read by the idle timeout (no record for that long fails it). It never throws: a
// failed read is a gap, and the caller falls back to the next source.
//
// Thread-safety: none needed; called for one partition at a time by whoever restores it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "bloomgate/app/service.h"
#include "bloomgate/config/config.h"
#include "bloomgate/connectors/admin.h"
#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/state_store.h"
#include "bloomgate/connectors/state_topic_records.h"
#include "output_reconciler.h"
#include "partition_worker.h"

namespace bloomgate::app {

// The group's committed offset for `id`: a negative value when it has none, nullopt when it could not be
// asked (the caller then cannot tell whether a local checkpoint is current).
std::optional<std::int64_t> group_committed_offset(const connectors::Consumer& consumer,
                                                   const connectors::PartitionId& id);

// Whether the local checkpoint (next offset `local_next`) is the partition's present for the group.
bool local_checkpoint_is_current(std::int64_t local_next, std::optional<std::int64_t> committed) noexcept;

// Which usable checkpoint the partition starts from, by their next offsets (nullopt: none usable): the
// one further ahead, the local one on a tie (it needs no write); kRebuild when neither.
RestoreSource pick_restore_source(std::optional<std::int64_t> local_next,
                                  std::optional<std::int64_t> state_topic_next) noexcept;

// What one read of the state partition found.
struct StateTopicRead {
  std::variant<connectors::StateTopicCheckpoint, connectors::StateTopicGap> result;
  bool held_nothing = false;   // no record of this input partition at all (a gap, but not a damaged one)
  std::uint64_t bytes = 0;     // keys and values read from the state partition
  double seconds = 0;
};

StateTopicRead read_state_topic(const std::string& state_topic, const connectors::PartitionId& id,
                                const connectors::Admin& admin, const SideReaderOptions& options);

// A filter restored from the state topic, and what it was restored from.
struct StateTopicRestore {
  connectors::PartitionCheckpoint checkpoint;
  std::unique_ptr<filters::Filter> filter;
  connectors::RestoreReport loaded;  // from the snapshot or the slice records
  connectors::StateManifest manifest;
};

// Reads the state topic's checkpoint of `id` and builds its filter (connectors/checkpoint_filter.h, as a
// local checkpoint is). Counts the read's bytes and seconds in `report`. Nothing, with the reason logged
// (a warning, except for a state topic that holds nothing of the partition), when the checkpoint is not
// whole, its records do not make a filter, or the filter has other settings than `pipeline`.
std::optional<StateTopicRestore> restore_from_state_topic(const std::string& state_topic,
                                                          const connectors::PartitionId& id,
                                                          const config::PipelineSettings& pipeline,
                                                          const connectors::Admin& admin,
                                                          const SideReaderOptions& options, PartitionReport& report);

// Writes where each partition of `workers` took its state from at its restore (its report's
// last_restore_source), with the time, as the partitions' restore notes in the store, for `bloomgate inspect`.
// A note that cannot be written is logged and left out: the service does not need it.
void note_restores(connectors::StateStore& store, const std::vector<PartitionWorker*>& workers);

}  // namespace bloomgate::app
