// Node kinds Debian's 2022 XNNPACK lacks, run by Ember between XNNPACK runtimes (as the transpose, transpose.h):
// what ExecuTorch's partitioner gives a transformer beyond that library. BERT-mini's attention products and MLP
// activation (XNNBatchMatrixMultiply, XNNGelu) and ViT's class-token join (XNNConcatenate2) would otherwise refuse
// the whole program at load. Shapes and datatypes were checked at load (node_shapes.cc); these only compute.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace ember {
namespace xnnpack {

// y = x * (1 + erf(x / sqrt 2)) / 2 over n floats, as the optimized gelu kernel computes it (vec_math.h's vgelu).
void gelu(const float* x, float* y, uint64_t n);

// c[b] = a[b] @ bm[b] for `batch` products of [m, k] x [k, n], each contiguous; the optimized SGEMM per product.
void batch_matmul(const float* a, const float* bm, float* c, uint64_t batch, uint32_t m, uint32_t k, uint32_t n);

// Joins `count` inputs along one axis: `outer` is the product of the dims before it, and input i contributes
// `row_bytes[i]` bytes (its dims from the axis on, times its element size) to each of the `outer` output rows.
void concatenate(const void* const* inputs, const uint64_t* row_bytes, uint32_t count, uint64_t outer, void* output);

}  // namespace xnnpack
}  // namespace ember
