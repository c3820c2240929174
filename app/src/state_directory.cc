#include "state_directory.h"

#include <spdlog/spdlog.h>

#include <stdexcept>

namespace bloomgate::app {

using connectors::StateStore;
using connectors::StateStoreError;

std::string store_message(const std::exception& error) {
  const std::string what = error.what();
  return what.rfind("state store: ", 0) == 0 ? what : "state store: " + what;
}

StateDirectory::StateDirectory(const config::Config& config, const connectors::StateEnvironment* environment)
    : config_(config), environment_(environment) {}

// RocksDB's own warnings go to the debug level and its errors to warn: what they mean for the service
// (a failed checkpoint, corrupt state) is logged at error level by the service itself, with the partition.
connectors::StateStoreOptions StateDirectory::store_options() const {
  connectors::StateStoreOptions options;
  options.log = [](std::string_view level, std::string_view message) {
    spdlog::log(level == "warn" ? spdlog::level::debug : spdlog::level::warn, "rocksdb {}: {}", level, message);
  };
  options.environment = environment_;
  return options;
}

void StateDirectory::open() {
  const std::string& dir = config_.state.dir;
  try {
    store_ = StateStore::open(dir, store_options());
  } catch (const StateStoreError& e) {
    if (e.kind() != StateStoreError::Kind::kCorrupt) throw std::runtime_error(store_message(e));
    spdlog::error("{}; moving the state directory's contents aside and starting with empty state", store_message(e));
    quarantine_and_reopen();
  }
  if (config_.kafka.brokers == config::kEmbeddedBrokers) {
    // The embedded broker starts empty with every run: state from an earlier run describes topics that
    // no longer exist, and would drop their new events as duplicates.
    try {
      for (const auto& checkpoint : store_->list()) store_->drop(checkpoint.id);
    } catch (const StateStoreError& e) {
      if (e.kind() != StateStoreError::Kind::kCorrupt) throw std::runtime_error(store_message(e));
      store_.reset();
      quarantine_and_reopen();
      quarantined_ = false;  // nothing of value was lost: the state was stale anyway
    }
  }
  spdlog::info("state store open at {}", dir);
}

void StateDirectory::quarantine_and_reopen() {
  std::string moved;
  if (store_) {
    moved = store_->quarantine_and_reopen();
  } else {
    moved = StateStore::quarantine(config_.state.dir);
    store_ = StateStore::open(config_.state.dir, store_options());
  }
  spdlog::error("state store: the damaged state was moved to {}; the partitions whose state was there "
                "rebuild their filters from the input history before their committed offsets",
                moved);
  quarantined_ = true;
}

}  // namespace bloomgate::app
