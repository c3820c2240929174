// The memory of restored slices (slice_memory.h): one arena per restore, carved in whole pages, with the
// heap as the fallback; a copied slice's words go to the heap, a moved one keeps its arena.
#include "slice_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <utility>

namespace bloomgate::filters::detail {
namespace {

TEST(SliceArena, HandsOutWholePagesUntilFullThenNothing) {
  const auto arena = SliceArena::create((std::size_t{4} << 20) - 100);  // rounded up to a page: 4 MiB
  ASSERT_NE(arena, nullptr);
  char* first = static_cast<char*>(arena->take(100));
  char* second = static_cast<char*>(arena->take(4096));
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 4096, 0U);
  EXPECT_EQ(second - first, 4096) << "100 bytes take a page";
  EXPECT_TRUE(arena->owns(first));
  EXPECT_TRUE(arena->owns(second + 4095));
  for (int i = 0; i < 4096; ++i) EXPECT_EQ(second[i], 0) << "fresh memory reads as zero";
  second[0] = 1;
  arena->give_back(second, 4096);
  EXPECT_EQ(second[0], 0) << "a page given back is the kernel's again (reads as zero)";
  EXPECT_EQ(arena->take(std::size_t{4} << 20), nullptr) << "more than is left";
  EXPECT_NE(arena->take((std::size_t{4} << 20) - 2 * 4096), nullptr) << "exactly what is left";
  EXPECT_EQ(arena->take(1), nullptr);
  int on_the_heap = 0;
  EXPECT_FALSE(arena->owns(&on_the_heap));
}

TEST(WordAllocator, ArenaWhileItHasRoomThenHeapCopiesToTheHeap) {
  const auto arena = SliceArena::create(std::size_t{2} << 20);
  ASSERT_NE(arena, nullptr);
  Words in_arena(WordAllocator<std::uint64_t>{arena});
  in_arena.assign(std::size_t{1} << 17, 7);  // 1 MiB
  EXPECT_TRUE(arena->owns(in_arena.data()));
  Words also(WordAllocator<std::uint64_t>{arena});
  also.assign(std::size_t{1} << 17, 8);  // the other MiB
  EXPECT_TRUE(arena->owns(also.data()));
  Words overflow(WordAllocator<std::uint64_t>{arena});
  overflow.assign(16, 9);
  EXPECT_FALSE(arena->owns(overflow.data())) << "no room left: the heap";
  EXPECT_EQ(overflow[15], 9U);

  const Words copy = in_arena;  // NOLINT(performance-unnecessary-copy-initialization): the copy is the test
  EXPECT_FALSE(arena->owns(copy.data()));
  EXPECT_EQ(copy, in_arena);
  const std::uint64_t* data = also.data();
  Words moved = std::move(also);
  EXPECT_EQ(moved.data(), data) << "a move keeps the arena's memory";
  Words assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.data(), data);
  EXPECT_EQ(assigned[0], 8U);
}

TEST(SliceArena, RefusesWhatCannotBeMapped) {
  EXPECT_EQ(SliceArena::create(0), nullptr);
  EXPECT_EQ(SliceArena::create(std::size_t{1} << 50), nullptr);
  EXPECT_EQ(SliceArena::create_for(std::size_t{1} << 40, 4096), nullptr);
}

TEST(SliceArena, HasRoomForCountAllocationsOfAnySize) {
  const auto arena = SliceArena::create_for(5, 4097);  // each takes two pages
  ASSERT_NE(arena, nullptr);
  for (int i = 0; i < 5; ++i) EXPECT_NE(arena->take(4097), nullptr) << i;
  EXPECT_EQ(arena->take(1), nullptr);
}

}  // namespace
}  // namespace bloomgate::filters::detail
