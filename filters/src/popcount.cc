#include "popcount.h"

#include "target_clones.h"

namespace bloomgate::filters::detail {

// Without a -march flag __builtin_popcountll is a libgcc call per word; the popcnt clone is picked at load
// time where the CPU has the instruction (a restore counts every slice's bits).
BLOOMGATE_TARGET_CLONES("popcnt", "default")
std::uint64_t popcount_words(const std::uint64_t* words, std::size_t count) noexcept {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < count; ++i) total += static_cast<std::uint64_t>(__builtin_popcountll(words[i]));
  return total;
}

}  // namespace bloomgate::filters::detail
