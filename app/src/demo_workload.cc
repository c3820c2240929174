#include "bloomgate/app/demo_workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace bloomgate::app {
namespace {

constexpr std::size_t kZipfRanks = 100'000;

std::vector<double> zipf_cdf(double exponent) {
  std::vector<double> cdf(kZipfRanks);
  double total = 0;
  for (std::size_t rank = 0; rank < kZipfRanks; ++rank) {
    total += 1.0 / std::pow(static_cast<double>(rank + 1), exponent);
    cdf[rank] = total;
  }
  for (double& c : cdf) c /= total;
  return cdf;
}

std::string order_json(std::uint64_t key_number, std::int64_t timestamp_ms, std::string& key_out) {
  char buf[160];
  const int n = std::snprintf(buf, sizeof buf,
                              R"({"order_id":"order-%llu","customer":"c-%llu","amount_cents":%llu,"ts":%lld,"status":"paid"})",
                              static_cast<unsigned long long>(key_number),
                              static_cast<unsigned long long>(key_number % 9973),
                              static_cast<unsigned long long>(key_number % 100'000),
                              static_cast<long long>(timestamp_ms));
  key_out = "order-" + std::to_string(key_number);
  return std::string(buf, static_cast<std::size_t>(std::max(n, 0)));
}

}  // namespace

Workload::Workload(WorkloadOptions options)
    : options_(options), rng_(options.seed), zipf_cdf_(zipf_cdf(options.zipf_exponent)) {}

// A key seen within the TTL: rank r among the recent keys, newest first, with Zipf probability, so a few
// keys repeat often and most rarely.
std::uint64_t Workload::pick_recent_key() {
  const std::uint64_t live = recent_keys_.size() - recent_begin_;
  const double u = unit_(rng_);
  const auto rank = static_cast<std::uint64_t>(std::lower_bound(zipf_cdf_.begin(), zipf_cdf_.end(), u) - zipf_cdf_.begin());
  return recent_keys_[recent_keys_.size() - 1 - (rank % live)];
}

// A key whose last new sighting left the TTL window: uniformly among the older ones.
std::uint64_t Workload::pick_stale_key() {
  return recent_keys_[static_cast<std::size_t>(unit_(rng_) * static_cast<double>(recent_begin_))];
}

WorkloadEvent Workload::next() {
  WorkloadEvent event;
  event.timestamp_ms = options_.start_ms +
                       static_cast<std::int64_t>(static_cast<double>(produced_) * 1000.0 / options_.events_per_second);
  while (recent_begin_ < recent_keys_.size() &&
         event.timestamp_ms - recent_times_[recent_begin_] > options_.ttl.count()) {
    ++recent_begin_;
  }
  const double choice = unit_(rng_);
  std::uint64_t key;
  if (choice < options_.repeat_share && recent_begin_ < recent_keys_.size()) {
    key = pick_recent_key();
  } else if (choice < options_.repeat_share + options_.beyond_ttl_share && recent_begin_ > 0) {
    key = pick_stale_key();
  } else {
    key = next_key_++;
    recent_keys_.push_back(key);
    recent_times_.push_back(event.timestamp_ms);
  }
  event.value = order_json(key, event.timestamp_ms, event.key);
  ++produced_;
  return event;
}

ExactAnswer::ExactAnswer(std::chrono::milliseconds ttl, bool refresh_on_duplicate)
    : ttl_ms_(ttl.count()), refresh_(refresh_on_duplicate) {}

bool ExactAnswer::observe(const std::string& key, std::int64_t timestamp_ms) {
  const auto it = recorded_ms_.find(key);
  const bool seen_within = it != recorded_ms_.end() && timestamp_ms - it->second <= ttl_ms_;
  if (!seen_within) last_gap_ms_ = it == recorded_ms_.end() ? -1 : timestamp_ms - it->second;
  if (!seen_within || refresh_) recorded_ms_[key] = timestamp_ms;
  return !seen_within;
}

bool ExactAnswer::last_new_was_late(std::chrono::milliseconds slack) const {
  return last_gap_ms_ >= 0 && last_gap_ms_ <= ttl_ms_ + slack.count();
}

}  // namespace bloomgate::app
