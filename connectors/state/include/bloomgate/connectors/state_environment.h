// File: state_environment.h
//
// StateEnvironment: the file system a StateStore keeps its files on. StateStoreOptions (and the service's
// options) name it as a project type, so their headers need no RocksDB type. Without one the store uses
// the local file system; tests build one over a fault-injecting RocksDB FileSystem
// (tests/support/full_disk_file_system.h). Only code that builds an environment includes this header, and
// it links RocksDB itself.
#pragma once

#include <memory>

namespace rocksdb {
class Env;
class FileSystem;
}  // namespace rocksdb

namespace bloomgate::connectors {

class StateEnvironment {
 public:
  explicit StateEnvironment(std::shared_ptr<rocksdb::FileSystem> file_system);
  ~StateEnvironment();
  StateEnvironment(const StateEnvironment&) = delete;
  StateEnvironment& operator=(const StateEnvironment&) = delete;

  // The RocksDB environment over the file system; owned, and valid while this object lives.
  rocksdb::Env* env() const noexcept { return env_.get(); }

 private:
  std::unique_ptr<rocksdb::Env> env_;
};

}  // namespace bloomgate::connectors
