// The AVX-512F tiles (8 x 48, and 512-bit few-row products for decode's matrix-vector products), in a translation
// unit of their own where every function targets AVX-512F, as gemm_avx2.cc does for AVX2. Only sgemm() and
// sgemm_packed() (gemm.cc) send work here, on CPUs that cpu_has_avx512f() says run it. On this AVX-512 machine
// (one thread): ResNet18 224 36.8 -> 20.0 ms, torchvision MobileNetV2 6.9 -> 4.8 ms, SmolLM-135M fp32 decode
// 57 -> 65 tok/s and prefill 327 -> 413-455 tok/s (bench/run).
#include <stdint.h>
#include <string.h>

#define EMBER_SIMD_HELPERS_AVX512
#include "compute/simd.h"

#if EMBER_SIMD_X86_DISPATCH

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#endif

#include <immintrin.h>

#include "compute/gemm_kernel.h"

namespace ember {
namespace optimized {
namespace {

template <>
EMBER_ALWAYS_INLINE f32x16 broadcast<f32x16>(const float* p) {
  return reinterpret_cast<f32x16>(_mm512_set1_ps(*p));
}

}  // namespace

// 32 registers of 16 floats: 8 x 48 tiles (24 + 3 + 1).
void sgemm_avx512(const Gemm& g) { sgemm_any<f32x16, 8, 3, true>(g); }
void sgemm_packed_avx512(const Gemm& g, const PackedB& b, float* scratch, ThreadPool* pool) {
  sgemm_packed_any<f32x16, 8, 3>(g, b, scratch, pool);
}

}  // namespace optimized
}  // namespace ember

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif  // EMBER_SIMD_X86_DISPATCH
