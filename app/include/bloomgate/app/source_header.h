// The bloomgate.source header: where in the input a record the service wrote came from, as
// "<topic>/<partition>/<offset>" in decimal, e.g. "orders/3/1042". Every forwarded, duplicate and
// dead-letter record carries it; reconciliation after a restart reads it from the output tail
// (docs/state.md), and people read it in the dead-letter topic.
//
// One header rather than one per field: librdkafka allocates and lists every header of every record
// (bench/README.md, "One source header instead of three"). Kafka topic names are [a-zA-Z0-9._-]{1,249},
// so the two last '/' split the value unambiguously.
#pragma once

#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace bloomgate::app {

namespace headers {
inline constexpr const char* kSource = "bloomgate.source";
}  // namespace headers

struct SourcePosition {
  std::string_view topic;  // a view into the parsed text
  std::int32_t partition = -1;
  std::int64_t offset = -1;
};

// The header's value for one input record, formatted without allocating.
class SourceText {
 public:
  SourceText(std::string_view topic, std::int32_t partition, std::int64_t offset) {
    // Kafka refuses longer topic names; the cut only keeps a corrupt name from overrunning the buffer.
    topic = topic.substr(0, kMaxTopic);
    std::memcpy(text_.data(), topic.data(), topic.size());
    char* end = text_.data() + topic.size();
    *end++ = '/';
    end = std::to_chars(end, text_.data() + text_.size(), partition).ptr;
    *end++ = '/';
    end = std::to_chars(end, text_.data() + text_.size(), offset).ptr;
    size_ = static_cast<std::size_t>(end - text_.data());
  }

  std::string_view view() const { return {text_.data(), size_}; }

 private:
  static constexpr std::size_t kMaxTopic = 249;
  std::array<char, kMaxTopic + 1 + 11 + 1 + 20> text_{};  // topic / int32 / int64, signs included
  std::size_t size_ = 0;
};

// The position a header value names; nullopt when it is not "<topic>/<partition>/<offset>" with a
// non-empty topic and both numbers whole decimals.
inline std::optional<SourcePosition> parse_source(std::string_view text) {
  const std::size_t offset_slash = text.rfind('/');
  if (offset_slash == std::string_view::npos || offset_slash == 0) return std::nullopt;
  const std::size_t partition_slash = text.rfind('/', offset_slash - 1);
  if (partition_slash == std::string_view::npos || partition_slash == 0) return std::nullopt;
  SourcePosition position;
  position.topic = text.substr(0, partition_slash);
  const auto whole = [](std::string_view digits, auto& number) {
    const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), number);
    return !digits.empty() && result.ec == std::errc() && result.ptr == digits.data() + digits.size();
  };
  if (!whole(text.substr(partition_slash + 1, offset_slash - partition_slash - 1), position.partition) ||
      !whole(text.substr(offset_slash + 1), position.offset)) {
    return std::nullopt;
  }
  return position;
}

}  // namespace bloomgate::app
