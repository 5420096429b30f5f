// Every routed node's output shape, checked against its inputs and parameters before XNNPACK sees it.
//
// The 2022 library takes a subgraph's output shapes as given and writes what its operators compute, so a blob
// declaring a smaller output than the operator produces would make it write past the value's buffer. A .pte is
// untrusted input: each node's output dims are recomputed here (convolution and pooling arithmetic, broadcasting,
// reshape element counts, permutations) and must match what the blob declares, and its flags must be ones this
// reader knows.
#pragma once

#include <stdint.h>

#include "runtime/core/error.h"

namespace ember_xnn {
struct Node;
}

namespace ember {
namespace xnnpack {

struct GraphPlan;

// InvalidProgram naming the node, its kind, the value and the dims at fault; NotSupported for a flag or parameter
// the 2022 library has no meaning for.
Error check_node_shapes(const GraphPlan& plan, uint32_t index, const ember_xnn::Node* node);

// Flags ExecuTorch sets that the 2022 library predates: XNN_FLAG_KEEP_DIMS (0x40) on poolings, whose 2022 outputs
// always keep their dims. Cleared before the define call.
constexpr uint32_t kFlagKeepDims = 0x40;

}  // namespace xnnpack
}  // namespace ember
