// The XnnpackBackend's reading of its blob, without XNNPACK: framing, graph checks, routing into stages, and the
// CPU transpose. Blobs are built here with flatc's builder for schema/xnnpack_graph.fbs; the real ones
// (ExecuTorch's) are run end to end by backends/xnnpack/test.
#include <stdint.h>
#include <string.h>

#include <array>
#include <functional>
#include <math.h>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/xnnpack/runtime/blob_header.h"
#include "backends/xnnpack/runtime/cpu_nodes.h"
#include "backends/xnnpack/runtime/graph_plan.h"
#include "backends/xnnpack/runtime/transpose.h"
#include "runtime/core/test/recording_pal.h"
#include "backends/xnnpack/test/test_graphs.h"
#include "schema/xnnpack_graph_generated.h"

namespace ember {

// The backend interface's table comes from a generated registry in real builds; the plan needs none.
Span<const Backend* const> registered_backends() { return {}; }

namespace xnnpack {
namespace {

namespace fb = ember_xnn;
using ::ember::testing::last_log;
using namespace ::ember::xnnpack::testing;  // GraphSpec, serialize, linear, transposing

struct Arena {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(1 << 20);
  MemoryAllocator a{bytes.data(), bytes.size()};
};

Result<GraphPlan*> plan(const std::vector<uint8_t>& blob, Arena& arena) {
  return plan_graph(blob.data(), blob.size(), &arena.a, &arena.a);
}

TEST(BlobHeader, SplitsHeaderFlatbufferAndConstants) {
  const auto blob = serialize(linear());
  Result<BlobParts> parts = split_blob(blob.data(), blob.size());
  ASSERT_TRUE(parts.ok());
  EXPECT_TRUE(parts.get().has_header);
  EXPECT_EQ(parts.get().flatbuffer, blob.data() + 32);
  EXPECT_STREQ(parts.get().identifier, "XN01");
  EXPECT_EQ(parts.get().constant_data_size, 80u);
}

TEST(BlobHeader, ReadsABareFlatbufferAndXN00) {
  GraphSpec g = linear();
  g.identifier = "XN00";
  const auto blob = serialize(g, /*header=*/false);
  Result<BlobParts> parts = split_blob(blob.data(), blob.size());
  ASSERT_TRUE(parts.ok());
  EXPECT_FALSE(parts.get().has_header);
  EXPECT_STREQ(parts.get().identifier, "XN00");
}

TEST(BlobHeader, RefusesShortBlobsBadOffsetsAndWrongMagic) {
  auto blob = serialize(linear());
  EXPECT_EQ(split_blob(blob.data(), 6).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("the blob is 6 bytes"), std::string::npos) << last_log();
  EXPECT_EQ(split_blob(blob.data(), 20).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("header alone is 30"), std::string::npos) << last_log();
  // Truncated: the header's ranges now lie outside the blob.
  EXPECT_EQ(split_blob(blob.data(), blob.size() - 1).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("constant data at"), std::string::npos) << last_log();
  EXPECT_EQ(split_blob(blob.data(), 40).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("flatbuffer at [32, +"), std::string::npos) << last_log();
  auto bad = blob;
  bad[14] = 0xff;  // flatbuffer size
  bad[15] = 0xff;
  EXPECT_EQ(split_blob(bad.data(), bad.size()).error(), Error::InvalidProgram);
  bad = blob;
  bad[18] = 8;  // constant data over the flatbuffer
  EXPECT_EQ(split_blob(bad.data(), bad.size()).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("must follow the flatbuffer"), std::string::npos) << last_log();
  bad = blob;
  memcpy(&bad[32 + 4], "XN99", 4);
  EXPECT_EQ(split_blob(bad.data(), bad.size()).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("wrong magic: the graph's identifier is 'XN99'"), std::string::npos) << last_log();
  const uint8_t junk[16] = {1, 2, 3, 4, 'P', 'K', 3, 4};
  EXPECT_EQ(split_blob(junk, sizeof(junk)).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("'PK"), std::string::npos) << last_log();
}

TEST(GraphPlan, PlansALinearLayerAsOneStage) {
  Arena arena;
  const auto blob = serialize(linear());
  Result<GraphPlan*> p = plan(blob, arena);
  ASSERT_TRUE(p.ok()) << last_log();
  EXPECT_EQ(p.get()->num_stages, 1u);
  EXPECT_FALSE(p.get()->stages[0].on_cpu);
  EXPECT_EQ(p.get()->stages[0].num_externals, 2u);  // x and y
  EXPECT_EQ(p.get()->num_inputs, 1u);
  EXPECT_EQ(p.get()->values[3].arg, 1);
  ASSERT_EQ(bind_constants(p.get(), nullptr), Error::Ok);
  EXPECT_EQ(static_cast<const float*>(p.get()->values[2].data)[0], 0.25f);
  // Everything came from the arena in 16-byte units.
  EXPECT_EQ(arena.a.used_bytes() % 16, 0u);
}

TEST(GraphPlan, RefusesATruncatedOrCorruptFlatbuffer) {
  Arena arena;
  auto blob = serialize(linear(), /*header=*/false);
  blob.resize(blob.size() / 2);
  EXPECT_EQ(plan(blob, arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("not a valid flatbuffer"), std::string::npos) << last_log();
}

TEST(GraphPlan, NamesOutOfRangeValueIds) {
  Arena arena;
  GraphSpec g = linear();
  g.nodes = [](flatbuffers::FlatBufferBuilder& b) {
    auto fc = fb::CreateFullyConnected(b, 0, 1, 2, 9, 0);
    return std::vector<flatbuffers::Offset<fb::Node>>{fb::CreateNode(b, fb::NodeUnion::FullyConnected, fc.Union())};
  };
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("node 0 (XNNFullyConnected) output 0 is value 9, out of range (4 values)"),
            std::string::npos)
      << last_log();
  g = linear();
  g.outputs = {7};
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("output 0 is value 7, out of range"), std::string::npos) << last_log();
}

// Arguments are matched by external id, not by their place in input_ids (ExecuTorch's Swin lists its image first
// and a scalar argument second, numbered the other way round); ids out of range or twice are refused.
TEST(GraphPlan, TakesArgumentsInExternalIdOrder) {
  Arena arena;
  GraphSpec g = transformer_nodes();
  g.external_ids = {1, 0, kNoId, kNoId, kNoId, kNoId, 2};
  Result<GraphPlan*> p = plan(serialize(g), arena);
  ASSERT_TRUE(p.ok()) << last_log();
  EXPECT_EQ(p.get()->values[0].arg, 1);
  EXPECT_EQ(p.get()->values[1].arg, 0);
  EXPECT_EQ(p.get()->arg_values[0], 1u);
  EXPECT_EQ(p.get()->arg_values[1], 0u);
  EXPECT_EQ(p.get()->arg_values[2], 6u);
  g.external_ids = {1, 1, kNoId, kNoId, kNoId, kNoId, 2};
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("input 1 (value 1) has external id 1; expected one of 0 to 1, each once"),
            std::string::npos)
      << last_log();
  g.external_ids = {0, 1, kNoId, kNoId, kNoId, kNoId, 1};  // an output numbered among the inputs
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("output 0 (value 6) has external id 1; expected one of 2 to 2"), std::string::npos)
      << last_log();
}

