# bloomgate_library(<name> <source>...): the static library bloomgate_<name>, reached as bloomgate::<name>,
# with its folder's include/ as the public headers (and its src/ as private ones when there is one), built
# as C++20. Each folder then adds what only it has: its dependencies, warnings, options.
function(bloomgate_library name)
  add_library(bloomgate_${name} ${ARGN})
  add_library(bloomgate::${name} ALIAS bloomgate_${name})
  target_include_directories(bloomgate_${name} PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>)
  if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/src)
    target_include_directories(bloomgate_${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  endif()
  target_compile_features(bloomgate_${name} PUBLIC cxx_std_20)
endfunction()
