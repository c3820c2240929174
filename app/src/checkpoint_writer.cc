#include "checkpoint_writer.h"

#include <chrono>
#include <span>
#include <utility>

namespace bloomgate::app {
namespace {

GroupWrite write_group(connectors::StateStore& store, const std::vector<connectors::PartitionImage>& images,
                       std::size_t begin, std::size_t end) {
  GroupWrite group{begin, end, {}, std::nullopt, 0};
  const auto started = std::chrono::steady_clock::now();
  try {
    group.written = store.write_checkpoints(std::span(images).subspan(begin, end - begin));
  } catch (const connectors::StateStoreError& e) {
    group.error = e;
  }
  group.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return group;
}

}  // namespace

std::vector<GroupWrite> write_in_groups(connectors::StateStore& store,
                                        const std::vector<connectors::PartitionImage>& images,
                                        std::uint64_t group_bytes) {
  std::vector<GroupWrite> groups;
  std::size_t begin = 0;
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < images.size(); ++i) {
    bytes += images[i].image.record_bytes();
    if (bytes < group_bytes && i + 1 < images.size()) continue;
    groups.push_back(write_group(store, images, begin, i + 1));
    begin = i + 1;
    bytes = 0;
  }
  return groups;
}

CheckpointWriter::~CheckpointWriter() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

// The thread starts first: if it cannot (std::system_error), nothing was submitted and take() never waits.
void CheckpointWriter::submit(connectors::StateStore& store, std::vector<connectors::PartitionImage>&& images,
                              PublishImages publish) {
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  {
    const std::lock_guard lock(mutex_);
    store_ = &store;
    images_ = std::move(images);
    publish_ = std::move(publish);
    pending_ = true;
  }
  has_job_ = true;
  wake_.notify_one();
}

bool CheckpointWriter::finished() const {
  const std::lock_guard lock(mutex_);
  return has_job_ && !pending_;
}

CheckpointWriter::Done CheckpointWriter::take() {
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return !pending_; });
  has_job_ = false;
  return std::exchange(outcome_, Done{});
}

// The stop waits for the job in hand: a write cut off midway is no checkpoint, but a thread killed inside
// RocksDB would be worse.
void CheckpointWriter::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || pending_; });
    if (!pending_) return;
    Done outcome;
    outcome.images = std::move(images_);
    const PublishImages publish = std::exchange(publish_, {});
    connectors::StateStore& store = *store_;
    lock.unlock();
    try {
      outcome.groups = write_in_groups(store, outcome.images, group_bytes_);
      if (publish) outcome.published = publish(outcome.images);
    } catch (...) {
      outcome.fatal = std::current_exception();
    }
    lock.lock();
    outcome_ = std::move(outcome);
    pending_ = false;
    done_.notify_all();
  }
}

}  // namespace bloomgate::app