TEST(GraphPlan, NamesReadsBeforeWrites) {
  Arena arena;
  GraphSpec g = linear();
  g.values[0].flags = 0;
  g.inputs = {};
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("node 0 (XNNFullyConnected) reads value 0 before any node writes it"), std::string::npos)
      << last_log();
}

TEST(GraphPlan, RefusesNodesTheLibraryLacksByIndexAndKind) {
  Arena arena;
  GraphSpec g = linear();
  g.values.push_back({{1, 3}, 0, kOutput});
  g.outputs = {4};
  g.values[3].flags = 0;
  g.nodes = [](flatbuffers::FlatBufferBuilder& b) {
    // Attention, which ExecuTorch 1.5.1 never writes, is the one kind of its schema Ember neither defines in the
    // 2022 library nor runs on the CPU.
    auto fc = fb::CreateFullyConnected(b, 0, 1, 2, 3, 0);
    auto sdpa = fb::CreateScaledDotProductAttention(b, 3, 3, 3, kNoId, kNoId, 4, 0);
    return std::vector<flatbuffers::Offset<fb::Node>>{fb::CreateNode(b, fb::NodeUnion::FullyConnected, fc.Union()),
                                                      fb::CreateNode(b, fb::NodeUnion::ScaledDotProductAttention,
                                                                     sdpa.Union())};
  };
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::NotSupported);
  EXPECT_NE(last_log().find("node 1 (XNNScaledDotProductAttention) needs an XNNPACK newer than this build's"),
            std::string::npos)
      << last_log();
}

