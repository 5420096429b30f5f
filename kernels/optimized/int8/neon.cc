#include "kernels/optimized/int8/tier_kernels.h"

namespace ember {
namespace optimized {
const TierKernels* neon_kernels() { return nullptr; }
}  // namespace optimized
}  // namespace ember
