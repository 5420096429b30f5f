// Single-precision matrix product with a fused epilogue: the engine behind mm, addmm, bmm and convolution.
#pragma once

#include <stdint.h>

#include "runtime/core/thread_pool.h"

namespace ember {
namespace optimized {

struct Gemm {
  int64_t M = 0, N = 0, K = 0;
  const float* a = nullptr;  // M x K, row stride lda
  int64_t lda = 0;
  const float* b = nullptr;  // K x N, row stride ldb
  int64_t ldb = 0;
  float* c = nullptr;  // M x N, row stride ldc; never read (C = A @ B + bias, not +=)
  int64_t ldc = 0;
  const float* row_bias = nullptr;  // M values, one per row (convolution: one per output channel)
  const float* col_bias = nullptr;  // N values, one per column (linear)
  float alpha = 1.0f;               // scales A @ B before the biases are added
  // Output clamp, applied last: relu is [0, inf), relu6 is [0, 6]. Infinite bounds clamp nothing.
  float lo = -__builtin_inff();
  float hi = __builtin_inff();
};

// C = clamp(alpha * A @ B + row_bias + col_bias). No scratch memory: A and B are read in place, blocked so a
// panel of B stays in L1 while rows of A stream past it.
void sgemm(const Gemm& g);

// The same split across `pool`'s threads (null or one thread: sgemm(g)): columns in slices of whole tiles, or rows
// when C is too narrow. Every element is summed in the same order as by sgemm(g), so the result is bit for bit the
// same whatever the thread count. Small products stay on the caller (a split costs about a microsecond).
void sgemm(const Gemm& g, ThreadPool* pool);

// The same without the run-time choice of AVX2: the path every CPU of this architecture takes (tests use it to
// check that path on machines that would otherwise skip it).
void sgemm_baseline(const Gemm& g);

// B that exists only as a function: a convolution's im2col matrix, written by `fill` straight into the panels the
// register tiles read, one K block at a time. Nothing of B is stored whole and nothing is copied twice (an im2col
// tile in memory, then packed again by the GEMM, wrote ResNet18's 3x3 layers' 61 MB of columns two times a run).
struct PackedB {
  // Rows [k0, k0 + kc) of columns [n0, n0 + n) of B as kc rows of `width` floats, row after row at dst; the floats
  // past n in each row are zero. width <= kPanelMaxWidth.
  void (*fill)(const void* ctx, int64_t k0, int64_t kc, int64_t n0, int64_t n, int64_t width, float* dst);
  const void* ctx;
};

constexpr int64_t kPanelMaxWidth = 48;   // the widest register tile's columns (AVX-512's 8 x 48)
constexpr int64_t kPackedKBlock = 256;   // rows of B per fill: the GEMM's K block
constexpr int64_t kPackedMaxN = 192;     // columns per sgemm_packed call: 192 KB of B panels in L2 at most

// Floats of scratch sgemm_packed uses for a K x N product (N <= kPackedMaxN): one K block of every panel. Panels
// are whole tiles, so N is rounded up to a multiple of 48, which every tile width here (8, 16, 24) divides.
constexpr int64_t sgemm_packed_scratch_floats(int64_t K, int64_t N) {
  return (K < kPackedKBlock ? K : kPackedKBlock) * ((N + 47) / 48 * 48);
}

// C = clamp(alpha * A @ B + row_bias + col_bias) with B from `b` (g.b and g.ldb unused), g.N <= kPackedMaxN, K > 0,
// scratch of sgemm_packed_scratch_floats(g.K, g.N) floats. A's K block stays in L2 for all N columns, so a layer
// whose weights outgrow the caches (ResNet18's last: 512 x 4608, 9.4 MB) reads them once per call. With a pool,
// each K block's panels are filled in parallel (`fill` must be safe to call from several threads at once, on
// different panels), then its rows computed in parallel; the same scratch, bit for bit the same result.
void sgemm_packed(const Gemm& g, const PackedB& b, float* scratch, ThreadPool* pool = nullptr);
void sgemm_packed_baseline(const Gemm& g, const PackedB& b, float* scratch, ThreadPool* pool = nullptr);

}  // namespace optimized
}  // namespace ember
