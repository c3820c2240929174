#include "bloomgate/app/filter_command.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bloomgate/app/key_extractor.h"

namespace bloomgate::app {
namespace {

struct ParsedLine {
  std::string_view key;
  filters::TimePoint time;
};

// Input text for a message: control bytes and bytes above 0x7E written as escapes (\r, \t, \xNN), so a
// CR of a CRLF file shows instead of moving the terminal's cursor.
std::string escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte > 0x7E) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02X", byte);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

// EPOCH_MILLIS<TAB>KEY; returns an error message when the line does not have that shape, or its time is
// outside kFirstTimestampMillis..kLastTimestampMillis.
std::string parse_timestamped(std::string_view line, ParsedLine& parsed) {
  const auto tab = line.find('\t');
  if (tab == std::string_view::npos) return "expected EPOCH_MILLIS<TAB>KEY, found no tab";
  std::int64_t millis = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + tab, millis);
  const std::string text = "\"" + escaped(line.substr(0, tab)) + "\"";
  if (tab == 0 || end != line.data() + tab || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    return text + " is not a timestamp in epoch milliseconds";
  }
  if (ec == std::errc::result_out_of_range || millis < kFirstTimestampMillis || millis > kLastTimestampMillis) {
    return text + " is outside 1970-01-01..2099-12-31 in epoch milliseconds (microseconds or nanoseconds are "
                  "too large)";
  }
  parsed.key = line.substr(tab + 1);
  parsed.time = filters::from_epoch_millis(millis);
  return {};
}

// The key of a record made of fields: the chosen fields, split at `delimiter`. `fields_` and `key_` are
// reused from line to line; the returned view is into the record (one field) or `key_` (several).
class FieldKey {
 public:
  explicit FieldKey(const FilterCommandOptions& options) : wanted_(options.fields), delimiter_(options.delimiter) {
    for (std::size_t field : wanted_) {
      if (field == 0) throw std::invalid_argument("fields are numbered from 1");
      highest_ = std::max(highest_, field);
    }
  }

  // Returns an error message when the record has too few fields.
  std::string key_of(std::string_view record, std::string_view& key) {
    split(record);
    if (fields_.size() < highest_) {
      return "has " + std::to_string(fields_.size()) + " field" + (fields_.size() == 1 ? "" : "s") +
             ", --fields needs " + std::to_string(highest_);
    }
    if (wanted_.size() == 1) {
      key = fields_[wanted_.front() - 1];
      return {};
    }
    key_.clear();
    for (std::size_t field : wanted_) append_key_part(key_, fields_[field - 1]);
    key = key_;
    return {};
  }

 private:
  void split(std::string_view record) {
    fields_.clear();
    while (true) {
      const std::size_t end = record.find(delimiter_);
      fields_.push_back(record.substr(0, end));
      if (end == std::string_view::npos) return;
      record.remove_prefix(end + 1);
    }
  }

  std::vector<std::size_t> wanted_;
  char delimiter_;
  std::size_t highest_ = 0;
  std::vector<std::string_view> fields_;
  std::string key_;
};

// `what`, with the system's reason when the failed call left one in errno (a stream does not keep it).
std::string io_failure(std::string_view what) {
  const int error = errno;
  std::string message(what);
  if (error != 0) message += std::string(": ") + std::strerror(error);
  return message;
}

// Why the command stopped early, or empty: called where the loop stopped, before errno changes.
std::string stream_failure(const std::istream& in, std::ostream& out) {
  if (!out) return io_failure("cannot write the output");
  if (in.bad()) return io_failure("cannot read the input");
  errno = 0;
  if (!out.flush()) return io_failure("cannot write the output");
  return {};
}

std::string json_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string two_digits(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", v);
  return buf;
}

// Warns once, on the error stream, when the filter's estimated false-positive rate is kFprWarningFactor
// times its target or more: a filter that does not adapt (bloom, spectral, age_partitioned by count) sized
// for fewer keys than it is given reports ever more new keys as seen. Checked at 1024 lines, then at every
// doubling, and at the end, so the checks cost a logarithmic number of stats() calls.
class OverfillWarning {
 public:
  static constexpr double kFprWarningFactor = 4;

  void after_line(std::uint64_t lines, const filters::Filter& filter, filters::TimePoint now, std::ostream& err) {
    if (lines < next_check_) return;
    next_check_ = lines * 2;
    check(lines, filter, now, err);
  }

  void check(std::uint64_t lines, const filters::Filter& filter, filters::TimePoint now, std::ostream& err) {
    if (warned_) return;
    const filters::FilterStats stats = filter.stats(now);
    if (!(stats.estimated_fpr >= kFprWarningFactor * stats.target_fpr)) return;
    warned_ = true;
    err << "bloomgate filter: warning: the " << filters::filter_type_name(stats.type)
        << " filter's estimated false-positive rate is " << two_digits(stats.estimated_fpr) << ", "
        << two_digits(stats.estimated_fpr / stats.target_fpr) << " times the target " << two_digits(stats.target_fpr)
        << " at line " << lines << ": it holds more keys (" << stats.elements
        << ") than it was sized for, and reports new keys as seen; raise --expected\n";
  }

 private:
  std::uint64_t next_check_ = 1024;
  bool warned_ = false;
};

}  // namespace

FilterCommandResult run_filter_command(const FilterCommandOptions& options, std::istream& in, std::ostream& out,
                                       std::ostream& err, const ProcessingClock& clock) {
  auto filter = filters::make_filter(options.filter);
  FilterCommandResult result;
  std::string line;
  filters::TimePoint last_time{};
  FieldKey field_key(options);
  OverfillWarning overfill;
  while ((errno = 0, std::getline(in, line))) {
    // `in` may be tied to `out` (std::cin is to std::cout, so output shows before each read waits): the
    // read can be what failed to write.
    if (!out) break;
    ++result.lines;
    ParsedLine parsed{line, {}};
    std::string error;
    if (options.timestamps) error = parse_timestamped(line, parsed);
    if (error.empty() && !options.fields.empty()) error = field_key.key_of(parsed.key, parsed.key);
    if (!error.empty()) {
      ++result.malformed;
      err << "line " << result.lines << ": " << error << ", skipped\n";
      continue;
    }
    if (!options.timestamps) parsed.time = clock();
    last_time = parsed.time;
    if (filter->test_and_insert(parsed.key, parsed.time)) {
      ++result.duplicates;
    } else {
      ++result.forwarded;
      errno = 0;
      out << line << '\n';
      if (!out) break;
    }
    overfill.after_line(result.lines, *filter, last_time, err);
  }
  result.io_error = stream_failure(in, out);
  overfill.check(result.lines, *filter, last_time, err);
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
  json += ",\"memory_bytes\":" + std::to_string(s.memory_bytes);
  json += ",\"elements\":" + std::to_string(s.elements);
  json += ",\"bits_per_element\":" + json_number(s.bits_per_element);
  json += ",\"cell_bits_per_element\":" + json_number(s.cell_bits_per_element);
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
