// File: state_topic_restore.cc
#include "state_topic_restore.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <utility>

#include "bloomgate/app/partition_deduplicator.h"
#include "bloomgate/connectors/checkpoint_filter.h"
#include "bloomgate/connectors/topic_partition.h"
#include "bloomgate/filters/format.h"
#include "service_context.h"

namespace bloomgate::app {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPollTimeout{100};

// Feeds `assembler` the state partition from its low watermark to its high watermark at the start; returns
// the bytes read. Throws std::runtime_error when it cannot be asked or read in time.
std::uint64_t read_partition(const std::string& topic, std::int32_t partition, const connectors::Admin& admin,
                             const SideReaderOptions& options, connectors::StateTopicAssembler& assembler) {
  const std::string where = "state topic " + topic + "/" + std::to_string(partition);
  const auto marks = admin.watermarks(topic, partition, options.request_timeout);
  if (!marks.ok()) throw std::runtime_error("asking the watermarks of " + where + ": " + marks.error().message());
  const std::int64_t end = marks.value().high;
  std::int64_t next = marks.value().low;
  if (next >= end) return 0;
  const std::unique_ptr<connectors::Consumer> reader = open_side_reader(options);
  if (connectors::KafkaError error = reader->assign({{topic, partition, next, {}, {}}}); !error.ok()) {
    throw std::runtime_error("reading " + where + ": " + error.message());
  }
  std::uint64_t bytes = 0;
  auto idle_deadline = Clock::now() + options.idle_timeout;
  while (next < end) {
    if (Clock::now() > idle_deadline) {
      throw std::runtime_error("reading " + where + ": no record for " + std::to_string(options.idle_timeout.count()) +
                               " ms at offset " + std::to_string(next) + " of " + std::to_string(end));
    }
    const auto message = reader->poll(kPollTimeout);
    if (!message) continue;
    if (message->is_partition_eof()) break;  // at the partition's end as it is now: past `end`
    if (connectors::KafkaError error = message->error(); !error.ok()) {
      if (error.is_fatal()) throw std::runtime_error("reading " + where + ": " + error.message());
      spdlog::warn("reading {}: {}", where, error.message());
      continue;
    }
    if (message->offset() >= end) break;
    next = message->offset() + 1;
    idle_deadline = Clock::now() + options.idle_timeout;
    const std::optional<std::string_view> key = message->key();
    const std::optional<std::string_view> value = message->value();
    bytes += (key ? key->size() : 0) + (value ? value->size() : 0);
    if (key) assembler.add(*key, value);
  }
  (void)reader->close();
  return bytes;
}

}  // namespace

std::optional<std::int64_t> group_committed_offset(const connectors::Consumer& consumer,
                                                   const connectors::PartitionId& id) {
  const auto committed = consumer.committed({{id.topic, id.partition, connectors::kNoOffset, {}, {}}}, kMetadataTimeout);
  if (!committed.ok()) return std::nullopt;
  for (const connectors::TopicPartition& answer : committed.value()) {
    if (answer.topic != id.topic || answer.partition != id.partition) continue;
    if (!answer.error.ok()) return std::nullopt;
    return answer.offset;
  }
  return std::nullopt;
}

bool local_checkpoint_is_current(std::int64_t local_next, std::optional<std::int64_t> committed) noexcept {
  return committed && (*committed < 0 || local_next >= *committed);
}

RestoreSource pick_restore_source(std::optional<std::int64_t> local_next,
                                  std::optional<std::int64_t> state_topic_next) noexcept {
  if (local_next && (!state_topic_next || *local_next >= *state_topic_next)) return RestoreSource::kLocal;
  if (state_topic_next) return RestoreSource::kStateTopic;
  return RestoreSource::kRebuild;
}

StateTopicRead read_state_topic(const std::string& state_topic, const connectors::PartitionId& id,
                                const connectors::Admin& admin, const SideReaderOptions& options) {
  const auto started = Clock::now();
  StateTopicRead read{connectors::StateTopicGap{}, false, 0, 0};
  connectors::StateTopicAssembler assembler(id);
  try {
    read.bytes = read_partition(state_topic, connectors::state_topic_partition(id), admin, options, assembler);
    read.result = assembler.finish();
    read.held_nothing = assembler.bytes_read() == 0;
  } catch (const std::exception& e) {
    read.result = connectors::StateTopicGap{e.what()};
  }
  read.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return read;
}

std::optional<StateTopicRestore> restore_from_state_topic(const std::string& state_topic,
                                                          const connectors::PartitionId& id,
                                                          const config::PipelineSettings& pipeline,
                                                          const connectors::Admin& admin,
                                                          const SideReaderOptions& options, PartitionReport& report) {
  const std::string name = connectors::to_string(id);
  StateTopicRead read = read_state_topic(state_topic, id, admin, options);
  report.state_topic_read_bytes += read.bytes;
  report.state_topic_read_seconds += read.seconds;
  if (const auto* gap = std::get_if<connectors::StateTopicGap>(&read.result)) {
    if (read.held_nothing) {
      spdlog::info("{}: state topic {} holds no checkpoint of it", name, state_topic);
    } else {
      spdlog::warn("{}: the checkpoint in state topic {} cannot be used ({}); falling back", name, state_topic,
                   gap->reason);
    }
    return std::nullopt;
  }
  auto& checkpoint = std::get<connectors::StateTopicCheckpoint>(read.result);
  StateTopicRestore restore;
  try {
    restore.filter = connectors::restore_checkpoint_filter(checkpoint, restore.loaded);
  } catch (const filters::FormatError& e) {
    spdlog::warn("{}: the checkpoint in state topic {} (epoch {}) does not make a filter ({}); falling back", name,
                 state_topic, checkpoint.manifest.epoch, e.what());
    return std::nullopt;
  }
  if (!PartitionDeduplicator::matches_settings(*restore.filter, pipeline)) {
    spdlog::warn("{}: the checkpoint in state topic {} was written with other filter settings than pipeline {} has "
                 "now; falling back",
                 name, state_topic, pipeline.name);
    return std::nullopt;
  }
  spdlog::debug("{}: read {} bytes of state topic {} in {:.3f} s", name, read.bytes, state_topic, read.seconds);
  restore.checkpoint = checkpoint.manifest.checkpoint;
  restore.manifest = std::move(checkpoint.manifest);
  return restore;
}

void note_restores(connectors::StateStore& store, const std::vector<PartitionWorker*>& workers) {
  std::vector<connectors::RestoreNote> notes;
  const std::int64_t now_ms = wall_clock_ms();
  for (const PartitionWorker* worker : workers) {
    const std::optional<RestoreSource> source = worker->report->last_restore_source;
    if (source) notes.push_back({worker->id, std::string(restore_source_name(*source)), now_ms});
  }
  if (notes.empty()) return;
  try {
    store.write_restore_notes(notes);
  } catch (const connectors::StateStoreError& e) {
    spdlog::warn("the restore notes of {} partition(s) were not written ({}); bloomgate inspect will not show them",
                 notes.size(), e.what());
  }
}

}  // namespace bloomgate::app
