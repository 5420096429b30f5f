// XNNPACK's pthreadpools, one per thread count, shared by every delegate of every method loaded with that count.
// ExecuTorch's BERT-mini program has 17 delegates; a pool each left 17 workers spin-waiting for the two CPUs here
// after their operators, and a run on two threads took 315 ms against 7 ms on one.
#pragma once

namespace ember {
namespace xnnpack {

// A pthreadpool_t of `threads` threads (> 1), shared: made on the first acquire, destroyed with the last release.
// Null when the system gives no threads.
void* acquire_threadpool(int threads);
// Gives back a pool from acquire_threadpool (null: nothing).
void release_threadpool(void* pool);

}  // namespace xnnpack
}  // namespace ember
