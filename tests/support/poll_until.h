// File: poll_until.h
//
// The one bounded wait of the tests: ask a condition until it holds or a time limit passes. Between two
// asks the caller's step runs (by default a short sleep; a consumer's poll, a wait on a future or on a
// child process where the wait itself is the work).
#pragma once

#include <chrono>
#include <concepts>
#include <thread>
#include <utility>

namespace bloomgate::test_support {

// Asks `done` until it says yes (true) or `limit` has passed (false), running `step` between two asks.
// `done` is asked once more after the limit, so a condition met by the last step still counts.
template <class Done, std::invocable Step>
bool poll_until(Done&& done, std::chrono::steady_clock::duration limit, Step&& step) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return done();
    step();
  }
  return true;
}

// The same with a sleep of `interval` as the step.
template <class Done>
bool poll_until(Done&& done, std::chrono::steady_clock::duration limit,
                std::chrono::steady_clock::duration interval = std::chrono::milliseconds(50)) {
  return poll_until(std::forward<Done>(done), limit, [interval] { std::this_thread::sleep_for(interval); });
}

}  // namespace bloomgate::test_support
