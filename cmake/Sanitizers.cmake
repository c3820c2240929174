# Sanitizers are an INTERFACE target too, switched on by the asan preset (gcc) or the fuzz preset (clang).
option(BLOOMGATE_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(BLOOMGATE_FUZZ "Build the libFuzzer targets in fuzz/ (needs clang); libraries get coverage for them" OFF)
add_library(bloomgate_sanitizers INTERFACE)
add_library(bloomgate::sanitizers ALIAS bloomgate_sanitizers)
if(BLOOMGATE_SANITIZE OR BLOOMGATE_FUZZ)
  target_compile_options(bloomgate_sanitizers INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
    $<$<BOOL:${BLOOMGATE_FUZZ}>:-fsanitize=fuzzer-no-link>)
  target_link_options(bloomgate_sanitizers INTERFACE -fsanitize=address,undefined)
endif()
