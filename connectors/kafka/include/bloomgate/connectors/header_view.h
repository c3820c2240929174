// File: header_view.h
//
// A Kafka record header as a view: what consumed messages hand out, what the producer takes, and what
// key extraction reads. Its own header so code that only reads headers need not see librdkafka.
#pragma once

#include <optional>
#include <string_view>

namespace bloomgate::connectors {

// A name and a value that may be null (absent), which Kafka tells apart from an empty value.
struct HeaderView {
  std::string_view name;
  std::optional<std::string_view> value;
};

}  // namespace bloomgate::connectors
