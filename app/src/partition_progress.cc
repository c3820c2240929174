#include "partition_progress.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace bloomgate::app {

void PartitionProgress::check() const {
  assert(checkpointed_ <= next_ && "a checkpoint never runs ahead of processing");
  assert((committed_ < 0 || committed_ <= next_) && "nothing is committed past what was processed");
  assert((positioned() || (checkpointed_ < 0 && committed_ < 0)) && "no checkpoint or commit without a position");
}

std::int64_t PartitionProgress::output_position(std::int64_t max_acked) const {
  if (!delivered_.empty()) {
    std::int64_t first = delivered_.begin()->second;
    for (const auto& [input, output] : delivered_) first = std::min(first, output);
    return first;
  }
  return std::max(output_floor_, max_acked < 0 ? -1 : max_acked + 1);
}

void PartitionProgress::restored(std::int64_t next_offset, std::int64_t output_offset) {
  assert(!positioned() && "restored once, at assignment");
  next_ = next_offset;
  checkpointed_ = next_offset;
  checkpointed_output_ = output_offset;
  check();
}

void PartitionProgress::started_at(std::int64_t offset) {
  assert(!positioned() && checkpointed_ < 0 && "started once, without a checkpoint");
  next_ = offset;
  check();
}

void PartitionProgress::reconciled(std::int64_t output_end, Reconciled delivered) {
  output_floor_ = output_end;
  delivered_at_last_commit_ = delivered;
  delivered_ = std::move(delivered);
}

bool PartitionProgress::take_delivered(std::int64_t offset) {
  if (delivered_.empty()) return false;
  delivered_.erase(delivered_.begin(), delivered_.lower_bound(offset));
  if (delivered_.empty() || delivered_.begin()->first != offset) return false;
  delivered_.erase(delivered_.begin());
  return true;
}

void PartitionProgress::processed(std::int64_t offset) {
  assert(offset >= 0 && offset >= checkpointed_ && "an event before the last checkpoint is processed again only "
                                                   "after a rewind to it");
  next_ = offset + 1;
  check();
}

void PartitionProgress::image_captured() {
  full_image_next_ = false;
  unwritten_drops_.clear();
}

void PartitionProgress::image_unwritten(const std::vector<std::uint64_t>& drops) {
  full_image_next_ = true;
  unwritten_drops_.insert(unwritten_drops_.end(), drops.begin(), drops.end());
}

void PartitionProgress::checkpoint_written(std::int64_t next_offset, std::int64_t output_offset) {
  assert(next_offset >= 0 && next_offset <= next_ && "a checkpoint is of what was processed");
  checkpointed_ = next_offset;
  checkpointed_output_ = output_offset;
  check();
}

void PartitionProgress::store_replaced() {
  full_image_next_ = true;
  checkpointed_ = -1;  // not in the new directory: the next checkpoint writes it, events or not
  check();
}

void PartitionProgress::commit_sent() {
  assert(checkpointed_ >= 0 && "at_least_once commits only a written checkpoint");
  committed_ = checkpointed_;
  check();
}

void PartitionProgress::commit_refused(std::int64_t offset) {
  if (committed_ == offset) committed_ = connectors::kNoOffset;
}

void PartitionProgress::transaction_committed() {
  decided_since_commit_ = false;
  if (!uncommitted()) return;
  committed_ = next_;
  delivered_at_last_commit_ = delivered_;
  check();
}

void PartitionProgress::rewound() {
  assert(checkpointed_ >= 0 && "exactly_once rewinds only to a checkpoint");
  next_ = checkpointed_;
  delivered_ = delivered_at_last_commit_;
  decided_since_commit_ = false;
  check();
}

}  // namespace bloomgate::app
