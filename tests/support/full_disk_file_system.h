// File: full_disk_file_system.h
//
// A RocksDB file system for tests that need a checkpoint write to fail the way a full disk fails it. The
// state store's tests and the service's (through ServiceOptions::state_environment) share it.
#pragma once

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "bloomgate/connectors/state_environment.h"

namespace bloomgate::testing {

// A file system whose writable files fail with NoSpace while `full` is set, as a full disk does. With
// `report_free_space` false it cannot tell how much space is free (RocksDB then skips its own recovery
// from a full disk, and the store reopens without checking for room first).
class FullDiskFileSystem : public rocksdb::FileSystemWrapper {
 public:
  FullDiskFileSystem(std::shared_ptr<std::atomic<bool>> full, bool report_free_space)
      : FileSystemWrapper(rocksdb::FileSystem::Default()),
        full_(std::move(full)),
        report_free_space_(report_free_space) {}
  static const char* kClassName() { return "FullDiskFileSystem"; }
  const char* Name() const override { return kClassName(); }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    return wrap(target()->NewWritableFile(name, options, result, dbg), result);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       rocksdb::IODebugContext* dbg) override {
    return wrap(target()->ReopenWritableFile(name, options, result, dbg), result);
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& name, const std::string& old_name,
                                      const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      rocksdb::IODebugContext* dbg) override {
    return wrap(target()->ReuseWritableFile(name, old_name, options, result, dbg), result);
  }
  rocksdb::IOStatus GetFreeSpace(const std::string& path, const rocksdb::IOOptions& options, std::uint64_t* space,
                                 rocksdb::IODebugContext* dbg) override {
    if (!report_free_space_) return rocksdb::IOStatus::NotSupported("free space");
    return target()->GetFreeSpace(path, options, space, dbg);
  }

 private:
  class File : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(std::unique_ptr<rocksdb::FSWritableFile> file, std::shared_ptr<std::atomic<bool>> full)
        : FSWritableFileOwnerWrapper(std::move(file)), full_(std::move(full)) {}
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override {
      if (*full_) return no_space();
      return target()->Append(data, options, dbg);
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             const rocksdb::DataVerificationInfo& info, rocksdb::IODebugContext* dbg) override {
      if (*full_) return no_space();
      return target()->Append(data, options, info, dbg);
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, std::uint64_t offset,
                                       const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
      if (*full_) return no_space();
      return target()->PositionedAppend(data, offset, options, dbg);
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, std::uint64_t offset,
                                       const rocksdb::IOOptions& options, const rocksdb::DataVerificationInfo& info,
                                       rocksdb::IODebugContext* dbg) override {
      if (*full_) return no_space();
      return target()->PositionedAppend(data, offset, options, info, dbg);
    }

   private:
    static rocksdb::IOStatus no_space() { return rocksdb::IOStatus::NoSpace("injected full disk"); }
    std::shared_ptr<std::atomic<bool>> full_;
  };

  rocksdb::IOStatus wrap(rocksdb::IOStatus status, std::unique_ptr<rocksdb::FSWritableFile>* result) {
    if (status.ok()) *result = std::make_unique<File>(std::move(*result), full_);
    return status;
  }

  std::shared_ptr<std::atomic<bool>> full_;
  bool report_free_space_;
};

// An environment over it, for StateStoreOptions::environment and ServiceOptions::state_environment.
inline std::unique_ptr<connectors::StateEnvironment> full_disk_env(std::shared_ptr<std::atomic<bool>> full,
                                                                  bool report_free_space) {
  return std::make_unique<connectors::StateEnvironment>(
      std::make_shared<FullDiskFileSystem>(std::move(full), report_free_space));
}

}  // namespace bloomgate::testing