TEST(GraphPlan, ChecksOutputShapesAgainstTheOperator) {
  Arena arena;
  GraphSpec g = linear();
  g.values[3].dims = {1, 5};  // a fully connected layer with 3 output channels cannot fill 5
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("node 0 (XNNFullyConnected): value 3 is [1, 5]; expected [1, 3]"), std::string::npos)
      << last_log();
  g = linear();
  g.values[1].constant = 0;  // a filter computed at run time needs a newer XNNPACK
  g.values[1].flags = kInput;
  g.inputs = {0, 1};
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::NotSupported);
  EXPECT_NE(last_log().find("its filter (value 1) is not a constant"), std::string::npos) << last_log();
}

// ExecuTorch's int8 linears (XNNPACKQuantizer) have a weight scale per output channel, which the 2022 library's
// fully connected lacks: refused by name at load, rather than by XNNPACK's "invalid parameter" at init.
TEST(GraphPlan, RefusesPerChannelInt8FullyConnectedWeights) {
  Arena arena;
  GraphSpec g = linear();
  g.values[0].datatype = fb::Datatype::qint8;
  g.values[1].datatype = fb::Datatype::qcint8;
  g.values[2].datatype = fb::Datatype::qcint32;
  g.values[3].datatype = fb::Datatype::qint8;
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::NotSupported);
  EXPECT_NE(last_log().find("node 0 (XNNFullyConnected): its filter (value 1) is int8 with a scale per channel "
                            "(qcint8), which this XNNPACK (2022) takes for convolutions only"),
            std::string::npos)
      << last_log();
  g.values[1].datatype = fb::Datatype::qint8;  // one scale: planned (the 2022 library's qs8 fully connected)
  g.values[2].datatype = fb::Datatype::qint32;
  EXPECT_TRUE(plan(serialize(g), arena).ok()) << last_log();
}

TEST(GraphPlan, ChecksConstantsAgainstTheConstantData) {
  Arena arena;
  GraphSpec g = linear();
  g.constants[1] = {76, 12};  // past the 80 bytes of constant data
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("value 2's data is constant 2 at [76, +12), outside the 80 bytes"), std::string::npos)
      << last_log();
  g = linear();
  g.constants[0] = {0, 8};  // smaller than the 48-byte filter
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("value 1's data needs 48 bytes; constant 1 is 8"), std::string::npos) << last_log();
}

TEST(GraphPlan, RunsRealTransposesOnTheCpuBetweenSubgraphs) {
  Arena arena;
  Result<GraphPlan*> p = plan(serialize(transposing()), arena);
  ASSERT_TRUE(p.ok()) << last_log();
  ASSERT_EQ(p.get()->num_stages, 2u);
  EXPECT_TRUE(p.get()->stages[0].on_cpu);
  EXPECT_FALSE(p.get()->stages[1].on_cpu);
  // The transposed value crosses from the CPU stage to the subgraph: a buffer, external to the subgraph.
  EXPECT_NE(p.get()->values[1].buffer, nullptr);
  EXPECT_EQ(p.get()->stages[1].num_externals, 2u);
}

TEST(GraphPlan, RunsTheNewerTransformerNodesOnTheCpu) {
  Arena arena;
  Result<GraphPlan*> p = plan(serialize(transformer_nodes()), arena);
  ASSERT_TRUE(p.ok()) << last_log();
  ASSERT_EQ(p.get()->num_stages, 4u);
  for (uint32_t s = 0; s < 3; ++s) EXPECT_TRUE(p.get()->stages[s].on_cpu) << s;
  EXPECT_FALSE(p.get()->stages[3].on_cpu);
  // Values written on the CPU get buffers; the constant token and the delegate's arguments do not.
  for (uint32_t id : {2u, 4u, 5u}) EXPECT_NE(p.get()->values[id].buffer, nullptr) << id;
  for (uint32_t id : {0u, 1u, 3u, 6u}) EXPECT_EQ(p.get()->values[id].buffer, nullptr) << id;
}

