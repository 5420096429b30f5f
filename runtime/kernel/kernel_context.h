// What a kernel gets besides its arguments: scratch memory, and a place to report failure. Kernels never abort:
// they record an Error here and return, and the method stops at that instruction and names it.
#pragma once

#include "runtime/core/error.h"
#include "runtime/core/log.h"
#include "runtime/core/memory_allocator.h"

namespace ember {

class KernelContext {
 public:
  explicit KernelContext(MemoryAllocator* temp_allocator = nullptr) : temp_(temp_allocator) {}

  // Scratch memory valid until the kernel returns; may be null when the method was given none.
  MemoryAllocator* temp_allocator() const { return temp_; }

  void fail(Error error) {
    if (failure_ == Error::Ok) failure_ = error;
  }
  Error failure() const { return failure_; }

 private:
  MemoryAllocator* temp_;
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
