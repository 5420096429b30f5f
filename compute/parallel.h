// Splitting kernels/optimized's element-wise and row-wise passes over a method's threads (runtime/core/thread_pool.h).
// These passes are short and mostly memory-bound, so a pass is split only where every thread gets enough elements
// to pay for waking it; below that it stays on the calling thread, exactly as without a pool. Each element is
// computed the same way on whichever thread, so the results are the single-threaded bits.
#pragma once

#include <stdint.h>

#include "runtime/core/thread_pool.h"

namespace ember {
namespace optimized {

// Elements per thread below which a pass is not split, by what one element costs. Waking the pool's other thread
// and joining it costs this machine about the time of a 16K-float copy, so a load-add-store pass needs a few
// times that per thread, and one with an exp or erf per element (about 10x the work) a tenth of it.
constexpr int64_t kSplitPlain = int64_t{1} << 16;
constexpr int64_t kSplitMath = int64_t{1} << 12;

// f(begin, end) over [0, n): in one tile per thread, each a whole number of `align`-element units (a row of a
// broadcast block), or at once on the calling thread when a tile would hold fewer than `min_per_thread` elements.
template <class F>
inline void parallel_elements(ThreadPool* pool, int64_t n, int64_t align, int64_t min_per_thread, F&& f) {
  const int64_t threads = pool != nullptr ? pool->threads() : 1;
  if (align < 1) align = 1;
  int64_t tile = (n + threads - 1) / threads;
  tile = (tile + align - 1) / align * align;
  if (threads <= 1 || tile < min_per_thread || tile >= n) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  parallel_for(pool, n, tile, f);
}

}  // namespace optimized
}  // namespace ember
