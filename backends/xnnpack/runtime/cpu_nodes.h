// Node kinds Debian's 2022 XNNPACK lacks, run by Ember between XNNPACK runtimes (as the transpose, transpose.h):
// what ExecuTorch's partitioner writes beyond that library would otherwise refuse the whole program at load. A
// transformer's attention products, MLP activation and class-token join (XNNBatchMatrixMultiply, XNNGelu,
// XNNConcatenate2-5), slices of a fused QKV projection, Swin's crops or a rotary embedding (XNNStaticSlice), and
// the element-wise functions of GPT-2's GELU, Llama's and T5's RMS norms and rotary tables, T5's position buckets
// (XNNTanh, XNNReciprocalSquareRoot, XNNSin, XNNCos, XNNLog; XNNExp). Shapes and datatypes were checked at load
// (node_shapes.cc); these only compute.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace ember {
namespace xnnpack {

// The element-wise functions run here, on fp32.
enum class UnaryFunction : uint8_t {
  Gelu,   // x * (1 + erf(x / sqrt 2)) / 2, as the optimized gelu kernel computes it (vec_math.h's vgelu)
  Tanh,   // vec_math.h's vtanh, with an odd polynomial near 0 where its 1 - 2 / (e^2x + 1) cancels
  Exp,    // vec_math.h's vexp, reaching infinity past the float range
  Log,    // the C library's, as the portable kernels
  Sin,
  Cos,
  ReciprocalSquareRoot,  // 1 / sqrt(x)
};

// y[i] = f(x[i]) over n floats; x and y may be the same.
void unary(UnaryFunction f, const float* x, float* y, uint64_t n);

// unary(UnaryFunction::Gelu, ...).
void gelu(const float* x, float* y, uint64_t n);

// c[b] = a[b] @ bm[b] for `batch` products of [m, k] x [k, n], each contiguous; the optimized SGEMM per product.
void batch_matmul(const float* a, const float* bm, float* c, uint64_t batch, uint32_t m, uint32_t k, uint32_t n);

// Joins `count` inputs along one axis: `outer` is the product of the dims before it, and input i contributes
// `row_bytes[i]` bytes (its dims from the axis on, times its element size) to each of the `outer` output rows.
void concatenate(const void* const* inputs, const uint64_t* row_bytes, uint32_t count, uint64_t outer, void* output);

// Copies the box [offsets, offsets + sizes) of a `rank`-dim input of `dims` (rank at most 6, `element_size` bytes an
// element) to a contiguous output of dims `sizes`. src and dst do not overlap.
void slice(const void* src, void* dst, const uint32_t* dims, const uint32_t* offsets, const uint32_t* sizes,
           uint32_t rank, size_t element_size);

}  // namespace xnnpack
}  // namespace ember
