#include "bloomgate/app/build_info.h"

#include <cstddef>

// jemalloc's control interface, declared weak: it resolves to null unless jemalloc is in the process.
extern "C" int mallctl(const char* name, void* old_value, std::size_t* old_length, void* new_value,
                       std::size_t new_length) __attribute__((weak));

namespace bloomgate::app {

std::string version() { return BLOOMGATE_VERSION; }

std::string allocator_name() {
  if (mallctl == nullptr) return "glibc malloc";
  const char* jemalloc_version = nullptr;
  std::size_t length = sizeof jemalloc_version;
  if (mallctl("version", static_cast<void*>(&jemalloc_version), &length, nullptr, 0) != 0 ||
      jemalloc_version == nullptr) {
    return "jemalloc";
  }
  std::string name = "jemalloc ";
  name.append(jemalloc_version);
  return name;
}

}  // namespace bloomgate::app
