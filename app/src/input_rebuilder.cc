// File: input_rebuilder.cc
#include "input_rebuilder.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>

#include "bloomgate/connectors/consumer.h"
#include "bloomgate/connectors/topic_partition.h"

namespace bloomgate::app {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPollTimeout{100};
constexpr std::uint64_t kProgressCheckEvery = 1024;  // records between two looks at the clock

std::int64_t epoch_ms(filters::TimePoint time) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
}

// A reader of one input partition, from a given offset, that fails loudly when it stalls.
class PartitionReader {
 public:
  PartitionReader(const RebuildRequest& request, const RebuildOptions& options)
      : request_(request), options_(options), consumer_(open_side_reader(options)) {}
  PartitionReader(const PartitionReader&) = delete;
  PartitionReader& operator=(const PartitionReader&) = delete;
  ~PartitionReader() { (void)consumer_->close(); }

  void start_at(std::int64_t offset) {
    if (connectors::KafkaError error = consumer_->assign({{request_.topic, request_.partition, offset, {}, {}}});
        !error.ok()) {
      throw std::runtime_error("rebuilding " + where() + ": " + error.message());
    }
    idle_deadline_ = Clock::now() + options_.idle_timeout;
  }

  // The next record before end_offset; nothing once the read is past it or at the partition's end.
  std::optional<connectors::ConsumedMessage> next() {
    while (true) {
      throw_if_cancelled(options_);
      if (Clock::now() > idle_deadline_) {
        throw std::runtime_error("rebuilding " + where() + ": no record for " +
                                 std::to_string(options_.idle_timeout.count()) + " ms before offset " +
                                 std::to_string(request_.end_offset));
      }
      std::optional<connectors::ConsumedMessage> message = consumer_->poll(kPollTimeout);
      if (!message) continue;
      if (message->is_partition_eof()) return std::nullopt;
      if (connectors::KafkaError error = message->error(); !error.ok()) {
        if (error.is_fatal()) throw std::runtime_error("rebuilding " + where() + ": " + error.message());
        spdlog::warn("rebuilding {}: {}", where(), error.message());
        continue;
      }
      if (message->offset() >= request_.end_offset) return std::nullopt;
      idle_deadline_ = Clock::now() + options_.idle_timeout;
      return message;
    }
  }

  std::string where() const { return request_.topic + "/" + std::to_string(request_.partition); }

 private:
  const RebuildRequest& request_;
  const RebuildOptions& options_;
  std::unique_ptr<connectors::Consumer> consumer_;
  Clock::time_point idle_deadline_;
};

// The window's start: one TTL before the time the live path gives the last processed record (its timestamp
// capped at now + max_future_skew; now with processing time, or when it has none).
std::int64_t window_start_ms(PartitionReader& reader, const RebuildRequest& request) {
  std::int64_t last_timestamp = EventClock::kNoTimestamp;
  if (request.time == config::TimeSource::kEvent) {
    reader.start_at(request.end_offset - 1);
    if (auto last = reader.next()) last_timestamp = last->timestamp_ms().value_or(EventClock::kNoTimestamp);
  }
  EventClock clock(request.time, request.now);
  return epoch_ms(clock.time_of(last_timestamp)) - request.ttl.count();
}

// Where to start reading: the offset of the window's start, or the low watermark when the cluster cannot
// say (records before the window are then read and skipped).
std::int64_t start_offset(const connectors::Admin& admin, const RebuildRequest& request, std::int64_t window_start,
                          std::int64_t low, const RebuildOptions& options) {
  const auto offset = admin.offset_for_time(request.topic, request.partition, window_start, options.request_timeout);
  if (!offset.ok()) {
    spdlog::debug("rebuilding {}/{}: {}; reading from the low watermark {} instead", request.topic, request.partition,
                  offset.error().message(), low);
    return low;
  }
  // Record C-1 is at or after the window's start, so a correct answer lies before end_offset. The embedded
  // broker answers -1 ("nothing that recent") every time: not to be trusted, so read from the low
  // watermark instead.
  if (offset.value() < 0 || offset.value() >= request.end_offset) {
    spdlog::debug("rebuilding {}/{}: ListOffsets by time answered {}, past the last processed record; reading from "
                  "the low watermark {} instead",
                  request.topic, request.partition, offset.value(), low);
    return low;
  }
  return std::max(offset.value(), low);
}

}  // namespace

RebuildResult rebuild_from_input(const RebuildRequest& request, const connectors::Admin& admin,
                                 const RebuildOptions& options,
                                 const std::function<void(connectors::ConsumedMessage&)>& insert,
                                 const RebuildProgress& progress) {
  const auto started = Clock::now();
  RebuildResult result;
  const auto marks = admin.watermarks(request.topic, request.partition, options.request_timeout);
  if (!marks.ok()) throw std::runtime_error("rebuilding: " + marks.error().message());
  const std::int64_t low = marks.value().low;
  if (request.end_offset <= low) {
    result.history_truncated = request.end_offset > 0;  // everything before C is gone (or there was nothing)
    return result;
  }
  PartitionReader reader(request, options);
  result.window_start_ms = window_start_ms(reader, request);
  result.from_offset = start_offset(admin, request, result.window_start_ms, low, options);
  const auto total = static_cast<std::uint64_t>(request.end_offset - result.from_offset);
  reader.start_at(result.from_offset);
  auto next_progress = Clock::now() + options.progress_interval;
  // The records' times as the live path gave them: capped in the future, never running backwards.
  EventClock record_clock(config::TimeSource::kEvent, request.now);
  bool first = true;
  while (auto message = reader.next()) {
    const std::optional<std::int64_t> timestamp = message->timestamp_ms();
    // The first record is newer than the window's start although the read began at the low watermark:
    // retention has deleted the older part of the window.
    if (first && result.from_offset == low && low > 0 && timestamp && *timestamp > result.window_start_ms) {
      result.history_truncated = true;
    }
    first = false;
    if (epoch_ms(record_clock.time_of(timestamp.value_or(EventClock::kNoTimestamp))) < result.window_start_ms) {
      ++result.skipped;
    } else {
      insert(*message);
      ++result.inserted;
    }
    if (progress && (result.inserted + result.skipped) % kProgressCheckEvery == 0 && Clock::now() >= next_progress) {
      progress(static_cast<std::uint64_t>(message->offset() - result.from_offset + 1), total);
      next_progress = Clock::now() + options.progress_interval;
    }
  }
  if (progress) progress(total, total);
  result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return result;
}

}  // namespace bloomgate::app