TEST(GraphPlan, ChecksTheCpuNodesShapesByName) {
  Arena arena;
  GraphSpec g = transformer_nodes();
  g.values[1].dims = {2, 5, 5};  // K differs
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("node 0 (XNNBatchMatrixMultiply): value 1 is [2, 5, 5]; expected 3 dims, [..., 4, N]"),
            std::string::npos)
      << last_log();
  g = transformer_nodes();
  g.values[1].dims = {3, 4, 5};  // batch dims differ
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  g = transformer_nodes();
  g.values[4].dims = {2, 5, 5};  // concat's output is not the sum along its axis
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("node 1 (XNNConcatenate2): value 4 is [2, 5, 5]; expected [2, 4, 5]"), std::string::npos)
      << last_log();
  g = transformer_nodes();
  g.values[3].dims = {2, 1, 4};  // an input differs off the axis
  g.constants = {{0, 32}};
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("input 0's 3 dims except along axis 1"), std::string::npos) << last_log();
  g = transformer_nodes();
  g.nodes = [](flatbuffers::FlatBufferBuilder& b) {  // B transposed (XNN_FLAG_TRANSPOSE_B): not read here
    auto bmm = fb::CreateNode2x1(b, 0, 1, 2, 1);
    return std::vector<flatbuffers::Offset<fb::Node>>{
        fb::CreateNode(b, fb::NodeUnion::BatchMatrixMultiply, bmm.Union())};
  };
  g.values.resize(3);
  g.values[2].flags = kOutput;
  g.outputs = {2};
  g.constants.clear();
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::NotSupported);
  EXPECT_NE(last_log().find("node 0 (XNNBatchMatrixMultiply) has flags 0x1"), std::string::npos) << last_log();
  g = transformer_nodes();
  g.nodes = [](flatbuffers::FlatBufferBuilder& b) {  // an axis past the rank
    auto cat = fb::CreateConcatNode(b, 3, 3, 2, kNoId, kNoId, 4, 0, kNoId);
    return std::vector<flatbuffers::Offset<fb::Node>>{fb::CreateNode(b, fb::NodeUnion::Concatenate2, cat.Union())};
  };
  g.values[2] = {{2, 3, 5}, 0, kInput};
  g.values[4].flags = kOutput;
  g.values.resize(5);
  g.inputs = {0, 1, 2};
  g.outputs = {4};
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("node 0 (XNNConcatenate2): axis 3 of a 3-dim value"), std::string::npos) << last_log();
}

TEST(GraphPlan, RunsSliceAndElementwiseFunctionsOnTheCpu) {
  Arena arena;
  Result<GraphPlan*> p = plan(serialize(llama_nodes()), arena);
  ASSERT_TRUE(p.ok()) << last_log();
  ASSERT_EQ(p.get()->num_stages, 8u);
  for (uint32_t s = 0; s < 8; ++s) EXPECT_EQ(p.get()->stages[s].on_cpu, s != 2) << s;
  // Everything between the input and the output crosses a stage or is written on the CPU: a buffer each.
  for (uint32_t id = 1; id < 8; ++id) EXPECT_NE(p.get()->values[id].buffer, nullptr) << id;
  EXPECT_EQ(p.get()->values[8].buffer, nullptr);
}

