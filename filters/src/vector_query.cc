#include "bloomgate/filters/vector_query.h"

#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace bloomgate::filters {

bool vector_query_allowed(const char* value) {
  const std::string_view setting = value == nullptr ? std::string_view{} : std::string_view{value};
  if (setting.empty() || setting == "auto") return true;
  if (setting == "off") return false;
  throw std::invalid_argument(std::string(kVectorQueryVariable) + "=\"" + std::string(setting) +
                              "\": expected auto or off");
}

// __builtin_cpu_init first: a segment built by a static initializer may run before libgcc's own. GCC's
// check of AVX-512 includes the OS saving its registers (XCR0). Every CPU with AVX-512 DQ has BMI2 (the
// ring word's PDEP); it is checked all the same, as the vector query's code is compiled for it.
bool cpu_has_vector_query() noexcept {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("bmi2");
  }();
  return has;
}

bool vector_query_in_use() {
  static const bool in_use = vector_query_allowed(std::getenv(kVectorQueryVariable)) && cpu_has_vector_query();
  return in_use;
}

std::string describe_vector_query() {
  if (vector_query_in_use()) return "the time-limited filter queries with AVX-512 (eight phases at a time)";
  if (!cpu_has_vector_query()) return "the time-limited filter queries with scalar code (the CPU has no AVX-512 F and DQ, or no BMI2)";
  return std::string("the time-limited filter queries with scalar code (") + kVectorQueryVariable + "=off)";
}

}  // namespace bloomgate::filters
