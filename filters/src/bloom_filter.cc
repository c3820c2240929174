#include "bloom_filter.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "partitioned_bloom.h"

namespace bloomgate::filters {
namespace detail {

std::optional<BloomGeometry> BloomGeometry::plan(std::uint64_t capacity, double error_rate,
                                                 std::uint64_t max_bits) {
  if (capacity == 0 || !(error_rate > 0.0 && error_rate < 1.0)) return std::nullopt;
  const double probes = std::ceil(-std::log2(error_rate));
  if (probes > static_cast<double>(kMaxProbes)) return std::nullopt;
  const auto k = static_cast<std::uint32_t>(std::max(probes, 1.0));
  const double ln2 = std::log(2.0);
  const double raw_slice_bits =
      static_cast<double>(capacity) * std::fabs(std::log(error_rate)) / (static_cast<double>(k) * ln2 * ln2);
  // Compared as doubles first so the conversion below never sees an out-of-range value.
  if (!(raw_slice_bits * static_cast<double>(k) <= static_cast<double>(max_bits))) return std::nullopt;
  const auto slice_words = std::max<std::uint64_t>(
      kMinSliceBits / 64, static_cast<std::uint64_t>(std::ceil(raw_slice_bits / 64.0)));
  const BloomGeometry geometry{capacity, error_rate, k, slice_words * 64};
  if (geometry.total_bits() > max_bits) return std::nullopt;
  return geometry;
}

void BloomGeometry::write(ByteWriter& out) const {
  out.u64(capacity);
  out.f64(error_rate);
  out.u32(k);
  out.u64(slice_bits);
}

namespace {

void check_stored_fields(const BloomGeometry& g, std::uint64_t max_bits) {
  if (g.capacity == 0) throw FormatError("bloom filter capacity is 0");
  if (!(g.error_rate > 0.0 && g.error_rate < 1.0)) {
    throw FormatError("bloom filter error rate is not in (0, 1)");
  }
  if (g.k == 0 || g.k > kMaxProbes) {
    throw FormatError("bloom filter probe count " + std::to_string(g.k) + " is not in [1, 64]");
  }
  if (g.slice_bits < kMinSliceBits || g.slice_bits % 64 != 0) {
    throw FormatError("bloom filter slice size " + std::to_string(g.slice_bits) +
                      " is not a multiple of 64 of at least " + std::to_string(kMinSliceBits));
  }
  if (g.slice_bits > max_bits / g.k) {
    throw FormatError("bloom filter size " + std::to_string(g.slice_bits) + " x " + std::to_string(g.k) +
                      " bits exceeds the limit of " + std::to_string(max_bits));
  }
}

}  // namespace

BloomGeometry BloomGeometry::read(ByteReader& in, std::uint64_t max_bits) {
  BloomGeometry g;
  g.capacity = in.u64("bloom capacity");
  g.error_rate = in.f64("bloom error rate");
  g.k = in.u32("bloom probe count");
  g.slice_bits = in.u64("bloom slice bits");
  check_stored_fields(g, max_bits);
  const auto planned = plan(g.capacity, g.error_rate, max_bits);
  if (!planned || planned->k != g.k || planned->slice_bits != g.slice_bits) {
    throw FormatError("bloom filter size does not match the sizing of its capacity and error rate");
  }
  return g;
}

double PartitionedBloom::fill_ratio() const noexcept {
  return static_cast<double>(set_bits()) / static_cast<double>(geometry_.total_bits());
}

double PartitionedBloom::slice_fill(std::uint32_t slice) const noexcept {
  const std::uint64_t set =
      popcount_words(words_.data() + slice * geometry_.slice_words(), geometry_.slice_words());
  return static_cast<double>(set) / static_cast<double>(geometry_.slice_bits);
}

double PartitionedBloom::estimated_fpr() const noexcept {
  double fpr = 1.0;
  for (std::uint32_t slice = 0; slice < geometry_.k; ++slice) fpr *= slice_fill(slice);
  return fpr;
}

std::string PartitionedBloom::encode_words() const {
  ByteWriter out;
  out.words(std::span<const std::uint64_t>(words_.data(), words_.size()));
  return out.take();
}

void PartitionedBloom::decode_words(std::string_view payload) {
  if (payload.size() != words_.size() * 8) {
    throw FormatError("bloom bit array has " + std::to_string(payload.size()) + " bytes, expected " +
                      std::to_string(words_.size() * 8));
  }
  ByteReader in(payload);
  for (std::size_t i = 0; i < words_.size(); ++i) words_.mut(i) = in.u64("bloom bit array");
  words_.mark_clean();
}

void PartitionedBloom::restore_insertions(std::uint64_t insertions) {
  const std::uint64_t set = set_bits();
  // Once insertions <= set bits (<= 2^37) holds, insertions * k (k <= 64) cannot overflow.
  if (insertions > set || set > insertions * geometry_.k) {
    throw FormatError("bloom filter claims " + std::to_string(insertions) + " insertions but has " +
                      std::to_string(set) + " bits set with k = " + std::to_string(geometry_.k));
  }
  insertions_ = insertions;
}

}  // namespace detail

namespace {

using detail::BloomGeometry;
using detail::PagedWords;
using detail::PartitionedBloom;

// Pages are the persisted slices; they hold bits of every key, so they carry no insertion count.
std::vector<SliceStats> page_stats(const PagedWords& words) {
  std::vector<SliceStats> stats;
  for (std::size_t page = 0; page < words.pages(); ++page) {
    const std::size_t begin = page * PagedWords::kWordsPerPage;
    const std::size_t count = std::min(PagedWords::kWordsPerPage, words.size() - begin);
    SliceStats slice;
    slice.id = page + 1;
    slice.bits = count * 64;
    slice.fill_ratio = static_cast<double>(detail::popcount_words(words.data() + begin, count)) /
                       static_cast<double>(slice.bits);
    stats.push_back(slice);
  }
  return stats;
}

}  // namespace

BloomFilter::BloomFilter(const FilterOptions& options) {
  const auto geometry = BloomGeometry::plan(options.expected_per_ttl, options.error_rate, kMaxBits);
  if (!geometry) {
    throw std::invalid_argument(
        "bloom filter: expected_per_ttl and error_rate need more than 2^37 bits or 64 probes");
  }
  bits_ = std::make_unique<PartitionedBloom>(*geometry);
}

BloomFilter::BloomFilter(std::unique_ptr<PartitionedBloom> bits) : bits_(std::move(bits)) {}

BloomFilter::~BloomFilter() = default;

std::unique_ptr<Filter> BloomFilter::restore(const Record& meta, const SliceViews& lookup) {
  expect_meta_record(meta, FilterType::kBloom);
  ByteReader in(meta.payload);
  const BloomGeometry geometry = BloomGeometry::read(in, kMaxBits);
  const std::uint64_t insertions = in.u64("bloom insertions");
  in.expect_end("bloom filter metadata");
  if (insertions > geometry.total_bits()) throw FormatError("bloom filter insertions exceed its bits");
  PagedWords::require_last_page(FilterType::kBloom, geometry.total_words(), lookup);
  auto bits = std::make_unique<PartitionedBloom>(geometry);
  bits->words().load_pages(FilterType::kBloom, lookup);
  bits->restore_insertions(insertions);
  return std::unique_ptr<Filter>(new BloomFilter(std::move(bits)));
}

bool BloomFilter::test_and_insert(KeyHash key, TimePoint /*now*/) { return !bits_->add_if_absent(key); }

bool BloomFilter::contains(KeyHash key, TimePoint /*now*/) const { return bits_->contains(key); }

FilterStats BloomFilter::stats(TimePoint /*now*/) const {
  const BloomGeometry& geometry = bits_->geometry();
  const PagedWords& words = bits_->words();
  FilterStats s;
  s.type = FilterType::kBloom;
  s.k = geometry.k;
  s.slices = words.pages();
  s.bits = geometry.total_bits();
  s.elements = bits_->insertions();
  s.target_fpr = geometry.error_rate;
  s.estimated_fpr = bits_->estimated_fpr();
  s.slice_stats = page_stats(words);
  s.memory_bytes = sizeof(*this) + sizeof(detail::PartitionedBloom) + bits_->memory_bytes();
  set_per_element_figures(s);
  return s;
}

std::string BloomFilter::meta_payload() const {
  ByteWriter out;
  bits_->geometry().write(out);
  out.u64(bits_->insertions());
  return out.take();
}

FilterImage BloomFilter::image(ImageScope scope) const {
  return bits_->words().image(FilterType::kBloom, scope, meta_payload());
}

void BloomFilter::mark_persisted() { bits_->words().mark_clean(); }

}  // namespace bloomgate::filters
