// File: kafka_broker.h
//
// A real Apache Kafka broker of one test's own: `scripts/kafka start --dir DIR` (docs/real-kafka.md) as a
// child process, in a fresh temporary directory that is removed with the broker. It has the interface the
// service tests use of the embedded broker (bootstrap_servers, create_topic, set_broker_down/up), so the
// same test bodies run against either (tests/app/test_broker.h).
//
// Nothing outlives the test: the script is started with PR_SET_PDEATHSIG, so it gets SIGTERM (and stops its
// JVM) when the test process dies, even by SIGKILL; the destructor stops it and removes the directory. Every
// wait is bounded; a broker that does not answer in time throws std::runtime_error with its log's tail.
//
// The address is what the script prints (`bootstrap: 127.0.0.1:PORT`, a free port it picks); set_broker_up
// starts the broker again on that port and data, as a restarted Kafka node would come back.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bloomgate/connectors/admin.h"
#include "bloomgate/connectors/kafka_config.h"
#include "bloomgate/connectors/kafka_error.h"
#include "poll_until.h"

#ifndef BLOOMGATE_KAFKA_SCRIPT
#error "BLOOMGATE_KAFKA_SCRIPT must name scripts/kafka"
#endif

namespace bloomgate::test_support {

class KafkaBroker {
 public:
  // The JVM's start, on a loaded 2-core machine, and its clean stop.
  static constexpr std::chrono::seconds kStartLimit{150};
  static constexpr std::chrono::seconds kStopLimit{60};

  // One node (broker and controller); the count is there to match EmbeddedBroker's constructor.
  explicit KafkaBroker(int broker_count = 1) : dir_(make_directory()) {
    if (broker_count != 1) throw std::invalid_argument("scripts/kafka runs a single-node cluster");
    start();
  }
  ~KafkaBroker() {
    // A failed test shows what the broker said: its directory goes with it.
    if (::testing::Test::HasFailure()) std::cout << "the Kafka broker's log, last lines:\n" << log_tail() << std::endl;
    stop();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  KafkaBroker(const KafkaBroker&) = delete;
  KafkaBroker& operator=(const KafkaBroker&) = delete;

  [[nodiscard]] const std::string& bootstrap_servers() const noexcept { return bootstrap_; }

  // Creates `name` with topic-level `configs` (retention.ms, cleanup.policy, ...).
  [[nodiscard]] connectors::KafkaError create_topic(const std::string& name, int partitions, int replication_factor = 1,
                                                    const std::map<std::string, std::string>& configs = {}) const {
    const connectors::Admin admin(connectors::KafkaConfig().with("bootstrap.servers", bootstrap_));
    return admin.create_topic(name, partitions, replication_factor, configs, std::chrono::seconds(30));
  }

  // The whole broker down (a clean stop of its JVM) and up again on the same port and data. The only
  // broker id is 1; -1 means all, as with the embedded broker.
  [[nodiscard]] connectors::KafkaError set_broker_down(std::int32_t broker_id) {
    if (broker_id != 1 && broker_id != -1) return {RD_KAFKA_RESP_ERR__INVALID_ARG, "no broker " + std::to_string(broker_id)};
    stop();
    return {};
  }
  [[nodiscard]] connectors::KafkaError set_broker_up(std::int32_t broker_id) {
    if (broker_id != 1 && broker_id != -1) return {RD_KAFKA_RESP_ERR__INVALID_ARG, "no broker " + std::to_string(broker_id)};
    start();
    return {};
  }

  // The broker stops answering without closing its connections (its JVM stopped with SIGSTOP), as a broker
  // that hangs or a network that drops packets looks to clients; thaw() lets it go on.
  void freeze() const { signal_jvm(SIGSTOP); }
  void thaw() const { signal_jvm(SIGCONT); }

  // The broker's own log (the JVM's), for assertion messages.
  [[nodiscard]] std::string log_tail(std::size_t bytes = 4000) const {
    std::string text = read(dir_ / "script.out") + read(dir_ / "instance" / "broker.log");
    return text.size() > bytes ? text.substr(text.size() - bytes) : text;
  }

 private:
  static std::filesystem::path make_directory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "bloomgate-kafka-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern + " failed");
    return pattern;
  }

  static std::string read(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // The JVM's pid from scripts/kafka's broker.pid ("PID START-TIME").
  void signal_jvm(int number) const {
    std::istringstream line(read(dir_ / "instance" / "broker.pid"));
    pid_t jvm = -1;
    if (!(line >> jvm) || jvm <= 0) throw std::runtime_error("no broker.pid in " + dir_.string());
    ::kill(jvm, number);
  }

  void start() {
    std::vector<std::string> args{BLOOMGATE_KAFKA_SCRIPT, "start", "--dir", (dir_ / "instance").string()};
    if (port_ != 0) {
      args.push_back("--port");
      args.push_back(std::to_string(port_));
    }
    const std::string out_path = (dir_ / "script.out").string();
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {  // only async-signal-safe calls until execv
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(127);  // the test died before the line above
      const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (out >= 0) {
        dup2(out, STDOUT_FILENO);
        dup2(out, STDERR_FILENO);
      }
      execv(argv[0], argv.data());
      _exit(127);
    }
    wait_for_address();
  }

  void wait_for_address() {
    const std::string marker = "bootstrap: ";
    const auto answered = [&] {
      const std::string out = read(dir_ / "script.out");
      const auto at = out.find(marker);
      if (at == std::string::npos || out.find('\n', at) == std::string::npos) return false;
      bootstrap_ = out.substr(at + marker.size(), out.find('\n', at) - at - marker.size());
      port_ = std::stoi(bootstrap_.substr(bootstrap_.rfind(':') + 1));
      return true;
    };
    const auto fail_if_script_exited = [&] {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) != pid_) return;
      pid_ = -1;
      throw std::runtime_error("scripts/kafka start exited before the broker answered:\n" + log_tail());
    };
    const auto step = [&] {
      fail_if_script_exited();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    };
    if (poll_until(answered, kStartLimit, step)) return;
    stop();
    throw std::runtime_error("the Kafka broker did not answer within " + std::to_string(kStartLimit.count()) +
                             " s:\n" + log_tail());
  }

  // SIGTERM to the script, which stops its JVM cleanly; SIGKILL to its process group if it does not end.
  void stop() noexcept {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    if (!poll_until([&] { return waitpid(pid_, &status, WNOHANG) != 0; }, kStopLimit)) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
    pid_ = -1;
  }

  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string bootstrap_;
};

}  // namespace bloomgate::test_support
