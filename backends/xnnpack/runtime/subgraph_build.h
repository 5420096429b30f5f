// One planned stage made into an XNNPACK runtime with the 2022 subgraph API: its values defined (constants with
// their bytes, the stage's external values numbered by their position in StagePlan::externals, the rest internal),
// its nodes defined in order, the runtime created (weights packed there), the subgraph dropped.
#pragma once

#include <stdint.h>

#include "backends/xnnpack/runtime/graph_plan.h"
#include "runtime/core/error.h"

namespace ember {
namespace xnnpack {

// Sets plan->stages[stage].runtime. Errors name the node index and kind, or the value, and XNNPACK's status.
Error build_stage(GraphPlan* plan, uint32_t stage);

// Deletes every stage's runtime (those built so far) and releases the named data the plan holds.
void release_plan(GraphPlan* plan);

// xnn_initialize, once per process (XNNPACK makes repeated calls cheap): false on a CPU it does not support.
bool initialize_xnnpack();

}  // namespace xnnpack
}  // namespace ember
