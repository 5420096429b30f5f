// What a kernel gets besides its arguments: the state its prepare step filled, its planned scratch, and a place
// to report failure. Kernels never abort: they record an Error here and return, and the method stops at that
// instruction and names it.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/error.h"
#include "runtime/core/log.h"
#include "runtime/core/span.h"
#include "runtime/core/thread_pool.h"

namespace ember {

class KernelContext {
 public:
  KernelContext() = default;
  KernelContext(void* state, Span<uint8_t> scratch, ThreadPool* threads = nullptr)
      : state_(state), scratch_(scratch), threads_(threads) {}

  // What the kernel's prepare step filled at load (runtime/kernel/kernel_args.h); null if it declared none.
  template <typename T>
  const T* state() const {
    return static_cast<const T*>(state_);
  }
  // At least the scratch bytes the kernel's memory function asked for, 16-byte aligned, valid during this call.
  // There is no other memory: scratch is planned (MethodMeta::scratch_bytes), never guessed.
  Span<uint8_t> scratch() const { return scratch_; }
  // The method's thread pool, or null (run on the calling thread): hand it to parallel_for (thread_pool.h). Tiles
  // may run at once, so they share nothing writable, scratch included, unless they split it between them.
  ThreadPool* threads() const { return threads_; }
  // Slices of `bytes` each (KernelMemory::scratch_per_thread) the scratch holds, at most one per thread of the
  // pool (1 without one); 0 when not even one fits. A kernel that splits its work into this many parts, part i on
  // slice i, has every thread it was planned for busy and no two parts sharing memory.
  int64_t scratch_slices(size_t bytes) const {
    const int64_t most = threads_ != nullptr ? threads_->threads() : 1;
    if (bytes == 0) return most;
    const size_t fit = scratch_.size() / bytes;
    return fit < static_cast<size_t>(most) ? static_cast<int64_t>(fit) : most;
  }

  void fail(Error error) {
    if (failure_ == Error::Ok) failure_ = error;
  }
  Error failure() const { return failure_; }

 private:
  void* state_ = nullptr;
  Span<uint8_t> scratch_;
  ThreadPool* threads_ = nullptr;
  Error failure_ = Error::Ok;
};

}  // namespace ember

// In a kernel: unless `cond`, log the message (it should name the op and the numbers at fault), record `code`
// on the context and return from the kernel.
#define EMBER_KERNEL_CHECK(ctx, cond, code, ...) \
  do {                                           \
    if (!(cond)) {                               \
      EMBER_LOG(ERROR, __VA_ARGS__);             \
      (ctx).fail(::ember::Error::code);          \
      return;                                    \
    }                                            \
  } while (0)

// The same in a kernel's helper that answers whether the kernel may go on: returns false instead.
#define EMBER_KERNEL_CHECK_OR_FALSE(ctx, cond, code, ...) \
  do {                                                    \
    if (!(cond)) {                                        \
      EMBER_LOG(ERROR, __VA_ARGS__);                      \
      (ctx).fail(::ember::Error::code);                   \
      return false;                                       \
    }                                                     \
  } while (0)
