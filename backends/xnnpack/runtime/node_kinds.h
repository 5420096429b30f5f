// What each XNNGraph node kind becomes here, on Debian's XNNPACK (git 2022-02-16, ae108ef): one table, so the
// README, the load-time refusal and the definitions agree.
//
// Most kinds map to one xnn_define_* of that snapshot's subgraph API. A few have no counterpart there:
//   - StaticTranspose: the snapshot has no transpose at all (neither xnn_define_static_transpose nor a transpose
//     operator). A transpose that moves only size-1 dimensions is a reshape and stays in the subgraph (MobileNet's
//     [N,1,1,C] -> [N,C,1,1] after its global pooling); any other runs on the CPU between XNNPACK runtimes
//     (transpose.h), which splits the graph there.
//   - Copy: a reshape to the same shape.
//   - every other node ExecuTorch 1.5.1's partitioner writes that the snapshot lacks: BatchMatrixMultiply, Gelu and
//     Concatenate2..5 (a transformer's attention products, MLP activation, class token), StaticSlice (a fused QKV
//     projection's thirds, Swin's crops, Llama's rotary halves), Tanh (GPT-2's GELU), Sin and Cos (Llama's
//     rotary tables), ReciprocalSquareRoot (Llama's and T5's RMS norms), Log (T5's position buckets) and Exp:
//     run by Ember on the CPU between XNNPACK runtimes, as the transpose (cpu_nodes.h), which splits the graph
//     there.
//   - ScaledDotProductAttention, which ExecuTorch 1.5.1 never writes (it has no serializer for it): refused at
//     load, naming the node.
#pragma once

#include <stdint.h>

namespace ember {
namespace xnnpack {

enum class NodeRoute : uint8_t {
  Subgraph,   // an xnn_define_* call
  Transpose,  // StaticTranspose: a reshape in the subgraph when it moves only size-1 dims, else on the CPU
  Cpu,        // run by Ember between XNNPACK runtimes (cpu_nodes.h)
  Refused,    // needs an XNNPACK newer than the build's
};

// `kind`: the NodeUnion tag (schema/xnnpack_graph.fbs).
NodeRoute route_of(uint8_t kind);

// How many inputs a ConcatenateN kind joins (2 to 5); 0 for any other kind.
uint32_t concat_inputs(uint8_t kind);

// The kind's name as ExecuTorch's schema spells it ("XNNBatchMatrixMultiply"), for messages; "unknown" outside the
// union.
const char* node_kind_name(uint8_t kind);

}  // namespace xnnpack
}  // namespace ember
