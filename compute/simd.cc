#include "compute/simd.h"

#if EMBER_SIMD_X86_DISPATCH
#include <cpuid.h>
#endif

#include <atomic>

namespace ember {
namespace optimized {

namespace {
// Atomic: kernels on several threads read it (methods executing at once), and a test may lower it meanwhile.
std::atomic<X86Isa> g_limit{X86Isa::kAvx512};
}  // namespace

void limit_x86_isa(X86Isa highest) { g_limit.store(highest, std::memory_order_relaxed); }

#if EMBER_SIMD_X86_DISPATCH
namespace {
// The CPU's answers, asked once. 0: not asked yet, 1: no, 2: yes. Relaxed atomics: threads racing on the first
// call only ask twice and store the same answer, but a plain int would still be a data race.
template <class F>
bool cached(std::atomic<int>* known, F ask) {
  int k = known->load(std::memory_order_relaxed);
  if (k == 0) {
    k = ask() ? 2 : 1;
    known->store(k, std::memory_order_relaxed);
  }
  return k == 2;
}

bool has_avx2_fma() {
  static std::atomic<int> known{0};
  return cached(&known, [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  });
}
}  // namespace
#endif

bool cpu_has_avx2_fma() {
#if EMBER_SIMD_X86_DISPATCH
  return g_limit.load(std::memory_order_relaxed) >= X86Isa::kAvx2 && has_avx2_fma();
#else
  return false;
#endif
}

bool cpu_has_avx512_vnni() {
#if EMBER_SIMD_X86_DISPATCH
  static std::atomic<int> known{0};
  // The compilers' checks include the OS saving the AVX-512 state (XCR0), which EVEX encodings need even on ymm.
  return g_limit.load(std::memory_order_relaxed) >= X86Isa::kAvx512 && cached(&known, [] {
           return has_avx2_fma() && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512bw");
         });
#else
  return false;
#endif
}

bool cpu_has_avx512f() {
#if EMBER_SIMD_X86_DISPATCH
  static std::atomic<int> known{0};
  return g_limit.load(std::memory_order_relaxed) >= X86Isa::kAvx512 &&
         cached(&known, [] { return has_avx2_fma() && __builtin_cpu_supports("avx512f"); });
#else
  return false;
#endif
}

bool cpu_has_avx_vnni() {
#if EMBER_SIMD_X86_DISPATCH
  static std::atomic<int> known{0};
  // CPUID leaf 7, subleaf 1, EAX bit 4 (clang 14's __builtin_cpu_supports has no name for it). VEX-encoded, so the
  // OS saving the ymm state, which the AVX2 answer includes, is all it needs.
  return g_limit.load(std::memory_order_relaxed) >= X86Isa::kAvxVnni && cached(&known, [] {
           unsigned a = 0, b = 0, c = 0, d = 0;
           return has_avx2_fma() && __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a >> 4 & 1) != 0;
         });
#else
  return false;
#endif
}

}  // namespace optimized
}  // namespace ember
