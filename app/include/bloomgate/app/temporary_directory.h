// File: temporary_directory.h
//
// A fresh directory under the system's temporary directory (mkdtemp, so two processes never share one),
// removed with everything in it when the object goes. The demo keeps its throwaway state here; tests use
// it for configs, logs and state directories.
#pragma once

#include <filesystem>
#include <string>

namespace bloomgate::app {

class TemporaryDirectory {
 public:
  // "<tmp>/<prefix>-XXXXXX". Throws std::runtime_error naming the path when it cannot be created.
  explicit TemporaryDirectory(const std::string& prefix);
  ~TemporaryDirectory();
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

  const std::string& path() const noexcept { return path_; }
  // A path inside it (not created).
  std::string path(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }

 private:
  std::string path_;
};

}  // namespace bloomgate::app
