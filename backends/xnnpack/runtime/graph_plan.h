// An XnnpackBackend blob read, checked and laid out, before any XNNPACK call: the values (dims, dtype, constant or
// argument), the nodes routed (node_kinds.h) and grouped into stages, and the buffers between stages.
//
// A stage is either a run of consecutive nodes that become one XNNPACK subgraph (one xnn_runtime_t) or one node
// the CPU runs because the 2022 library lacks it (a transpose, or one of cpu_nodes.h's kinds). A value read by a
// stage other than the one that writes it lives in a buffer planned here; the delegate's own inputs and outputs
// are the caller's tensors. An ExecuTorch MobileNetV2 or ResNet18 is two stages: its input's NCHW -> NHWC
// transpose, then the whole network in one runtime (the transpose back after the global pooling only moves size-1
// dims, so it stays there as a reshape).
//
// Everything here comes from one MemoryAllocator (the method allocator at init; a counting one for init_bytes),
// so MethodMeta can say what a delegate takes; only XNNPACK's own memory (packed weights, its workspace) is heap.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/backend/backend.h"
#include "backends/xnnpack/runtime/blob_header.h"
#include "runtime/core/freeable_buffer.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/result.h"
#include "runtime/core/scalar_type.h"

namespace ember_xnn {
struct Graph;
struct Node;
struct TensorValue;
struct QuantizedTensorValue;
}  // namespace ember_xnn

namespace ember {
namespace xnnpack {

constexpr uint32_t kNoId = 0xFFFFFFFFu;  // XNN_INVALID_VALUE_ID: an absent optional input (a bias)
constexpr uint32_t kMaxDims = 6;         // XNN_MAX_TENSOR_DIMS of the 2022 snapshot
// XNNPACK may read (never write) up to 16 bytes past an input (XNN_EXTRA_BYTES); buffers planned here have them.
constexpr size_t kExtraBytes = 16;

struct ValuePlan {
  const ember_xnn::TensorValue* tensor;              // a quantized value's inner tensor
  const ember_xnn::QuantizedTensorValue* quantized;  // null when not quantized
  uint32_t dims[kMaxDims];
  uint32_t num_dims;
  uint32_t datatype;      // XNNPACK's numbering (schema Datatype)
  size_t nbytes;
  uint32_t producer;      // node writing it, kNoId for inputs and constants
  uint32_t stage;         // the producer's stage
  int32_t arg;            // the delegate argument it is (inputs, then outputs), or -1
  bool constant;
  bool crosses;           // read by a stage other than its producer's
  uint8_t* buffer;        // between stages; null otherwise
  const void* data;       // a constant's bytes, resolved by bind_constants
  const float* scales;    // per-channel scales, resolved by bind_constants
};

// The product of dims [begin, end) of `v` (numel: all of them); 1 for an empty range.
inline uint64_t dims_product(const ValuePlan& v, uint32_t begin, uint32_t end) {
  uint64_t n = 1;
  for (uint32_t d = begin; d < end; ++d) n *= v.dims[d];
  return n;
}
inline uint64_t numel(const ValuePlan& v) { return dims_product(v, 0, v.num_dims); }

// Layout-compatible with XNNPACK's xnn_external_value (checked where xnnpack.h is included).
struct ExternalSlot {
  uint32_t id;
  void* data;
};

struct StagePlan {
  bool on_cpu;            // one node the CPU runs (transpose.h, cpu_nodes.h); else an XNNPACK subgraph
  uint32_t first_node;
  uint32_t end_node;
  uint32_t num_externals;
  uint32_t* externals;    // value ids; a value's external id in this stage's subgraph is its position here
  ExternalSlot* slots;    // one per external value, refilled per call
  bool slots_set;         // the runtime was set up with the slots' current pointers
  void* runtime;          // xnn_runtime_t
};

struct GraphPlan {
  const ember_xnn::Graph* graph;
  BlobParts parts;
  uint32_t num_values;
  ValuePlan* values;      // by value id (XNNGraph's id_out)
  uint32_t num_nodes;
  uint32_t num_stages;
  StagePlan* stages;
  uint32_t num_inputs;
  uint32_t num_outputs;
  const uint32_t* arg_values;  // the value id of each delegate argument
  size_t num_constants;
  FreeableBuffer* named;       // per ConstantDataOffset entry: named data loaded for it (kept for the runtime)
  uint32_t* scratch;           // num_values words for stage bookkeeping
  void* threadpool = nullptr;  // for BackendInitContext::threads > 1: thread_pools.h's shared pthreadpool_t
};

// Reads `blob` and plans it: its tables into `tables`, the buffers between stages into `buffers` (the same allocator
// at init; init_bytes counts the buffers without touching them). Every allocation is rounded to 16 bytes. Errors
// name what is at fault: the byte count or offset, the value id and its field, the node index and kind ("node 7
// (XNNBatchMatrixMultiply) needs an XNNPACK newer than ...").
Result<GraphPlan*> plan_graph(const void* blob, size_t nbytes, MemoryAllocator* tables, MemoryAllocator* buffers);

// The blob's graph, verified as a flatbuffer (every offset inside it), or InvalidProgram.
Result<const ember_xnn::Graph*> read_graph(const BlobParts& parts);

// An upper bound of what plan_graph takes from `tables` for this blob (after split_blob and verification), so
// init_bytes can give it a scratch buffer.
size_t plan_tables_bound(const ember_xnn::Graph* graph);

// Points every constant value at its bytes: the blob's constant data (XN01 offsets), its inline buffers (XN00), or
// the program's named data (XN01 named_key; loaded and kept in plan->named).
Error bind_constants(GraphPlan* plan, const NamedDataMap* named_data);

// The ScalarType a delegate argument of XNNPACK datatype `datatype` must have.
ScalarType scalar_type_of(uint32_t datatype);

// The node's value ids (at most 8: inputs first, then outputs), for routed kinds; bit k of `optional` set when
// input k may be kNoId (a bias). False for a kind with no routed table, or a missing table.
bool node_values(const ember_xnn::Node* node, uint32_t* ids, size_t* num_inputs, size_t* num_outputs,
                 uint32_t* optional);

// For a StaticTranspose: whether it only moves size-1 dims of its input (then it is a reshape).
bool transpose_is_reshape(const GraphPlan& plan, const ember_xnn::Node* node);

}  // namespace xnnpack
}  // namespace ember
