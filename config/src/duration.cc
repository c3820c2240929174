#include "bloomgate/config/duration.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>

namespace bloomgate::config {
namespace {

struct Unit {
  std::string_view suffix;
  std::int64_t nanos;
};

// Longest suffixes first, so "ms" is not read as "m" followed by junk.
constexpr std::array<Unit, 7> kUnits = {{{"ms", 1'000'000},
                                         {"us", 1'000},
                                         {"ns", 1},
                                         {"s", 1'000'000'000},
                                         {"m", 60'000'000'000},
                                         {"h", 3'600'000'000'000},
                                         {"d", 86'400'000'000'000}}};

}  // namespace

DurationParse parse_duration(std::string_view text) {
  const auto digits_end = text.find_first_not_of("0123456789");
  if (digits_end == 0 || text.empty()) {
    return {std::nullopt, "\"" + std::string(text) + "\" is not a duration: expected a whole number and a unit, like 90s"};
  }
  if (digits_end == std::string_view::npos) {
    // A zero gets the example of a duration that every setting accepts, not "0s".
    const bool zero = text.find_first_not_of('0') == std::string_view::npos;
    return {std::nullopt, "\"" + std::string(text) + "\" has no unit: write ms, s, m, h or d, like " +
                              (zero ? std::string("90s") : std::string(text) + "s")};
  }
  const std::string_view unit_text = text.substr(digits_end);
  for (const Unit& unit : kUnits) {
    if (unit_text != unit.suffix) continue;
    std::int64_t count = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits_end, count);
    if (ec != std::errc() || count > std::numeric_limits<std::int64_t>::max() / unit.nanos) {
      return {std::nullopt, "\"" + std::string(text) + "\" is too long a duration"};
    }
    return {std::chrono::nanoseconds{count * unit.nanos}, {}};
  }
  return {std::nullopt, "\"" + std::string(text) + "\" has an unknown unit \"" + std::string(unit_text) +
                            "\": use ns, us, ms, s, m, h or d"};
}

std::string format_duration(std::chrono::nanoseconds d) {
  const std::int64_t ns = d.count();
  if (ns == 0) return "0s";
  for (const Unit& unit : {kUnits[6], kUnits[5], kUnits[4], kUnits[3], kUnits[0], kUnits[1], kUnits[2]}) {
    if (ns % unit.nanos == 0) return std::to_string(ns / unit.nanos) + std::string(unit.suffix);
  }
  return std::to_string(ns) + "ns";
}

}  // namespace bloomgate::config
