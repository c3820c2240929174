#include "aging_table.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "bloomgate/filters/format.h"
#include "memory_accounting.h"

namespace bloomgate::filters::detail {
namespace {

constexpr std::uint64_t kGoldenRatio = 0x9e3779b97f4a7c15ULL;
constexpr std::uint64_t kSpareWords = 2;
constexpr std::uint64_t kCodeMask = (1U << kEpochCodeBits) - 1;

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

BucketBits ones(std::uint32_t bits) { return (static_cast<BucketBits>(1) << bits) - 1; }

void require(bool condition, const std::string& what) {
  if (!condition) throw FormatError("aging_fingerprint table: " + what);
}

}  // namespace

std::uint32_t fingerprint_of(KeyHash key, std::uint32_t fingerprint_bits) noexcept {
  std::uint64_t x = key.value;  // the murmur3 64-bit finalizer: fast_range reads the key hash's high bits
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  const auto fingerprint = static_cast<std::uint32_t>(x & ((std::uint64_t{1} << fingerprint_bits) - 1));
  return fingerprint == 0 ? 1 : fingerprint;
}

AgingTable::AgingTable(std::uint64_t buckets, std::uint32_t fingerprint_bits, std::uint64_t epoch)
    : buckets_(std::max<std::uint64_t>(1, buckets)),
      fingerprint_bits_(fingerprint_bits),
      slot_bits_(fingerprint_bits + kEpochCodeBits),
      slot_mask_((std::uint64_t{1} << slot_bits_) - 1),
      words_(static_cast<std::size_t>(words_for(buckets_, fingerprint_bits))),
      dirty_(static_cast<std::size_t>(pages()), 1) {
  for (std::uint64_t region = 0; region < regions(); ++region) words_[region] = epoch;
}

std::uint64_t AgingTable::words_for(std::uint64_t buckets, std::uint32_t fingerprint_bits) noexcept {
  return ceil_div(buckets, kBucketsPerRegion) + ceil_div(buckets * (fingerprint_bits + kEpochCodeBits), 16) + kSpareWords;
}

std::uint64_t AgingTable::memory_bytes() const noexcept {
  return sizeof(*this) + words_.memory_bytes() + heap_bytes(dirty_) + heap_bytes(stash_);
}

std::uint64_t AgingTable::partner(std::uint64_t bucket, std::uint32_t fingerprint) const noexcept {
  const std::uint64_t h = fast_range(fingerprint * kGoldenRatio, buckets_);
  return h >= bucket ? h - bucket : h + buckets_ - bucket;
}

BucketBits AgingTable::bucket_bits(std::uint64_t bucket) const noexcept {
  const std::uint64_t bit = bucket_bit(bucket);
  BucketBits bits;
  std::memcpy(&bits, reinterpret_cast<const char*>(words_.data()) + bit / 8, sizeof bits);
  return (bits >> (bit % 8)) & ones(kSlotsPerBucket * slot_bits_);
}

void AgingTable::set_bucket_bits(std::uint64_t bucket, BucketBits value) noexcept {
  const std::uint64_t bit = bucket_bit(bucket);
  char* at = reinterpret_cast<char*>(words_.data()) + bit / 8;
  BucketBits bits;
  std::memcpy(&bits, at, sizeof bits);
  const BucketBits mask = ones(kSlotsPerBucket * slot_bits_) << (bit % 8);
  bits = (bits & ~mask) | (value << (bit % 8));
  std::memcpy(at, &bits, sizeof bits);
  mark_dirty(bit / 64, (bit / 8 + sizeof bits - 1) / 8);
}

void AgingTable::mark_dirty(std::uint64_t first_word, std::uint64_t last_word) noexcept {
  dirty_[first_word / kAgingWordsPerPage] = 1;
  dirty_[last_word / kAgingWordsPerPage] = 1;
}

std::optional<Match> AgingTable::find_in_bucket(std::uint64_t bucket, std::uint32_t fingerprint,
                                                std::uint64_t now) const {
  const BucketBits bits = bucket_bits(bucket);
  std::optional<Match> found;
  for (std::uint32_t s = 0; s < kSlotsPerBucket; ++s) {
    const std::uint64_t value = slot_value(bits, s);
    if ((value >> kEpochCodeBits) != fingerprint) continue;
    const std::uint64_t written = epoch_of_code(value & kCodeMask, stamp(bucket));
    if (live_at(written, now) && (!found || written > found->epoch)) found = Match{bucket, s, written};
  }
  return found;
}

std::optional<Match> AgingTable::find(std::uint64_t first, std::uint32_t fingerprint, std::uint64_t now) const {
  std::optional<Match> found = find_in_bucket(first, fingerprint, now);
  const std::optional<Match> other = find_in_bucket(partner(first, fingerprint), fingerprint, now);
  if (other && (!found || other->epoch > found->epoch)) found = other;
  if (!stash_.empty()) {
    const std::uint64_t second = partner(first, fingerprint);
    for (std::size_t i = 0; i < stash_.size(); ++i) {
      const StashEntry& e = stash_[i];
      if (e.fingerprint != fingerprint || (e.bucket != first && e.bucket != second) || !live_at(e.epoch, now)) continue;
      if (!found || e.epoch > found->epoch) found = Match{i, kSlotsPerBucket, e.epoch};
    }
  }
  return found;
}

std::uint64_t AgingTable::sweep_region(std::uint64_t region, std::uint64_t now) {
  const std::uint64_t swept_to = words_[region];
  if (swept_to == now) return 0;
  std::uint64_t dropped = 0;
  const std::uint64_t end = std::min(buckets_, (region + 1) * kBucketsPerRegion);
  for (std::uint64_t b = region * kBucketsPerRegion; b < end; ++b) {
    BucketBits bits = bucket_bits(b);
    if (bits == 0) continue;
    const BucketBits before = bits;
    for (std::uint32_t s = 0; s < kSlotsPerBucket; ++s) {
      const std::uint64_t value = slot_value(bits, s);
      if (value == 0 || live_at(epoch_of_code(value & kCodeMask, swept_to), now)) continue;
      bits &= ~(static_cast<BucketBits>(slot_mask_) << (s * slot_bits_));
      ++dropped;
    }
    if (bits != before) set_bucket_bits(b, bits);
  }
  entries_ -= dropped;
  return dropped;
}

void AgingTable::touch(std::uint64_t bucket, std::uint64_t now) {
  const std::uint64_t region = bucket / kBucketsPerRegion;
  if (words_[region] == now) return;
  sweep_region(region, now);
  words_[region] = now;
  mark_dirty(region, region);
}

bool AgingTable::place(std::uint64_t bucket, std::uint64_t value) {
  const BucketBits bits = bucket_bits(bucket);
  for (std::uint32_t s = 0; s < kSlotsPerBucket; ++s) {
    if (slot_value(bits, s) != 0) continue;
    set_bucket_bits(bucket, bits | (static_cast<BucketBits>(value) << (s * slot_bits_)));
    ++entries_;
    return true;
  }
  return false;
}

bool AgingTable::move_one_aside(std::uint64_t bucket, std::uint64_t value, std::uint64_t now) {
  const BucketBits bits = bucket_bits(bucket);
  for (std::uint32_t s = 0; s < kSlotsPerBucket; ++s) {
    const std::uint64_t resident = slot_value(bits, s);
    const std::uint64_t other = partner(bucket, static_cast<std::uint32_t>(resident >> kEpochCodeBits));
    if (other == bucket) continue;
    touch(other, now);
    if (!place(other, resident)) continue;
    const BucketBits cleared = bits & ~(static_cast<BucketBits>(slot_mask_) << (s * slot_bits_));
    set_bucket_bits(bucket, cleared | (static_cast<BucketBits>(value) << (s * slot_bits_)));
    return true;
  }
  return false;
}

bool AgingTable::insert(std::uint64_t first, std::uint32_t fingerprint, std::uint64_t now, std::uint32_t max_kicks) {
  std::uint64_t value = (std::uint64_t{fingerprint} << kEpochCodeBits) | (now & kCodeMask);
  touch(first, now);
  if (place(first, value)) return true;
  std::uint64_t bucket = partner(first, fingerprint);
  touch(bucket, now);
  if (place(bucket, value)) return true;
  // One step of breadth first: a resident of either bucket that has room in its other bucket moves there
  // (eight independent reads), before a chain of dependent kicks.
  if (max_kicks > 0 && (move_one_aside(first, value, now) || move_one_aside(bucket, value, now))) return true;
  for (std::uint32_t kick = 0; kick < max_kicks; ++kick) {
    // The victim's slot varies with the fingerprint in hand and the kick, so chains do not cycle.
    const std::uint32_t slot = static_cast<std::uint32_t>((value >> kEpochCodeBits) + kick) % kSlotsPerBucket;
    const BucketBits bits = bucket_bits(bucket);
    const std::uint64_t victim = slot_value(bits, slot);
    const BucketBits cleared = bits & ~(static_cast<BucketBits>(slot_mask_) << (slot * slot_bits_));
    set_bucket_bits(bucket, cleared | (static_cast<BucketBits>(value) << (slot * slot_bits_)));
    value = victim;
    bucket = partner(bucket, static_cast<std::uint32_t>(value >> kEpochCodeBits));
    touch(bucket, now);
    if (place(bucket, value)) return true;
  }
  if (stash_.size() >= kStashLimit) {
    stash_.erase(std::min_element(stash_.begin(), stash_.end(),
                                  [](const StashEntry& a, const StashEntry& b) { return a.epoch < b.epoch; }));
    --entries_;
  }
  stash_.push_back({bucket, static_cast<std::uint32_t>(value >> kEpochCodeBits), epoch_of_code(value & kCodeMask, now)});
  ++entries_;
  return false;
}

void AgingTable::refresh(const Match& match, std::uint32_t fingerprint, std::uint64_t now) {
  if (match.slot == kSlotsPerBucket) {
    stash_[match.bucket].epoch = now;
    return;
  }
  touch(match.bucket, now);
  const std::uint64_t value = (std::uint64_t{fingerprint} << kEpochCodeBits) | (now & kCodeMask);
  const BucketBits bits = bucket_bits(match.bucket);
  const BucketBits cleared =
      bits & ~(static_cast<BucketBits>(slot_mask_) << (match.slot * slot_bits_));
  set_bucket_bits(match.bucket, cleared | (static_cast<BucketBits>(value) << (match.slot * slot_bits_)));
}

void AgingTable::sweep_step(std::uint64_t now) {
  // touch: what is left was written within [now - 7, now]. The stamps lie together in the first pages, so a
  // swept region whose slots all live on leaves its own page clean.
  touch(sweep_cursor_ * kBucketsPerRegion, now);
  sweep_cursor_ = (sweep_cursor_ + 1) % regions();
  const auto dead = [now](const StashEntry& e) { return !live_at(e.epoch, now); };
  const auto removed = std::erase_if(stash_, dead);
  entries_ -= removed;
}

std::uint64_t AgingTable::live(std::uint64_t now) const {
  std::uint64_t count = 0;
  for (std::uint64_t b = 0; b < buckets_; ++b) {
    const BucketBits bits = bucket_bits(b);
    if (bits == 0) continue;
    for (std::uint32_t s = 0; s < kSlotsPerBucket; ++s) {
      const std::uint64_t value = slot_value(bits, s);
      if (value != 0 && live_at(epoch_of_code(value & kCodeMask, stamp(b)), now)) ++count;
    }
  }
  for (const StashEntry& e : stash_) count += live_at(e.epoch, now) ? 1U : 0U;
  return count;
}

void AgingTable::prefetch(std::uint64_t first, std::uint32_t fingerprint) const noexcept {
  const char* base = reinterpret_cast<const char*>(words_.data());
  __builtin_prefetch(base + bucket_bit(first) / 8);
  __builtin_prefetch(base + bucket_bit(partner(first, fingerprint)) / 8);
}

std::string AgingTable::page_payload(std::uint64_t page) const {
  const std::size_t begin = page * kAgingWordsPerPage;
  const std::size_t end = std::min<std::size_t>(begin + kAgingWordsPerPage, words_.size());
  ByteWriter w;
  w.words(std::span<const std::uint64_t>(words_.data() + begin, end - begin));
  return w.take();
}

void AgingTable::load_page(std::uint64_t page, std::string_view payload) {
  const std::size_t begin = page * kAgingWordsPerPage;
  const std::size_t end = std::min<std::size_t>(begin + kAgingWordsPerPage, words_.size());
  require(payload.size() == (end - begin) * 8, "page " + std::to_string(page) + " has " +
                                                   std::to_string(payload.size()) + " bytes, expected " +
                                                   std::to_string((end - begin) * 8));
  ByteReader r(payload);
  r.words(std::span<std::uint64_t>(words_.data() + begin, end - begin), "table words");
}

void AgingTable::mark_clean() noexcept { std::fill(dirty_.begin(), dirty_.end(), 0); }

std::uint64_t AgingTable::check_words(std::uint64_t now) const {
  for (std::uint64_t region = 0; region < regions(); ++region) {
    require(words_[region] <= now, "region " + std::to_string(region) + " is stamped after the filter's present");
  }
  for (std::uint64_t w = words_.size() - kSpareWords; w < words_.size(); ++w) require(words_[w] == 0, "spare word set");
  const std::uint64_t end_bit = bucket_bit(buckets_);
  if (end_bit % 64 != 0) require((words_[end_bit / 64] >> (end_bit % 64)) == 0, "bits set past the last bucket");
  std::uint64_t slots_in_use = 0;
  for (std::uint64_t b = 0; b < buckets_; ++b) {
    const BucketBits bits = bucket_bits(b);
    for (std::uint32_t s = 0; s < kSlotsPerBucket && bits != 0; ++s) {
      const std::uint64_t value = slot_value(bits, s);
      require(value == 0 || (value >> kEpochCodeBits) != 0, "bucket " + std::to_string(b) + " holds an epoch code without a fingerprint");
      slots_in_use += value != 0 ? 1U : 0U;
    }
  }
  return slots_in_use;
}

void AgingTable::restore_state(std::uint64_t sweep_cursor, std::vector<StashEntry> stash, std::uint64_t now) {
  require(sweep_cursor < regions(), "sweep cursor past the last region");
  require(stash.size() <= kStashLimit, "stash of " + std::to_string(stash.size()) + " entries");
  for (const StashEntry& e : stash) {
    require(e.bucket < buckets_ && e.fingerprint != 0 && e.fingerprint < (1U << fingerprint_bits_) && e.epoch <= now,
            "stash entry out of range");
  }
  const std::uint64_t slots_in_use = check_words(now);
  sweep_cursor_ = sweep_cursor;
  entries_ = slots_in_use + stash.size();
  stash_ = std::move(stash);
  mark_clean();
}

}  // namespace bloomgate::filters::detail
