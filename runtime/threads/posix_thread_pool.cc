#include "runtime/threads/posix_thread_pool.h"

#include <sched.h>
#include <string.h>

#include <new>

#include "runtime/core/log.h"

namespace ember {

namespace {

// Polls of the generation (or of busy_) before sleeping: long enough to bridge the gap between one kernel's parallel
// region and the next (a few microseconds), short enough that a pool between inferences goes to sleep at once.
constexpr int kSpins = 1 << 14;

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace

Result<PosixThreadPool*> PosixThreadPool::create(int threads) {
  if (threads < 1 || threads > kMaxThreads) {
    EMBER_LOG(ERROR, "thread pool: %d threads asked for; give 1 .. %d", threads, kMaxThreads);
    return Error::InvalidArgument;
  }
  PosixThreadPool* pool = new (std::nothrow) PosixThreadPool(threads);
  if (pool == nullptr) {
    EMBER_LOG(ERROR, "thread pool: no memory for the pool object (%zu bytes)", sizeof(PosixThreadPool));
    return Error::MemoryAllocationFailed;
  }
  for (int i = 1; i < threads; ++i) {
    const int rc = pthread_create(&pool->workers_[pool->started_], nullptr, &worker_main, pool);
    if (rc != 0) {
      EMBER_LOG(ERROR, "thread pool: starting worker %d of %d failed: %s", i, threads - 1, strerror(rc));
      destroy(pool);
      return Error::OutOfResources;
    }
    ++pool->started_;
  }
  return pool;
}

void PosixThreadPool::destroy(PosixThreadPool* pool) {
  if (pool == nullptr) return;
  pthread_mutex_lock(&pool->mutex_);
  pool->stop_.store(true, std::memory_order_release);
  pool->state_.fetch_add(kGeneration, std::memory_order_release);  // a new generation, closed: wakes everyone
  pthread_cond_broadcast(&pool->wake_);
  pthread_mutex_unlock(&pool->mutex_);
  for (int i = 0; i < pool->started_; ++i) pthread_join(pool->workers_[i], nullptr);
  pthread_mutex_destroy(&pool->mutex_);
  pthread_cond_destroy(&pool->wake_);
  delete pool;
}

void PosixThreadPool::work() {
  for (;;) {
    const int64_t t = next_.fetch_add(1, std::memory_order_relaxed);
    if (t >= tiles_) return;
    const int64_t b = t * tile_;
    task_(context_, b, n_ - b < tile_ ? n_ : b + tile_);
  }
}

void* PosixThreadPool::worker_main(void* self) {
  PosixThreadPool& p = *static_cast<PosixThreadPool*>(self);
  uint64_t seen = 0;  // the generation last looked at
  for (;;) {
    uint64_t s = p.state_.load(std::memory_order_acquire);
    for (int i = 0; s / kGeneration == seen && i < kSpins; ++i) {
      relax();
      s = p.state_.load(std::memory_order_acquire);
    }
    if (s / kGeneration == seen) {
      pthread_mutex_lock(&p.mutex_);
      while ((s = p.state_.load(std::memory_order_acquire)) / kGeneration == seen) {
        pthread_cond_wait(&p.wake_, &p.mutex_);
      }
      pthread_mutex_unlock(&p.mutex_);
    }
    seen = s / kGeneration;
    if (p.stop_.load(std::memory_order_acquire)) return nullptr;
    // Join while this generation's run is open; a closed (finished) run is left alone.
    while ((s & kOpen) && s / kGeneration == seen) {
      if (p.state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire, std::memory_order_acquire)) {
        p.work();
        p.state_.fetch_sub(1, std::memory_order_release);
        break;
      }
    }
  }
}

void PosixThreadPool::run(int64_t n, int64_t tile, Task task, void* context) {
  if (n <= 0) return;
  if (tile < 1) tile = 1;
  const int64_t tiles = (n + tile - 1) / tile;
  bool idle = false;
  if (started_ == 0 || tiles == 1 || !busy_.compare_exchange_strong(idle, true, std::memory_order_acquire)) {
    for (int64_t b = 0; b < n; b += tile) task(context, b, n - b < tile ? n : b + tile);
    return;
  }
  task_ = task, context_ = context, n_ = n, tile_ = tile, tiles_ = tiles;
  next_.store(0, std::memory_order_relaxed);
  // Publish the run: next generation, open, nobody inside. The lock pairs with a worker's check-then-wait, so a
  // worker about to sleep either sees the new generation or is woken by the broadcast.
  pthread_mutex_lock(&mutex_);
  const uint64_t open = (state_.load(std::memory_order_relaxed) / kGeneration + 1) * kGeneration | kOpen;
  state_.store(open, std::memory_order_release);
  pthread_cond_broadcast(&wake_);
  pthread_mutex_unlock(&mutex_);
  work();
  // Every tile is taken; close the run once no joined worker is still inside (finishing its last tile).
  uint64_t s = open;
  for (int i = 0;; ++i) {
    if ((s & kInside) == 0 && state_.compare_exchange_weak(s, s & ~kOpen, std::memory_order_acq_rel)) {
      busy_.store(false, std::memory_order_release);
      return;
    }
    if (i >= kSpins) sched_yield();
    relax();
    s = state_.load(std::memory_order_acquire);
  }
}

}  // namespace ember
