// XnnpackBackend: runs ExecuTorch's XNNPACK-delegated partitions (their XH00/XN01 blobs) on Debian's XNNPACK,
// a 2022 snapshot with the subgraph API. Registered as "XnnpackBackend", the id ExecuTorch's programs name.
//
// init reads and checks the blob (blob_header.h, graph_plan.h, node_shapes.h), binds its constants (inline, or the
// program's named data), and builds one XNNPACK runtime per run of subgraph nodes (subgraph_build.h); node kinds
// the 2022 library lacks are refused there, naming the node. execute binds the call's tensors and invokes the
// runtimes in order, with the transposes the library lacks done in between (transpose.h).
//
// Opt-in per build (--config=xnnpack): it links the system libXNNPACK, which cross builds do not have.
#pragma once

#include "runtime/backend/backend.h"

namespace ember {
namespace xnnpack {

extern const Backend kBackend;

}  // namespace xnnpack
}  // namespace ember
