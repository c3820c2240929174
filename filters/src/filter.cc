#include "bloomgate/filters/filter.h"

#include <stdexcept>

namespace bloomgate::filters {

void Filter::test_and_insert_batch(std::span<const KeyHash> keys, std::span<const TimePoint> now,
                                   std::span<bool> present) {
  if (now.size() != keys.size() || present.size() != keys.size()) {
    throw std::invalid_argument("test_and_insert_batch: keys, times and answers differ in size");
  }
  for (std::size_t i = 0; i < keys.size(); ++i) present[i] = test_and_insert(keys[i], now[i]);
}

}  // namespace bloomgate::filters
