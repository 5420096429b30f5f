// A ThreadPool on POSIX threads (Linux, Android, macOS/iOS): N - 1 worker threads and the caller share each run()'s
// tiles through one atomic counter. Between runs the workers spin briefly, then sleep on a condition variable, so a
// model's back-to-back kernels (MobileNetV2 makes about 50 parallel regions a run) do not pay a wake-up each, and an
// idle pool costs no CPU. A run waits only for the workers that joined it, never for one still asleep: a worker
// joins by one compare-and-swap on the run's state word while the run is open, and run() closes it once no tile is
// left and every joined worker has left, so a late worker can never touch a finished run. The workers serve one
// run at a time: a run() called while another thread's is in progress (two methods executing at once on one
// pool) does its tiles on its own thread, never waiting for the pool and never sharing the run's state.
#pragma once

#include <pthread.h>
#include <stdint.h>

#include <atomic>

#include "runtime/core/result.h"
#include "runtime/core/thread_pool.h"

namespace ember {

class PosixThreadPool final : public ThreadPool {
 public:
  static constexpr int kMaxThreads = 64;

  // A pool of `threads` (the caller included; 1 makes no worker threads). Fails, naming the cause, when threads is
  // outside 1 .. kMaxThreads or the system refuses a thread; then no thread is left running.
  static Result<PosixThreadPool*> create(int threads);
  // Stops and joins the workers, then frees the pool. Not while a run() is in progress.
  static void destroy(PosixThreadPool* pool);

  int threads() const override { return threads_; }
  void run(int64_t n, int64_t tile, Task task, void* context) override;

 private:
  explicit PosixThreadPool(int threads) : threads_(threads) {}
  static void* worker_main(void* self);
  void work();  // take tiles of the current run until none are left

  const int threads_;
  int started_ = 0;  // worker threads running
  pthread_t workers_[kMaxThreads];
  pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t wake_ = PTHREAD_COND_INITIALIZER;  // a new run, or stop

  // The run's state word: generation << 33 | open << 32 | workers inside the run.
  static constexpr uint64_t kOpen = uint64_t{1} << 32, kGeneration = uint64_t{1} << 33, kInside = kOpen - 1;
  std::atomic<uint64_t> state_{0};
  // The current run: written by run() before it publishes a new generation (release), read by a worker only after
  // it joined that generation (acquire), and never changed while a joined worker is inside.
  Task task_ = nullptr;
  void* context_ = nullptr;
  int64_t n_ = 0, tile_ = 1, tiles_ = 0;
  std::atomic<int64_t> next_{0};  // next tile to take
  std::atomic<bool> stop_{false};
  // Taken by the run() that has the workers; another caller finding it taken runs its tiles on its own thread.
  std::atomic<bool> busy_{false};
};

}  // namespace ember
