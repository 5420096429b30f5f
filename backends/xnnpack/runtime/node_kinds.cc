#include "backends/xnnpack/runtime/node_kinds.h"

#include "schema/xnnpack_graph_generated.h"

namespace ember {
namespace xnnpack {

using K = ember_xnn::NodeUnion;

NodeRoute route_of(uint8_t kind) {
  switch (static_cast<K>(kind)) {
    case K::Add:
    case K::FullyConnected:
    case K::Softmax:
    case K::Sigmoid:
    case K::Clamp:
    case K::Conv2d:
    case K::Div:
    case K::StaticResizeBilinear2D:
    case K::StaticConstantPad:
    case K::AvgPooling2d:
    case K::Minimum:
    case K::DepthwiseConv2d:
    case K::MaxPooling2d:
    case K::Multiply:
    case K::Subtract:
    case K::Floor:
    case K::Convert:
    case K::GlobalAvgPooling2d:
    case K::StaticReshape:
    case K::ArgMaxPooling2d:
    case K::SquareRoot:
    case K::Ceiling:
    case K::Hardswish:
    case K::LeakyReLU:
    case K::Maximum:
    case K::Negate:
    case K::Square:
    case K::ELU:
    case K::Abs:
    case K::PReLU:
    case K::ConvTranspose2d:
    case K::Copy: return NodeRoute::Subgraph;
    case K::StaticTranspose: return NodeRoute::Transpose;
    case K::BatchMatrixMultiply:
    case K::Gelu:
    case K::Tanh:
    case K::Exp:
    case K::Log:
    case K::Sin:
    case K::Cos:
    case K::ReciprocalSquareRoot:
    case K::StaticSlice:
    case K::Concatenate2:
    case K::Concatenate3:
    case K::Concatenate4:
    case K::Concatenate5: return NodeRoute::Cpu;
    default: return NodeRoute::Refused;
  }
}

uint32_t concat_inputs(uint8_t kind) {
  switch (static_cast<K>(kind)) {
    case K::Concatenate2: return 2;
    case K::Concatenate3: return 3;
    case K::Concatenate4: return 4;
    case K::Concatenate5: return 5;
    default: return 0;
  }
}

const char* node_kind_name(uint8_t kind) {
  // ExecuTorch's spelling: its partitioner's names are what users see in their own logs.
  static const char* const kNames[] = {
      "NONE",
      "XNNAdd",
      "XNNFullyConnected",
      "XNNSoftmax",
      "XNNSigmoid",
      "XNNStaticTranspose",
      "XNNClamp",
      "XNNConv2d",
      "XNNDiv",
      "XNNStaticResizeBilinear2D",
      "XNNStaticConstantPad",
      "XNNAvgPooling2d",
      "XNNMinimum",
      "XNNDepthwiseConv2d",
      "XNNMaxPooling2d",
      "XNNMultiply",
      "XNNSubtract",
      "XNNFloor",
      "XNNConvert",
      "XNNGlobalAvgPooling2d",
      "XNNStaticReshape",
      "XNNArgMaxPooling2d",
      "XNNSquareRoot",
      "XNNCeiling",
      "XNNHardswish",
      "XNNLeakyReLU",
      "XNNMaximum",
      "XNNNegate",
      "XNNSquare",
      "XNNELU",
      "XNNAbs",
      "XNNPReLU",
      "XNNConcatenate2",
      "XNNConcatenate3",
      "XNNConcatenate4",
      "XNNStaticSlice",
      "XNNScaledDotProductAttention",
      "XNNBatchMatrixMultiply",
      "XNNConcatenate5",
      "XNNConvTranspose2d",
      "XNNReciprocalSquareRoot",
      "XNNLog",
      "XNNGelu",
      "XNNTanh",
      "XNNExp",
      "XNNSin",
      "XNNCopy",
      "XNNCos",
  };
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(K::MAX) + 1, "one name per NodeUnion member");
  return kind < sizeof(kNames) / sizeof(kNames[0]) ? kNames[kind] : "unknown";
}

}  // namespace xnnpack
}  // namespace ember
