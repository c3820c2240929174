// File: state_quarantine.h
//
// Setting a damaged state directory aside without renaming the directory itself: a state directory is
// often a mount point (a Docker VOLUME, a Kubernetes PersistentVolumeClaim), which rename(2) refuses with
// EBUSY. Instead its contents move into a folder inside it, "<dir>/quarantine-<UTC time>[-n]", in three
// steps that a crash can interrupt at any point:
//   1. create "<dir>/quarantine-<UTC time>[-n].partial";
//   2. rename every entry of <dir> into it, except the quarantine folders and `lost+found` (the root of an
//      ext4 volume has one, and fsck expects it there);
//   3. rename the folder to its final name (without ".partial"), then remove the oldest quarantine folders
//      beyond kQuarantinesKept, so a damaged disk that is quarantined again and again does not fill the
//      volume with copies.
// A ".partial" folder left by a crash is finished (steps 2 and 3) before the directory is opened for
// writing, and by the next quarantine: files of the damaged database are never left beside a new one.
// RocksDB ignores the quarantine folders (it only reads the files it names), and so does everything that
// reads the state directory. Private to the state store: state_store.cc is the only user.
#pragma once

#include <cstddef>
#include <string>

namespace bloomgate::connectors::state_quarantine {

inline constexpr const char* kFolderPrefix = "quarantine-";
inline constexpr std::size_t kQuarantinesKept = 3;

// Moves the contents of `dir` (an existing directory, not open) into a new quarantine folder inside it
// and returns the folder's path. Throws StateStoreError kIo when a move fails.
std::string move_contents_aside(const std::string& dir);

// Finishes a quarantine that a crash interrupted (a ".partial" folder in `dir`); does nothing otherwise.
void finish_interrupted(const std::string& dir);

}  // namespace bloomgate::connectors::state_quarantine
