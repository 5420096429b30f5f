#include "kernels/optimized/util/simd.h"

namespace ember {
namespace optimized {

bool cpu_has_avx2_fma() {
#if EMBER_SIMD_X86_DISPATCH
  // 0: not asked yet, 1: no, 2: yes.
  static int known = 0;
  if (known == 0) {
    __builtin_cpu_init();
    known = (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? 2 : 1;
  }
  return known == 2;
#else
  return false;
#endif
}

}  // namespace optimized
}  // namespace ember
