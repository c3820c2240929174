// ThreadSanitizer builds only (cmake/Sanitizers.cmake). librdkafka starts its threads with C11 thrd_create,
// which glibc 2.34 and later implements without going through pthread_create, so gcc 12's ThreadSanitizer
// (which intercepts pthread_create, not thrd_create) never sets those threads up and crashes at their first
// allocation. These definitions come before libc's in the process's symbol lookup and start and join C11
// threads as POSIX threads, which the sanitizer sees.
#include <pthread.h>
#include <threads.h>

#include <new>

namespace {

struct Start {
  thrd_start_t function;
  void* argument;
};

void* run(void* start) {
  const Start copy = *static_cast<Start*>(start);
  delete static_cast<Start*>(start);
  return reinterpret_cast<void*>(static_cast<long>(copy.function(copy.argument)));
}

}  // namespace

extern "C" {

int thrd_create(thrd_t* thread, thrd_start_t function, void* argument) {
  auto* start = new (std::nothrow) Start{function, argument};
  if (start == nullptr) return thrd_nomem;
  if (pthread_create(thread, nullptr, run, start) != 0) {
    delete start;
    return thrd_error;
  }
  return thrd_success;
}

int thrd_join(thrd_t thread, int* result) {
  void* value = nullptr;
  if (pthread_join(thread, &value) != 0) return thrd_error;
  if (result != nullptr) *result = static_cast<int>(reinterpret_cast<long>(value));
  return thrd_success;
}

int thrd_detach(thrd_t thread) { return pthread_detach(thread) == 0 ? thrd_success : thrd_error; }

}  // extern "C"
