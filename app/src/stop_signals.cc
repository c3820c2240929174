#include "bloomgate/app/stop_signals.h"

#include <csignal>
#include <stdexcept>

namespace bloomgate::app {
namespace {

std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_first_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free signal number");

struct sigaction g_previous_term {};
struct sigaction g_previous_int {};
struct sigaction g_previous_hup {};

extern "C" void request_stop(int signal_number) {
  int none = 0;
  g_first_signal.compare_exchange_strong(none, signal_number);
  g_stop_requested.store(true);
  // The next one of the same signal takes the default action (terminate).
  std::signal(signal_number, SIG_DFL);
}

void install(int signal_number, struct sigaction& previous) {
  struct sigaction action {};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  if (sigaction(signal_number, &action, &previous) != 0) throw std::runtime_error("cannot install a signal handler");
}

}  // namespace

StopSignals::StopSignals() {
  g_stop_requested.store(false);
  g_first_signal.store(0);
  install(SIGTERM, g_previous_term);
  install(SIGINT, g_previous_int);
  install(SIGHUP, g_previous_hup);
}

StopSignals::~StopSignals() {
  sigaction(SIGTERM, &g_previous_term, nullptr);
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGHUP, &g_previous_hup, nullptr);
}

const std::atomic<bool>& StopSignals::requested() const noexcept { return g_stop_requested; }

const char* StopSignals::received_name() noexcept {
  switch (g_first_signal.load()) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return "";
  }
}

}  // namespace bloomgate::app
