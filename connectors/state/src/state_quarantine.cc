// File: state_quarantine.cc
#include "state_quarantine.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "bloomgate/connectors/state_store.h"

namespace bloomgate::connectors::state_quarantine {
namespace {

namespace fs = std::filesystem;
using Kind = StateStoreError::Kind;

constexpr std::string_view kPartialSuffix = ".partial";

bool is_quarantine_folder(std::string_view name) { return name.starts_with(kFolderPrefix); }
bool is_partial(std::string_view name) { return is_quarantine_folder(name) && name.ends_with(kPartialSuffix); }

// What a quarantine leaves where it is: earlier quarantines, and the file system's own lost+found.
bool stays(std::string_view name) { return is_quarantine_folder(name) || name == "lost+found"; }

[[noreturn]] void fail(const std::string& what, const std::error_code& error) {
  throw StateStoreError(Kind::kIo, "state store: " + what + ": " + error.message());
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::error_code error;
  std::vector<fs::path> found;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    found.push_back(it->path());
  }
  if (error) fail("cannot list " + dir.string(), error);
  return found;
}

std::optional<fs::path> interrupted_folder(const fs::path& dir) {
  for (const fs::path& entry : entries(dir)) {
    if (is_partial(entry.filename().string())) return entry;
  }
  return std::nullopt;
}

std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  return stamp;
}

// Orders quarantine folders oldest first: by time stamp, then by the "-n" of the same second.
std::pair<std::string, int> age_key(const std::string& name) {
  const std::size_t stamp_end = std::string(kFolderPrefix).size() + std::string_view("YYYYMMDDTHHMMSSZ").size();
  if (name.size() <= stamp_end + 1) return {name, 0};
  int n = 0;
  std::from_chars(name.data() + stamp_end + 1, name.data() + name.size(), n);
  return {name.substr(0, stamp_end), n};
}

// "<dir>/quarantine-<UTC time>.partial"; a later quarantine within the same second gets "-1", "-2", ...,
// numbered after every folder of that second still there, so the newest always sorts last.
fs::path fresh_folder(const fs::path& dir) {
  const std::string base = std::string(kFolderPrefix) + utc_stamp();
  int next = 0;
  for (const fs::path& entry : entries(dir)) {
    std::string name = entry.filename().string();
    if (is_partial(name)) name.resize(name.size() - kPartialSuffix.size());
    const auto [stamp, n] = age_key(name);
    if (stamp == base) next = std::max(next, n + 1);
  }
  const std::string name = next == 0 ? base : base + "-" + std::to_string(next);
  return dir / (name + std::string(kPartialSuffix));
}

void remove_oldest_beyond_kept(const fs::path& dir) {
  std::vector<std::string> finished;
  for (const fs::path& entry : entries(dir)) {
    const std::string name = entry.filename().string();
    if (is_quarantine_folder(name) && !is_partial(name)) finished.push_back(name);
  }
  if (finished.size() <= kQuarantinesKept) return;
  std::sort(finished.begin(), finished.end(),
            [](const std::string& a, const std::string& b) { return age_key(a) < age_key(b); });
  for (std::size_t i = 0; i + kQuarantinesKept < finished.size(); ++i) {
    std::error_code error;
    fs::remove_all(dir / finished[i], error);
    if (error) fail("cannot remove the old quarantine " + (dir / finished[i]).string(), error);
  }
}

// Steps 2 and 3 of the header into `folder`, a ".partial" folder inside `dir`.
std::string finish(const fs::path& dir, const fs::path& folder) {
  std::error_code error;
  for (const fs::path& entry : entries(dir)) {
    if (stays(entry.filename().string())) continue;
    fs::rename(entry, folder / entry.filename(), error);
    if (error) fail("cannot move " + entry.string() + " aside into " + folder.string(), error);
  }
  std::string name = folder.filename().string();
  name.resize(name.size() - kPartialSuffix.size());
  const fs::path finished = dir / name;
  fs::rename(folder, finished, error);
  if (error) fail("cannot rename " + folder.string() + " to " + finished.string(), error);
  remove_oldest_beyond_kept(dir);
  return finished.string();
}

}  // namespace

std::string move_contents_aside(const std::string& dir) {
  const fs::path root(dir);
  const fs::path folder = interrupted_folder(root).value_or(fresh_folder(root));
  std::error_code error;
  fs::create_directory(folder, error);
  if (error) fail("cannot create " + folder.string(), error);
  return finish(root, folder);
}

void finish_interrupted(const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) return;
  if (const std::optional<fs::path> folder = interrupted_folder(dir)) finish(dir, *folder);
}

}  // namespace bloomgate::connectors::state_quarantine
