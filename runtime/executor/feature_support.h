// The executor's optional features, reached only through feature_support() (runtime/kernel/operator_registry.h).
// The generated registration table fills it from its selection's `features:` (selective_build records the ones its
// programs use: codegen/features.py), so a binary whose programs need no control flow or dynamic shapes links none
// of that code, and its strings. A program that needs a feature its build left out is refused when its method
// loads, naming the feature (Error::NotSupported), never run without it.
// Internal to runtime/executor and the generated tables.
#pragma once

#include <stddef.h>

#include "runtime/core/span.h"
#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/executor/method.h"

namespace ember_pte {
struct JumpFalseCall;
struct Tensor;
}  // namespace ember_pte

namespace ember {

// Jumps (torch.cond, while_loop, map, scan): the instruction loop that takes them and the load step that checks
// one. Programs without them run a loop with no jump case and no instruction count.
struct ControlFlowSupport {
  // Checks jump `call` at instruction `pc` of `method` against the loaded `values` and writes its instruction into
  // `out`; sets `*loops` when it jumps backward (the method may then not end by itself).
  Error (*load_jump)(const char* method, size_t pc, const ember_pte::JumpFalseCall* call, const EValue* values,
                     Method::Instruction* out, bool* loops);
  // Method::execute for a method with jumps.
  Error (*run)(Method& method);

  static Error run_with_jumps(Method& method);
};

// Bounded dynamic inputs: a new shape within the planned upper bounds.
struct DynamicShapeSupport {
  // Gives bounded input `index` of `method`, tensor `t`, the shape `sizes`, after checking it against `planned`
  // (its upper bounds), naming the dimension out of bounds.
  Error (*resize_input)(const Method& method, size_t index, const Tensor& t, ArrayRef<int32_t> planned,
                        ArrayRef<int32_t> sizes);
};

// Constants kept in external data files (.ptd, docs/external_data.md): the load step that finds such a tensor's
// bytes by name (external_data.cc).
struct ExternalDataSupport {
  // The bytes of value `index` of `method`, external tensor `t` described by `impl`, found in `data` (null when the
  // method was loaded without data files) and checked against `impl` there.
  Result<const void*> (*resolve)(const char* method, size_t index, const ember_pte::Tensor* t, const TensorImpl& impl,
                                 const ExternalData* data);
};

// What the build has: a null support, or false, means compiled out.
struct FeatureSupport {
  const ControlFlowSupport* control_flow;
  const DynamicShapeSupport* dynamic_shapes;
  bool scalar_outputs;  // methods returning Int, Double or Bool values (the runners' printing of them)
  const ExternalDataSupport* external_data;
};

extern const ControlFlowSupport kControlFlowSupport;
extern const DynamicShapeSupport kDynamicShapeSupport;
extern const ExternalDataSupport kExternalDataSupport;

// "[d0, d1, ...]" into buf, for messages; cut short rather than overflow.
const char* shape_text(char* buf, size_t cap, ArrayRef<int32_t> sizes);

}  // namespace ember
