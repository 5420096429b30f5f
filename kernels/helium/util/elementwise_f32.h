// Element-wise float loops on MVE: each is a tail-predicated low-overhead loop (DLSTP/LETP) with writeback loads
// and stores, so four elements cost one instruction per operation plus the loop's own, and the n % 4 remainder is
// the last, predicated pass. Assembly, because gcc 12 reaches neither the writeback forms nor DLSTP/LETP from
// intrinsics. Loops that compare save and restore the predicate register around themselves: the compiler does not
// know an asm statement changes it.
#pragma once

#include <arm_mve.h>
#include <stdint.h>

namespace ember {
namespace helium {

// o[i] = x[i] clamped below at lo (when Lo) and above at hi (when Hi), i < n, with the scalar kernels'
// comparisons: x < lo takes lo, then x > hi takes hi, so a NaN element stays NaN. MVE's LT also holds for unordered
// operands, so "below lo" is tested as lo > x (q1 holds lo); GT holds for ordered ones only. In place is fine.
template <bool Lo, bool Hi>
inline void clamp_floats(const float* x, float* o, int32_t n, float lo, float hi) {
  if (n <= 0) return;
  uint32_t saved;
  __asm__ volatile(
      "   vmrs %[saved], p0\n"
      "   vdup.32 q1, %[lo]\n"
      "   dlstp.32 lr, %[n]\n"
      "1: vldrw.u32 q0, [%[x]], #16\n"
      ".if %c[has_lo]\n"
      "   vpt.f32 gt, q1, q0\n"
      "   vmovt q0, q1\n"
      ".endif\n"
      ".if %c[has_hi]\n"
      "   vpt.f32 gt, q0, %[hi]\n"
      "   vdupt.32 q0, %[hi]\n"
      ".endif\n"
      "   vstrw.32 q0, [%[o]], #16\n"
      "   letp lr, 1b\n"
      "   vmsr p0, %[saved]\n"
      : [x] "+r"(x), [o] "+r"(o), [saved] "=&r"(saved)
      : [n] "r"(n), [lo] "r"(lo), [hi] "r"(hi), [has_lo] "i"(Lo ? 1 : 0), [has_hi] "i"(Hi ? 1 : 0)
      : "q0", "q1", "lr", "memory");
}

// o[i] = value, i < n.
inline void fill_floats(float* o, int32_t n, float value) {
  if (n <= 0) return;
  __asm__ volatile(
      "   vdup.32 q0, %[v]\n"
      "   dlstp.32 lr, %[n]\n"
      "1: vstrw.32 q0, [%[o]], #16\n"
      "   letp lr, 1b\n"
      : [o] "+r"(o)
      : [n] "r"(n), [v] "r"(value)
      : "q0", "lr", "memory");
}

// d[i] = s[i], i < n.
inline void copy_floats(float* d, const float* s, int32_t n) {
  if (n <= 0) return;
  __asm__ volatile(
      "   dlstp.32 lr, %[n]\n"
      "1: vldrw.u32 q0, [%[s]], #16\n"
      "   vstrw.32 q0, [%[d]], #16\n"
      "   letp lr, 1b\n"
      : [d] "+r"(d), [s] "+r"(s)
      : [n] "r"(n)
      : "q0", "lr", "memory");
}

// d[i] = s[i * stride], i < n: a gather of four elements per vector. `offsets` holds {0, 1, 2, 3} * stride.
inline void copy_floats_strided(float* d, const float* s, int32_t n, int32_t stride, uint32x4_t offsets) {
  if (n <= 0) return;
  const int32_t step = stride * 16;
  __asm__ volatile(
      "   dlstp.32 lr, %[n]\n"
      "1: vldrw.u32 q0, [%[s], %q[off], uxtw #2]\n"
      "   add %[s], %[s], %[step]\n"
      "   vstrw.32 q0, [%[d]], #16\n"
      "   letp lr, 1b\n"
      : [d] "+r"(d), [s] "+r"(s)
      : [n] "r"(n), [off] "w"(offsets), [step] "r"(step)
      : "q0", "lr", "memory");
}

// The binary operations: a + b * alpha (sub is alpha negated) and a * b.
enum class BinaryOp { AddScaled, Mul };

// o[i] = a[i] op b[i], i < n.
template <BinaryOp Op>
inline void binary_floats(const float* a, const float* b, float* o, int32_t n, float alpha) {
  if (n <= 0) return;
  __asm__ volatile(
      "   dlstp.32 lr, %[n]\n"
      "1: vldrw.u32 q0, [%[a]], #16\n"
      "   vldrw.u32 q1, [%[b]], #16\n"
      ".if %c[op] == 0\n"
      "   vmul.f32 q1, q1, %[alpha]\n"
      "   vadd.f32 q0, q0, q1\n"
      ".else\n"
      "   vmul.f32 q0, q0, q1\n"
      ".endif\n"
      "   vstrw.32 q0, [%[o]], #16\n"
      "   letp lr, 1b\n"
      : [a] "+r"(a), [b] "+r"(b), [o] "+r"(o)
      : [n] "r"(n), [alpha] "r"(alpha), [op] "i"(static_cast<int>(Op))
      : "q0", "q1", "lr", "memory");
}

// o[i] = a[i] op s (b a single value s), i < n. For AddScaled the caller passes s = b * alpha, rounded as each
// element's product would be.
template <BinaryOp Op>
inline void binary_floats_scalar_b(const float* a, float s, float* o, int32_t n) {
  if (n <= 0) return;
  __asm__ volatile(
      "   dlstp.32 lr, %[n]\n"
      "1: vldrw.u32 q0, [%[a]], #16\n"
      ".if %c[op] == 1\n"
      "   vmul.f32 q0, q0, %[s]\n"
      ".else\n"
      "   vadd.f32 q0, q0, %[s]\n"
      ".endif\n"
      "   vstrw.32 q0, [%[o]], #16\n"
      "   letp lr, 1b\n"
      : [a] "+r"(a), [o] "+r"(o)
      : [n] "r"(n), [s] "r"(s), [op] "i"(static_cast<int>(Op))
      : "q0", "lr", "memory");
}

// o[i] = s op b[i] (a a single value s), i < n. Both operations commute, so the scalar is the instruction's second
// operand.
template <BinaryOp Op>
inline void binary_floats_scalar_a(float s, const float* b, float* o, int32_t n, float alpha) {
  if (n <= 0) return;
  __asm__ volatile(
      "   dlstp.32 lr, %[n]\n"
      "1: vldrw.u32 q0, [%[b]], #16\n"
      ".if %c[op] == 0\n"
      "   vmul.f32 q0, q0, %[alpha]\n"
      ".endif\n"
      ".if %c[op] == 1\n"
      "   vmul.f32 q0, q0, %[s]\n"
      ".else\n"
      "   vadd.f32 q0, q0, %[s]\n"
      ".endif\n"
      "   vstrw.32 q0, [%[o]], #16\n"
      "   letp lr, 1b\n"
      : [b] "+r"(b), [o] "+r"(o)
      : [n] "r"(n), [s] "r"(s), [alpha] "r"(alpha), [op] "i"(static_cast<int>(Op))
      : "q0", "lr", "memory");
}

}  // namespace helium
}  // namespace ember
