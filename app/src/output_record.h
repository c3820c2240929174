// The headers of a record the service writes: the consumed record's own headers (detached from it, not
// copied), then the headers the service adds: the source, then (dead letters only) the pipeline, the reason
// and the error. What a record would weigh as written, to check it against its topic's largest record.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "bloomgate/app/key_extractor.h"
#include "bloomgate/app/service.h"
#include "bloomgate/app/source_header.h"
#include "bloomgate/connectors/handles.h"
#include "bloomgate/connectors/header_view.h"
#include "bloomgate/connectors/message.h"
#include "bloomgate/connectors/record_size.h"

namespace bloomgate::app {

// The headers the service adds after a record's own, as views (of the pipeline name, reason and error
// given, which must outlive it; the source text is its own, so it is neither copyable nor movable).
class AddedHeaders {
 public:
  // A forwarded record or a duplicate: the source only.
  AddedHeaders(std::string_view topic, std::int32_t partition, std::int64_t offset) : source_(topic, partition, offset) {
    views_[count_++] = {headers::kSource, source_.view()};
  }
  // A dead letter: the source, the pipeline, the reason and the error.
  AddedHeaders(std::string_view topic, std::int32_t partition, std::int64_t offset, std::string_view pipeline,
               std::string_view reason, std::string_view error)
      : AddedHeaders(topic, partition, offset) {
    views_[count_++] = {headers::kPipeline, pipeline};
    views_[count_++] = {headers::kReason, reason};
    views_[count_++] = {headers::kError, error};
  }
  AddedHeaders(const AddedHeaders&) = delete;
  AddedHeaders& operator=(const AddedHeaders&) = delete;

  std::span<const connectors::HeaderView> views() const { return {views_.data(), count_}; }

 private:
  SourceText source_;
  std::array<connectors::HeaderView, 4> views_{};
  std::size_t count_ = 0;
};

class OutputHeaders {
 public:
  // The consumed record's headers, then `added`. Takes the headers out of `message`.
  static connectors::HeadersHandle detached_with(connectors::ConsumedMessage& message, const AddedHeaders& added) {
    connectors::HeadersHandle headers = message.detach_headers(added.views().size());
    for (const connectors::HeaderView& header : added.views()) add(headers.get(), header.name, *header.value);
    return headers;
  }

  // record_wire_size() of `message` written with `added` (call before detached_with()).
  static std::size_t wire_size(const connectors::ConsumedMessage& message, const AddedHeaders& added) {
    const auto size = [](std::optional<std::string_view> bytes) { return bytes ? bytes->size() : 0; };
    return connectors::record_wire_size(
        size(message.key()), size(message.value()),
        connectors::headers_wire_size(*message.native()) + connectors::headers_wire_size(added.views()));
  }

 private:
  static void add(rd_kafka_headers_t* headers, std::string_view name, std::string_view value) {
    // An empty view may have no data pointer, which librdkafka would store as a null value.
    rd_kafka_header_add(headers, name.data(), static_cast<ssize_t>(name.size()), value.empty() ? "" : value.data(),
                        static_cast<ssize_t>(value.size()));
  }
};

}  // namespace bloomgate::app
