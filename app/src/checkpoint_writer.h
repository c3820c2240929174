// File: checkpoint_writer.h
//
// Writing checkpoints to the state store in group commits (one synced WriteBatch for many partitions), on
// the calling thread (write_in_groups) or on a thread of its own (CheckpointWriter), so that the service
// thread goes on consuming while RocksDB writes its log and waits for fdatasync. docs/state.md,
// "Checkpoints off the polling thread", says when the service uses which and why that keeps the state
// invariant.
//
// Thread-safety: one owner thread calls submit(), finished() and take(); the writer's thread only runs
// the job between them.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bloomgate/connectors/state_store.h"
#include "state_topic_publisher.h"

namespace bloomgate::app {

// One synced WriteBatch: images [begin, end) of a write, all written or none.
struct GroupWrite {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::vector<connectors::CheckpointWrite> written;  // one per image when the batch was written
  std::optional<connectors::StateStoreError> error;  // set when it was not
  double seconds = 0;
};

// Writes `images` in order, a new batch whenever the images so far add up to `group_bytes` or more. A
// StateStoreError fails its batch only; any other exception propagates.
std::vector<GroupWrite> write_in_groups(connectors::StateStore& store,
                                        const std::vector<connectors::PartitionImage>& images,
                                        std::uint64_t group_bytes);

// What a job does after the store write, on the writer's thread, with the same images: their publication
// to the state topic (state_topic_publisher.h).
using PublishImages = std::function<std::vector<StatePublication>(const std::vector<connectors::PartitionImage>&)>;

class CheckpointWriter {
 public:
  struct Done {
    std::vector<connectors::PartitionImage> images;
    std::vector<GroupWrite> groups;
    std::vector<StatePublication> published;  // one per image from the job's PublishImages; empty without one
    std::exception_ptr fatal;  // anything but a StateStoreError (std::bad_alloc): the service stops
  };

  explicit CheckpointWriter(std::uint64_t group_bytes) : group_bytes_(group_bytes) {}
  ~CheckpointWriter();  // lets the job in hand finish (the store must outlive this)
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Starts writing; requires no job submitted and not yet taken. `images` is moved from only once the
  // job is in (when the thread cannot start, std::system_error leaves it as it was).
  void submit(connectors::StateStore& store, std::vector<connectors::PartitionImage>&& images,
              PublishImages publish = {});
  bool busy() const noexcept { return has_job_; }
  bool finished() const;
  // Waits for the submitted job and hands back its outcome.
  Done take();

 private:
  void run();

  const std::uint64_t group_bytes_;
  bool has_job_ = false;  // the owner's view: submitted and not taken
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  connectors::StateStore* store_ = nullptr;
  std::vector<connectors::PartitionImage> images_;
  PublishImages publish_;
  bool pending_ = false;  // submitted, not yet picked up or still being written
  bool stop_ = false;
  Done outcome_;
  std::thread thread_;  // last: started at the first submit
};

}  // namespace bloomgate::app
