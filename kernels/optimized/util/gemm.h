// Single-precision matrix product with a fused epilogue: the engine behind mm, addmm, bmm and convolution.
#pragma once

#include <stdint.h>

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

// The same without the run-time choice of AVX2: the path every CPU of this architecture takes (tests use it to
// check that path on machines that would otherwise skip it).
void sgemm_baseline(const Gemm& g);

}  // namespace optimized
}  // namespace ember
