// File: output_reconciler.cc
#include "output_reconciler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "bloomgate/app/service.h"
#include "bloomgate/app/source_header.h"
#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/topic_partition.h"

namespace bloomgate::app {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPollTimeout{100};
constexpr std::chrono::milliseconds kSideReaderFetchWait{10};

// One output partition to read, and the requests that read it.
struct OutputRead {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t from = -1;  // the lowest start of its requests
  std::int64_t end = 0;    // high watermark at the start
  std::int64_t next = 0;   // the next offset still to read
  std::vector<std::size_t> requests;
};

}  // namespace

std::unique_ptr<connectors::Consumer> open_side_reader(const SideReaderOptions& options) {
  connectors::ConsumerOptions consumer_options;
  consumer_options.group_id = options.group_id;
  consumer_options.hooks = options.hooks;
  connectors::KafkaConfig config = options.config;
  config.with("enable.partition.eof", "true");
  // A side reader reads up to a known end and then stops, or assigns another offset: a fetch at that end
  // would otherwise wait fetch.wait.max.ms (500 ms by default) for records that are not coming, which cost
  // a rebuild ~1 s per partition (twice: after the read of record C-1, and at C). bench/service_bench --rebuild.
  config.with("fetch.wait.max.ms", std::to_string(kSideReaderFetchWait.count()));
  return std::make_unique<connectors::Consumer>(config, std::move(consumer_options));
}

std::vector<ReconcileResult> reconcile_outputs(const std::vector<ReconcileRequest>& requests,
                                               const connectors::Admin& admin, const ReconcileOptions& options) {
  std::vector<ReconcileResult> results(requests.size());
  std::map<std::pair<std::string, std::int32_t>, OutputRead> reads;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const ReconcileRequest& request = requests[i];
    OutputRead& read = reads[{request.output_topic, request.output_partition}];
    read.topic = request.output_topic;
    read.partition = request.output_partition;
    read.requests.push_back(i);
  }
  connectors::TopicPartitions assignment;
  for (auto& [key, read] : reads) {
    const auto marks = admin.watermarks(read.topic, read.partition, options.request_timeout);
    if (!marks.ok()) throw std::runtime_error("reconciling: " + marks.error().message());
    read.end = marks.value().high;
    for (const std::size_t i : read.requests) {
      const ReconcileRequest& request = requests[i];
      ReconcileResult& result = results[i];
      result.output_end = read.end;
      if (request.output_from < 0) continue;
      if (request.output_from > read.end) {
        result.output_behind = true;
        result.output_truncated = true;
        continue;
      }
      result.read_from = request.output_from;
      if (marks.value().low > request.output_from) {
        result.output_truncated = true;
        result.read_from = marks.value().low;
      }
      if (result.read_from < read.end) read.from = read.from < 0 ? result.read_from : std::min(read.from, result.read_from);
    }
    if (read.from >= 0) {
      read.next = read.from;
      assignment.push_back({read.topic, read.partition, read.from, {}, {}});
    } else {
      read.next = read.end;
    }
  }
  if (assignment.empty()) return results;

  const std::unique_ptr<connectors::Consumer> reader = open_side_reader(options);
  if (connectors::KafkaError error = reader->assign(assignment); !error.ok()) {
    throw std::runtime_error("reconciling: " + error.message());
  }
  const auto unread = [&] {
    return std::any_of(reads.begin(), reads.end(), [](const auto& entry) { return entry.second.next < entry.second.end; });
  };
  auto idle_deadline = Clock::now() + options.idle_timeout;
  while (unread()) {
    throw_if_cancelled(options);
    if (Clock::now() > idle_deadline) {
      std::string where;
      for (const auto& [key, read] : reads) {
        if (read.next < read.end) {
          where += (where.empty() ? "" : ", ") + read.topic + "/" + std::to_string(read.partition) + " at " +
                   std::to_string(read.next) + " of " + std::to_string(read.end);
        }
      }
      throw std::runtime_error("reconciling: the output could not be read to its high watermark (no record for " +
                               std::to_string(options.idle_timeout.count()) + " ms; " + where + ")");
    }
    const auto message = reader->poll(kPollTimeout);
    if (!message) continue;
    if (message->is_partition_eof()) {
      // At the end of the partition as it is now, which is at or past the high watermark asked first.
      const auto found = reads.find({std::string(message->topic()), message->partition()});
      if (found != reads.end()) found->second.next = std::max(found->second.next, found->second.end);
      continue;
    }
    if (connectors::KafkaError error = message->error(); !error.ok()) {
      if (error.is_fatal()) throw std::runtime_error("reconciling: " + error.message());
      spdlog::warn("reconciling: {}", error.message());
      continue;
    }
    const auto found = reads.find({std::string(message->topic()), message->partition()});
    if (found == reads.end()) continue;
    OutputRead& read = found->second;
    const std::int64_t offset = message->offset();
    if (offset >= read.end) {
      read.next = std::max(read.next, read.end);
      continue;
    }
    read.next = std::max(read.next, offset + 1);
    idle_deadline = Clock::now() + options.idle_timeout;
    const auto header = message->header(headers::kSource);
    const auto source = header && *header ? parse_source(**header) : std::nullopt;
    for (const std::size_t i : read.requests) {
      const ReconcileRequest& request = requests[i];
      ReconcileResult& result = results[i];
      if (result.read_from < 0 || offset < result.read_from) continue;
      ++result.records_read;
      if (!source || source->topic != request.input_topic || source->partition != request.input_partition ||
          source->offset < request.input_from) {
        continue;
      }
      result.delivered.emplace(source->offset, offset);  // the first copy is the one that counts
    }
  }
  (void)reader->close();
  return results;
}

}  // namespace bloomgate::app
