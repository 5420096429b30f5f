// Vectors the compiler lowers to whatever the target has (SSE2 on any x86-64, NEON on aarch64, MVE on Cortex-M55),
// and the one place that picks a wider instruction set at run time. Kernels write their inner loops once, as
// templates over the vector type, and instantiate them per instruction set; no intrinsics, so every target builds.
#pragma once

#include <stdint.h>
#include <string.h>

// 32-byte vectors in functions built for plain x86-64 make gcc and clang warn that such a value would be passed
// differently with AVX; none crosses a call here (every helper is always_inline).
#pragma GCC diagnostic ignored "-Wpsabi"

#define EMBER_ALWAYS_INLINE inline __attribute__((always_inline))
// Register tiles are arrays indexed by loop counters; only full unrolling turns them into registers.
#define EMBER_UNROLL _Pragma("GCC unroll 16")

// AVX2+FMA versions exist only where the compiler can emit them and the C library lets us ask the CPU (mingw-w64's
// gcc included: its toolchain assembles aligned vector moves as unaligned ones, since Windows keeps the stack only
// 16-byte aligned and gcc would spill ymm/zmm registers with aligned moves; platforms/toolchains).
#if defined(__x86_64__) && (defined(__linux__) || defined(__APPLE__) || defined(__MINGW64__))
#define EMBER_SIMD_X86_DISPATCH 1
#define EMBER_TARGET_AVX2 __attribute__((target("avx2,fma")))
// For a function whose vector code is all always_inline templates over f32x16 (as EMBER_TARGET_AVX2's over f32x8);
// called only where cpu_has_avx512f() says so.
#define EMBER_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))
#else
#define EMBER_SIMD_X86_DISPATCH 0
#endif

namespace ember {
namespace optimized {

typedef float f32x4 __attribute__((vector_size(16)));
typedef float f32x8 __attribute__((vector_size(32)));
typedef float f32x16 __attribute__((vector_size(64)));

template <class V>
struct Lanes {
  static constexpr int value = sizeof(V) / sizeof(float);
};

// In the AVX2 translation unit (gemm_avx2.cc defines EMBER_SIMD_HELPERS_AVX2 first) the helpers below are built
// for AVX2 too: clang refuses a call that passes or returns 32-byte vectors from an AVX function to one without
// AVX, always_inline or not. gcc's `#pragma GCC target` there covers the whole file instead.
#if defined(EMBER_SIMD_HELPERS_AVX2) && defined(__clang__) && defined(__x86_64__)
#define EMBER_INTERNAL_SIMD_TARGET_HELPERS 1
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#elif defined(EMBER_SIMD_HELPERS_AVX512) && defined(__clang__) && defined(__x86_64__)
#define EMBER_INTERNAL_SIMD_TARGET_HELPERS 1
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#endif

// Unaligned: planned tensors are 16-byte aligned, but row starts inside them are not.
template <class V>
EMBER_ALWAYS_INLINE V vload(const float* p) {
  V v;
  memcpy(&v, p, sizeof(V));
  return v;
}
template <class V>
EMBER_ALWAYS_INLINE void vstore(float* p, const V& v) {
  memcpy(p, &v, sizeof(V));
}
template <class V>
EMBER_ALWAYS_INLINE V vsplat(float x) {
  V v = {};
  return v + x;
}

#if defined(EMBER_INTERNAL_SIMD_TARGET_HELPERS)
#pragma clang attribute pop
#endif

// Whether this CPU runs AVX2 and FMA (false off x86-64). Asked once; a race only repeats the same answer.
bool cpu_has_avx2_fma();
// Int8 dot products (VPDPBUSD), on top of AVX2 and FMA: AVX512-VNNI with AVX512-VL and -BW, on 256- and 512-bit
// vectors (Intel since Ice Lake and Cascade Lake, AMD since Zen 4), or VEX-encoded AVX-VNNI on 256-bit ones (Intel
// since Alder Lake, AMD since Zen 5).
bool cpu_has_avx512_vnni();
// AVX-512F (with AVX2 and FMA): 512-bit vectors of floats.
bool cpu_has_avx512f();
bool cpu_has_avx_vnni();

// Caps what the functions above answer, so one CPU can run every variant of a kernel (tests, benchmarks): at
// kAvxVnni, both AVX-512 answers are false; at kAvx2 the VNNI ones too; at kBaseline every answer is.
enum class X86Isa { kBaseline, kAvx2, kAvxVnni, kAvx512 };
void limit_x86_isa(X86Isa highest);

}  // namespace optimized
}  // namespace ember
