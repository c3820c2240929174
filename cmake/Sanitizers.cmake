# Sanitizers are an INTERFACE target too: the asan preset switches on AddressSanitizer with
# UndefinedBehaviorSanitizer, the tsan preset ThreadSanitizer (they cannot be combined).
option(BLOOMGATE_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(BLOOMGATE_TSAN "Build with ThreadSanitizer" OFF)
if(BLOOMGATE_SANITIZE AND BLOOMGATE_TSAN)
  message(FATAL_ERROR "BLOOMGATE_SANITIZE and BLOOMGATE_TSAN cannot be combined")
endif()
add_library(bloomgate_sanitizers INTERFACE)
add_library(bloomgate::sanitizers ALIAS bloomgate_sanitizers)
if(BLOOMGATE_SANITIZE)
  target_compile_options(bloomgate_sanitizers INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(bloomgate_sanitizers INTERFACE -fsanitize=address,undefined)
endif()
if(BLOOMGATE_TSAN)
  target_compile_options(bloomgate_sanitizers INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(bloomgate_sanitizers INTERFACE -fsanitize=thread)
endif()
# A sanitizer brings its own allocator: executables then do without jemalloc.
if(BLOOMGATE_SANITIZE OR BLOOMGATE_TSAN)
  set(BLOOMGATE_SANITIZER_ALLOCATOR ON)
else()
  set(BLOOMGATE_SANITIZER_ALLOCATOR OFF)
endif()
