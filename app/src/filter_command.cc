#include "bloomgate/app/filter_command.h"

#include <charconv>
#include <cstdio>
#include <istream>
#include <ostream>
#include <string>

namespace bloomgate::app {
namespace {

struct ParsedLine {
  std::string_view key;
  filters::TimePoint time;
};

// EPOCH_MILLIS<TAB>KEY; returns an error message when the line does not have that shape.
std::string parse_timestamped(std::string_view line, ParsedLine& parsed) {
  const auto tab = line.find('\t');
  if (tab == std::string_view::npos) return "expected EPOCH_MILLIS<TAB>KEY, found no tab";
  std::int64_t millis = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + tab, millis);
  if (tab == 0 || ec != std::errc() || end != line.data() + tab) {
    return "\"" + std::string(line.substr(0, tab)) + "\" is not a timestamp in epoch milliseconds";
  }
  parsed.key = line.substr(tab + 1);
  parsed.time = filters::from_epoch_millis(millis);
  return {};
}

std::string json_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

FilterCommandResult run_filter_command(const FilterCommandOptions& options, std::istream& in, std::ostream& out,
                                       std::ostream& err, const ProcessingClock& clock) {
  auto filter = filters::make_filter(options.filter);
  FilterCommandResult result;
  std::string line;
  filters::TimePoint last_time{};
  while (std::getline(in, line)) {
    ++result.lines;
    ParsedLine parsed{line, {}};
    if (options.timestamps) {
      if (const std::string error = parse_timestamped(line, parsed); !error.empty()) {
        ++result.malformed;
        err << "line " << result.lines << ": " << error << ", skipped\n";
        continue;
      }
    } else {
      parsed.time = clock();
    }
    last_time = parsed.time;
    if (filter->test_and_insert(parsed.key, parsed.time)) {
      ++result.duplicates;
    } else {
      ++result.forwarded;
      out << line << '\n';
    }
  }
  out.flush();
  if (options.stats) err << stats_json(filter->stats(last_time), result) << '\n';
  return result;
}

std::string stats_json(const filters::FilterStats& s, const FilterCommandResult& r) {
  std::string json = "{";
  json += "\"type\":\"" + std::string(filters::filter_type_name(s.type)) + "\"";
  json += ",\"k\":" + std::to_string(s.k);
  json += ",\"l\":" + std::to_string(s.l);
  json += ",\"slices\":" + std::to_string(s.slices);
  json += ",\"bits\":" + std::to_string(s.bits);
  json += ",\"elements\":" + std::to_string(s.elements);
  json += ",\"bits_per_element\":" + json_number(s.bits_per_element);
  json += ",\"estimated_fpr\":" + json_number(s.estimated_fpr);
  json += ",\"target_fpr\":" + json_number(s.target_fpr);
  json += ",\"lines\":" + std::to_string(r.lines);
  json += ",\"forwarded\":" + std::to_string(r.forwarded);
  json += ",\"duplicates\":" + std::to_string(r.duplicates);
  json += ",\"malformed\":" + std::to_string(r.malformed);
  json += "}";
  return json;
}

}  // namespace bloomgate::app
