// The kDot tier on x86-64 (level.h): AVX-VNNI's VEX-encoded VPDPBUSD on 256-bit vectors (x86_256.inc), for CPUs
// with it and without AVX512-VNNI, or when int8_level() is capped below kDot512.
#include "kernels/optimized/int8/tier_kernels.h"

#if defined(__x86_64__)

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,avxvnni"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,avxvnni")
#endif

#define EMBER_INT8_DOT4 1
#define EMBER_INT8_TIER_NAME x86_avxvnni_kernels
#include "kernels/optimized/int8/x86_256.inc"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else

namespace ember {
namespace optimized {
const TierKernels* x86_avxvnni_kernels() { return nullptr; }
}  // namespace optimized
}  // namespace ember

#endif
