// Work split across threads, for kernels: run a task over [0, n) in tiles on every thread of a pool, the caller's
// included. A Method has no pool unless its caller gives it one (the runner's --threads N, Python's threads=N), and
// then every kernel runs on the calling thread alone; bare-metal builds never have one. A pool's threads and state
// are made when it is created, so execute() stays heapless and lock-free of the allocator with one.
#pragma once

#include <stdint.h>

#include <type_traits>

namespace ember {

class ThreadPool {
 public:
  // One tile: [begin, end) of the range, on whichever thread took it.
  using Task = void (*)(void* context, int64_t begin, int64_t end);

  // Threads that run tiles, the caller included (1: run() is a loop on the caller).
  virtual int threads() const = 0;

  // task over [0, n) in tiles of `tile` items (the last may be shorter), in any order, on any thread; returns when
  // every tile is done. Tiles must not depend on each other. Not reentrant: a task must not call run(). Safe to call
  // from several threads at once (methods executing concurrently on one pool): an implementation may then run a
  // caller's tiles on that caller alone, so a tile's result must not depend on which thread or how many run it.
  virtual void run(int64_t n, int64_t tile, Task task, void* context) = 0;

 protected:
  ~ThreadPool() = default;  // owned by whoever created it, never deleted through this interface
};

// run() for a callable f(begin, end), or a plain loop on the calling thread when there is no pool (or one thread,
// or one tile): the one entry point kernels use, so a serial build compiles the same kernel code.
template <typename F>
inline void parallel_for(ThreadPool* pool, int64_t n, int64_t tile, F&& f) {
  if (n <= 0) return;
  if (tile < 1) tile = 1;
  if (pool == nullptr || pool->threads() <= 1 || n <= tile) {
    for (int64_t b = 0; b < n; b += tile) f(b, n - b < tile ? n : b + tile);
    return;
  }
  using Fn = std::remove_reference_t<F>;
  pool->run(
      n, tile, [](void* c, int64_t b, int64_t e) { (*static_cast<Fn*>(c))(b, e); },
      const_cast<void*>(static_cast<const void*>(&f)));
}

}  // namespace ember
