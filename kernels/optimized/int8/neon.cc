// The kWide16 tier on aarch64 (level.h): plain NEON (SMULL, SADALP), for cores without the dot product extension.
// Not for Apple targets: Debian's clang 14 crashes parsing arm_neon.h for arm64-apple-ios (as op_llm_linear.cc
// notes), so the iOS archive keeps kernels/quantized's scalar kernels.
#include "kernels/optimized/int8/tier_kernels.h"

#if defined(__aarch64__) && !defined(__APPLE__)

#define EMBER_INT8_SDOT 0
#define EMBER_INT8_TIER_NAME neon_kernels
#include "kernels/optimized/int8/neon.inc"

#else

namespace ember {
namespace optimized {
const TierKernels* neon_kernels() { return nullptr; }
}  // namespace optimized
}  // namespace ember

#endif
