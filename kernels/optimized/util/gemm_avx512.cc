// Few-row products (decode's matrix-vector products) on 512-bit vectors, in a translation unit of their own where
// every function targets AVX-512F (as gemm_avx2.cc does for AVX2). Only sgemm() (gemm.cc) sends work here, and only
// on CPUs that cpu_has_avx512f() says run it.
#include <stdint.h>
#include <string.h>

#define EMBER_SIMD_HELPERS_AVX512
#include "kernels/optimized/util/simd.h"

#if EMBER_SIMD_X86_DISPATCH

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#endif

#include <immintrin.h>

#include "kernels/optimized/util/gemm_kernel.h"

namespace ember {
namespace optimized {
namespace {

template <>
EMBER_ALWAYS_INLINE f32x16 broadcast<f32x16>(const float* p) {
  return reinterpret_cast<f32x16>(_mm512_set1_ps(*p));
}

}  // namespace

void sgemm_few_rows_avx512(const Gemm& g) { sgemm_few_rows<f32x16>(g); }

}  // namespace optimized
}  // namespace ember

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif  // EMBER_SIMD_X86_DISPATCH
