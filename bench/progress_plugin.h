// File: bench/progress_plugin.h
//
// A librdkafka plugin (plugin.library.paths) that counts the messages every consumer of the process hands
// to the application, through an on_consume interceptor, and samples (wall time, process CPU time,
// calling-thread CPU time, messages so far) every `interval`. service_bench gives the same plugin to the
// passthrough's consumer and, through config.kafka.properties, to the service's: both sides are then
// observed at the same point (inside Consumer::poll, just before the message is returned), at the same
// cost (one interceptor call per message), and the service needs no short snapshot interval.
//
// service_bench links this library, so librdkafka's dlopen() of the same file returns the loaded copy
// and the state below is shared. One measurement at a time; start() resets it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace bloomgate::bench::progress {

struct Sample {
  std::chrono::steady_clock::time_point time;
  double process_cpu = 0;  // seconds
  double thread_cpu = 0;   // seconds, of the thread that polls the consumer
  std::uint64_t consumed = 0;
};

// Starts counting from zero. A sample is taken at the first message, then at the first message after
// each `interval`, and at message `total`, when `done` (if given) is set to true. `several_pollers`: more
// than one thread polls a consumer (service_bench --members); a sample's thread CPU is then that of
// whichever thread took it.
void start(std::uint64_t total, std::chrono::nanoseconds interval, std::atomic<bool>* done,
           bool several_pollers = false);

// Stops counting; returns the samples taken since start().
std::vector<Sample> stop();

// Messages counted since start().
std::uint64_t consumed();

// The file this library was loaded from: the value for plugin.library.paths.
std::string library_path();

}  // namespace bloomgate::bench::progress