// A slice's box against its input and output, its field counts, its datatypes; the element-wise kinds' datatype and
// shape; a fused clamp on any node the CPU runs.
TEST(GraphPlan, ChecksTheNewerCpuNodesByName) {
  Arena arena;
  auto with_slice = [](std::vector<uint32_t> offsets, std::vector<uint32_t> sizes, uint32_t num_dims) {
    GraphSpec g = llama_nodes();
    g.nodes = [offsets, sizes, num_dims](flatbuffers::FlatBufferBuilder& b) {
      auto t = fb::CreateStaticSlice(b, num_dims, b.CreateVector(offsets), b.CreateVector(sizes), 0, 1, 0);
      return std::vector<flatbuffers::Offset<fb::Node>>{fb::CreateNode(b, fb::NodeUnion::StaticSlice, t.Union())};
    };
    g.values.resize(2);
    g.values[1].flags = kOutput;
    g.outputs = {1};
    return g;
  };
  ASSERT_TRUE(plan(serialize(with_slice({0, 2}, {2, 4}, 2)), arena).ok()) << last_log();
  EXPECT_EQ(plan(serialize(with_slice({0, 3}, {2, 4}, 2)), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("node 0 (XNNStaticSlice): dim 1: offset 3 + size 4 is past value 0's 6"), std::string::npos)
      << last_log();
  EXPECT_EQ(plan(serialize(with_slice({0, 1}, {1, 4}, 2)), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("node 0 (XNNStaticSlice): value 1 is [2, 4]; expected [1, 4]"), std::string::npos)
      << last_log();
  EXPECT_EQ(plan(serialize(with_slice({0}, {2, 4}, 2)), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("node 0 (XNNStaticSlice): offsets for 1 dims and sizes for 2 (num_dims 2) of a 2-dim"),
            std::string::npos)
      << last_log();
  GraphSpec g = with_slice({0, 1}, {2, 4}, 2);
  g.values[1].datatype = fb::Datatype::fp16;
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("node 0 (XNNStaticSlice): output (value 1) has datatype 2, its input 1"), std::string::npos)
      << last_log();

  g = llama_nodes();
  g.values[5].dims = {4, 2};  // exp's output: the same count, another shape
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("node 4 (XNNExp): value 5 is [4, 2]; expected [2, 4]"), std::string::npos) << last_log();
  g = llama_nodes();
  g.values[6].datatype = fb::Datatype::fp16;  // log's output
  g.values[7].datatype = fb::Datatype::fp16;
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::NotSupported);
  EXPECT_NE(last_log().find("node 5 (XNNLog): value 6 has datatype 2; Ember runs this node on the CPU for fp32 only"),
            std::string::npos)
      << last_log();
  g = llama_nodes();
  g.nodes = [](flatbuffers::FlatBufferBuilder& b) {  // a clamp ExecuTorch never fuses into a tanh
    auto mm = fb::CreateOutputMinMax(b, -0.5f, 0.5f);
    auto t = fb::CreateNode1x1(b, 0, 1, 0);
    return std::vector<flatbuffers::Offset<fb::Node>>{fb::CreateNode(b, fb::NodeUnion::Tanh, t.Union(), 0, mm)};
  };
  g.values = {{{2, 4}, 0, kInput}, {{2, 4}, 0, kOutput}};
  g.outputs = {1};
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::NotSupported);
  EXPECT_NE(last_log().find("node 0 (XNNTanh) carries a fused clamp [-0.5, 0.5]; Ember runs this node on the CPU"),
            std::string::npos)
      << last_log();
}

TEST(CpuNodes, MatchReferences) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  // gelu: every length around a 16-float vector, against erf in double.
  for (uint64_t n : {1u, 7u, 16u, 37u}) {
    std::vector<float> x(n), y(n);
    for (float& v : x) v = u(rng);
    gelu(x.data(), y.data(), n);
    for (uint64_t i = 0; i < n; ++i) {
      const double want = 0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0)));
      EXPECT_NEAR(y[i], want, 1e-6 * (1.0 + fabs(want))) << "gelu(" << x[i] << ")";
    }
  }
  // batch_matmul: sizes off every tile edge, and an empty sum (zeros).
  const std::vector<std::array<uint32_t, 4>> shapes = {{3, 5, 7, 9}, {1, 1, 1, 1}, {2, 33, 64, 50}, {2, 3, 0, 4}};
  for (const auto& s : shapes) {
    const uint32_t batch = s[0], m = s[1], k = s[2], n = s[3];
    std::vector<float> a(batch * m * k), b(batch * k * n), c(batch * m * n, 99.0f);
    for (float& v : a) v = u(rng);
    for (float& v : b) v = u(rng);
    batch_matmul(a.data(), b.data(), c.data(), batch, m, k, n);
    for (uint32_t q = 0; q < batch; ++q)
      for (uint32_t i = 0; i < m; ++i)
        for (uint32_t j = 0; j < n; ++j) {
          double want = 0;
          for (uint32_t l = 0; l < k; ++l) want += double(a[(q * m + i) * k + l]) * b[(q * k + l) * n + j];
          ASSERT_NEAR(c[(q * m + i) * n + j], want, 1e-4 * (1.0 + fabs(want))) << q << " " << i << " " << j;
        }
  }
  // concatenate: three inputs of 1, 3 and 2 rows' worth along the second of [2, *, 2] (4-byte elements).
  std::vector<float> p0 = {1, 2, 3, 4}, p1 = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
                     p2 = {17, 18, 19, 20, 21, 22, 23, 24};
  const void* in[] = {p0.data(), p1.data(), p2.data()};
  const uint64_t row_bytes[] = {2 * 4, 6 * 4, 4 * 4};
  std::vector<float> out(24);
  concatenate(in, row_bytes, 3, 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 2, 5,  6,  7,  8,  9,  10, 17, 18, 19, 20,
                                     3, 4, 11, 12, 13, 14, 15, 16, 21, 22, 23, 24}));
}

