# Sanitizers are an INTERFACE target too, switched on by the asan preset.
option(BLOOMGATE_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
add_library(bloomgate_sanitizers INTERFACE)
add_library(bloomgate::sanitizers ALIAS bloomgate_sanitizers)
if(BLOOMGATE_SANITIZE)
  target_compile_options(bloomgate_sanitizers INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(bloomgate_sanitizers INTERFACE -fsanitize=address,undefined)
endif()
