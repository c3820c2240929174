// File: decide_pipeline.h
//
// Runs a step of per-event work (the service's decide()) on a thread of its own, so that the thread that
// polls the consumer and produces the output does not also pay for key extraction and the filter: the two
// halves of an event's cost overlap on two cores. Events come back in the order they went in, and the
// caller finishes them (produces, advances offsets) on its own thread, so nothing about the order of the
// output or of the offsets changes.
//
// A bounded ring: push() never blocks (check full() first), front() waits. At most `capacity` events are
// in flight, which bounds how far consumption runs ahead of the output.
//
// Halting: once halted (the work asked for it by returning false, or halt() was called), the thread does
// no more work, and the events still in flight come back with `worked` false: the caller decides them
// itself, in order, or discards them (consumed but not decided: their offsets must not advance). resume()
// starts working again; the service resumes only with nothing in flight, so no event is worked on by both.
// The service halts before anything replaces the state the work uses (an aborted transaction's rewind),
// and the work halts itself after an event that stops the service (a dead letter with nowhere to go), so
// that no later event's key reaches the filter before the checkpoint of the events before it.
//
// Inline mode (threaded = false): the work runs inside push(), on the caller's thread; everything else
// behaves the same. The service's default: on 2 cores shared with librdkafka's threads the thread cost
// more CPU per event than it took off the polling thread (bench/README.md, service_bench).
//
// Thread-safety: push, front, pop, halt, resume, empty, full from one thread (the owner's); the work
// function runs on the pipeline's thread and may touch only what the owner leaves alone while events are
// in flight (the owner calls front() until empty() before touching it: a drain).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace bloomgate::app {

