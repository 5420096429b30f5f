// Small XNNGraph blobs built with flatc's builder for schema/xnnpack_graph.fbs, framed as ExecuTorch frames
// them (XH00 header, 16-byte padding, constant data after the graph), for the backend's C++ tests.
#pragma once

#include <stdint.h>
#include <string.h>

#include <functional>
#include <utility>
#include <vector>

#include "backends/xnnpack/runtime/graph_plan.h"
#include "schema/xnnpack_graph_generated.h"

namespace ember {
namespace xnnpack {
namespace testing {

namespace fb = ember_xnn;

constexpr uint32_t kInput = 1, kOutput = 2;  // XNN_VALUE_FLAG_EXTERNAL_*

struct ValueSpec {
  std::vector<uint32_t> dims;
  uint32_t constant;  // constant_data index, 0: none
  uint32_t flags;
  fb::Datatype datatype = fb::Datatype::fp32;
};

// A graph over values (id = position; fp32 unless said) with the given nodes, inputs and outputs; `constants` are
// appended as constant data entries 1.. (entry 0 is reserved), each `size` bytes at `offset`.
struct GraphSpec {
  std::vector<ValueSpec> values;
  std::vector<uint32_t> inputs, outputs;
  std::vector<std::pair<uint64_t, uint64_t>> constants;  // offset, size
  std::vector<float> constant_data;
  // Adds nodes to the builder; returns their offsets.
  std::function<std::vector<flatbuffers::Offset<fb::Node>>(flatbuffers::FlatBufferBuilder&)> nodes;
  const char* identifier = "XN01";
  std::vector<uint32_t> external_ids;  // per value, when not ExecuTorch's numbering (external_id() below)
};

// A value's external id, as ExecuTorch numbers them: its position among the delegate's arguments (inputs, then
// outputs); none for the rest.
inline uint32_t external_id(const GraphSpec& g, uint32_t id) {
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    if (g.inputs[k] == id) return static_cast<uint32_t>(k);
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    if (g.outputs[k] == id) return static_cast<uint32_t>(g.inputs.size() + k);
  }
  return kNoId;
}

inline std::vector<uint8_t> serialize(const GraphSpec& g, bool header = true) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Value>> values;
  for (size_t i = 0; i < g.values.size(); ++i) {
    const ValueSpec& v = g.values[i];
    const uint32_t id = static_cast<uint32_t>(i);
    auto t =
        fb::CreateTensorValue(b, v.datatype, static_cast<uint32_t>(v.dims.size()), b.CreateVector(v.dims), v.constant,
                              g.external_ids.empty() ? external_id(g, id) : g.external_ids[i], v.flags, id);
    // Quantized datatypes with unit scales: per channel (dim 0) for qcint8 and qcint32, else per tensor.
    if (v.datatype == fb::Datatype::qcint8 || v.datatype == fb::Datatype::qcint32) {
      const std::vector<float> scales(v.dims.empty() ? 1 : v.dims[0], 1.0f);
      auto pc = fb::CreatePerChannelQuant(b, b.CreateVector(scales), 0);
      auto q = fb::CreateQuantizedTensorValue(b, t, fb::QuantParams::PerChannelQuant, pc.Union());
      values.push_back(fb::CreateValue(b, fb::ValueUnion::QuantizedTensorValue, q.Union()));
    } else if (v.datatype == fb::Datatype::qint8 || v.datatype == fb::Datatype::qint32) {
      auto pt = fb::CreatePerTensorQuant(b, 1.0f, 0);
      auto q = fb::CreateQuantizedTensorValue(b, t, fb::QuantParams::PerTensorQuant, pt.Union());
      values.push_back(fb::CreateValue(b, fb::ValueUnion::QuantizedTensorValue, q.Union()));
    } else {
      values.push_back(fb::CreateValue(b, fb::ValueUnion::TensorValue, t.Union()));
    }
  }
  auto nodes = g.nodes(b);
  std::vector<flatbuffers::Offset<fb::ConstantDataOffset>> constants{fb::CreateConstantDataOffset(b, 0, 0)};
  for (const auto& c : g.constants) constants.push_back(fb::CreateConstantDataOffset(b, c.first, c.second));
  auto root = fb::CreateGraph(b, b.CreateString("1"), b.CreateVector(nodes), b.CreateVector(values),
                              static_cast<uint32_t>(g.inputs.size() + g.outputs.size()), b.CreateVector(g.inputs),
                              b.CreateVector(g.outputs), 0, 0, b.CreateVector(constants));
  b.Finish(root, g.identifier);
  std::vector<uint8_t> fbuf(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  if (!header) return fbuf;
  // XH00 framing as ExecuTorch writes it: header and flatbuffer each padded to 16 bytes.
  const size_t fb_offset = 32, cd_offset = fb_offset + (fbuf.size() + 15) / 16 * 16;
  const size_t cd_size = g.constant_data.size() * sizeof(float);
  std::vector<uint8_t> blob(cd_offset + cd_size, 0);
  auto put = [&](size_t at, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) blob[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  memcpy(&blob[4], "XH00", 4);
  put(8, 30, 2);
  put(10, fb_offset, 4);
  put(14, fbuf.size(), 4);
  put(18, cd_offset, 4);
  put(22, cd_size, 8);
  memcpy(&blob[fb_offset], fbuf.data(), fbuf.size());
  if (cd_size) memcpy(&blob[cd_offset], g.constant_data.data(), cd_size);
  return blob;
}

// x[1,4] -> FullyConnected(W[3,4] constant 1, b[3] constant 2) -> y[1,3]
inline GraphSpec linear() {
  GraphSpec g;
  g.values = {{{1, 4}, 0, kInput}, {{3, 4}, 1, 0}, {{3}, 2, 0}, {{1, 3}, 0, kOutput}};
  g.inputs = {0};
  g.outputs = {3};
  g.constant_data.assign(16, 0.5f);
  g.constant_data.resize(20, 0.25f);
  g.constants = {{0, 48}, {64, 12}};
  g.nodes = [](flatbuffers::FlatBufferBuilder& b) {
    auto fc = fb::CreateFullyConnected(b, 0, 1, 2, 3, 0);
    return std::vector<flatbuffers::Offset<fb::Node>>{fb::CreateNode(b, fb::NodeUnion::FullyConnected, fc.Union())};
  };
  return g;
}

// NCHW input -> NHWC (a real transpose: on the CPU) -> clamp -> [N,1,1,C]-style reshape-transpose -> output.
inline GraphSpec transposing() {
  GraphSpec g;
  g.values = {{{1, 3, 2, 2}, 0, kInput}, {{1, 2, 2, 3}, 0, 0}, {{1, 2, 2, 3}, 0, kOutput}};
  g.inputs = {0};
  g.outputs = {2};
  g.nodes = [](flatbuffers::FlatBufferBuilder& b) {
    const uint32_t perm[] = {0, 2, 3, 1};
    auto t = fb::CreateStaticTranspose(b, 4, b.CreateVector(perm, 4), 0, 1, 0);
    auto clamp = fb::CreateNode1x1(b, 1, 2, 0);
    auto mm = fb::CreateOutputMinMax(b, 0.0f, 6.0f);
    return std::vector<flatbuffers::Offset<fb::Node>>{fb::CreateNode(b, fb::NodeUnion::StaticTranspose, t.Union()),
                                                      fb::CreateNode(b, fb::NodeUnion::Clamp, clamp.Union(), 0, mm)};
  };
  return g;
}

// What ExecuTorch gives a transformer beyond the 2022 library, each run on the CPU, then a clamp in XNNPACK:
// x[2,3,4] @ y[2,4,5] -> z[2,3,5]; concat(token[2,1,5] constant 1, z) along axis 1 -> [2,4,5]; gelu; clamp to
// [-0.5, 0.5] -> out. Four stages, the first three on the CPU.
inline GraphSpec transformer_nodes() {
  GraphSpec g;
  g.values = {{{2, 3, 4}, 0, kInput}, {{2, 4, 5}, 0, kInput}, {{2, 3, 5}, 0, 0},      {{2, 1, 5}, 1, 0},
              {{2, 4, 5}, 0, 0},      {{2, 4, 5}, 0, 0},      {{2, 4, 5}, 0, kOutput}};
  g.inputs = {0, 1};
  g.outputs = {6};
  for (int i = 0; i < 10; ++i) g.constant_data.push_back(0.1f * static_cast<float>(i) - 0.45f);
  g.constants = {{0, 40}};
  g.nodes = [](flatbuffers::FlatBufferBuilder& b) {
    auto bmm = fb::CreateNode2x1(b, 0, 1, 2, 0);
    auto cat = fb::CreateConcatNode(b, 1, 3, 2, kNoId, kNoId, 4, 0, kNoId);
    auto gelu = fb::CreateNode1x1(b, 4, 5, 0);
    auto clamp = fb::CreateNode1x1(b, 5, 6, 0);
    auto mm = fb::CreateOutputMinMax(b, -0.5f, 0.5f);
    return std::vector<flatbuffers::Offset<fb::Node>>{fb::CreateNode(b, fb::NodeUnion::BatchMatrixMultiply,
                                                                     bmm.Union()),
                                                      fb::CreateNode(b, fb::NodeUnion::Concatenate2, cat.Union()),
                                                      fb::CreateNode(b, fb::NodeUnion::Gelu, gelu.Union()),
                                                      fb::CreateNode(b, fb::NodeUnion::Clamp, clamp.Union(), 0, mm)};
  };
  return g;
}

// The newer nodes of a Llama or GPT-2 block ExecuTorch writes, each on the CPU, between clamps in XNNPACK:
// x[2,6] -> slice [:, 1:5] -> [2,4]; rsqrt; clamp to [0, 4]; tanh; exp; log; sin; cos -> out.
// Eight stages, the clamp the only subgraph among them.
inline GraphSpec llama_nodes() {
  GraphSpec g;
  g.values = {{{2, 6}, 0, kInput}, {{2, 4}, 0, 0}, {{2, 4}, 0, 0}, {{2, 4}, 0, 0},      {{2, 4}, 0, 0},
              {{2, 4}, 0, 0},      {{2, 4}, 0, 0}, {{2, 4}, 0, 0}, {{2, 4}, 0, kOutput}};
  g.inputs = {0};
  g.outputs = {8};
  g.nodes = [](flatbuffers::FlatBufferBuilder& b) {
    const uint32_t offsets[] = {0, 1}, sizes[] = {2, 4};
    auto slice = fb::CreateStaticSlice(b, 2, b.CreateVector(offsets, 2), b.CreateVector(sizes, 2), 0, 1, 0);
    auto mm = fb::CreateOutputMinMax(b, 0.0f, 4.0f);
    std::vector<flatbuffers::Offset<fb::Node>> nodes{fb::CreateNode(b, fb::NodeUnion::StaticSlice, slice.Union())};
    nodes.push_back(fb::CreateNode(b, fb::NodeUnion::ReciprocalSquareRoot, fb::CreateNode1x1(b, 1, 2, 0).Union()));
    nodes.push_back(fb::CreateNode(b, fb::NodeUnion::Clamp, fb::CreateNode1x1(b, 2, 3, 0).Union(), 0, mm));
    const fb::NodeUnion rest[] = {fb::NodeUnion::Tanh, fb::NodeUnion::Exp, fb::NodeUnion::Log, fb::NodeUnion::Sin,
                                  fb::NodeUnion::Cos};
    for (uint32_t k = 0; k < 5; ++k) {
      nodes.push_back(fb::CreateNode(b, rest[k], fb::CreateNode1x1(b, 3 + k, 4 + k, 0).Union()));
    }
    return nodes;
  };
  return g;
}

}  // namespace testing
}  // namespace xnnpack
}  // namespace ember
