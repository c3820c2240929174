// File: popcount.h
//
// Internal to filters/: counting set bits over a word array (fill ratios, restored slices' set bits).
#pragma once

#include <cstddef>
#include <cstdint>

namespace bloomgate::filters::detail {

// Set bits among `count` words starting at `words`.
std::uint64_t popcount_words(const std::uint64_t* words, std::size_t count) noexcept;

}  // namespace bloomgate::filters::detail
