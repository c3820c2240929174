#include "aging_fingerprint_filter.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "memory_accounting.h"

namespace bloomgate::filters {
namespace {

using detail::AgingTable;
using detail::kLiveEpochs;
using detail::kSlotsPerBucket;

using detail::kFirstAgingEpoch;
constexpr std::uint64_t kEpochsPerTtl = kLiveEpochs;
constexpr std::uint64_t kMinSlots = detail::kBucketsPerRegion * kSlotsPerBucket;
constexpr double kGrowthHeadroom = 1.25;     // a grown table's slots over the peak the present rate asks for
constexpr double kMinEpochFraction = 1.0 / 16;  // the least of an epoch a rate is extrapolated from
constexpr std::size_t kBatchLookahead = 8;

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace

std::uint32_t aging_fingerprint_bits(double error_rate, const AgingTuning& tuning) {
  const double needed = std::log2(2.0 * kSlotsPerBucket * tuning.grow_load / error_rate + 1.0);
  return std::clamp(static_cast<std::uint32_t>(std::ceil(needed)), detail::kMinFingerprintBits,
                    detail::kMaxFingerprintBits);
}

AgingFingerprintFilter::AgingFingerprintFilter(const FilterOptions& options, const AgingTuning& tuning)
    : AgingFingerprintFilter(Settings{options.error_rate, options.ttl, options.expected_per_ttl,
                                      options.refresh_on_duplicate, tuning}) {
  open_table(first_table_slots(), base_fingerprint_bits_);
}

// The peak of live keys is 8 epochs of insertions: expected_per_ttl x 8/7.
std::uint64_t AgingFingerprintFilter::first_table_slots() const noexcept {
  return slots_for_peak(static_cast<double>(settings_.expected_per_ttl) * (kEpochsPerTtl + 1) / kEpochsPerTtl);
}

AgingFingerprintFilter::AgingFingerprintFilter(const Settings& settings)
    : settings_(settings),
      base_fingerprint_bits_(aging_fingerprint_bits(settings.error_rate, settings.tuning)),
      epoch_nanos_(std::max<std::uint64_t>(1, ceil_div(static_cast<std::uint64_t>(settings.ttl.count()), kEpochsPerTtl))) {}

AgingFingerprintFilter::~AgingFingerprintFilter() = default;

std::uint64_t AgingFingerprintFilter::slots_for_peak(double peak_keys) const noexcept {
  const double slots = std::ceil(peak_keys / settings_.tuning.size_load);
  return std::max<std::uint64_t>(kMinSlots, static_cast<std::uint64_t>(std::min(slots, 0x1p62)));
}

std::uint64_t AgingFingerprintFilter::memory_bytes() const noexcept {
  std::uint64_t bytes = sizeof(*this) + detail::heap_bytes(tables_) + detail::heap_bytes(dropped_slice_ids_);
  for (const Table& t : tables_) bytes += t.cells.memory_bytes() - sizeof(AgingTable);  // the vector holds the object
  return bytes;
}

void AgingFingerprintFilter::open_table(std::uint64_t slots, std::uint32_t fingerprint_bits) {
  if (!tables_.empty()) tables_.back().retired = epoch_;
  const std::uint64_t buckets = ceil_div(slots, kSlotsPerBucket);
  tables_.push_back(Table{AgingTable(buckets, std::min(fingerprint_bits, detail::kMaxFingerprintBits), epoch_),
                          next_serial_++, std::nullopt});
}

std::uint64_t AgingFingerprintFilter::epoch_at(TimePoint clamped) const noexcept {
  // Unsigned difference: exact even when origin and now lie at opposite ends of the int64 range.
  const std::uint64_t elapsed =
      static_cast<std::uint64_t>(to_epoch_nanos(clamped)) - static_cast<std::uint64_t>(to_epoch_nanos(origin_));
  return kFirstAgingEpoch + elapsed / epoch_nanos_;
}

TimePoint AgingFingerprintFilter::epoch_start(std::uint64_t epoch) const noexcept {
  const std::uint64_t offset = (epoch - kFirstAgingEpoch) * epoch_nanos_;
  return from_epoch_nanos(static_cast<std::int64_t>(static_cast<std::uint64_t>(to_epoch_nanos(origin_)) + offset));
}

void AgingFingerprintFilter::advance(TimePoint now) {
  if (!seen_) {
    seen_ = true;
    origin_ = latest_ = now;
    return;
  }
  if (now <= latest_) return;
  latest_ = now;
  const std::uint64_t epoch = epoch_at(now);
  if (epoch == epoch_) return;
  for (std::uint64_t e = epoch_ + 1; e <= epoch && e <= epoch_ + inserts_.size(); ++e) inserts_[e % inserts_.size()] = 0;
  epoch_ = epoch;
  drop_drained_tables();
  rescale_if_idle_sized();
}

void AgingFingerprintFilter::drop_table(std::size_t index) {
  const Table& t = tables_[index];
  for (std::uint64_t p = 0; p < t.cells.pages(); ++p) dropped_slice_ids_.push_back((t.serial << 32) | (p + 1));
  tables_.erase(tables_.begin() + static_cast<std::ptrdiff_t>(index));
}

void AgingFingerprintFilter::drop_drained_tables() {
  for (std::size_t i = tables_.size(); i-- > 0;) {
    if (tables_[i].retired && epoch_ - *tables_[i].retired > kLiveEpochs) drop_table(i);
  }
}

std::uint64_t AgingFingerprintFilter::completed_epochs_inserts() const noexcept {
  return std::accumulate(inserts_.begin(), inserts_.end(), std::uint64_t{0}) - inserts_[epoch_ % inserts_.size()];
}

// A table alone that has seen 8 epochs of the present rate and is more than twice what they need, or has
// longer fingerprints than the target needs (opened during a burst), is followed by one sized for them.
void AgingFingerprintFilter::rescale_if_idle_sized() {
  if (tables_.size() != 1) return;
  const Table& only = tables_.front();
  if (epoch_ - kFirstAgingEpoch < kEpochsPerTtl + 1) return;
  if (std::accumulate(inserts_.begin(), inserts_.end(), std::uint64_t{0}) == 0) {
    // No insertion for 8 epochs: every slot has expired, so the table can be replaced without a drain.
    if (only.cells.fingerprint_bits() == base_fingerprint_bits_ && only.cells.slots() <= first_table_slots()) return;
    drop_table(0);
    open_table(first_table_slots(), base_fingerprint_bits_);
    return;
  }
  const double peak = static_cast<double>(completed_epochs_inserts()) * (kEpochsPerTtl + 1) / kEpochsPerTtl;
  const std::uint64_t wanted = slots_for_peak(peak);
  const bool oversized = only.cells.slots() > 2 * std::max(wanted, kMinSlots * 2);
  if (oversized || only.cells.fingerprint_bits() != base_fingerprint_bits_) open_table(wanted, base_fingerprint_bits_);
}

void AgingFingerprintFilter::grow() {
  const Table& full = tables_.back();
  const double elapsed = static_cast<double>(to_epoch_nanos(latest_) - to_epoch_nanos(epoch_start(epoch_))) /
                         static_cast<double>(epoch_nanos_);
  const double present_rate =
      static_cast<double>(inserts_[epoch_ % inserts_.size()]) / std::max(elapsed, kMinEpochFraction);
  // The peak of live keys if the present rate lasts a TTL, or the last 7 epochs' if they had more.
  const double peak = std::max(static_cast<double>(completed_epochs_inserts()) * (kEpochsPerTtl + 1) / kEpochsPerTtl,
                               present_rate * (kEpochsPerTtl + 1));
  const std::uint64_t slots = std::max(2 * full.cells.slots(), slots_for_peak(kGrowthHeadroom * peak));
  std::uint64_t bytes = 0;
  for (const Table& t : tables_) bytes += t.cells.memory_bytes();
  if (tables_.size() >= detail::kMaxAgingTables || bytes + slots * 4 > kMaxSlicedCreationBits / 8) return;  // the stash takes the rest
  // Two more bits for each table still holding keys: their rates add up to at most 1 + 1/4 + 1/16 + ...
  // = 4/3 of the first table's.
  const auto holding = static_cast<std::uint32_t>(tables_.size());
  open_table(slots, base_fingerprint_bits_ + 2 * holding);
}

std::optional<AgingFingerprintFilter::Found> AgingFingerprintFilter::find(KeyHash key, std::uint64_t epoch) const {
  for (std::size_t i = tables_.size(); i-- > 0;) {
    const AgingTable& t = tables_[i].cells;
    const std::uint32_t fingerprint = detail::fingerprint_of(key, t.fingerprint_bits());
    if (auto match = t.find(t.first_bucket(key), fingerprint, epoch)) return Found{i, *match};
  }
  return std::nullopt;
}

void AgingFingerprintFilter::insert_new(KeyHash key) {
  AgingTable& t = tables_.back().cells;
  const bool placed =
      t.insert(t.first_bucket(key), detail::fingerprint_of(key, t.fingerprint_bits()), epoch_, settings_.tuning.max_kicks);
  ++inserts_[epoch_ % inserts_.size()];
  const bool full = static_cast<double>(t.entries()) >= settings_.tuning.grow_load * static_cast<double>(t.slots());
  if ((!placed && t.stash_full()) || full) grow();
}

Sighting AgingFingerprintFilter::test_and_insert_at(KeyHash key, TimePoint now) {
  advance(now);
  const std::optional<Found> found = find(key, epoch_);
  Sighting sighting;
  if (found) {
    sighting.present = true;
    sighting.age = latest_ - epoch_start(found->match.epoch);
  }
  if (!found) {
    insert_new(key);
  } else if (settings_.refresh_on_duplicate) {
    Table& newest = tables_.back();
    if (found->table + 1 == tables_.size()) {
      newest.cells.refresh(found->match, detail::fingerprint_of(key, newest.cells.fingerprint_bits()), epoch_);
      ++inserts_[epoch_ % inserts_.size()];  // a write: the ring tells when every slot has expired
    } else {
      insert_new(key);
    }
  }
  for (Table& t : tables_) t.cells.sweep_step(epoch_);
  return sighting;
}

bool AgingFingerprintFilter::test_and_insert(KeyHash key, TimePoint now) { return test_and_insert_at(key, now).present; }

Sighting AgingFingerprintFilter::test_and_insert_with_age(KeyHash key, TimePoint now) {
  return test_and_insert_at(key, now);
}

void AgingFingerprintFilter::prefetch(KeyHash key) const noexcept {
  for (const Table& t : tables_) t.cells.prefetch(t.cells.first_bucket(key), detail::fingerprint_of(key, t.cells.fingerprint_bits()));
}

void AgingFingerprintFilter::test_and_insert_batch(std::span<const KeyHash> keys, std::span<const TimePoint> now,
                                                   std::span<bool> present) {
  if (now.size() != keys.size() || present.size() != keys.size()) {
    throw std::invalid_argument("test_and_insert_batch: keys, times and answers differ in size");
  }
  for (std::size_t i = 0; i < std::min(kBatchLookahead, keys.size()); ++i) prefetch(keys[i]);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i + kBatchLookahead < keys.size()) prefetch(keys[i + kBatchLookahead]);
    present[i] = test_and_insert_at(keys[i], now[i]).present;
  }
}

