// File: client_hooks.h
//
// The functions every client (producer, consumer, admin, embedded broker) reports to, and the guard
// that keeps C++ exceptions out of librdkafka.
//
// librdkafka calls back through C frames; an exception unwinding through them is undefined behaviour
// (cppkafka's CallbackInvoker exists for this). So every callback this layer installs runs the user's
// function inside `CallbackGuard::invoke`, which catches everything, counts it and reports it through
// the log function (or stderr if there is none, or if the log function throws too). Nothing escapes.
//
// Threads: librdkafka calls the log callback from its internal threads (we do not set log.queue, so
// that log lines are not lost when nobody polls), so `on_log` must be thread-safe (spdlog loggers are).
// `on_error` is served by poll()/flush()/consumer poll on the calling thread.
#pragma once

#include "bloomgate/connectors/kafka_error.h"

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <string_view>
#include <utility>

namespace bloomgate::connectors {

// Syslog levels as librdkafka uses them: 0 emergency .. 3 error, 4 warning, 6 info, 7 debug.
using LogFunction = std::function<void(int level, std::string_view facility, std::string_view message)>;
// A client-level error: broker transport failures, all brokers down, fatal errors.
using ErrorFunction = std::function<void(const KafkaError& error)>;

struct ClientHooks {
  LogFunction on_log;      // thread-safe; empty: librdkafka's lines are dropped, exceptions go to stderr
  ErrorFunction on_error;  // empty: client errors are logged through on_log
};

class CallbackGuard {
 public:
  explicit CallbackGuard(ClientHooks hooks) : hooks_(std::move(hooks)) {}
  CallbackGuard(const CallbackGuard&) = delete;
  CallbackGuard& operator=(const CallbackGuard&) = delete;
  virtual ~CallbackGuard() = default;

  // Runs `body`; an exception it throws is counted and reported, never rethrown.
  template <class Body>
  void invoke(std::string_view callback_name, Body&& body) noexcept {
    try {
      body();
    } catch (const std::exception& e) {
      report_exception(callback_name, e.what());
    } catch (...) {
      report_exception(callback_name, "an exception not derived from std::exception");
    }
  }

  // What the C log and error callbacks call; both are guarded.
  void log(int level, std::string_view facility, std::string_view message) noexcept;
  void error(const KafkaError& error) noexcept;

  // How many exceptions user functions have thrown into this client's callbacks.
  [[nodiscard]] std::uint64_t exceptions_caught() const noexcept { return exceptions_caught_.load(); }

 private:
  void report_exception(std::string_view callback_name, std::string_view what) noexcept;

  ClientHooks hooks_;
  std::atomic<std::uint64_t> exceptions_caught_{0};
};

namespace detail {
// Makes `guard` the conf's opaque and installs the guarded log and error callbacks. Every client keeps a
// CallbackGuard (or a class derived from it) at a stable address for the whole life of its handle, and
// its own callbacks (delivery, rebalance) static_cast the opaque back to that class.
void install_guarded_callbacks(rd_kafka_conf_t* conf, CallbackGuard* guard);
}  // namespace detail

}  // namespace bloomgate::connectors
