// File: hash.h
//
// The one hash every filter uses. A key is hashed once, with XXH3-64 and the fixed seed kHashSeed, and
// every probe position of every filter is derived from that 64-bit value. The seed is written into every
// serialized record, so a filter persisted by one build is only ever read back by a build that hashes the
// same way. std::hash is never used: it may change between processes.
#pragma once

#include <cstdint>
#include <string_view>

namespace bloomgate::filters {

// "bloomgat" in ASCII. Changing it invalidates every persisted filter; the schema tests pin it.
inline constexpr std::uint64_t kHashSeed = 0x626c6f6f6d676174ULL;

struct KeyHash {
  std::uint64_t value = 0;
  friend bool operator==(KeyHash, KeyHash) = default;
};

// XXH3_64bits_withSeed(key, kHashSeed).
KeyHash hash_key(std::string_view key) noexcept;

// Maps a 64-bit value uniformly onto [0, range) with a multiply-shift (Lemire's fastrange), which uses
// the high bits of `x` and costs one multiplication instead of a division.
inline std::uint64_t fast_range(std::uint64_t x, std::uint64_t range) noexcept {
  __extension__ using Wide = unsigned __int128;  // gcc and clang on 64-bit targets
  return static_cast<std::uint64_t>((static_cast<Wide>(x) * range) >> 64);
}

// The j-th probe value of a key: enhanced double hashing (Dillinger and Manolios),
// h1 + j*h2 + (j^3 - j)/6 modulo 2^64 with h2 a remix of the key hash forced odd, then one
// xorshift-multiply round. fast_range keeps only the high bits of a probe value, and without that last
// round two keys whose h1 and h2 agree in their high bits would collide on all k probes of a small
// table, raising its false-positive rate above what its fill predicts.
class ProbeSequence {
 public:
  explicit ProbeSequence(KeyHash key) noexcept
      : h1_(key.value), h2_(remix(key.value) | 1U) {}

  std::uint64_t operator()(std::uint64_t j) const noexcept {
    std::uint64_t x = h1_ + j * h2_ + (j * j * j - j) / 6;
    x ^= x >> 29;
    return x * 0xbf58476d1ce4e5b9ULL;
  }

 private:
  // The murmur3 64-bit finalizer: a bijection, so h2 is as uniform as the key hash itself.
  static std::uint64_t remix(std::uint64_t x) noexcept {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
  }

  std::uint64_t h1_;
  std::uint64_t h2_;
};

}  // namespace bloomgate::filters
