// Function multi-versioning: BLOOMGATE_TARGET_CLONES("avx2", "default") compiles a function once per
// instruction set and lets an ifunc resolver pick one when the library is loaded. Under ThreadSanitizer the
// resolver would run instrumented before the sanitizer's runtime is set up (the process crashes at load),
// so those builds keep the default version only.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define BLOOMGATE_TARGET_CLONES(...)
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BLOOMGATE_TARGET_CLONES(...)
#endif
#endif

#ifndef BLOOMGATE_TARGET_CLONES
#define BLOOMGATE_TARGET_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#endif
