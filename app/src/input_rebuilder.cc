// File: input_rebuilder.cc
#include "input_rebuilder.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>

#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/topic_partition.h"

namespace bloomgate::app {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPollTimeout{100};

std::int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string name_of(const RebuildRequest& request) { return request.topic + "/" + std::to_string(request.partition); }

// Polls `reader` until done() or no record arrived for the idle timeout (then throws, naming `what`).
template <typename Handle, typename Done>
void read_until(connectors::Consumer& reader, const ReconcileOptions& options, const std::string& what, Done done,
                Handle handle) {
  auto idle_deadline = Clock::now() + options.idle_timeout;
  while (!done()) {
    if (Clock::now() > idle_deadline) {
      throw std::runtime_error("rebuilding: " + what + ": no record for " + std::to_string(options.idle_timeout.count()) +
                               " ms");
    }
    const auto message = reader.poll(kPollTimeout);
    if (!message) continue;
    if (!message->is_partition_eof()) {
      if (connectors::KafkaError error = message->error(); !error.ok()) {
        if (error.is_fatal()) throw std::runtime_error("rebuilding: " + error.describe());
        continue;
      }
    }
    idle_deadline = Clock::now() + options.idle_timeout;
    handle(*message);
  }
}

}  // namespace

std::vector<RebuildResult> rebuild_from_inputs(const std::vector<RebuildRequest>& requests,
                                               const connectors::Admin& admin, const ReconcileOptions& options,
                                               const RebuildSink& sink) {
  const std::size_t n = requests.size();
  std::vector<RebuildResult> results(n);
  std::vector<std::int64_t> low(n, 0);
  std::map<std::pair<std::string, std::int32_t>, std::size_t> index;
  std::vector<std::size_t> pending;  // requests with something before their start offset
  for (std::size_t i = 0; i < n; ++i) {
    const RebuildRequest& request = requests[i];
    const auto marks = admin.watermarks(request.topic, request.partition, options.request_timeout);
    if (!marks.ok()) throw std::runtime_error("rebuilding " + name_of(request) + ": " + marks.error().describe());
    low[i] = marks.value().low;
    results[i].until = std::min(request.until, marks.value().high);
    results[i].from = results[i].until;
    index[{request.topic, request.partition}] = i;
    if (results[i].until > low[i]) pending.push_back(i);
  }
  if (pending.empty()) return results;

  connectors::ConsumerOptions consumer_options;
  consumer_options.group_id = options.group_id;
  consumer_options.hooks = options.hooks;
  connectors::KafkaConfig config = options.config;
  config.with("enable.partition.eof", "true");
  connectors::Consumer reader(config, std::move(consumer_options));
  const auto request_of = [&](const connectors::ConsumedMessage& message) -> std::optional<std::size_t> {
    const auto found = index.find({std::string(message.topic()), message.partition()});
    if (found == index.end()) return std::nullopt;
    return found->second;
  };

  // 1. The window's end: the last record's timestamp before the start offset (event time).
  std::vector<std::optional<std::int64_t>> end_ms(n);
  std::vector<bool> probed(n, true);
  connectors::TopicPartitions probes;
  for (const std::size_t i : pending) {
    if (requests[i].processing_time) {
      end_ms[i] = wall_clock_ms();
    } else {
      probed[i] = false;
      probes.push_back({requests[i].topic, requests[i].partition, results[i].until - 1, {}, {}});
    }
  }
  if (!probes.empty()) {
    if (connectors::KafkaError error = reader.assign(probes); !error.ok()) {
      throw std::runtime_error("rebuilding: " + error.describe());
    }
    read_until(
        reader, options, "reading the last record before the start offsets",
        [&] { return std::all_of(pending.begin(), pending.end(), [&](std::size_t i) { return bool(probed[i]); }); },
        [&](const connectors::ConsumedMessage& message) {
          const auto i = request_of(message);
          if (!i || probed[*i]) return;
          probed[*i] = true;  // without a record there (end of partition, no timestamp): replay from the low watermark
          if (!message.is_partition_eof()) end_ms[*i] = message.timestamp_ms();
        });
  }

  // 2. The window's first offset, from the time index.
  connectors::TopicPartitions times;
  for (const std::size_t i : pending) {
    if (end_ms[i] && *end_ms[i] >= 0) {
      times.push_back({requests[i].topic, requests[i].partition,
                       std::max<std::int64_t>(*end_ms[i] - requests[i].window.count(), 0), {}, {}});
    } else {
      results[i].from = low[i];
    }
  }
  if (!times.empty()) {
    const connectors::PartitionListHandle list = connectors::to_partition_list(times);
    const rd_kafka_resp_err_t code = rd_kafka_offsets_for_times(
        reader.native_handle(), list.get(), static_cast<int>(options.request_timeout.count()));
    if (code != RD_KAFKA_RESP_ERR_NO_ERROR) {
      throw std::runtime_error("rebuilding: " + connectors::KafkaError(code, "offsets for times").describe());
    }
    for (int k = 0; k < list->cnt; ++k) {
      const rd_kafka_topic_partition_t& answer = list->elems[k];
      const auto found = index.find({answer.topic, answer.partition});
      if (found == index.end()) continue;
      const std::size_t i = found->second;
      if (answer.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        results[i].from = low[i];  // cannot tell: replay all the input holds before the start
      } else if (answer.offset < 0) {
        // "No record at or after that time", though the record before the start offset is one: a broker
        // without a time index (the embedded one answers -1 to every timestamp). Scan from the low
        // watermark instead, handing over records from the first one inside the window.
        results[i].from = low[i];
        results[i].scanned = true;
      } else {
        results[i].from = std::clamp<std::int64_t>(answer.offset, low[i], results[i].until);
      }
    }
  }

  // 3. Replay [from, until).
  connectors::TopicPartitions replay;
  std::vector<std::int64_t> next(n, 0);
  std::vector<bool> first(n, true);
  for (const std::size_t i : pending) {
    next[i] = results[i].from;
    if (results[i].from < results[i].until) replay.push_back({requests[i].topic, requests[i].partition, results[i].from, {}, {}});
  }
  if (replay.empty()) return results;
  if (connectors::KafkaError error = reader.assign(replay); !error.ok()) {
    throw std::runtime_error("rebuilding: " + error.describe());
  }
  read_until(
      reader, options, "replaying the input",
      [&] { return std::all_of(pending.begin(), pending.end(), [&](std::size_t i) { return next[i] >= results[i].until; }); },
      [&](const connectors::ConsumedMessage& message) {
        const auto i = request_of(message);
        if (!i || next[*i] >= results[*i].until) return;
        if (message.is_partition_eof() || message.offset() >= results[*i].until) {
          next[*i] = results[*i].until;
          return;
        }
        if (message.offset() < next[*i]) return;
        next[*i] = message.offset() + 1;
        const auto ts = message.timestamp_ms();
        if (results[*i].scanned && first[*i] && end_ms[*i] && ts && *ts < *end_ms[*i] - requests[*i].window.count()) {
          ++results[*i].skipped;  // before the window: the time index would not have returned it either
          return;
        }
        if (first[*i]) {
          first[*i] = false;
          results[*i].truncated = results[*i].from == low[*i] && results[*i].skipped == 0 && low[*i] > 0 &&
                                  end_ms[*i] && ts && *ts > *end_ms[*i] - requests[*i].window.count();
        }
        ++results[*i].events;
        sink(*i, message);
      });
  (void)reader.close();
  return results;
}

}  // namespace bloomgate::app
