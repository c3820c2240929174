#include "bloomgate/app/inspect_command.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <ctime>
#include <ostream>

#include "bloomgate/app/exit_codes.h"
#include "bloomgate/filters/format.h"
#include "bloomgate/filters/time.h"

namespace bloomgate::app {
namespace {

using connectors::StateStore;
using connectors::StateStoreError;

FillSummary summarize_fill(const filters::FilterStats& stats) {
  FillSummary fill;
  double sum = 0;
  for (const filters::SliceStats& slice : stats.slice_stats) {
    if (slice.expired) continue;
    fill.min = fill.slices == 0 ? slice.fill_ratio : std::min(fill.min, slice.fill_ratio);
    fill.max = fill.slices == 0 ? slice.fill_ratio : std::max(fill.max, slice.fill_ratio);
    sum += slice.fill_ratio;
    ++fill.slices;
  }
  if (fill.slices != 0) fill.mean = sum / static_cast<double>(fill.slices);
  return fill;
}

// Shortest text that reads back as the same double; JSON has no NaN or infinity: null.
std::string number(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string scientific(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

// "4.2 s", "12 min 5 s", "3 h 4 min", "2 d 3 h".
std::string human_age(std::int64_t ms) {
  if (ms < 0) return "in the future (clock skew?)";
  if (ms < 60'000) return fixed(static_cast<double>(ms) / 1000.0, 1) + " s";
  const std::int64_t s = ms / 1000;
  if (s < 3600) return std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
  if (s < 86'400) return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
  return std::to_string(s / 86'400) + " d " + std::to_string(s % 86'400 / 3600) + " h";
}

std::string human_bytes(std::uint64_t bits) {
  const double bytes = static_cast<double>(bits) / 8.0;
  if (bytes < 1024) return fixed(bytes, 0) + " B";
  if (bytes < 1024.0 * 1024) return fixed(bytes / 1024, 1) + " KiB";
  if (bytes < 1024.0 * 1024 * 1024) return fixed(bytes / (1024.0 * 1024), 1) + " MiB";
  return fixed(bytes / (1024.0 * 1024 * 1024), 2) + " GiB";
}

// Appends one code point as UTF-8.
void append_utf8(std::string& out, char32_t code) {
  if (code < 0x80) {
    out.push_back(static_cast<char>(code));
  } else if (code < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code >> 6)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else if (code < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  }
}

// The length of the well-formed UTF-8 sequence starting at text[at] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0 when it is not one. Sets `code`.
std::size_t utf8_sequence(std::string_view text, std::size_t at, char32_t& code) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  std::size_t length = 0;
  char32_t minimum = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, code = lead & 0x1F, minimum = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, code = lead & 0x0F, minimum = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, code = lead & 0x07, minimum = 0x10000;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(at + i) & 0x3F);
  }
  if (code < minimum || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

}  // namespace

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      char32_t code = 0;
      if (const std::size_t length = utf8_sequence(text, i, code); length != 0) {
        out.append(text.substr(i, length));
        i += length;
      } else {
        append_utf8(out, U'\uFFFD');  // one replacement per byte that starts no valid sequence
        ++i;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
  return out;
}

std::string utc_time(std::int64_t epoch_ms) {
  const std::int64_t seconds = epoch_ms >= 0 ? epoch_ms / 1000 : (epoch_ms - 999) / 1000;
  const auto millis = static_cast<int>(epoch_ms - seconds * 1000);
  const auto time = static_cast<std::time_t>(seconds);
  std::tm utc{};
  if (gmtime_r(&time, &utc) == nullptr) return "(time " + std::to_string(epoch_ms) + " ms out of range)";
  char text[64];
  const std::size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  char with_millis[96];
  std::snprintf(with_millis, sizeof with_millis, "%.*s.%03dZ", static_cast<int>(length), text, millis);
  return with_millis;
}

InspectReport inspect_state(const std::string& state_dir, std::int64_t now_ms) {
  connectors::StateStoreOptions options;
  options.log = [](std::string_view, std::string_view) {};  // what matters comes back as an exception
  const std::unique_ptr<StateStore> store = StateStore::open_read_only(state_dir, options);
  InspectReport report;
  report.state_dir = state_dir;
  report.inspected_at_ms = now_ms;
  for (const connectors::PartitionCheckpoint& checkpoint : store->list()) {
    InspectedPartition partition;
    partition.checkpoint = checkpoint;
    try {
      partition.last_restore = store->read_restore_note(checkpoint.id);
    } catch (const StateStoreError& e) {
      partition.last_restore_error = e.what();  // the note only says where the state came from
    }
    try {
      const std::optional<connectors::StoredPartition> stored = store->read(checkpoint.id);
      if (!stored) throw StateStoreError(StateStoreError::Kind::kCorrupt, "the checkpoint vanished while reading");
      const std::unique_ptr<filters::Filter> filter = store->restore_filter(checkpoint.id, stored->filter_meta);
      filters::FilterStats stats = filter->stats(filters::from_epoch_nanos(stored->checkpoint.filter_time_ns));
      partition.fill = summarize_fill(stats);
      partition.filter = std::move(stats);
    } catch (const StateStoreError& e) {
      partition.error = e.what();
    } catch (const filters::FormatError& e) {
      partition.error = std::string("the filter records do not restore: ") + e.what();
    }
    report.partitions.push_back(std::move(partition));
  }
  return report;
}

std::string render_text(const InspectReport& report) {
  std::string out = "state directory " + report.state_dir + ": " + std::to_string(report.partitions.size()) +
                    " partition(s), inspected at " + utc_time(report.inspected_at_ms) + "\n";
  for (const InspectedPartition& p : report.partitions) {
    const connectors::PartitionCheckpoint& c = p.checkpoint;
    out += "\n" + c.id.topic + "/" + std::to_string(c.id.partition) + "\n";
    out += "  next offset      " + std::to_string(c.next_offset) + "\n";
    out += "  output offset    " + (c.output_offset < 0 ? std::string("unknown (-1)") : std::to_string(c.output_offset)) + "\n";
    out += "  checkpoint       " + utc_time(c.written_at_ms) + " (" + human_age(report.inspected_at_ms - c.written_at_ms) +
           " ago)\n";
    out += "  filter time      " + utc_time(c.filter_time_ns / 1'000'000) + "\n";
    if (p.last_restore) {
      out += "  last restore     from " + p.last_restore->source + " at " + utc_time(p.last_restore->restored_at_ms) +
             " (" + human_age(report.inspected_at_ms - p.last_restore->restored_at_ms) + " ago)\n";
    } else if (!p.last_restore_error.empty()) {
      out += "  last restore     unknown: " + p.last_restore_error + "\n";
    }
    if (!p.filter) {
      out += "  error            " + p.error + "\n";
      continue;
    }
    const filters::FilterStats& f = *p.filter;
    out += "  filter           " + std::string(filters::filter_type_name(f.type)) + ", k " + std::to_string(f.k) +
           ", l " + std::to_string(f.l) + "\n";
    out += "  slices           " + std::to_string(f.slices) + " (" + std::to_string(p.fill.slices) + " not expired)\n";
    out += "  fill             min " + fixed(p.fill.min, 4) + ", mean " + fixed(p.fill.mean, 4) + ", max " +
           fixed(p.fill.max, 4) + "\n";
    out += "  memory           " + human_bytes(f.memory_bytes * 8) + " (" + std::to_string(f.memory_bytes) +
           " bytes; cells " + human_bytes(f.bits) + ")\n";
    out += "  elements         " + std::to_string(f.elements) + " (" + fixed(f.bits_per_element, 1) +
           " bits of memory each, " + fixed(f.cell_bits_per_element, 1) + " of them cells)\n";
    out += "  estimated FPR    " + scientific(f.estimated_fpr) + " (target " + scientific(f.target_fpr) + ")\n";
  }
  return out;
}

std::string render_json(const InspectReport& report) {
  std::string out = "{\"state_dir\":" + json_string(report.state_dir) +
                    ",\"inspected_at\":" + json_string(utc_time(report.inspected_at_ms)) + ",\"partitions\":[";
  bool first = true;
  for (const InspectedPartition& p : report.partitions) {
    const connectors::PartitionCheckpoint& c = p.checkpoint;
    out += first ? "{" : ",{";
    first = false;
    out += "\"topic\":" + json_string(c.id.topic);
    out += ",\"partition\":" + std::to_string(c.id.partition);
    out += ",\"next_offset\":" + std::to_string(c.next_offset);
    out += ",\"output_offset\":" + std::to_string(c.output_offset);
    out += ",\"checkpoint_time\":" + json_string(utc_time(c.written_at_ms));
    out += ",\"checkpoint_time_ms\":" + std::to_string(c.written_at_ms);
    out += ",\"checkpoint_age_seconds\":" + number(static_cast<double>(report.inspected_at_ms - c.written_at_ms) / 1000.0);
    out += ",\"filter_time\":" + json_string(utc_time(c.filter_time_ns / 1'000'000));
    if (p.last_restore) {
      out += ",\"last_restore\":{\"source\":" + json_string(p.last_restore->source) +
             ",\"time\":" + json_string(utc_time(p.last_restore->restored_at_ms)) +
             ",\"time_ms\":" + std::to_string(p.last_restore->restored_at_ms) + "}";
    } else if (!p.last_restore_error.empty()) {
      out += ",\"last_restore\":{\"error\":" + json_string(p.last_restore_error) + "}";
    }
    if (!p.filter) {
      out += ",\"error\":" + json_string(p.error) + "}";
      continue;
    }
    const filters::FilterStats& f = *p.filter;
    out += ",\"filter\":{\"type\":" + json_string(filters::filter_type_name(f.type));
    out += ",\"k\":" + std::to_string(f.k);
    out += ",\"l\":" + std::to_string(f.l);
    out += ",\"slices\":" + std::to_string(f.slices);
    out += ",\"fill\":{\"slices\":" + std::to_string(p.fill.slices) + ",\"min\":" + number(p.fill.min) +
           ",\"mean\":" + number(p.fill.mean) + ",\"max\":" + number(p.fill.max) + "}";
    out += ",\"slice_fill\":[";
    for (std::size_t i = 0; i < f.slice_stats.size(); ++i) {
      const filters::SliceStats& s = f.slice_stats[i];
      out += (i == 0 ? "{" : ",{");
      out += "\"id\":" + std::to_string(s.id) + ",\"bits\":" + std::to_string(s.bits) +
             ",\"insertions\":" + std::to_string(s.insertions) + ",\"fill\":" + number(s.fill_ratio) +
             ",\"expired\":" + (s.expired ? "true" : "false") + "}";
    }
    out += "]";
    out += ",\"bits\":" + std::to_string(f.bits);
    out += ",\"memory_bytes\":" + std::to_string(f.memory_bytes);
    out += ",\"elements\":" + std::to_string(f.elements);
    out += ",\"bits_per_element\":" + number(f.bits_per_element);
    out += ",\"cell_bits_per_element\":" + number(f.cell_bits_per_element);
    out += ",\"estimated_fpr\":" + number(f.estimated_fpr);
    out += ",\"target_fpr\":" + number(f.target_fpr);
    out += "}}";
  }
  return out + "]}\n";
}

int run_inspect_command(const InspectOptions& options, std::ostream& out, std::ostream& err) {
  const std::int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  InspectReport report;
  try {
    report = inspect_state(options.state_dir, now_ms);
  } catch (const StateStoreError& e) {
    const std::string what = e.what();
    err << "bloomgate inspect: " << what;
    if (e.kind() == StateStoreError::Kind::kCorrupt && what.find(options.state_dir) == std::string::npos) {
      err << " (state directory " << options.state_dir << ")";
    }
    err << '\n';
    return kExitUnreadable;
  }
  out << (options.format == InspectFormat::kJson ? render_json(report) : render_text(report));
  out.flush();
  std::size_t unreadable = 0;
  for (const InspectedPartition& p : report.partitions) {
    if (!p.filter) {
      ++unreadable;
      err << "bloomgate inspect: " << connectors::to_string(p.checkpoint.id) << " in " << options.state_dir << ": "
          << p.error << '\n';
    }
  }
  return unreadable == 0 ? kExitOk : kExitUnreadable;
}

}  // namespace bloomgate::app