// Against double-precision references: float rounding for the C library's functions, a few ulp for the vector ones
// (relative to the value, so tanh keeps its digits near 0), and infinity where exp overflows.
TEST(CpuNodes, ElementwiseFunctionsMatchReferences) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> wide(-20.0f, 20.0f), small(-0.7f, 0.7f), positive(1e-6f, 1e3f);
  struct Case {
    UnaryFunction f;
    double (*ref)(double);
    std::uniform_real_distribution<float>* dist;
    double rtol;
  };
  const Case cases[] = {
      {UnaryFunction::Tanh, tanh, &wide, 1e-6},
      {UnaryFunction::Tanh, tanh, &small, 3e-7},
      {UnaryFunction::Exp, exp, &wide, 3e-7},
      {UnaryFunction::Log, log, &positive, 2e-7},
      {UnaryFunction::Sin, sin, &wide, 2e-7},
      {UnaryFunction::Cos, cos, &wide, 2e-7},
      {UnaryFunction::ReciprocalSquareRoot, [](double v) { return 1.0 / sqrt(v); }, &positive, 2e-7},
  };
  for (const Case& c : cases) {
    for (uint64_t n : {1u, 7u, 16u, 37u, 1000u}) {  // every tail around 4-, 8- and 16-float vectors
      std::vector<float> x(n), y(n);
      for (float& v : x) v = (*c.dist)(rng);
      unary(c.f, x.data(), y.data(), n);
      for (uint64_t i = 0; i < n; ++i) {
        const double want = c.ref(x[i]);
        // sin and cos of large arguments: the float argument's own rounding dominates, so absolute.
        const double tol = c.f == UnaryFunction::Sin || c.f == UnaryFunction::Cos ? 2e-7 : c.rtol * fabs(want) + 1e-30;
        ASSERT_NEAR(y[i], want, tol) << static_cast<int>(c.f) << "(" << x[i] << ")";
      }
    }
  }
  const float edges[] = {1e-6f, -1e-6f, 0.0f, 0.3f, -0.31f, 20.0f, -20.0f, 88.5f, 89.0f, 100.0f, -100.0f, NAN};
  float out[12];
  unary(UnaryFunction::Tanh, edges, out, 12);
  EXPECT_EQ(out[0], 1e-6f);  // tanh(x) = x to float precision near 0
  EXPECT_EQ(out[1], -1e-6f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[5], 1.0f);
  EXPECT_EQ(out[6], -1.0f);
  EXPECT_TRUE(isnan(out[11]));
  unary(UnaryFunction::Exp, edges, out, 12);
  EXPECT_NEAR(out[7], exp(88.5), 4e-7 * exp(88.5));  // past vexp's own clamp
  EXPECT_TRUE(isinf(out[8]) && out[8] > 0);          // past the float range
  EXPECT_TRUE(isinf(out[9]));
  EXPECT_EQ(out[10], 0.0f);
  EXPECT_TRUE(isnan(out[11]));
}

