# Warnings live on an INTERFACE target that every project target links, never in global flags.
add_library(bloomgate_warnings INTERFACE)
add_library(bloomgate::warnings ALIAS bloomgate_warnings)
target_compile_options(bloomgate_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wnon-virtual-dtor
  -Wold-style-cast -Woverloaded-virtual -Wimplicit-fallthrough
  $<$<BOOL:${BLOOMGATE_WERROR}>:-Werror>)
option(BLOOMGATE_WERROR "Treat warnings as errors" OFF)
