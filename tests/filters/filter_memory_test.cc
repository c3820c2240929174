// FilterStats::memory_bytes is every byte a filter holds, and the per-key figures are derived from it: this
// binary replaces the global operator new and delete to count the bytes live on the heap, and sets each
// filter type's memory_bytes against what the filter really allocated. The filters here are below 2 MiB,
// so every byte they hold comes from operator new (larger cells are mappings, zeroed_words.h). Fixed keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#include "bloomgate/filters/filter.h"
#include "bloomgate/filters/filter_types.h"
#include "bloomgate/filters/options.h"
#include "filter_options.h"
#include "ground_truth.h"

namespace {

// Bytes asked of operator new and not yet deleted, in this process. The tests run on one thread.
std::int64_t g_live_bytes = 0;

// Each block keeps its size just before the bytes it hands out, `align` bytes after the block's start.
void* counted_new(std::size_t bytes, std::size_t align) {
  align = std::max<std::size_t>(align, __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  const std::size_t total = (bytes + align + align - 1) / align * align;
  void* block = std::aligned_alloc(align, total);
  if (block == nullptr) throw std::bad_alloc();
  char* user = static_cast<char*>(block) + align;
  reinterpret_cast<std::size_t*>(user)[-1] = bytes;
  g_live_bytes += static_cast<std::int64_t>(bytes);
  return user;
}

void counted_delete(void* p, std::size_t align) noexcept {
  if (p == nullptr) return;
  align = std::max<std::size_t>(align, __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  char* user = static_cast<char*>(p);
  g_live_bytes -= static_cast<std::int64_t>(reinterpret_cast<std::size_t*>(user)[-1]);
  std::free(user - align);
}

}  // namespace

void* operator new(std::size_t n) { return counted_new(n, 0); }
void* operator new[](std::size_t n) { return counted_new(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_new(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_new(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_new(n, 0);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { counted_delete(p, 0); }
void operator delete[](void* p) noexcept { counted_delete(p, 0); }
void operator delete(void* p, std::size_t) noexcept { counted_delete(p, 0); }
void operator delete[](void* p, std::size_t) noexcept { counted_delete(p, 0); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_delete(p, 0); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_delete(p, 0); }
void operator delete(void* p, std::align_val_t a) noexcept { counted_delete(p, static_cast<std::size_t>(a)); }
void operator delete[](void* p, std::align_val_t a) noexcept { counted_delete(p, static_cast<std::size_t>(a)); }
void operator delete(void* p, std::size_t, std::align_val_t a) noexcept { counted_delete(p, static_cast<std::size_t>(a)); }
void operator delete[](void* p, std::size_t, std::align_val_t a) noexcept { counted_delete(p, static_cast<std::size_t>(a)); }

namespace bloomgate::filters {
namespace {

using testing::key_name;

const TimePoint kStart = from_epoch_millis(1'700'000'000'000);

class FilterMemory : public ::testing::TestWithParam<FilterType> {};

// 40 s of 1,000 new keys a second and a repeat of one in three, TTL 10 s: the time-based filters slide,
// drop and grow their bookkeeping; the others fill. Then memory_bytes against the heap bytes the filter holds.
TEST_P(FilterMemory, MemoryBytesCountEveryByteTheFilterHolds) {
  const std::int64_t before = g_live_bytes;
  std::unique_ptr<Filter> filter = make_filter(testing::options_for(GetParam(), 0.01, 10'000));
  TimePoint now = kStart;
  for (int i = 0; i < 40'000; ++i) {
    now = kStart + std::chrono::milliseconds(i);
    filter->test_and_insert(key_name(i), now);
    if (i % 3 == 0) filter->test_and_insert(key_name(i / 2), now);
  }
  (void)filter->contains(key_name(1), now);
  (void)filter->stats(now);  // fills the caches stats() keeps; its own answer is freed
  const std::int64_t held = g_live_bytes - before;
  const FilterStats s = filter->stats(now);
  ASSERT_GT(held, 0);
  const auto counted = static_cast<std::int64_t>(s.memory_bytes);
  EXPECT_GE(counted, held) << "memory_bytes leaves out some of what the filter allocated";
  // Every block is counted at the size asked for; memory_bytes may only round a mapping up to its page.
  EXPECT_LE(counted, held + held / 100) << "memory_bytes counts more than the filter holds";
  ASSERT_GT(s.elements, 0U);
  EXPECT_GT(s.bits, 0U);
  EXPECT_LE(s.bits, s.memory_bytes * 8) << "the cells are part of the memory";
  EXPECT_DOUBLE_EQ(s.bits_per_element, static_cast<double>(s.memory_bytes) * 8 / static_cast<double>(s.elements));
  EXPECT_DOUBLE_EQ(s.cell_bits_per_element, static_cast<double>(s.bits) / static_cast<double>(s.elements));
  EXPECT_GT(s.bits_per_element, s.cell_bits_per_element) << "the filter object at least is more than its cells";
}

TEST_P(FilterMemory, AnEmptyFilterHasNoPerKeyFigures) {
  const FilterStats s = make_filter(testing::options_for(GetParam(), 0.01, 10'000))->stats(kStart);
  EXPECT_GT(s.memory_bytes, 0U);
  EXPECT_EQ(s.bits_per_element, 0.0);
  EXPECT_EQ(s.cell_bits_per_element, 0.0);
}

std::string type_name(const ::testing::TestParamInfo<FilterType>& info) { return filter_type_name(info.param); }

INSTANTIATE_TEST_SUITE_P(AllTypes, FilterMemory,
                         ::testing::Values(FilterType::kTimeLimited, FilterType::kAgePartitioned,
                                           FilterType::kContinuous, FilterType::kScalable, FilterType::kBloom,
                                           FilterType::kSpectral, FilterType::kAgingFingerprint),
                         type_name);

}  // namespace
}  // namespace bloomgate::filters
