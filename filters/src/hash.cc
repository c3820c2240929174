#include "bloomgate/filters/hash.h"

#include <xxhash.h>

namespace bloomgate::filters {

KeyHash hash_key(std::string_view key) noexcept {
  return KeyHash{XXH3_64bits_withSeed(key.data(), key.size(), kHashSeed)};
}

}  // namespace bloomgate::filters
