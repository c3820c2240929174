// File: fpr_probe.h
//
// FprProbe: the false-positive rate measured the way a user meets it, on one partition's filter.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <random>
#include <string_view>

#include "bloomgate/app/service.h"
#include "bloomgate/filters/filter.h"

namespace bloomgate::app {

// Keys that were never inserted, asked at the filter's present. Probe keys are 16 random bytes from a
// generator with a fixed seed (the same probes in every run); a real key equal to one is a 2^-128 event.
class FprProbe {
 public:
  // Asks kFprProbesPerSnapshot keys; returns the hits, and keeps the window for observed().
  std::uint64_t probe(const filters::Filter& filter, filters::TimePoint now) {
    std::uint64_t hits = 0;
    for (std::uint64_t i = 0; i < kFprProbesPerSnapshot; ++i) {
      const std::array<std::uint64_t, 2> bytes{random_(), random_()};
      const std::string_view key(reinterpret_cast<const char*>(bytes.data()), sizeof bytes);
      if (filter.contains(key, now)) ++hits;
    }
    window_.push_back(hits);
    window_hits_ += hits;
    if (window_.size() > kFprWindowSnapshots) {
      window_hits_ -= window_.front();
      window_.pop_front();
    }
    return hits;
  }

  double observed() const {
    if (window_.empty()) return 0;
    return static_cast<double>(window_hits_) / static_cast<double>(window_.size() * kFprProbesPerSnapshot);
  }

 private:
  std::mt19937_64 random_{0x6670722d70726f62};  // "fpr-prob"
  std::deque<std::uint64_t> window_;
  std::uint64_t window_hits_ = 0;
};

}  // namespace bloomgate::app
