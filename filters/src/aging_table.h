// Internal to filters/ (namespace detail): one table of the aging-fingerprint filter
// (aging_fingerprint_filter.h), a cuckoo table of buckets of four slots whose slots hold a fingerprint and
// the epoch it was written in, modulo 8.
//
// Layout, in 64-bit words: one stamp word per region of 128 buckets (the last may have fewer; the stamp is
// the epoch the region was last swept to), then the buckets, packed with no gap (the bits after the last
// one stay zero), then two spare words that stay zero. A slot is w = f + 3 bits:
// the fingerprint (1 .. 2^f - 1) above a 3-bit epoch code; 0 is an empty slot. A bucket is four slots, 4w
// bits, read and written as the 16 bytes from the byte it starts in (hence the spare words). The stamps lie
// together (8 bytes per 128 buckets), so they stay in cache while the buckets do not.
//
// Epoch codes. After a region is swept to epoch S (its stamp), every slot in it was written within
// [S - 7, S], so a code c names exactly one epoch, S - ((S - c) mod 8). A slot is live at epoch E while
// E - epoch <= 7. Every write to a bucket first sweeps its region to the present epoch (dropping the slots no
// longer live), so the codes stay exact however long a region went unvisited; a query reads them against
// the stamp without sweeping, and reads the stamp only when a fingerprint matches.
//
// Buckets. A key's fingerprint lives in bucket i1 = fast_range(key hash, buckets) or in its partner
// i2 = (h(fp) - i1) mod buckets, with h(fp) = fast_range(fp * golden ratio, buckets): partner(partner(i)) = i,
// so a fingerprint moves between its two buckets without the key, at any bucket count (no power of two).
// An insertion that finds both full first looks for a resident of either that has room in its other bucket
// and moves it there; failing that it moves (kicks) at most max_kicks fingerprints along a chain; the one left
// in hand then goes to a stash, so no live fingerprint is ever dropped. The filter stops inserting into a
// table whose stash is full (kStashCapacity) and opens a larger one. Only when no larger one may be opened
// (the memory cap of options.h) does the stash grow on, up to kStashLimit entries, past which its oldest
// entry is dropped: the one case in which a live fingerprint is lost.
//
// Persistence: the words in pages of kAgingWordsPerPage, each page one slice record with a dirty mark.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bloomgate/filters/hash.h"
#include "zeroed_words.h"

namespace bloomgate::filters::detail {

__extension__ using BucketBits = unsigned __int128;  // one bucket, 4 x (f + 3) <= 120 bits (gcc and clang)

inline constexpr std::uint32_t kSlotsPerBucket = 4;
inline constexpr std::uint32_t kEpochCodeBits = 3;
inline constexpr std::uint64_t kLiveEpochs = 7;  // a slot written at epoch e is live through epoch e + 7
inline constexpr std::uint64_t kBucketsPerRegion = 128;
inline constexpr std::uint64_t kFirstAgingEpoch = 8;  // the epoch of a filter's first `now`: epochs minus 8 stay >= 0
inline constexpr std::size_t kStashCapacity = 8;     // a table whose stash holds this many takes no more keys
inline constexpr std::size_t kStashLimit = 255;      // past the memory cap: the oldest entry makes room
inline constexpr std::size_t kMaxAgingTables = 24;  // tables at once; past it the newest table's stash takes the overflow
inline constexpr std::uint32_t kMinFingerprintBits = 4;
inline constexpr std::uint32_t kMaxFingerprintBits = 27;  // a bucket (4 slots of f + 3 bits) fits 121 bits
inline constexpr std::size_t kAgingWordsPerPage = 8192;   // 64 KiB a slice record

// The fingerprint of a key for a table of f-bit fingerprints: low bits of a remix of the key hash, never 0.
std::uint32_t fingerprint_of(KeyHash key, std::uint32_t fingerprint_bits) noexcept;

struct StashEntry {
  std::uint64_t bucket;
  std::uint32_t fingerprint;
  std::uint64_t epoch;
  friend bool operator==(const StashEntry&, const StashEntry&) = default;
};

// Where a key's fingerprint was found: its bucket and slot, or stash entry `bucket` when slot is
// kSlotsPerBucket, and the epoch it was written in.
struct Match {
  std::uint64_t bucket;
  std::uint32_t slot;
  std::uint64_t epoch;
};

class AgingTable {
 public:
  // At least one bucket. Throws std::bad_alloc.
  AgingTable(std::uint64_t buckets, std::uint32_t fingerprint_bits, std::uint64_t epoch);

  std::uint64_t buckets() const noexcept { return buckets_; }
  std::uint64_t slots() const noexcept { return buckets_ * kSlotsPerBucket; }
  std::uint32_t fingerprint_bits() const noexcept { return fingerprint_bits_; }
  std::uint64_t entries() const noexcept { return entries_; }  // non-empty slots not yet swept, stash included
  // Every byte the table holds: the object, its words, page marks and stash.
  std::uint64_t memory_bytes() const noexcept;
  // Its words alone (buckets, region epochs, spare words), in bits.
  std::uint64_t cell_bits() const noexcept { return static_cast<std::uint64_t>(words_.size()) * 64; }
  // The words a table of `buckets` and f-bit fingerprints holds.
  static std::uint64_t words_for(std::uint64_t buckets, std::uint32_t fingerprint_bits) noexcept;
  const std::vector<StashEntry>& stash() const noexcept { return stash_; }
  bool stash_full() const noexcept { return stash_.size() >= kStashCapacity; }

