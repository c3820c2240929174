// The headers of a record the service writes: the consumed record's own headers (detached from it, not
// copied), then the source header, then (dead letters only) the reason headers.
#pragma once

#include <cstdint>
#include <string_view>

#include "bloomgate/app/key_extractor.h"
#include "bloomgate/app/service.h"
#include "bloomgate/app/source_header.h"
#include "bloomgate/connectors/handles.h"
#include "bloomgate/connectors/message.h"

namespace bloomgate::app {

class OutputHeaders {
 public:
  // The consumed record's headers, plus where it came from. Takes the headers out of `message`.
  static connectors::HeadersHandle with_source(connectors::ConsumedMessage& message) {
    connectors::HeadersHandle headers = message.detach_headers(kSourceHeaders);
    add_source(headers.get(), message);
    return headers;
  }

  // with_source(), plus why the event could not be keyed.
  static connectors::HeadersHandle with_rejection(connectors::ConsumedMessage& message, std::string_view pipeline,
                                                  const Rejection& rejection) {
    connectors::HeadersHandle headers = message.detach_headers(kSourceHeaders + kRejectionHeaders);
    add_source(headers.get(), message);
    add(headers.get(), headers::kPipeline, pipeline);
    add(headers.get(), headers::kReason, reason_name(rejection.reason));
    add(headers.get(), headers::kError, rejection.message);
    return headers;
  }

 private:
  static constexpr std::size_t kSourceHeaders = 1;
  static constexpr std::size_t kRejectionHeaders = 3;

  static void add_source(rd_kafka_headers_t* headers, const connectors::ConsumedMessage& message) {
    add(headers, headers::kSource, SourceText(message.topic(), message.partition(), message.offset()).view());
  }

  static void add(rd_kafka_headers_t* headers, std::string_view name, std::string_view value) {
    // An empty view may have no data pointer, which librdkafka would store as a null value.
    rd_kafka_header_add(headers, name.data(), static_cast<ssize_t>(name.size()), value.empty() ? "" : value.data(),
                        static_cast<ssize_t>(value.size()));
  }
};

}  // namespace bloomgate::app
