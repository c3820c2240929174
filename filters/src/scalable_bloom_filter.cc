#include "scalable_bloom_filter.h"

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "partitioned_bloom.h"

namespace bloomgate::filters {

struct ScalableBloomFilter::SubFilter {
  detail::PartitionedBloom bloom;
  bool dirty = true;  // written since the last mark_persisted()
};

namespace {

using detail::BloomGeometry;
using detail::PartitionedBloom;
using Parameters = ScalableBloomFilter::Parameters;

// What the growth rule asks of sub-filter `index`.
struct Target {
  std::uint64_t capacity;
  double error_rate;
};

// nullopt when the index is past kMaxSubFilters or the capacity overflows 64 bits.
std::optional<Target> target_of(const Parameters& parameters, std::size_t index) {
  if (index >= ScalableBloomFilter::kMaxSubFilters) return std::nullopt;
  Target target{parameters.initial_capacity, parameters.error_rate * (1.0 - parameters.tightening)};
  for (std::size_t i = 0; i < index; ++i) {
    if (__builtin_mul_overflow(target.capacity, std::uint64_t{parameters.growth}, &target.capacity)) {
      return std::nullopt;
    }
    target.error_rate *= parameters.tightening;
  }
  return target;
}

// nullopt when sub-filter `index` may not be created (see the limits in the header).
std::optional<BloomGeometry> plan_sub_filter(const Parameters& parameters, std::size_t index) {
  const auto target = target_of(parameters, index);
  if (!target) return std::nullopt;
  return BloomGeometry::plan(target->capacity, target->error_rate, ScalableBloomFilter::kMaxSubFilterBits);
}

bool valid_growth(std::uint32_t growth) { return growth == 2 || growth == 4; }
bool in_unit_interval(double x) { return x > 0.0 && x < 1.0; }  // false for NaN too

void write_parameters(const Parameters& parameters, ByteWriter& out) {
  out.u64(parameters.initial_capacity);
  out.f64(parameters.error_rate);
  out.u32(parameters.growth);
  out.f64(parameters.tightening);
}

Parameters read_parameters(ByteReader& in) {
  Parameters p;
  p.initial_capacity = in.u64("scalable initial capacity");
  p.error_rate = in.f64("scalable error rate");
  p.growth = in.u32("scalable growth");
  p.tightening = in.f64("scalable tightening");
  if (p.initial_capacity == 0) throw FormatError("scalable bloom filter initial capacity is 0");
  if (!in_unit_interval(p.error_rate)) throw FormatError("scalable bloom filter error rate is not in (0, 1)");
  if (!valid_growth(p.growth)) {
    throw FormatError("scalable bloom filter growth " + std::to_string(p.growth) + " is not 2 or 4");
  }
  if (!in_unit_interval(p.tightening)) throw FormatError("scalable bloom filter tightening is not in (0, 1)");
  return p;
}

struct SubFilterMeta {
  BloomGeometry geometry;
  std::uint64_t insertions = 0;
};

// The stored geometry must carry the capacity and error the growth rule gives its position.
void check_against_rule(const Parameters& parameters, std::size_t index, const BloomGeometry& geometry) {
  const auto target = target_of(parameters, index);
  const bool matches = target && target->capacity == geometry.capacity &&
                       std::fabs(target->error_rate - geometry.error_rate) <= 1e-9 * target->error_rate;
  if (!matches) {
    throw FormatError("scalable sub-filter " + std::to_string(index) + " does not follow the growth rule");
  }
}

// Every sub-filter but the newest was filled to capacity before the next was created; the newest was
// created by an insertion and exceeds its capacity only once growth has stopped.
void check_insertions(const Parameters& parameters, const std::vector<SubFilterMeta>& metas) {
  const std::size_t newest = metas.size() - 1;
  for (std::size_t i = 0; i < newest; ++i) {
    if (metas[i].insertions != metas[i].geometry.capacity) {
      throw FormatError("full scalable sub-filter " + std::to_string(i) + " does not hold its capacity");
    }
  }
  const SubFilterMeta& last = metas[newest];
  const bool growth_stopped = !plan_sub_filter(parameters, metas.size());
  if ((newest > 0 && last.insertions == 0) || last.insertions > last.geometry.total_bits() ||
      (last.insertions > last.geometry.capacity && !growth_stopped)) {
    throw FormatError("newest scalable sub-filter holds an impossible " + std::to_string(last.insertions) +
                      " insertions");
  }
}

std::vector<SubFilterMeta> read_sub_filter_metas(const Parameters& parameters, ByteReader& in) {
  const std::uint32_t count = in.u32("scalable sub-filter count");
  if (count == 0 || count > ScalableBloomFilter::kMaxSubFilters) {
    throw FormatError("scalable bloom filter has " + std::to_string(count) + " sub-filters");
  }
  std::vector<SubFilterMeta> metas;
  for (std::size_t i = 0; i < count; ++i) {
    SubFilterMeta meta{BloomGeometry::read(in, ScalableBloomFilter::kMaxSubFilterBits), 0};
    meta.insertions = in.u64("scalable sub-filter insertions");
    check_against_rule(parameters, i, meta.geometry);
    metas.push_back(meta);
  }
  in.expect_end("scalable bloom filter metadata");
  check_insertions(parameters, metas);
  return metas;
}

// The record is fetched and its size checked before the bit array is allocated.
PartitionedBloom load_sub_filter(const SubFilterMeta& meta, std::size_t index, const SliceViews& lookup) {
  const std::uint64_t id = index + 1;
  const auto bytes = lookup(id);
  if (!bytes) {
    throw FormatError("missing sub-filter record " + std::to_string(id) + " of the scalable bloom filter");
  }
  const Record rec = decode_single_record(*bytes);
  if (rec.kind != RecordKind::kSlice || rec.type != FilterType::kScalable || rec.slice_id != id ||
      rec.payload.size() != meta.geometry.total_words() * 8) {
    throw FormatError("sub-filter record " + std::to_string(id) +
                      " does not match the scalable filter metadata");
  }
  PartitionedBloom bloom(meta.geometry);
  bloom.decode_words(rec.payload);
  bloom.restore_insertions(meta.insertions);
  return bloom;
}

}  // namespace

ScalableBloomFilter::ScalableBloomFilter(const FilterOptions& options)
    : parameters_{options.expected_per_ttl, options.error_rate, options.growth, options.tightening} {
  if (!valid_growth(parameters_.growth)) {
    throw std::invalid_argument("scalable bloom filter: growth must be 2 or 4");
  }
  if (!in_unit_interval(parameters_.tightening)) {
    throw std::invalid_argument("scalable bloom filter: tightening must be in (0, 1)");
  }
  const auto first = plan_sub_filter(parameters_, 0);
  if (!first) {
    throw std::invalid_argument(
        "scalable bloom filter: expected_per_ttl and error_rate need more than 2^34 bits "
        "or 64 probes for the first sub-filter");
  }
  sub_filters_.push_back(SubFilter{PartitionedBloom(*first), true});
}

ScalableBloomFilter::ScalableBloomFilter(const Parameters& parameters, std::vector<SubFilter> sub_filters)
    : parameters_(parameters), sub_filters_(std::move(sub_filters)) {}

ScalableBloomFilter::~ScalableBloomFilter() = default;

std::unique_ptr<Filter> ScalableBloomFilter::restore(const Record& meta, const SliceViews& lookup) {
  expect_meta_record(meta, FilterType::kScalable);
  ByteReader in(meta.payload);
  const Parameters parameters = read_parameters(in);
  const std::vector<SubFilterMeta> metas = read_sub_filter_metas(parameters, in);
  std::vector<SubFilter> sub_filters;
  for (std::size_t i = 0; i < metas.size(); ++i) {
    sub_filters.push_back(SubFilter{load_sub_filter(metas[i], i, lookup), false});
  }
  return std::unique_ptr<Filter>(new ScalableBloomFilter(parameters, std::move(sub_filters)));
}

bool ScalableBloomFilter::contains_key(KeyHash key) const noexcept {
  for (auto it = sub_filters_.rbegin(); it != sub_filters_.rend(); ++it) {
    if (it->bloom.contains(key)) return true;
  }
  return false;
}

bool ScalableBloomFilter::grow() {
  const auto geometry = plan_sub_filter(parameters_, sub_filters_.size());
  if (!geometry) return false;
  sub_filters_.push_back(SubFilter{PartitionedBloom(*geometry), true});
  return true;
}

bool ScalableBloomFilter::test_and_insert(KeyHash key, TimePoint /*now*/) {
  if (contains_key(key)) return true;
  // When growth is refused the newest sub-filter keeps absorbing keys past its capacity.
  if (sub_filters_.back().bloom.at_capacity()) grow();
  SubFilter& newest = sub_filters_.back();
  newest.bloom.add_if_absent(key);
  newest.dirty = true;
  return false;
}

bool ScalableBloomFilter::contains(KeyHash key, TimePoint /*now*/) const { return contains_key(key); }

FilterStats ScalableBloomFilter::stats(TimePoint /*now*/) const {
  FilterStats s;
  s.type = FilterType::kScalable;
  s.k = sub_filters_.back().bloom.geometry().k;  // the probes an insertion writes; lookups may probe all
  s.slices = sub_filters_.size();
  s.target_fpr = parameters_.error_rate;
  double all_negative = 1.0;
  for (std::size_t i = sub_filters_.size(); i-- > 0;) {
    const PartitionedBloom& bloom = sub_filters_[i].bloom;
    s.bits += bloom.geometry().total_bits();
    s.elements += bloom.insertions();
    all_negative *= 1.0 - bloom.estimated_fpr();
    SliceStats slice;
    slice.id = i + 1;
    slice.bits = bloom.geometry().total_bits();
    slice.insertions = bloom.insertions();
    slice.fill_ratio = bloom.fill_ratio();
    s.slice_stats.push_back(slice);
  }
  s.estimated_fpr = 1.0 - all_negative;
  s.memory_bytes = sizeof(*this) + detail::heap_bytes(sub_filters_);
  for (const SubFilter& sub : sub_filters_) s.memory_bytes += sub.bloom.memory_bytes();
  set_per_element_figures(s);
  return s;
}

std::string ScalableBloomFilter::meta_payload() const {
  ByteWriter out;
  write_parameters(parameters_, out);
  out.u32(static_cast<std::uint32_t>(sub_filters_.size()));
  for (const SubFilter& sub : sub_filters_) {
    sub.bloom.geometry().write(out);
    out.u64(sub.bloom.insertions());
  }
  return out.take();
}

FilterImage ScalableBloomFilter::image(ImageScope scope) const {
  FilterImage image;
  image.meta = encode_record(RecordKind::kMeta, FilterType::kScalable, 0, meta_payload());
  for (std::size_t i = 0; i < sub_filters_.size(); ++i) {
    if (scope == ImageScope::kChangedSinceLastPersist && !sub_filters_[i].dirty) continue;
    const std::uint64_t id = i + 1;
    image.slices.push_back({id, encode_record(RecordKind::kSlice, FilterType::kScalable, id,
                                              sub_filters_[i].bloom.encode_words())});
  }
  return image;
}

void ScalableBloomFilter::mark_persisted() {
  for (SubFilter& sub : sub_filters_) sub.dirty = false;
}

}  // namespace bloomgate::filters
