// File: partition_worker.h
//
// PartitionWorker: the live state of one assigned input partition (its deduplicator and filter, its
// positions in the input and the output, what reconciliation found), and the small helpers every part of
// the service uses with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bloomgate/app/partition_deduplicator.h"
#include "bloomgate/app/service.h"
#include "bloomgate/config/config.h"
#include "bloomgate/connectors/message.h"
#include "bloomgate/connectors/state_store.h"
#include "bloomgate/connectors/topic_partition.h"
#include "fpr_probe.h"

namespace bloomgate::app {

using PartitionKey = std::pair<std::string, std::int32_t>;  // (input topic, partition)

inline filters::TimePoint wall_clock_now() {
  return std::chrono::time_point_cast<filters::Duration>(std::chrono::system_clock::now());
}

inline std::int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The event as key extraction sees it. Only a key taken from a header needs the headers as views (into
// `storage`, reused); the output detaches them from the record instead.
inline EventView event_of(const connectors::ConsumedMessage& message, const config::PipelineSettings& pipeline,
                          std::vector<connectors::HeaderView>& storage) {
  storage.clear();
  if (key_reads_headers(pipeline.key)) storage = message.headers();
  return {message.key(), message.value().value_or(std::string_view{}), storage};
}

struct PartitionWorker {
  // With an empty filter.
  PartitionWorker(const config::PipelineSettings& settings, PartitionReport& partition_report,
                  std::shared_ptr<SchemaCatalog> schemas = nullptr)
      : pipeline(&settings), deduplicator(settings, wall_clock_now, std::move(schemas)), report(&partition_report) {
    init();
  }
  // Around a filter restored from a checkpoint, whose present was `filter_time`.
  PartitionWorker(const config::PipelineSettings& settings, PartitionReport& partition_report,
                  std::unique_ptr<filters::Filter> restored, filters::TimePoint filter_time,
                  std::shared_ptr<SchemaCatalog> schemas = nullptr)
      : pipeline(&settings),
        deduplicator(settings, wall_clock_now, std::move(restored), filter_time, std::move(schemas)),
        report(&partition_report) {
    init();
  }

  void init() {
    id = connectors::PartitionId{report->topic, report->partition};
    // same_as_input: the output partition has the input partition's number, so its tail can be
    // reconciled. by_key scatters the partition's records over the output: no output position is kept.
    if (pipeline->output_partitioning == config::OutputPartitioning::kSameAsInput) output_partition = id.partition;
  }

  const config::PipelineSettings* pipeline;
  PartitionDeduplicator deduplicator;
  PartitionReport* report;                       // cumulative counters, owned by PartitionState
  connectors::PartitionId id;
  std::int32_t output_partition = -1;            // in pipeline->output; -1 with by_key
  std::int64_t next_offset = -1;                 // the next input offset to process; -1: none yet this assignment
  std::int64_t committed_offset = connectors::kNoOffset;
  std::int64_t checkpointed_offset = -1;         // next_offset of the last checkpoint written (or restored)
  std::int64_t checkpointed_output = -1;         // that checkpoint's output offset (the commit metadata)
  std::int64_t output_floor = -1;                // the output's high watermark at assignment: nothing this
                                                 // partition forwarded before then lies at or above it
  // Reconciliation: input offsets at or after the restored position that the output already holds, with
  // the output offset of their record. Their events are decided again (so their keys are inserted) but
  // not produced again. Emptied as consumption passes them.
  std::map<std::int64_t, std::int64_t> delivered;
  // exactly_once: `delivered` as it was at the last commit, for the rewind after an aborted transaction.
  std::map<std::int64_t, std::int64_t> delivered_at_last_commit;
  // exactly_once: the filter decided an event since the last commit. Not the same as next_offset having
  // moved: an event whose record was refused is decided and fetched, but its offset never advanced.
  bool decided_since_commit = false;
  bool full_image_next = false;                  // the next checkpoint writes every slice (a fresh store)
  // Slices dropped from the filter whose deletion was in a checkpoint that failed to write: the next
  // checkpoint deletes them (a whole image rewrites the slices, not what is gone).
  std::vector<std::uint64_t> unwritten_drops;
  FprProbe fpr_probe;
};

}  // namespace bloomgate::app
