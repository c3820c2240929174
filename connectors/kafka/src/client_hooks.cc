// File: client_hooks.cc
#include "bloomgate/connectors/client_hooks.h"

#include <array>
#include <cstdio>
#include <string>

namespace bloomgate::connectors {
namespace {

constexpr int kLevelError = 3;

// The last resort when there is no log function or it failed: never throws.
void write_to_stderr(std::string_view facility, std::string_view message) noexcept {
  std::fprintf(stderr, "bloomgate connectors [%.*s] %.*s\n", static_cast<int>(facility.size()), facility.data(),
               static_cast<int>(message.size()), message.data());
}

CallbackGuard* guard_of(const rd_kafka_t* handle) noexcept {
  return static_cast<CallbackGuard*>(rd_kafka_opaque(handle));
}

void log_trampoline(const rd_kafka_t* handle, int level, const char* facility, const char* message) {
  // The opaque is set before rd_kafka_new, so it is there even for lines logged while the handle is created.
  if (CallbackGuard* guard = guard_of(handle)) guard->log(level, facility, message);
}

void error_trampoline(rd_kafka_t* handle, int code, const char* reason, void* opaque) {
  auto* guard = static_cast<CallbackGuard*>(opaque);
  if (guard == nullptr) return;
  const auto error_code = static_cast<rd_kafka_resp_err_t>(code);
  if (error_code == RD_KAFKA_RESP_ERR__FATAL) {
    // The event only says "fatal"; the underlying reason is kept by the handle.
    std::array<char, 512> fatal_reason{};
    const rd_kafka_resp_err_t underlying = rd_kafka_fatal_error(handle, fatal_reason.data(), fatal_reason.size());
    KafkaError::Classification fatal;
    fatal.fatal = true;
    guard->error(KafkaError(underlying, std::string("fatal: ") + fatal_reason.data(), fatal));
    return;
  }
  guard->error(KafkaError(error_code, reason != nullptr ? reason : ""));
}

}  // namespace

void CallbackGuard::log(int level, std::string_view facility, std::string_view message) noexcept {
  if (!hooks_.on_log) return;
  invoke("log", [&] { hooks_.on_log(level, facility, message); });
}

void CallbackGuard::error(const KafkaError& error) noexcept {
  if (hooks_.on_error) {
    invoke("error", [&] { hooks_.on_error(error); });
    return;
  }
  try {
    log(kLevelError, "ERROR", error.describe());
  } catch (...) {  // describe() allocates
    write_to_stderr("ERROR", "client error (could not format it)");
  }
}

void CallbackGuard::report_exception(std::string_view callback_name, std::string_view what) noexcept {
  exceptions_caught_.fetch_add(1);
  try {
    const std::string message = "exception in the " + std::string(callback_name) +
                                " callback, caught before it reached librdkafka: " + std::string(what);
    if (hooks_.on_log && callback_name != "log") {
      try {
        hooks_.on_log(kLevelError, "CALLBACK", message);
        return;
      } catch (...) {
        // The log function failed too: fall through to stderr.
      }
    }
    write_to_stderr("CALLBACK", message);
  } catch (...) {
    write_to_stderr("CALLBACK", "exception in a callback (could not format it)");
  }
}

namespace detail {

void install_guarded_callbacks(rd_kafka_conf_t* conf, CallbackGuard* guard) {
  rd_kafka_conf_set_opaque(conf, guard);
  rd_kafka_conf_set_log_cb(conf, log_trampoline);
  rd_kafka_conf_set_error_cb(conf, error_trampoline);
}

}  // namespace detail
}  // namespace bloomgate::connectors
