// The cells of a column segment (zeroed_words.h): zero everywhere, padding included, whether they come
// from the heap (under 2 MiB) or from a fresh mapping the kernel zeroed and nothing here wrote.
#include "zeroed_words.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace bloomgate::filters::detail {
namespace {

// The index of the first non-zero word, or `words.size()`.
std::size_t first_nonzero(const ZeroedWords& words) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i] != 0) return i;
  }
  return words.size();
}

TEST(ZeroedWords, SmallBuffersAreZeroOnALine) {
  for (const std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{4096}, (std::size_t{2} << 20) / 8 - 1}) {
    ZeroedWords words(count);
    ASSERT_EQ(words.size(), count);
    EXPECT_FALSE(words.mapped()) << count;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(words.data()) % 64, 0U) << count;
    EXPECT_EQ(first_nonzero(words), count) << count;
  }
}

// Sizes of whole huge pages and between them: the words past the last whole huge page (small pages) are
// zero as well, up to the last one.
TEST(ZeroedWords, MappedBuffersAreZeroOnAHugePage) {
  for (const std::size_t count : {(std::size_t{2} << 20) / 8, (std::size_t{5} << 20) / 8 + 3}) {
    ZeroedWords words(count);
    ASSERT_EQ(words.size(), count);
    EXPECT_TRUE(words.mapped()) << count;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(words.data()) % (std::size_t{2} << 20), 0U) << count;
    EXPECT_EQ(first_nonzero(words), count) << count;
    words[count - 1] = 7;  // writable to the end
    EXPECT_EQ(words[count - 1], 7U);
  }
}

TEST(ZeroedWords, MovesKeepTheWordsAndLeaveNothingBehind) {
  ZeroedWords mapped((std::size_t{3} << 20) / 8);
  mapped[5] = 42;
  const std::uint64_t* data = mapped.data();
  ZeroedWords moved(std::move(mapped));
  EXPECT_EQ(moved.data(), data);
  EXPECT_EQ(moved[5], 42U);
  EXPECT_EQ(mapped.size(), 0U);  // NOLINT(bugprone-use-after-move): what a move leaves is the test
  EXPECT_EQ(mapped.data(), nullptr);
  const ZeroedWords copy(moved);
  EXPECT_NE(copy.data(), data) << "a copy has its own words";
  EXPECT_TRUE(copy.mapped());
  EXPECT_EQ(copy[5], 42U);
  EXPECT_EQ(copy[4], 0U);
  ZeroedWords small(16);
  small[0] = 1;
  small = std::move(moved);  // frees the small buffer, takes the mapping
  EXPECT_EQ(small.data(), data);
  EXPECT_TRUE(small.mapped());
  EXPECT_EQ(small[5], 42U);
}

}  // namespace
}  // namespace bloomgate::filters::detail
