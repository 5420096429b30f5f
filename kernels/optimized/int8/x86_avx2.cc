// The kWide16 tier on x86-64 (level.h): AVX2's VPMADDWD on int16 pairs (x86_256.inc), for CPUs without VNNI.
#include "kernels/optimized/int8/tier_kernels.h"

#if defined(__x86_64__)

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

#define EMBER_INT8_DOT4 0
#define EMBER_INT8_TIER_NAME x86_avx2_kernels
#include "kernels/optimized/int8/x86_256.inc"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else

namespace ember {
namespace optimized {
const TierKernels* x86_avx2_kernels() { return nullptr; }
}  // namespace optimized
}  // namespace ember

#endif
