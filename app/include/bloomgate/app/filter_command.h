// File: filter_command.h
//
// `bloomgate filter`: the filters on a user's own data, like `uniq` with a time window. Each input line
// is KEY (stamped with the processing time) or, with timestamps, EPOCH_MILLIS<TAB>KEY; a line is written
// out unchanged when its key is new within the TTL. With `fields`, KEY is a TSV or CSV record instead and
// its key is the chosen fields (1-based, split at every `delimiter`; no quoting): one field is the key as
// it is, several are encoded as a key of parts is (append_key_part(), key_extractor.h), so ("a,b", "c") and
// ("a", "b,c") stay different keys. Malformed lines (a bad timestamp, too few fields) are reported on the
// error stream with their line number and skipped. A read or write error stops the command: io_error says
// which, as `uniq` stops with a message.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "bloomgate/app/exit_codes.h"
#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/options.h"

namespace bloomgate::app {

struct FilterCommandOptions {
  filters::FilterOptions filter;
  bool timestamps = false;  // lines are EPOCH_MILLIS<TAB>KEY
  bool stats = false;       // print one JSON object of statistics on the error stream at the end
  std::vector<std::size_t> fields;  // 1-based field numbers making up the key (0 throws); empty: the whole KEY
  char delimiter = '\t';           // between the fields of KEY
};

struct FilterCommandResult {
  std::uint64_t lines = 0;
  std::uint64_t forwarded = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t malformed = 0;
  // Empty, or why the input could not be read or the output not written (with the system's reason):
  // the command stops there, and the output is incomplete.
  std::string io_error;
};

// The timestamps `--timestamps` accepts, in epoch milliseconds: 1970-01-01T00:00:00.000Z to
// 2099-12-31T23:59:59.999Z. Others are malformed lines: the filters count time in int64 nanoseconds, which
// end in 2262, and a timestamp in microseconds or nanoseconds read as milliseconds would move the filter's
// present centuries ahead, where no later key would ever expire (docs/decisions/filter-timestamp-range.md).
inline constexpr std::int64_t kFirstTimestampMillis = 0;
inline constexpr std::int64_t kLastTimestampMillis = 4'102'444'799'999;

using ProcessingClock = std::function<filters::TimePoint()>;

FilterCommandResult run_filter_command(const FilterCommandOptions& options, std::istream& in, std::ostream& out,
                                       std::ostream& err, const ProcessingClock& clock);

// The --stats object: type, k, l, slices, bits (the cells'), memory_bytes (every byte the filter holds),
// elements, bits_per_element (memory_bytes * 8 / elements), cell_bits_per_element (bits / elements),
// estimated_fpr, target_fpr, plus the line counts.
std::string stats_json(const filters::FilterStats& stats, const FilterCommandResult& result);

}  // namespace bloomgate::app
