// File: record_limits.h
//
// RecordLimits: the largest record each topic the pipelines write to takes, so an event too large for its
// output is a dead letter (record_too_large) instead of a produce error that stops the service, and a dead
// letter too large for the dead-letter topic is written cut to fit (output_record.h). A topic takes a
// record whose record_wire_size() (connectors/record_size.h) is within the producer's effective
// message.max.bytes (librdkafka's default 1,000,000, or what kafka.properties set) and, once the broker
// has said it, the topic's max.message.bytes less a record batch's framing. The broker is asked at
// start-up without waiting (PendingTopicConfig): until it answers, and where it never does (the embedded
// broker), the producer's limit is the only one; a record the broker still refuses is handled by the
// output router's fallback (output_router.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "bloomgate/config/config.h"
#include "bloomgate/connectors/admin.h"
#include "bloomgate/connectors/record_size.h"
#include "service_context.h"
#include "startup_checks.h"

namespace bloomgate::app {

class RecordLimits {
 public:
  void set_producer_limit(std::int64_t message_max_bytes) { producer_max_ = message_max_bytes; }
  // Asks the max.message.bytes of every output, duplicates and dead-letter topic.
  void ask(const connectors::Admin& admin, const config::Config& config);
  // Called from the loop: takes the broker's answer once it comes.
  void poll(Clock::time_point now);
  // Sets a topic's max.message.bytes as the broker would say it (the answer of poll(), and tests).
  void set_topic_limit(const std::string& topic, std::int64_t max_message_bytes);

  // The largest record_wire_size() that `topic` takes.
  std::size_t largest_record(std::string_view topic) const;

 private:
  std::int64_t producer_max_ = connectors::kDefaultMessageMaxBytes;
  std::map<std::string, std::int64_t, std::less<>> topic_max_;
  PendingTopicConfig answer_;
};

}  // namespace bloomgate::app
