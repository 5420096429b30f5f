// The AVX2+FMA tiles, in a translation unit of their own where every function, the helpers included, targets AVX2,
// so the one intrinsic below can be inlined into the shared templates. With vsplat each broadcast of A was a scalar
// add and a register shuffle on the FMA ports instead of one broadcast load.
//
// Only the CPU check in sgemm() (gemm.cc) sends work here; nothing else in this file runs on its own.
#include <stdint.h>
#include <string.h>

#define EMBER_SIMD_HELPERS_AVX2
#include "compute/simd.h"

#if EMBER_SIMD_X86_DISPATCH

// System headers are in above, so only Ember's own code below is built for AVX2.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

#include <immintrin.h>

#include "compute/gemm_kernel.h"

namespace ember {
namespace optimized {
namespace {

// Even here gcc builds a lane-by-lane fill out of inserts, so the broadcast load is asked for by name.
template <>
EMBER_ALWAYS_INLINE f32x8 broadcast<f32x8>(const float* p) {
  return reinterpret_cast<f32x8>(_mm256_broadcast_ss(p));
}

}  // namespace

// 16 AVX registers of 8 floats: 4 x 24 (12 + 3 + 1). Measured against 6 x 16 on MobileNetV2's pointwise shapes:
// 8% faster, as channel counts are multiples of 8 (whole 4-row tiles).
void sgemm_avx2(const Gemm& g) { sgemm_any<f32x8, 4, 3, true>(g); }
void sgemm_packed_avx2(const Gemm& g, const PackedB& b, float* scratch, ThreadPool* pool) {
  sgemm_packed_any<f32x8, 4, 3>(g, b, scratch, pool);
}

}  // namespace optimized
}  // namespace ember

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif  // EMBER_SIMD_X86_DISPATCH
