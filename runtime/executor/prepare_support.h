// How the executor runs kernels' prepare steps (runtime/kernel/kernel_args.h), reached only through
// prepare_support() (runtime/kernel/operator_registry.h): a generated registration table whose kernels declare a
// prepare step returns &kPrepareSupport, every other table null, so binaries that need none of this link none of
// it. Internal to runtime/executor and the generated tables.
#pragma once

#include <stddef.h>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_args.h"
#include "runtime/kernel/operator_registry.h"

namespace ember_pte {
struct ExecutionPlan;
struct KernelCall;
}  // namespace ember_pte

namespace ember {

// A kernel's memory on one thread: its state and its scratch. Two words, so it comes back in registers.
struct PlannedMemory {
  size_t state;
  size_t scratch;
};

struct PrepareSupport {
  // The memory of the kernel `call` resolves to, asked from the program itself (16-byte units): zero when this
  // build lacks the kernel, it declares none, or the arguments do not fit its signature (Method::load then
  // refuses them by name).
  PlannedMemory (*memory)(const ember_pte::ExecutionPlan* plan, const ember_pte::KernelCall* call);
  // The most scratch any kernel call of `plan` needs on `threads` threads (> 1): its scratch plus, for each thread
  // beyond the first, KernelMemory::scratch_per_thread. Here, not in the executor's layout pass, so binaries
  // without kernel memory, and the single-threaded path, carry none of it.
  size_t (*threaded_scratch)(const ember_pte::ExecutionPlan* plan, int threads);
  // Runs `entry`'s prepare step over the loaded arguments of `call` (the program says which are constants).
  // `values_fixed`: the method has no instruction that replaces a value (KernelArgs::shapes_fixed).
  Error (*prepare)(const ember_pte::ExecutionPlan* plan, const ember_pte::KernelCall* call, const KernelEntry* entry,
                   EValue** args, size_t num_args, bool values_fixed, void* state);
};

extern const PrepareSupport kPrepareSupport;

}  // namespace ember
