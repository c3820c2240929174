// File: checkpoint_filter.h
//
// The filter of one checkpoint, from wherever its records are: the state store (StateStore::restore_filter)
// or the state topic (a StateTopicCheckpoint read back whole). One rule for both: the snapshot a clean stop
// took, when there is one taken at this metadata record, else the slice records. A snapshot taken at
// another checkpoint, or one the filter rejects, is passed over for the slices (the snapshot is only a
// copy of them), and the report says why.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "bloomgate/connectors/state_store.h"
#include "bloomgate/connectors/state_topic_records.h"
#include "bloomgate/filters/filter.h"

namespace bloomgate::connectors {

// Calls `use` with views of a checkpoint's records (slices by id, or snapshot bands by number), valid only
// inside `use`: a store's lookups hold a RocksDB iterator or pinned value for its duration.
using WithRecordViews = std::function<void(const std::function<void(const filters::SliceViews&)>& use)>;

// The filter of the checkpoint whose metadata record is `meta`: from the snapshot (`snapshot_header` and
// `with_bands`) when it was taken at `meta` and the filter accepts it, else from `with_slices`. `report`
// says which, and why a snapshot was passed over. Throws filters::FormatError when the slice records do
// not make a filter, and whatever the lookups throw.
std::unique_ptr<filters::Filter> restore_checkpoint_filter(std::string_view meta,
                                                           const std::optional<std::string_view>& snapshot_header,
                                                           const WithRecordViews& with_bands,
                                                           const WithRecordViews& with_slices, RestoreReport& report);

// The same over a checkpoint read back from the state topic (its records in memory).
std::unique_ptr<filters::Filter> restore_checkpoint_filter(const StateTopicCheckpoint& checkpoint,
                                                           RestoreReport& report);

}  // namespace bloomgate::connectors
