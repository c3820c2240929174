// File: partition_worker.h
//
// PartitionWorker: the live state of one assigned input partition (its deduplicator and filter, and its
// progress: positions in the input and the output, what reconciliation found, partition_progress.h), and
// the small helpers every part of the service uses with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bloomgate/app/partition_deduplicator.h"
#include "bloomgate/app/service.h"
#include "bloomgate/config/config.h"
#include "bloomgate/connectors/message.h"
#include "bloomgate/connectors/state_store.h"
#include "bloomgate/connectors/state_topic_records.h"
#include "bloomgate/connectors/topic_partition.h"
#include "fpr_probe.h"
#include "partition_progress.h"

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
  // Positions and reconciliation sets, changed only through its named transitions.
  PartitionProgress progress;
  FprProbe fpr_probe;
  // With state.topic: the manifest of the state-topic checkpoint this partition's filter was restored from.
  // The first checkpoint the partition writes to the state topic continues from it
  // (StateTopicWriter::resume_from) and takes it; without one, that checkpoint is a full image.
  std::optional<connectors::StateManifest> state_topic_baseline;
  // With state.topic: plans this partition's checkpoints as state-topic records (state_topic_publisher.h);
  // made at the first checkpoint, and gone with the worker when the partition leaves.
  std::optional<connectors::StateTopicWriter> state_topic_writer;
};

}  // namespace bloomgate::app
