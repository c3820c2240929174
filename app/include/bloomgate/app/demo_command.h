// File: demo_command.h
//
// `bloomgate demo`: the whole service on a realistic stream, with nothing to install or configure.
//   1. starts the embedded broker and creates demo-events (the input, --partitions partitions),
//      demo-unique (the output) and demo-dead-letter; with --brokers, creates the same topics, named
//      with a suffix of the run's own, on that broker instead;
//   2. produces, while the service runs, the demo workload (demo_workload.h: Zipf-popular keys, a share of repeats within the TTL
//      and some beyond it, event timestamps at --rate events/s of event time), message key = order id so
//      a key always meets the same partition's filter, and a `demo.seq` header numbering the events;
//      the exact answer is computed alongside;
//   3. runs the Service on it (key: JSON pointer /order_id, event time) with a live progress line, and
//      serves /metrics while it runs;
//   4. reads the output topic as it is written and compares, event by event, what was forwarded with the exact
//      answer, then prints the report.
//
// Exit code 0 when the run is correct: nothing forwarded twice within the TTL, every record read back.
// The false-positive rate is reported against the configured one, not judged: it is a probability.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace bloomgate::app {

struct DemoOptions {
  std::uint64_t events = 1'000'000;
  double events_per_second = 20'000;  // event-time rate: the spacing of timestamps, not a production pace
  double duplicate_share = 0.30;      // repeats of a key seen within the TTL
  double beyond_ttl_share = 0.05;     // repeats of a key last seen beyond the TTL
  std::chrono::milliseconds ttl{10'000};
  int partitions = 4;
  double error_rate = 0.001;
  std::uint64_t seed = 42;
  std::string metrics_listen = "127.0.0.1:9464";
  std::string log_level = "warn";
  // A broker of the user's ("host:port,..."), replication factor 1 for the run's new topics; empty: the
  // embedded broker.
  std::string brokers;
  // The input's values: "json", or "avro" / "protobuf" records of the same fields in the Schema Registry's
  // framing, keyed by the same field (their schema given as a `schemas:` entry, so no registry is needed).
  std::string format = "json";
};

// What the demo measured; the report printed is made from this.
struct DemoReport {
  std::uint64_t produced = 0;
  std::uint64_t consumed = 0;
  std::uint64_t forwarded = 0;        // as the service counted
  std::uint64_t read_back = 0;        // records read back from the output topic
  std::uint64_t discarded = 0;        // output records the embedded broker dropped before they were read
  std::uint64_t exact_new = 0;        // the exact answer: events new within the TTL
  std::uint64_t false_positives = 0;  // new events dropped, key not seen within TTL + fade-out slack
  std::uint64_t late_forgets = 0;     // new events dropped, key last seen within the fade-out slack
  // How long after the TTL the key of a late forget was last seen: the median and the 99th percentile.
  std::chrono::milliseconds late_median{0};
  std::chrono::milliseconds late_p99{0};
  std::uint64_t repeats_of_dropped = 0;  // forwarded repeats of a key whose first sighting was dropped
  std::uint64_t forwarded_twice = 0;  // forwarded within the TTL of the same key's forwarded record: must be 0
  double seconds = 0;                 // from the first event consumed to the last
  double filter_bits_per_key = 0;
  double filter_bytes = 0;
  double estimated_fpr = 0;
  bool correct() const { return forwarded_twice == 0 && read_back == forwarded && consumed == produced; }
};

// Runs the demo, writing progress and the report to `out`; returns the process exit code.
int run_demo_command(const DemoOptions& options, std::ostream& out);

}  // namespace bloomgate::app
