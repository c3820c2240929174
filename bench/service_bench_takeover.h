// File: bench/service_bench_takeover.h
//
// What the parts of --takeover-keys share (service_bench_takeover.cc: the state topic, the service runs and
// the takeover; service_bench_takeover_flow.cc: others keep flowing, and the overhead rounds;
// service_bench_takeover_report.cc: the printed report and its JSON): the figures each part measures and
// the helpers the flow borrows from the takeover.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "service_bench.h"

namespace bloomgate::bench::service_bench::takeover {

inline constexpr auto kRunLimit = std::chrono::minutes(20);     // one service run longer than this: the bench failed
inline constexpr milliseconds kTakeoverSnapshot{100};           // snapshot interval: the ready time's resolution
inline constexpr auto kCompactionLimit = std::chrono::seconds(120);  // then the takeover is measured on what is there

// What the state topic's partition 0 holds, read from its low watermark to its high one: the service's
// records, their keys' and values' bytes, and the records whose key a later record holds again (superseded,
// still there until compaction removes them).
struct StateTopicContents {
  std::uint64_t records = 0;
  std::uint64_t superseded = 0;
  double bytes = 0;
};

struct Compaction {
  StateTopicContents before;  // as the first instance left it
  StateTopicContents after;   // once no key is held twice, or at the limit
  double seconds = kNaN;      // from the first read to `after`
  bool done = false;          // no superseded record left within kCompactionLimit
};

struct TakeoverFigures {
  std::uint64_t keys = 0;
  double produce_seconds = kNaN;
  double input_bytes = kNaN;         // keys and values of the partition's records, as produced
  double fill_seconds = kNaN;        // the first instance: assignment to every key consumed
  double restore_seconds = kNaN;     // last_restore_seconds: state-topic read and filter built
  double restore_ready_seconds = kNaN;  // assignment to the partition ready (reconciliation included)
  double state_read_bytes = kNaN;
  double state_read_seconds = kNaN;
  double rebuild_seconds = kNaN;     // last_rebuild_seconds
  double rebuild_ready_seconds = kNaN;
  std::uint64_t rebuild_events = 0;
  double rebuild_input_bytes = kNaN;  // the input bytes of the records the rebuild read
  double ratio = kNaN;               // rebuild_seconds / restore_seconds
  double filter_bytes = kNaN;        // the restored filter's memory_bytes
  Compaction compaction;             // the state topic between the first instance and the restore
};

struct FlowFigures {
  double before_events_per_second = kNaN;  // the remaining member's own partition, before the other stops
  double during_events_per_second = kNaN;  // the same partition, from the stop until the taken-over one is ready
  double during_seconds = kNaN;
  double taken_restore_seconds = kNaN;     // the taken-over partition's last_restore_seconds
  bool from_state_topic = false;
  double ratio = kNaN;
};

using OverheadPair = AbPair;  // on: with state.topic; off: without

struct TakeoverReport {
  std::vector<TakeoverFigures> takeovers;
  FlowFigures flow;
  std::vector<OverheadPair> overhead;
  double overhead_ratio = kNaN;
  double total_seconds = kNaN;
};

// Wall-clock milliseconds since the epoch, as event times are.
std::int64_t now_ms();
void create_topic_or_throw(const Setup& setup, const std::string& topic, int partitions,
                           const std::map<std::string, std::string>& configs = {});
// `keys` new keys (numbers first..first+keys-1) to one partition, their event times spread evenly over the
// window before now; returns the keys' and values' bytes.
double produce_window(const Setup& setup, const std::string& topic, std::int32_t partition, std::uint64_t first,
                      std::uint64_t keys);
// A one-pipeline service on `input`, its filters sized for a window of `window_keys` keys per partition.
config::Config takeover_config(const Setup& setup, const std::string& group, const std::string& input,
                               std::uint64_t window_keys, const std::string& state_topic,
                               const std::string& state_dir);
const app::PartitionReport* report_of(const app::ServiceSnapshot& snapshot, const std::string& topic,
                                      std::int32_t partition);
// Running, with no partition restoring.
bool ready(const app::ServiceSnapshot& snapshot);

// Others keep flowing, and the overhead rounds (service_bench_takeover_flow.cc).
FlowFigures run_flow(const Setup& setup);
std::vector<OverheadPair> run_overhead(const Setup& setup);
// The report (service_bench_takeover_report.cc).
void print_report(const Options& o, const TakeoverReport& r);
bool write_report_json(const Options& o, const TakeoverReport& r);

}  // namespace bloomgate::bench::service_bench::takeover
