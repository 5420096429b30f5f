// The kDot tier on aarch64 (level.h): SDOT (the Armv8.2 dot product extension; int8_level() asks the CPU), with the
// extension enabled for this file only. clang 14's arm_neon.h declares the SDOT intrinsics only where the whole
// compilation targets the extension, so a clang build has this tier only when it does (-march=...+dotprod).
#include "kernels/optimized/int8/tier_kernels.h"

#if defined(__aarch64__) && !defined(__APPLE__) && (!defined(__clang__) || defined(__ARM_FEATURE_DOTPROD))

#if !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")
#endif

#define EMBER_INT8_SDOT 1
#define EMBER_INT8_TIER_NAME neon_dot_kernels
#include "kernels/optimized/int8/neon.inc"

#if !defined(__clang__)
#pragma GCC pop_options
#endif

#else

namespace ember {
namespace optimized {
const TierKernels* neon_dot_kernels() { return nullptr; }
}  // namespace optimized
}  // namespace ember

#endif