bool AgingFingerprintFilter::contains(KeyHash key, TimePoint now) const {
  if (!seen_) return false;
  return find(key, epoch_at(std::max(now, latest_))).has_value();
}

FilterStats AgingFingerprintFilter::stats(TimePoint now) const {
  FilterStats stats;
  stats.type = FilterType::kAgingFingerprint;
  stats.k = 2;  // buckets a query reads per table
  stats.slices = tables_.size();
  stats.target_fpr = settings_.error_rate;
  stats.effective_window = settings_.ttl;
  const std::uint64_t epoch = seen_ ? epoch_at(std::max(now, latest_)) : kFirstAgingEpoch;
  double absent = 1.0;
  for (const Table& t : tables_) {
    const std::uint64_t live = t.cells.live(epoch);
    const std::uint64_t bits = t.cells.cell_bits();
    stats.bits += bits;
    stats.elements += live;
    const double load = static_cast<double>(live) / static_cast<double>(t.cells.slots());
    absent *= 1.0 - 2.0 * kSlotsPerBucket * load / (std::ldexp(1.0, static_cast<int>(t.cells.fingerprint_bits())) - 1.0);
    SliceStats slice;
    slice.id = t.serial;
    slice.bits = bits;
    slice.insertions = live;
    slice.fill_ratio = load;
    slice.expired = t.retired.has_value();
    if (t.retired) slice.stamp = epoch_start(*t.retired + 1);
    stats.slice_stats.push_back(slice);
  }
  std::reverse(stats.slice_stats.begin(), stats.slice_stats.end());  // newest first
  stats.memory_bytes = memory_bytes();
  set_per_element_figures(stats);
  stats.estimated_fpr = 1.0 - absent;
  return stats;
}

}  // namespace bloomgate::filters
