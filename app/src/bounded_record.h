// File: bounded_record.h
//
// BoundedRecord: a record cut to fit a topic's largest record (record_limits.h), for a dead letter (or a
// duplicate) whose whole form would be refused. The headers the service adds (`own`: the source, and a
// dead letter's pipeline, reason and error) are always kept; then, as long as they fit, in this order:
//   1. the record's headers, in order, each one that fits; bloomgate.headers_dropped says how many did not;
//   2. the record's key; a key that does not fit is dropped, and bloomgate.key_dropped says its size;
//   3. the longest prefix of the value that fits; bloomgate.value_truncated says the value's whole size.
// A marker header is there only when something was cut. fits() is false when not even the service's own
// headers fit (a topic that takes less than a few hundred bytes). Sizes are record_wire_size()
// (connectors/record_size.h), what librdkafka compares with message.max.bytes.
//
// Views: the key, value and headers view `parts` and `own`, which must outlive the BoundedRecord; the
// markers' values are its own (so it is neither copyable nor movable). Thread-safety: none.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bloomgate/connectors/header_view.h"
#include "bloomgate/connectors/producer.h"

namespace bloomgate::app {

// What a record holds, as views: its key, value and its own headers (without the service's).
struct RecordParts {
  std::optional<std::string_view> key;
  std::optional<std::string_view> value;
  std::vector<connectors::HeaderView> headers;
};

class BoundedRecord {
 public:
  BoundedRecord(const RecordParts& parts, std::span<const connectors::HeaderView> own, std::size_t largest);
  BoundedRecord(const BoundedRecord&) = delete;
  BoundedRecord& operator=(const BoundedRecord&) = delete;

  // The smallest `largest` that fits: the framing, `own` and room for the markers.
  static std::size_t least_size(std::span<const connectors::HeaderView> own);

  bool fits() const noexcept { return fits_; }
  // The record to produce (partition and timestamp left to the caller); requires fits().
  connectors::OutgoingMessage message() const;
  std::size_t wire_size() const noexcept;
  const std::vector<connectors::HeaderView>& headers() const noexcept { return headers_; }

 private:
  void add_marker(std::size_t slot, const char* name, std::size_t count);

  bool fits_ = false;
  std::optional<std::string_view> key_;
  std::optional<std::string_view> value_;
  std::vector<connectors::HeaderView> headers_;
  std::array<std::string, 3> marker_values_;
};

}  // namespace bloomgate::app
