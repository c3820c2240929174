// File: state_topic_test_support.h
//
// What the state-topic tests share (state_topic_restore_test.cc, state_topic_scaling_test.cc): the topics'
// partition count and the state topic's name, the in-process service's log captured through a sink of
// their own, and a second run over repeats and new keys that scrapes /metrics for where each partition's
// state came from. Every wait is bounded.
#pragma once

#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>

#include "../support/http_client.h"
#include "bloomgate/app/service_metrics.h"
#include "state_test_support.h"

namespace bloomgate::app::test_support {

inline constexpr int kPartitions = 4;
inline const std::string kStateTopic = "bloomgate-state";

// Lines the service logs while it lives (spdlog's default logger, which the in-process Service uses).
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<Sink>()) { spdlog::default_logger()->sinks().push_back(sink_); }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string text() const { return sink_->text(); }

 private:
  class Sink final : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::string text() {
      const std::lock_guard lock(mutex_);
      return lines_;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& message) override {
      spdlog::memory_buf_t line;
      formatter_->format(message, line);
      lines_.append(line.data(), line.size());
    }
    void flush_() override {}

   private:
    std::string lines_;
  };

  std::shared_ptr<Sink> sink_;
};


// The sum of the samples of `metric` whose labels include `label` (e.g. source="state_topic").
inline double sum_of_samples(const std::string& scrape, const std::string& metric, const std::string& label) {
  double sum = 0;
  std::istringstream lines(scrape);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(metric + "{", 0) != 0 || line.find(label) == std::string::npos) continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

struct SecondRun {
  ServiceSnapshot snapshot;
  std::string scrape;  // /metrics, scraped over HTTP before the stop
  std::string log;
};

// A Service on `config` while 150 repeats of the first run's keys and 150 new keys arrive; stopped once
// it has consumed them.
inline SecondRun run_with_repeats(const TestBroker& broker, const config::Config& config, std::int64_t start_ms) {
  std::vector<std::string> keys = numbered_keys("early", 0, 150);
  const std::vector<std::string> fresh = numbered_keys("late", 0, 150);
  keys.insert(keys.end(), fresh.begin(), fresh.end());
  produce_all(broker, "orders", keyed_events(keys, start_ms + 60'000));
  LogCapture log;
  SecondRun run;
  ServiceThread service(config, broker);
  const ServiceEndpoints endpoints(service.service(), config, config.metrics.listen);
  const std::string address = endpoints.address();
  const auto port = static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
  EXPECT_TRUE(service.wait_until_consumed(300)) << "consumed " << service.snapshot().consumed << " of 300";
  run.scrape = bloomgate::testing::http_request(port, "/metrics").body;
  const std::optional<RunResult> result = service.stop();
  EXPECT_TRUE(result && result->exit_code == 0) << describe(result);
  run.snapshot = service.snapshot();
  run.log = log.text();
  return run;
}

inline double restores(const SecondRun& run, const std::string& source) {
  return sum_of_samples(run.scrape, "bloomgate_restores_total", "source=\"" + source + "\"");
}

}  // namespace bloomgate::app::test_support
