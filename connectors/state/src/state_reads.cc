#include "state_reads.h"

namespace bloomgate::connectors::state_reads {

Kind kind_of(const rocksdb::Status& status) {
  if (status.IsCorruption()) return Kind::kCorrupt;
  if (status.IsInvalidArgument()) return Kind::kInvalidArgument;
  return Kind::kIo;
}

[[noreturn]] void fail(const rocksdb::Status& status, const std::string& context) {
  throw StateStoreError(kind_of(status), "state store: " + context + ": " + status.ToString());
}

rocksdb::ReadOptions read_options() {
  rocksdb::ReadOptions options;
  options.verify_checksums = true;
  return options;
}

rocksdb::ReadOptions scan_options() {
  rocksdb::ReadOptions options = read_options();
  options.fill_cache = false;
  options.readahead_size = 0;
  return options;
}

}  // namespace bloomgate::connectors::state_reads