TEST(CpuNodes, SliceMatchesAReference) {
  // Every box of a [3, 4, 5] input whose trailing dims are whole or not, 1- and 4-byte elements.
  const uint32_t dims[] = {3, 4, 5};
  std::vector<uint32_t> in(60);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint32_t>(i);
  const std::vector<std::array<uint32_t, 6>> boxes = {{0, 0, 0, 3, 4, 5}, {1, 0, 0, 2, 4, 5}, {0, 1, 0, 3, 2, 5},
                                                      {0, 0, 2, 3, 4, 3}, {2, 3, 4, 1, 1, 1}, {1, 1, 1, 1, 2, 3},
                                                      {0, 0, 0, 3, 0, 5}};
  for (const auto& box : boxes) {
    const uint32_t* off = box.data();
    const uint32_t* size = box.data() + 3;
    std::vector<uint32_t> out(size[0] * size[1] * size[2] + 1, 777);
    slice(in.data(), out.data(), dims, off, size, 3, 4);
    size_t k = 0;
    for (uint32_t a = 0; a < size[0]; ++a)
      for (uint32_t b = 0; b < size[1]; ++b)
        for (uint32_t c = 0; c < size[2]; ++c)
          ASSERT_EQ(out[k++], ((off[0] + a) * 4 + off[1] + b) * 5 + off[2] + c) << off[0] << off[1] << off[2];
    EXPECT_EQ(out[k], 777u);  // nothing written past the box
  }
  std::vector<uint8_t> bytes(60), got(6);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
  const uint32_t off[] = {1, 2, 1}, size[] = {2, 1, 3};
  slice(bytes.data(), got.data(), dims, off, size, 3, 1);
  EXPECT_EQ(got, (std::vector<uint8_t>{31, 32, 33, 51, 52, 53}));
}

TEST(GraphPlan, KeepsTransposesOfSizeOneDimsInTheSubgraph) {
  Arena arena;
  GraphSpec g = transposing();
  g.values = {{{1, 5, 1, 1}, 0, kInput}, {{1, 1, 1, 5}, 0, 0}, {{1, 1, 1, 5}, 0, kOutput}};
  Result<GraphPlan*> p = plan(serialize(g), arena);
  ASSERT_TRUE(p.ok()) << last_log();
  EXPECT_EQ(p.get()->num_stages, 1u);
  EXPECT_EQ(p.get()->values[1].buffer, nullptr);
}

TEST(GraphPlan, RefusesBadPermutations) {
  Arena arena;
  GraphSpec g = transposing();
  g.nodes = [](flatbuffers::FlatBufferBuilder& b) {
    const uint32_t perm[] = {0, 2, 2, 1};
    auto t = fb::CreateStaticTranspose(b, 4, b.CreateVector(perm, 4), 0, 1, 0);
    auto clamp = fb::CreateNode1x1(b, 1, 2, 0);
    return std::vector<flatbuffers::Offset<fb::Node>>{fb::CreateNode(b, fb::NodeUnion::StaticTranspose, t.Union()),
                                                      fb::CreateNode(b, fb::NodeUnion::Clamp, clamp.Union())};
  };
  EXPECT_EQ(plan(serialize(g), arena).error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("node 0 (XNNStaticTranspose): perm[2] = 2 is not a permutation"), std::string::npos)
      << last_log();
}

TEST(GraphPlan, SurvivesEveryByteFlipped) {
  // No crash and no out-of-bounds read whatever a byte says (run under --config=asan for the reads).
  const auto good = serialize(transposing());
  std::mt19937 rng(17);
  size_t refused = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    for (int trial = 0; trial < 4; ++trial) {
      auto blob = good;
      blob[i] = static_cast<uint8_t>(rng());
      Arena arena;
      refused += plan(blob, arena).ok() ? 0 : 1;
    }
  }
  EXPECT_GT(refused, 0u);
}

TEST(Transpose, MatchesAReferencePermutation) {
  const uint32_t dims[] = {2, 3, 4, 5};
  const uint32_t perm[] = {0, 2, 3, 1};
  std::vector<float> in(120), out(120);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  transpose(in.data(), out.data(), dims, perm, 4, sizeof(float));
  // out[n][h][w][c] = in[n][c][h][w]
  for (uint32_t n = 0; n < 2; ++n)
    for (uint32_t h = 0; h < 4; ++h)
      for (uint32_t w = 0; w < 5; ++w)
        for (uint32_t c = 0; c < 3; ++c)
          ASSERT_EQ(out[((n * 4 + h) * 5 + w) * 3 + c], in[((n * 3 + c) * 4 + h) * 5 + w]);
  std::vector<uint8_t> bytes(120), back(120);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
  const uint32_t swap[] = {3, 2, 1, 0};
  transpose(bytes.data(), back.data(), dims, swap, 4, 1);
  EXPECT_EQ(back[1], bytes[60]);  // out[0][0][0][1] = in[1][0][0][0]
}

}  // namespace
}  // namespace xnnpack
}  // namespace ember
