// File: state_directory.h
//
// StateDirectory: the state store in state.dir, opened before anything touches Kafka, moved aside and opened
// empty when it is corrupt (docs/state.md). One per process: the workers that share it (service_workers.h)
// are handed it, and a quarantine by any of them moves every one of them to the new database at once.
#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <string>

#include "bloomgate/config/config.h"
#include "bloomgate/connectors/state_store.h"

namespace bloomgate::app {

// A StateStoreError's message, starting with "state store: " once (most of them already do).
std::string store_message(const std::exception& error);

class StateDirectory {
 public:
  StateDirectory(const config::Config& config, const connectors::StateEnvironment* environment);

  // Before anything else: a second process on the same directory stops here (std::runtime_error, exit 1)
  // with the directory in its message, before it touches Kafka. A corrupt store is moved aside.
  void open();
  void close() { store_.reset(); }
  connectors::StateStore& store() { return *store_; }
  // Moves the damaged directory aside and opens an empty one: in place while the store is open
  // (StateStore::quarantine_and_reopen, so every thread using it moves too), else by path. Thread-safe
  // while the store is open.
  void quarantine_and_reopen();
  // The directory was moved aside in this process (the partitions whose state was there must rebuild).
  bool quarantined() const { return quarantined_.load(); }

 private:
  connectors::StateStoreOptions store_options() const;

  const config::Config& config_;
  const connectors::StateEnvironment* environment_;
  std::unique_ptr<connectors::StateStore> store_;
  std::atomic<bool> quarantined_{false};
};

}  // namespace bloomgate::app
