// File: build_info.h
//
// What the running binary is: its version and the malloc serving it, for `bloomgate --version`, the
// start-up log and the `bloomgate_build_info` metric.
//
// The bloomgate binary links jemalloc (app/CMakeLists.txt). The service thread frees every consumed record
// that librdkafka's broker threads allocated, and those threads allocate and free fetch buffers in bursts:
// on glibc's malloc the cross-thread frees wait on the broker thread's arena lock, and the arenas hand
// memory back to the kernel only to fault it in again (bench/README.md, "Allocator"). The library does not
// depend on jemalloc, so tests and tools link either; allocator_name() finds out at run time.
#pragma once

#include <string>

namespace bloomgate::app {

std::string version();
// "jemalloc 5.3.0-0-g..." when jemalloc serves malloc in this process, else "glibc malloc".
std::string allocator_name();

}  // namespace bloomgate::app