  std::uint64_t first_bucket(KeyHash key) const noexcept { return fast_range(key.value, buckets_); }
  std::uint64_t partner(std::uint64_t bucket, std::uint32_t fingerprint) const noexcept;

  // The live match of `fingerprint` in its two buckets or the stash at epoch `now`, the newest of several.
  std::optional<Match> find(std::uint64_t first, std::uint32_t fingerprint, std::uint64_t now) const;
  // Writes the fingerprint at epoch `now`; false when it (or a fingerprint it moved) went to the stash.
  bool insert(std::uint64_t first, std::uint32_t fingerprint, std::uint64_t now, std::uint32_t max_kicks);
  // Rewrites a match's epoch to `now` (refresh on duplicate).
  void refresh(const Match& match, std::uint32_t fingerprint, std::uint64_t now);
  // Sweeps the next region of a round-robin cursor, and the stash, dropping what is no longer live at `now`.
  void sweep_step(std::uint64_t now);
  // Live slots (stash included) at epoch `now`, without sweeping.
  std::uint64_t live(std::uint64_t now) const;
  // Requests the lines of a key's two buckets.
  void prefetch(std::uint64_t first, std::uint32_t fingerprint) const noexcept;

  // Persistence: pages of words (all, or those written since mark_clean) and their restore.
  std::uint64_t pages() const noexcept { return (words_.size() + kAgingWordsPerPage - 1) / kAgingWordsPerPage; }
  bool page_dirty(std::uint64_t page) const noexcept { return dirty_[page] != 0; }
  std::string page_payload(std::uint64_t page) const;
  void load_page(std::uint64_t page, std::string_view payload);  // throws FormatError on a wrong size
  void mark_clean() noexcept;
  std::uint64_t sweep_cursor() const noexcept { return sweep_cursor_; }
  // After the pages are loaded: the cursor and stash read back. Throws FormatError when they, or the words,
  // cannot be the state of a table at epoch `now` (a stamp past it, a slot with a code but no fingerprint,
  // a spare word set, a stash entry out of range).
  void restore_state(std::uint64_t sweep_cursor, std::vector<StashEntry> stash, std::uint64_t now);

 private:
  std::uint64_t regions() const noexcept { return (buckets_ + kBucketsPerRegion - 1) / kBucketsPerRegion; }
  std::uint64_t stamp(std::uint64_t bucket) const noexcept { return words_[bucket / kBucketsPerRegion]; }
  std::uint64_t bucket_bit(std::uint64_t bucket) const noexcept { return regions() * 64 + bucket * 4 * slot_bits_; }
  BucketBits bucket_bits(std::uint64_t bucket) const noexcept;
  void set_bucket_bits(std::uint64_t bucket, BucketBits bits) noexcept;
  std::uint64_t slot_value(BucketBits bits, std::uint32_t slot) const noexcept {
    return static_cast<std::uint64_t>(bits >> (slot * slot_bits_)) & slot_mask_;
  }
  std::uint64_t sweep_region(std::uint64_t region, std::uint64_t now);  // slots dropped
  void touch(std::uint64_t bucket, std::uint64_t now);
  bool place(std::uint64_t bucket, std::uint64_t value);
  // Moves one resident of the full `bucket` to its other bucket where that has room, and writes `value` in
  // its slot; false when none can move.
  bool move_one_aside(std::uint64_t bucket, std::uint64_t value, std::uint64_t now);
  std::optional<Match> find_in_bucket(std::uint64_t bucket, std::uint32_t fingerprint, std::uint64_t now) const;
  void mark_dirty(std::uint64_t first_word, std::uint64_t last_word) noexcept;
  std::uint64_t check_words(std::uint64_t now) const;  // slots in use; throws FormatError

  std::uint64_t buckets_;
  std::uint32_t fingerprint_bits_;
  std::uint32_t slot_bits_;
  std::uint64_t slot_mask_;
  ZeroedWords words_;
  std::vector<std::uint8_t> dirty_;
  std::vector<StashEntry> stash_;
  std::uint64_t entries_ = 0;
  std::uint64_t sweep_cursor_ = 0;  // next region sweep_step visits
};

// The epoch a slot's code names in a region swept to `stamp`.
inline std::uint64_t epoch_of_code(std::uint64_t code, std::uint64_t stamp) noexcept {
  return stamp - ((stamp - code) & ((1U << kEpochCodeBits) - 1));
}

inline bool live_at(std::uint64_t written, std::uint64_t now) noexcept { return now - written <= kLiveEpochs; }

}  // namespace bloomgate::filters::detail
