# Sanitizers are an INTERFACE target too: the asan preset switches on AddressSanitizer with
# UndefinedBehaviorSanitizer (gcc), the fuzz preset the same with libFuzzer's coverage (clang), the tsan
# preset ThreadSanitizer (which cannot be combined with the others).
option(BLOOMGATE_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(BLOOMGATE_FUZZ "Build the libFuzzer targets in fuzz/ (needs clang); libraries get coverage for them" OFF)
option(BLOOMGATE_TSAN "Build with ThreadSanitizer" OFF)
if((BLOOMGATE_SANITIZE OR BLOOMGATE_FUZZ) AND BLOOMGATE_TSAN)
  message(FATAL_ERROR "BLOOMGATE_TSAN cannot be combined with BLOOMGATE_SANITIZE or BLOOMGATE_FUZZ")
endif()
add_library(bloomgate_sanitizers INTERFACE)
add_library(bloomgate::sanitizers ALIAS bloomgate_sanitizers)
if(BLOOMGATE_SANITIZE OR BLOOMGATE_FUZZ)
  target_compile_options(bloomgate_sanitizers INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
    $<$<BOOL:${BLOOMGATE_FUZZ}>:-fsanitize=fuzzer-no-link>)
  target_link_options(bloomgate_sanitizers INTERFACE -fsanitize=address,undefined)
endif()
if(BLOOMGATE_TSAN)
  target_compile_options(bloomgate_sanitizers INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(bloomgate_sanitizers INTERFACE -fsanitize=thread)
  # librdkafka's C11 threads, started as POSIX threads so that ThreadSanitizer sees them (the file says why).
  add_library(bloomgate_tsan_threads SHARED ${CMAKE_CURRENT_LIST_DIR}/tsan_c11_threads.cc)
  target_compile_options(bloomgate_tsan_threads PRIVATE -fsanitize=thread)
  target_link_options(bloomgate_tsan_threads PRIVATE -fsanitize=thread)
  target_link_libraries(bloomgate_sanitizers INTERFACE bloomgate_tsan_threads)
endif()
# A sanitizer brings its own allocator: executables then do without jemalloc.
if(BLOOMGATE_SANITIZE OR BLOOMGATE_FUZZ OR BLOOMGATE_TSAN)
  set(BLOOMGATE_SANITIZER_ALLOCATOR ON)
else()
  set(BLOOMGATE_SANITIZER_ALLOCATOR OFF)
endif()
