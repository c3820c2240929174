// File: record_limits.cc
#include "record_limits.h"

#include <spdlog/spdlog.h>

#include <set>
#include <vector>

#include "bloomgate/connectors/record_size.h"

namespace bloomgate::app {

void RecordLimits::ask(const connectors::Admin& admin, const config::Config& config) {
  std::set<std::string> topics;
  for (const auto& pipeline : config.pipelines) {
    topics.insert(pipeline.output);
    if (!pipeline.duplicates.empty()) topics.insert(pipeline.duplicates);
    if (!pipeline.dead_letter.empty()) topics.insert(pipeline.dead_letter);
  }
  answer_.ask(admin, std::vector<std::string>(topics.begin(), topics.end()), "max.message.bytes");
}

void RecordLimits::poll(Clock::time_point now) {
  const auto answer = answer_.poll(now);
  if (!answer) return;
  if (!answer->ok()) {
    spdlog::info("the output topics' max.message.bytes is not known ({}): records are sized against the producer's "
                 "message.max.bytes of {} only",
                 answer->error().message(), producer_max_);
    return;
  }
  for (const auto& [topic, max_message_bytes] : answer->value()) set_topic_limit(topic, max_message_bytes);
}

void RecordLimits::set_topic_limit(const std::string& topic, std::int64_t max_message_bytes) {
  topic_max_[topic] = max_message_bytes;
  spdlog::info("topic {} takes records of up to {} bytes (max.message.bytes {}, message.max.bytes {})", topic,
               largest_record(topic), max_message_bytes, producer_max_);
}

std::size_t RecordLimits::largest_record(std::string_view topic) const {
  const auto known = topic_max_.find(topic);
  return connectors::largest_record(producer_max_, known == topic_max_.end() ? std::nullopt
                                                                             : std::optional(known->second));
}

}  // namespace bloomgate::app
