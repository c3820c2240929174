// File: duration.h
//
// Durations as users write them in flags and configuration: an integer and a unit, "500ms", "90s",
// "10m", "24h", "7d" (also "us" and "ns"). No unit, a fraction, a sign or anything after the unit is an
// error, so "10" or "1.5h" never silently mean something else.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace bloomgate::config {

struct DurationParse {
  std::optional<std::chrono::nanoseconds> value;
  std::string error;  // set when value is empty: what is wrong with the text
};

DurationParse parse_duration(std::string_view text);

// The shortest exact spelling: 600000000000 ns -> "10m".
std::string format_duration(std::chrono::nanoseconds d);

}  // namespace bloomgate::config