namespace pipeline_detail {

// Process-private futexes, woken only when the other side said it sleeps: std::atomic::notify_one of
// libstdc++ 12 makes a shared-futex system call on every notify, sleeper or not, which cost the two threads
// more than the event's work.
inline std::uint32_t* word_of(std::atomic<std::uint32_t>& word) {
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  return reinterpret_cast<std::uint32_t*>(&word);
}

inline void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) {
  syscall(SYS_futex, word_of(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

inline void futex_wake(std::atomic<std::uint32_t>& word) {
  syscall(SYS_futex, word_of(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace pipeline_detail

template <class Event>
class DecidePipeline {
 public:
  // Returns false to halt after this event. May throw: the exception comes back with the event.
  using Work = std::function<bool(Event&)>;

  struct Slot {
    std::optional<Event> event;
    bool worked = false;
    std::exception_ptr error;  // thrown by the work
  };

  // `capacity` is rounded up to a power of two.
  DecidePipeline(std::size_t capacity, bool threaded, Work work)
      : slots_(round_up(capacity)),
        mask_(static_cast<std::uint32_t>(slots_.size() - 1)),
        wake_batch_(std::max<std::uint32_t>(1, static_cast<std::uint32_t>(slots_.size() / 16))),
        work_(std::move(work)) {
    if (threaded) thread_ = std::thread([this] { run(); });
  }

  ~DecidePipeline() {
    if (!thread_.joinable()) return;
    stopping_.store(true, std::memory_order_seq_cst);
    wake_.fetch_add(1, std::memory_order_seq_cst);
    pipeline_detail::futex_wake(wake_);
    thread_.join();
  }

  DecidePipeline(const DecidePipeline&) = delete;
  DecidePipeline& operator=(const DecidePipeline&) = delete;

  bool empty() const { return tail_ == head_.load(std::memory_order_relaxed); }
  bool full() const { return head_.load(std::memory_order_relaxed) - tail_ == slots_.size(); }
  std::size_t in_flight() const { return head_.load(std::memory_order_relaxed) - tail_; }

  void push(Event event) {
    if (full()) throw std::logic_error("DecidePipeline::push on a full pipeline");
    const std::uint32_t head = head_.load(std::memory_order_relaxed);
    Slot& slot = slots_[head & mask_];
    slot.event.emplace(std::move(event));
    slot.worked = false;
    slot.error = nullptr;
    if (!thread_.joinable()) {
      work_on(slot);
      head_.store(head + 1, std::memory_order_relaxed);
      done_.store(head + 1, std::memory_order_relaxed);
      return;
    }
    // seq_cst with the thread's own store to sleeping_ and load of head_: one of the two sees the other's.
    head_.store(head + 1, std::memory_order_seq_cst);
    // A sleeping thread is woken for a batch of events, not for each one (or sooner, by a wait for it:
    // wait_done_past): one context switch per event would cost more than the event's work.
    if (sleeping_.load(std::memory_order_seq_cst) &&
        head + 1 - done_.load(std::memory_order_acquire) >= wake_batch_) {
      wake_thread();
    }
  }

  // The oldest event in flight, once the thread is done with it; waits for that. nullptr when empty.
  Slot* front() {
    if (empty()) return nullptr;
    wait_done_past(tail_);
    return &slots_[tail_ & mask_];
  }

  // Waits until the oldest `count` events in flight (or all, if fewer) are done; front() then returns
  // each of them at once. The owner of a full pipeline waits for a batch, not for one event at a time.
  void wait_for(std::size_t count) {
    const std::size_t n = std::min(count, in_flight());
    if (n > 0) wait_done_past(tail_ + static_cast<std::uint32_t>(n) - 1);
  }

  // The oldest event in flight if the thread is already done with it, without waiting.
  Slot* ready() {
    if (empty() || done_.load(std::memory_order_acquire) == tail_) return nullptr;
    return &slots_[tail_ & mask_];
  }

  // Releases the slot front() or ready() returned (take its event out first).
  void pop() {
    slots_[tail_ & mask_].event.reset();
    ++tail_;
  }

  // Stops the work: waits until the thread is past every event in flight (later ones come back unworked).
  void halt() {
    halted_.store(true, std::memory_order_seq_cst);
    if (!thread_.joinable()) return;
    const std::uint32_t head = head_.load(std::memory_order_relaxed);
    if (head != tail_) wait_done_past(head - 1);
  }

  void resume() { halted_.store(false, std::memory_order_seq_cst); }
  bool halted() const { return halted_.load(std::memory_order_relaxed); }

 private:
  static std::size_t round_up(std::size_t capacity) {
    std::size_t size = 1;
    while (size < capacity) size *= 2;
    return size;
  }

  void work_on(Slot& slot) {
    if (halted_.load(std::memory_order_acquire)) return;
    try {
      slot.worked = true;
      if (!work_(*slot.event)) halted_.store(true, std::memory_order_release);
    } catch (...) {
      slot.error = std::current_exception();
      halted_.store(true, std::memory_order_release);
    }
  }

  void run() {
    std::uint32_t next = 0;
    while (true) {
      std::uint32_t head = head_.load(std::memory_order_acquire);
      if (next == head) {
        if (stopping_.load(std::memory_order_acquire)) return;
        head = sleep_until_pushed(next);
        if (next == head) continue;
      }
      for (; next != head; ++next) {
        work_on(slots_[next & mask_]);
        // seq_cst with the owner's store to owner_waiting_ and load of done_ (wait_done_past).
        done_.store(next + 1, std::memory_order_seq_cst);
        if (owner_waiting_.load(std::memory_order_seq_cst)) pipeline_detail::futex_wake(done_);
      }
    }
  }

  void wake_thread() {
    wake_.fetch_add(1, std::memory_order_seq_cst);
    pipeline_detail::futex_wake(wake_);
  }

  // Owner side: waits until the thread is done with the event at `index`. Spins first: an event's work
  // takes about a microsecond.
  void wait_done_past(std::uint32_t index) {
    const auto past = [&](std::uint32_t done) { return static_cast<std::int32_t>(done - index) > 0; };
    if (past(done_.load(std::memory_order_acquire))) return;
    if (sleeping_.load(std::memory_order_seq_cst)) wake_thread();  // it may be waiting for a batch to fill
    for (int i = 0; i < kSpins; ++i) {
      if (past(done_.load(std::memory_order_acquire))) return;
      pipeline_detail::cpu_relax();
    }
    while (true) {
      owner_waiting_.store(true, std::memory_order_seq_cst);
      const std::uint32_t done = done_.load(std::memory_order_seq_cst);
      if (past(done)) break;
      pipeline_detail::futex_wait(done_, done);
    }
    owner_waiting_.store(false, std::memory_order_relaxed);
  }

  // Spins briefly (the owner usually pushes again within a microsecond), then sleeps on wake_.
  std::uint32_t sleep_until_pushed(std::uint32_t next) {
    for (int i = 0; i < kSpins; ++i) {
      const std::uint32_t head = head_.load(std::memory_order_acquire);
      if (head != next) return head;
      pipeline_detail::cpu_relax();
    }
    const std::uint32_t ticket = wake_.load(std::memory_order_seq_cst);
    sleeping_.store(true, std::memory_order_seq_cst);
    const std::uint32_t head = head_.load(std::memory_order_seq_cst);
    if (head == next && !stopping_.load(std::memory_order_seq_cst)) pipeline_detail::futex_wait(wake_, ticket);
    sleeping_.store(false, std::memory_order_relaxed);
    return head_.load(std::memory_order_acquire);
  }

  static constexpr int kSpins = 128;

  std::vector<Slot> slots_;
  const std::uint32_t mask_;
  const std::uint32_t wake_batch_;  // events pushed before a sleeping thread is woken
  Work work_;
  std::uint32_t tail_ = 0;                // owner only
  std::atomic<std::uint32_t> head_{0};    // written by the owner
  std::atomic<std::uint32_t> done_{0};    // written by the thread: events before it are worked (or skipped)
  std::atomic<std::uint32_t> wake_{0};    // bumped to wake a sleeping thread
  std::atomic<bool> sleeping_{false};       // the thread is (about to be) asleep on wake_
  std::atomic<bool> owner_waiting_{false};  // the owner is (about to be) asleep on done_
  std::atomic<bool> halted_{false};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace bloomgate::app
