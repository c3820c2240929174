// The headers of a record the service writes: the consumed record's own headers, then the source
// headers, then (dead letters only) the reason headers. Views into the consumed message and into this
// object's buffers: build, produce, then reuse for the next record.
#pragma once

#include <charconv>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "bloomgate/app/key_extractor.h"
#include "bloomgate/app/service.h"
#include "bloomgate/connectors/message.h"

namespace bloomgate::app {

class OutputHeaders {
 public:
  // The consumed record's headers, plus where it came from.
  std::span<const connectors::HeaderView> with_source(const connectors::ConsumedMessage& message,
                                                      std::span<const connectors::HeaderView> original) {
    headers_.assign(original.begin(), original.end());
    headers_.push_back({headers::kSourceTopic, message.topic()});
    headers_.push_back({headers::kSourcePartition, decimal(partition_text_, message.partition())});
    headers_.push_back({headers::kSourceOffset, decimal(offset_text_, message.offset())});
    return headers_;
  }

  // with_source(), plus why the event could not be keyed.
  std::span<const connectors::HeaderView> with_rejection(const connectors::ConsumedMessage& message,
                                                         std::span<const connectors::HeaderView> original,
                                                         std::string_view pipeline, const Rejection& rejection) {
    with_source(message, original);
    headers_.push_back({headers::kPipeline, pipeline});
    headers_.push_back({headers::kReason, reason_name(rejection.reason)});
    headers_.push_back({headers::kError, rejection.message});
    return headers_;
  }

 private:
  template <std::size_t N>
  static std::string_view decimal(char (&buffer)[N], std::int64_t number) {
    const auto result = std::to_chars(buffer, buffer + N, number);
    return {buffer, static_cast<std::size_t>(result.ptr - buffer)};
  }

  std::vector<connectors::HeaderView> headers_;
  char partition_text_[24]{};
  char offset_text_[24]{};
};

}  // namespace bloomgate::app
