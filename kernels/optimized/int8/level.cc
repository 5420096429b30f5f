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

// Whether this CPU runs `level`'s kernels. The tiers are not nested on x86: AVX512-VNNI CPUs without the VEX
// AVX-VNNI encoding exist (Cascade Lake, Ice Lake, Zen 4), so each tier is asked for itself.
bool cpu_runs(Int8Level level) {
  switch (level) {
    case Int8Level::kScalar: return true;
#if defined(__x86_64__)
    case Int8Level::kWide16: return cpu_has_avx2_fma();
    case Int8Level::kDot: return cpu_has_avx_vnni();
    case Int8Level::kDot512: return cpu_has_avx512_vnni();
#elif defined(__aarch64__) && !defined(__APPLE__)
    case Int8Level::kWide16: return true;
    // The dot product tier only where this build has it (neon_dot.cc).
    case Int8Level::kDot: {
      if (neon_dot_kernels() == nullptr) return false;
#if EMBER_INT8_ASK_HWCAP
      // HWCAP_ASIMDDP (bit 20 of AT_HWCAP), spelled out: older C libraries' headers lack the name.
      static const bool dot = (getauxval(AT_HWCAP) >> 20 & 1) != 0;
      return dot;
#elif defined(__ARM_FEATURE_DOTPROD)
      return true;
#else
      return false;
#endif
    }
    case Int8Level::kDot512: return false;
#else
    default: return false;
#endif
  }
  return false;
}

}  // namespace

Int8Level int8_level() {
  // The highest tier at or under the cap that this CPU runs.
  for (int32_t l = g_cap.load(std::memory_order_relaxed); l > 0; --l) {
    if (cpu_runs(static_cast<Int8Level>(l))) return static_cast<Int8Level>(l);
  }
  return Int8Level::kScalar;
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
