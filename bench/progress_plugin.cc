// File: bench/progress_plugin.cc
//
// See progress_plugin.h. librdkafka calls conf_init() for every configuration that names this library in
// plugin.library.paths (also for the copies clients make of it); conf_init() adds an on_new interceptor,
// which adds the on_consume interceptor to every consumer created from such a configuration.

#include "progress_plugin.h"

#include <dlfcn.h>
#include <librdkafka/rdkafka.h>
#include <time.h>

#include <cstdio>
#include <mutex>

namespace bloomgate::bench::progress {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kClockEvery = 64;  // read the clock every this many messages, not on every one

double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct State {
  std::atomic<bool> active{false};
  std::atomic<std::uint64_t> consumed{0};  // written by the polling thread only
  std::uint64_t total = 0;
  Clock::duration interval{};
  Clock::time_point next_sample{};
  std::atomic<bool>* done = nullptr;
  bool several_pollers = false;
  std::mutex sampling;  // held around next_sample and the sample when several threads poll
  std::mutex mutex;     // guards samples
  std::vector<Sample> samples;
};

State& state() {
  static State s;
  return s;
}

void take_sample(State& s, std::uint64_t consumed, Clock::time_point now) {
  Sample sample{now, cpu_seconds(CLOCK_PROCESS_CPUTIME_ID), cpu_seconds(CLOCK_THREAD_CPUTIME_ID), consumed};
  const std::lock_guard lock(s.mutex);
  s.samples.push_back(sample);
}

rd_kafka_resp_err_t on_consume(rd_kafka_t* /*rk*/, rd_kafka_message_t* message, void* /*opaque*/) {
  State& s = state();
  if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR || !s.active.load(std::memory_order_relaxed)) {
    return RD_KAFKA_RESP_ERR_NO_ERROR;
  }
  // One polling thread counts with a plain load and store, as it always did; several need the atomic add,
  // and the sampling below then runs under the lock.
  const std::uint64_t consumed = s.several_pollers ? s.consumed.fetch_add(1, std::memory_order_relaxed) + 1
                                                   : s.consumed.load(std::memory_order_relaxed) + 1;
  if (!s.several_pollers) s.consumed.store(consumed, std::memory_order_relaxed);
  const bool edge = consumed == 1 || consumed == s.total;
  if (!edge && consumed % kClockEvery != 0) return RD_KAFKA_RESP_ERR_NO_ERROR;
  std::unique_lock<std::mutex> lock(s.sampling, std::defer_lock);
  if (s.several_pollers) lock.lock();
  const auto now = Clock::now();
  if (edge || now >= s.next_sample) {
    take_sample(s, consumed, now);
    s.next_sample = now + s.interval;
  }
  if (consumed == s.total && s.done != nullptr) s.done->store(true);
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

rd_kafka_resp_err_t on_new(rd_kafka_t* rk, const rd_kafka_conf_t* /*conf*/, void* /*opaque*/, char* /*errstr*/,
                           std::size_t /*errstr_size*/) {
  if (rd_kafka_type(rk) != RD_KAFKA_CONSUMER) return RD_KAFKA_RESP_ERR_NO_ERROR;
  return rd_kafka_interceptor_add_on_consume(rk, "bloomgate-bench-progress", on_consume, nullptr);
}

}  // namespace

void start(std::uint64_t total, std::chrono::nanoseconds interval, std::atomic<bool>* done, bool several_pollers) {
  State& s = state();
  s.active.store(false);
  {
    const std::lock_guard lock(s.mutex);
    s.samples.clear();
  }
  s.consumed.store(0);
  s.total = total;
  s.interval = std::chrono::duration_cast<Clock::duration>(interval);
  s.next_sample = Clock::now();
  s.done = done;
  s.several_pollers = several_pollers;
  s.active.store(true);
}

std::vector<Sample> stop() {
  State& s = state();
  s.active.store(false);
  const std::lock_guard lock(s.mutex);
  return std::move(s.samples);
}

std::uint64_t consumed() { return state().consumed.load(std::memory_order_relaxed); }

std::string library_path() {
  Dl_info info{};
  if (dladdr(&state(), &info) == 0 || info.dli_fname == nullptr) return {};
  return info.dli_fname;
}

}  // namespace bloomgate::bench::progress

// The plugin entry point librdkafka looks up by name.
extern "C" __attribute__((visibility("default"))) rd_kafka_resp_err_t conf_init(rd_kafka_conf_t* conf,
                                                                                 void** /*plug_opaquep*/,
                                                                                 char* errstr,
                                                                                 std::size_t errstr_size) {
  const rd_kafka_resp_err_t error = rd_kafka_conf_interceptor_add_on_new(
      conf, "bloomgate-bench-progress", bloomgate::bench::progress::on_new, nullptr);
  if (error != RD_KAFKA_RESP_ERR_NO_ERROR && error != RD_KAFKA_RESP_ERR__CONFLICT) {
    std::snprintf(errstr, errstr_size, "bloomgate-bench-progress: %s", rd_kafka_err2str(error));
    return error;
  }
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}
