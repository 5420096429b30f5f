// The kernel table: generated per build by codegen/gen_registration.py from kernel manifests and a model's
// selection, sorted by operator name, sized exactly. No static initializers, no --whole-archive.
#pragma once

#include <stdint.h>

#include "runtime/core/evalue.h"
#include "runtime/core/span.h"
#include "runtime/kernel/kernel_args.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {

// Unboxes `args` (every schema argument, then the return value) and calls the typed kernel.
using KernelFn = void (*)(KernelContext& ctx, EValue** args);

struct KernelEntry {
  const char* name;       // "aten::add.out"
  KernelFn fn;
  // One argument code per argument, the return last, which the method checks each value's tag against at load.
  // The codes are the contract's (schema/argument_codes.yaml; argument_code_accepts() in schema/argument_codes.h).
  const char* arg_types;
  // ScalarTypes this build computes for the kernel (bit n = ScalarType n).
  uint32_t dtype_mask;
  // The kernel's prepare step (kernel_args.h), both null for the many kernels that need neither state nor scratch.
  KernelMemoryFn memory;
  KernelPrepareFn prepare;
};

// Defined by the generated registration table linked into the binary.
Span<const KernelEntry> registered_kernels();

// The executor's side of prepare steps (runtime/executor/prepare_support.h), or null. The generated table returns
// it only when one of its kernels declares a prepare step, so a binary without such kernels links none of that
// code (about 2 KB of a 50 KB runtime core).
struct PrepareSupport;
const PrepareSupport* prepare_support();

// The executor's side of delegate calls (runtime/executor/delegate_support.h), never null: the generated table
// returns the real one only when the build has backends (codegen --backend), so delegate-free binaries link none
// of it, only a refusal naming the instruction.
struct DelegateSupport;
const DelegateSupport* delegate_support();

// The executor's optional features (runtime/executor/feature_support.h), never null: the generated table points
// at those its selection's programs use, so binaries link the code of no other.
struct FeatureSupport;
const FeatureSupport* feature_support();

// The entry for `op` ("aten::add") with `overload` ("out", or "" for the default), or nullptr.
const KernelEntry* find_kernel(const char* op, const char* overload);

}  // namespace ember
