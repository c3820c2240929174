// File: header_view.h
//
// A Kafka record header as a view: what consumed messages hand out, what the producer takes, and what
// key extraction reads. Its own header so code that only reads headers need not see librdkafka.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace bloomgate::connectors {

// A name and a value that may be null (absent), which Kafka tells apart from an empty value.
struct HeaderView {
  std::string_view name;
  std::optional<std::string_view> value;
};

// librdkafka's (pointer, size) as a view; a null pointer (a null key, value or header value) as nothing.
inline std::optional<std::string_view> view_of(const void* data, std::size_t size) {
  if (data == nullptr) return std::nullopt;
  return std::string_view(static_cast<const char*>(data), size);
}

}  // namespace bloomgate::connectors
