#include "kernels/optimized/int8/level.h"

#include <atomic>

#include "compute/simd.h"
#include "kernels/optimized/int8/tier_kernels.h"

// The dot product extension is asked of the kernel on Linux (the hardware capability bits); elsewhere only a
// compiler told the target has it (-march=...+dotprod) enables it.
#if defined(__aarch64__) && defined(__linux__) && !defined(__ANDROID__)
#include <sys/auxv.h>
#define EMBER_INT8_ASK_HWCAP 1
#else
#define EMBER_INT8_ASK_HWCAP 0
#endif

namespace ember {
namespace optimized {

namespace {

std::atomic<int32_t> g_cap{static_cast<int32_t>(Int8Level::kDot512)};

Int8Level cpu_level() {
#if defined(__x86_64__)
  if (cpu_has_avx512_vnni()) return Int8Level::kDot512;
  if (cpu_has_avx_vnni()) return Int8Level::kDot;
  if (cpu_has_avx2_fma()) return Int8Level::kWide16;
  return Int8Level::kScalar;
#elif defined(__aarch64__) && !defined(__APPLE__)
  // The dot product tier only where this build has it (neon_dot.cc).
  if (neon_dot_kernels() != nullptr) {
#if EMBER_INT8_ASK_HWCAP
    // HWCAP_ASIMDDP (bit 20 of AT_HWCAP), spelled out: older C libraries' headers lack the name.
    static const bool dot = (getauxval(AT_HWCAP) >> 20 & 1) != 0;
    if (dot) return Int8Level::kDot;
#elif defined(__ARM_FEATURE_DOTPROD)
    return Int8Level::kDot;
#endif
  }
  return Int8Level::kWide16;
#else
  return Int8Level::kScalar;
#endif
}

}  // namespace

Int8Level int8_level() {
  const Int8Level cpu = cpu_level();
  const int32_t cap = g_cap.load(std::memory_order_relaxed);
  return static_cast<int32_t>(cpu) < cap ? cpu : static_cast<Int8Level>(cap);
}

void limit_int8_level(Int8Level highest) { g_cap.store(static_cast<int32_t>(highest), std::memory_order_relaxed); }

const char* int8_level_name(Int8Level level) {
#if defined(__aarch64__)
  static const char* const kNames[] = {"scalar", "NEON", "NEON dot product", "-"};
#else
  static const char* const kNames[] = {"scalar", "AVX2", "AVX-VNNI", "AVX512-VNNI"};
#endif
  return kNames[static_cast<int32_t>(level) & 3];
}

}  // namespace optimized
}  // namespace ember
