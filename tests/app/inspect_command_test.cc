// `bloomgate inspect` (app/inspect_command.h): checkpoints written through the StateStore, then read back
// by inspect_state() and by the real binary (exit codes, messages, JSON parsed with simdjson). No broker.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "bloomgate/app/inspect_command.h"
#include "bloomgate/app/temporary_directory.h"
#include "bloomgate/connectors/state_store.h"
#include "bloomgate/filters/options.h"
#include "bloomgate/filters/time.h"

namespace bloomgate::app {
namespace {

using connectors::PartitionCheckpoint;
using connectors::StateStore;

constexpr std::int64_t kFilterTimeMs = 1'790'000'000'000;  // 2026-09-21T...: a fixed event time

filters::FilterOptions filter_options() {
  filters::FilterOptions options;
  options.type = filters::FilterType::kTimeLimited;
  options.ttl = std::chrono::minutes(10);
  options.error_rate = 1e-4;
  options.expected_per_ttl = 10'000;
  return options;
}

// A filter holding `keys` keys inserted over the last minute before kFilterTimeMs.
std::unique_ptr<filters::Filter> filled_filter(int keys) {
  auto filter = filters::make_filter(filter_options());
  for (int i = 0; i < keys; ++i) {
    const std::int64_t at = kFilterTimeMs - 60'000 + static_cast<std::int64_t>(i) * 60'000 / keys;
    filter->test_and_insert("key-" + std::to_string(i), filters::from_epoch_millis(at));
  }
  return filter;
}

struct Written {
  PartitionCheckpoint checkpoint;
  filters::FilterStats stats;
};

// Writes two checkpoints (orders/0 with 3,000 keys, orders/3 with 500) and returns what was written.
std::vector<Written> write_two_checkpoints(const std::string& dir, std::int64_t written_at_ms) {
  std::vector<Written> written;
  const auto store = StateStore::open(dir);
  for (const auto& [partition, keys] : std::vector<std::pair<int, int>>{{0, 3'000}, {3, 500}}) {
    const auto filter = filled_filter(keys);
    PartitionCheckpoint checkpoint;
    checkpoint.id = {"orders", partition};
    checkpoint.next_offset = 1'000 + partition;
    checkpoint.output_offset = 900 + partition;
    checkpoint.written_at_ms = written_at_ms;
    checkpoint.filter_time_ns = kFilterTimeMs * 1'000'000;
    store->write_checkpoint(checkpoint, filter->image(filters::ImageScope::kFull));
    written.push_back({checkpoint, filter->stats(filters::from_epoch_millis(kFilterTimeMs))});
  }
  return written;
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(Inspect, ReportsEveryStoredPartitionWithTheFiguresOfItsFilter) {
  const TemporaryDirectory dir("bloomgate-inspect");
  const std::string state = dir.path("state");
  const std::int64_t written_at = now_ms() - 90'000;
  const std::vector<Written> written = write_two_checkpoints(state, written_at);

  const InspectReport report = inspect_state(state, written_at + 90'000);
  ASSERT_EQ(report.partitions.size(), 2U);
  for (std::size_t i = 0; i < written.size(); ++i) {
    const InspectedPartition& p = report.partitions[i];
    SCOPED_TRACE(connectors::to_string(p.checkpoint.id));
    EXPECT_EQ(p.checkpoint, written[i].checkpoint);
    ASSERT_TRUE(p.filter.has_value()) << p.error;
    const filters::FilterStats& expected = written[i].stats;
    EXPECT_EQ(p.filter->type, filters::FilterType::kTimeLimited);
    EXPECT_EQ(p.filter->slices, expected.slices);
    EXPECT_EQ(p.filter->bits, expected.bits);
    EXPECT_EQ(p.filter->elements, expected.elements);
    EXPECT_DOUBLE_EQ(p.filter->estimated_fpr, expected.estimated_fpr);
    EXPECT_GT(p.filter->estimated_fpr, 0.0);
    double min = 1, max = 0, sum = 0;
    std::size_t counted = 0;
    for (const auto& slice : expected.slice_stats) {
      if (slice.expired) continue;
      min = std::min(min, slice.fill_ratio), max = std::max(max, slice.fill_ratio), sum += slice.fill_ratio, ++counted;
    }
    EXPECT_EQ(p.fill.slices, counted);
    EXPECT_DOUBLE_EQ(p.fill.min, min);
    EXPECT_DOUBLE_EQ(p.fill.max, max);
    EXPECT_DOUBLE_EQ(p.fill.mean, sum / static_cast<double>(counted));
    EXPECT_GT(p.fill.max, 0.0);
  }
  EXPECT_EQ(report.partitions[0].filter->elements, 3'000U);
  EXPECT_EQ(report.partitions[1].filter->elements, 500U);

  const std::string text = render_text(report);
  EXPECT_NE(text.find("orders/3\n  next offset      1003\n  output offset    903\n"), std::string::npos) << text;
  EXPECT_NE(text.find("(1 min 30 s ago)"), std::string::npos) << text;
  EXPECT_NE(text.find("elements         3000"), std::string::npos) << text;
  EXPECT_NE(text.find("filter           time_limited"), std::string::npos) << text;
}

// An aging-fingerprint filter's checkpoint: its type, its live fingerprints as elements and its FPR
// estimated from the tables' occupancy, as the filter itself reports them.
TEST(Inspect, ReadsAnAgingFingerprintFilter) {
  const TemporaryDirectory dir("bloomgate-inspect-aging");
  const std::string state = dir.path("state");
  filters::FilterOptions options = filter_options();
  options.type = filters::FilterType::kAgingFingerprint;
  const auto filter = filters::make_filter(options);
  for (int i = 0; i < 2'000; ++i) filter->test_and_insert("key-" + std::to_string(i), filters::from_epoch_millis(kFilterTimeMs));
  PartitionCheckpoint checkpoint;
  checkpoint.id = {"orders", 1};
  checkpoint.filter_time_ns = kFilterTimeMs * 1'000'000;
  StateStore::open(state)->write_checkpoint(checkpoint, filter->image(filters::ImageScope::kFull));
  const filters::FilterStats expected = filter->stats(filters::from_epoch_millis(kFilterTimeMs));

  const InspectReport report = inspect_state(state, now_ms());
  ASSERT_EQ(report.partitions.size(), 1U);
  ASSERT_TRUE(report.partitions[0].filter.has_value()) << report.partitions[0].error;
  EXPECT_EQ(report.partitions[0].filter->type, filters::FilterType::kAgingFingerprint);
  EXPECT_EQ(report.partitions[0].filter->elements, expected.elements);
  EXPECT_DOUBLE_EQ(report.partitions[0].filter->estimated_fpr, expected.estimated_fpr);
  EXPECT_GT(expected.estimated_fpr, 0.0);
  EXPECT_NE(render_text(report).find("filter           aging_fingerprint"), std::string::npos) << render_text(report);
}

// After kill -9 the last checkpoints are only in RocksDB's WAL: a copy taken while the store is open
// holds no table file, and the read-only open must replay the WAL to see them.
TEST(Inspect, SeesCheckpointsThatAreOnlyInTheWal) {
  const TemporaryDirectory dir("bloomgate-inspect");
  const std::string state = dir.path("state");
  const std::string copy = dir.path("copy");
  {
    const auto store = StateStore::open(state);
    const auto filter = filled_filter(100);
    PartitionCheckpoint checkpoint;
    checkpoint.id = {"orders", 5};
    checkpoint.next_offset = 77;
    checkpoint.output_offset = 66;
    checkpoint.written_at_ms = 1'700'000'000'000;
    checkpoint.filter_time_ns = kFilterTimeMs * 1'000'000;
    store->write_checkpoint(checkpoint, filter->image(filters::ImageScope::kFull));
    std::filesystem::copy(state, copy);  // as the directory stands after a crash: the WAL, no table file
  }
  bool table_file = false;
  for (const auto& entry : std::filesystem::directory_iterator(copy)) table_file |= entry.path().extension() == ".sst";
  ASSERT_FALSE(table_file) << "the copy should hold the checkpoint in the WAL only";
  const InspectReport report = inspect_state(copy, 1'700'000'001'000);
  ASSERT_EQ(report.partitions.size(), 1U);
  EXPECT_EQ(report.partitions[0].checkpoint.next_offset, 77);
  ASSERT_TRUE(report.partitions[0].filter.has_value()) << report.partitions[0].error;
  EXPECT_EQ(report.partitions[0].filter->elements, 100U);
}

TEST(Inspect, JsonParsesAndCarriesTheSameFigures) {
  const TemporaryDirectory dir("bloomgate-inspect");
  const std::string state = dir.path("state");
  const std::vector<Written> written = write_two_checkpoints(state, 1'700'000'000'123);
  const InspectReport report = inspect_state(state, 1'700'000'010'123);

  simdjson::dom::parser parser;
  const simdjson::padded_string json(render_json(report));
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(json).get(root), simdjson::SUCCESS) << render_json(report);
  EXPECT_EQ(std::string_view(root["state_dir"].get_string().value()), state);
  const simdjson::dom::array partitions = root["partitions"].get_array().value();
  ASSERT_EQ(partitions.size(), 2U);
  std::size_t i = 0;
  for (const simdjson::dom::element p : partitions) {
    const Written& w = written[i++];
    EXPECT_EQ(std::string_view(p["topic"].get_string().value()), "orders");
    EXPECT_EQ(p["partition"].get_int64().value(), w.checkpoint.id.partition);
    EXPECT_EQ(p["next_offset"].get_int64().value(), w.checkpoint.next_offset);
    EXPECT_EQ(p["output_offset"].get_int64().value(), w.checkpoint.output_offset);
    EXPECT_EQ(std::string_view(p["checkpoint_time"].get_string().value()), "2023-11-14T22:13:20.123Z");
    EXPECT_DOUBLE_EQ(p["checkpoint_age_seconds"].get_double().value(), 10.0);
    EXPECT_EQ(std::string_view(p["filter"]["type"].get_string().value()), "time_limited");
    EXPECT_EQ(p["filter"]["bits"].get_uint64().value(), w.stats.bits);
    const std::uint64_t memory_bytes = p["filter"]["memory_bytes"].get_uint64().value();
    EXPECT_GT(memory_bytes, (w.stats.bits + 7) / 8) << "every byte the restored filter holds, more than its cells";
    EXPECT_EQ(p["filter"]["elements"].get_uint64().value(), w.stats.elements);
    const auto elements = static_cast<double>(w.stats.elements);
    EXPECT_NEAR(p["filter"]["bits_per_element"].get_double().value(), static_cast<double>(memory_bytes) * 8 / elements,
                1e-6 * static_cast<double>(memory_bytes));
    EXPECT_NEAR(p["filter"]["cell_bits_per_element"].get_double().value(),
                static_cast<double>(w.stats.bits) / elements, 1e-6 * static_cast<double>(w.stats.bits));
    EXPECT_EQ(p["filter"]["slices"].get_uint64().value(), w.stats.slices);
    EXPECT_EQ(p["filter"]["slice_fill"].get_array().value().size(), w.stats.slice_stats.size());
    EXPECT_DOUBLE_EQ(p["filter"]["estimated_fpr"].get_double().value(), w.stats.estimated_fpr);  // round trip
    EXPECT_LE(p["filter"]["fill"]["min"].get_double().value(), p["filter"]["fill"]["max"].get_double().value());
  }
}

// Where the service took each partition's state from at its last restore (the store's restore notes), in
// text and JSON; a partition without a note (a store written before notes existed) shows none.
TEST(Inspect, ShowsWhereEachPartitionsStateCameFromAtItsLastRestore) {
  const TemporaryDirectory dir("bloomgate-inspect");
  const std::string state = dir.path("state");
  write_two_checkpoints(state, 1'700'000'000'123);
  StateStore::open(state)->write_restore_notes(
      std::vector<connectors::RestoreNote>{{{"orders", 3}, "state_topic", 1'700'000'005'123}});
  const InspectReport report = inspect_state(state, 1'700'000'010'123);
  ASSERT_EQ(report.partitions.size(), 2U);
  EXPECT_FALSE(report.partitions[0].last_restore.has_value()) << "orders/0 has no note";
  const std::string text = render_text(report);
  EXPECT_NE(text.find("  last restore     from state_topic at 2023-11-14T22:13:25.123Z (5.0 s ago)\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("last restore"), text.rfind("last restore")) << "one partition has a note\n" << text;

  simdjson::dom::parser parser;
  const simdjson::padded_string json(render_json(report));
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(json).get(root), simdjson::SUCCESS) << render_json(report);
  const simdjson::dom::array partitions = root["partitions"].get_array().value();
  ASSERT_EQ(partitions.size(), 2U);
  EXPECT_EQ(partitions.at(0)["last_restore"].error(), simdjson::NO_SUCH_FIELD);
  const simdjson::dom::element note = partitions.at(1)["last_restore"].value();
  EXPECT_EQ(std::string_view(note["source"].get_string().value()), "state_topic");
  EXPECT_EQ(std::string_view(note["time"].get_string().value()), "2023-11-14T22:13:25.123Z");
  EXPECT_EQ(note["time_ms"].get_int64().value(), 1'700'000'005'123);
}

TEST(Inspect, JsonStringsEscapeQuotesControlsAndInvalidUtf8) {
  const std::string nasty = std::string("a\"b\\c/\n\t\r\b\f\x01\x1f\x7f d\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 ") +
                            "\xFF \xC3 \xED\xA0\x80 \xC0\xAF end";
  const std::string expected = std::string("a\"b\\c/\n\t\r\b\f\x01\x1f\x7f d\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 ") +
                               "\xEF\xBF\xBD \xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD end";
  const std::string literal = json_string(nasty);
  for (const char c : literal) EXPECT_GE(static_cast<unsigned char>(c), 0x20) << literal;
  simdjson::dom::parser parser;
  const simdjson::padded_string json("{\"s\":" + literal + "}");
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(json).get(root), simdjson::SUCCESS) << literal;
  EXPECT_EQ(std::string(root["s"].get_string().value()), expected);
  EXPECT_EQ(json_string(""), "\"\"");
  EXPECT_EQ(utc_time(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(utc_time(-1), "1969-12-31T23:59:59.999Z");
}

// ---- the binary ----------------------------------------------------------------------------------------

struct CommandRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `bloomgate inspect ARGS`, bounded by `timeout` (coreutils) so a hang fails instead of blocking.
CommandRun inspect(const TemporaryDirectory& dir, const std::string& args) {
  const std::string out = dir.path("out"), err = dir.path("err");
  const std::string command =
      "timeout 60 " + std::string(BLOOMGATE_BINARY) + " inspect " + args + " >" + out + " 2>" + err;
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

// Name, size and modification time of every file: what a read-only open must leave alone.
std::map<std::string, std::pair<std::uintmax_t, std::filesystem::file_time_type>> files_of(const std::string& dir) {
  std::map<std::string, std::pair<std::uintmax_t, std::filesystem::file_time_type>> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    files[entry.path().filename().string()] = {entry.file_size(), entry.last_write_time()};
  }
  return files;
}

TEST(InspectBinary, PrintsJsonAndTextAndChangesNothing) {
  const TemporaryDirectory dir("bloomgate-inspect");
  const std::string state = dir.path("state");
  write_two_checkpoints(state, now_ms());
  const auto before = files_of(state);

  const CommandRun json = inspect(dir, "--state-dir " + state + " --format json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(json.out);
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(padded).get(root), simdjson::SUCCESS) << json.out;
  EXPECT_EQ(root["partitions"].get_array().value().size(), 2U);
  EXPECT_EQ(root["partitions"].at(0)["filter"]["elements"].get_uint64().value(), 3'000U);

  const CommandRun text = inspect(dir, "--state-dir " + state);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("orders/0\n  next offset      1000\n"), std::string::npos) << text.out;
  EXPECT_EQ(files_of(state), before) << "inspect changed the state directory";

  EXPECT_EQ(inspect(dir, "--state-dir " + state + " --format xml").exit_code, 2);
}

TEST(InspectBinary, AMissingOrEmptyDirectoryIsAnErrorNamingThePath) {
  const TemporaryDirectory dir("bloomgate-inspect");
  const std::string missing = dir.path("no-such-state");
  const CommandRun run = inspect(dir, "--state-dir " + missing);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find(missing + " is not a directory"), std::string::npos) << run.err;
  EXPECT_FALSE(std::filesystem::exists(missing)) << "inspect created the directory";

  const std::string empty = dir.path("empty");
  std::filesystem::create_directory(empty);
  const CommandRun on_empty = inspect(dir, "--state-dir " + empty);
  EXPECT_EQ(on_empty.exit_code, 1);
  EXPECT_NE(on_empty.err.find(empty + " holds no state database"), std::string::npos) << on_empty.err;
}

TEST(InspectBinary, ADirectoryHeldByARunningProcessIsRefused) {
  const TemporaryDirectory dir("bloomgate-inspect");
  const std::string state = dir.path("state");
  write_two_checkpoints(state, now_ms());
  const auto holder = StateStore::open(state);  // as a running service holds it
  const CommandRun run = inspect(dir, "--state-dir " + state);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("state directory " + state + " is in use by a running bloomgate process (pid " +
                         std::to_string(::getpid()) + ")"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.out, "");
}

TEST(InspectBinary, ACorruptStoreIsAnErrorNamingThePath) {
  const TemporaryDirectory dir("bloomgate-inspect");
  const std::string state = dir.path("state");
  write_two_checkpoints(state, now_ms());
  StateStore::open(state)->flush();  // into a table file
  std::size_t damaged = 0;
  for (const auto& entry : std::filesystem::directory_iterator(state)) {
    if (entry.path().extension() != ".sst") continue;
    std::fstream file(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    const auto size = static_cast<std::streamoff>(entry.file_size());
    for (std::streamoff at = size / 8; at < size * 7 / 8; at += size / 16) {  // data and index blocks alike
      file.seekp(at);
      file.write("\x5a\x5a\x5a\x5a\x5a\x5a\x5a\x5a", 8);
    }
    ++damaged;
  }
  ASSERT_GT(damaged, 0U);
  const CommandRun run = inspect(dir, "--state-dir " + state);
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.err.find(state), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("orrupt"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace bloomgate::app
