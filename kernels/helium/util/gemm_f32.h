// Float products on MVE for the convolution and linear kernels, in two shapes:
//
//   channel block  out[oc][p] = bias[oc] + sum_c w[oc][c] * x[c][p] for four output channels and up to six
//                  pixels at once: the four channels' weights for one c come in one gather (VLDRW with a vector of
//                  addresses that writes back, so it also steps to c + 1), the six pixels' inputs for that c in one
//                  LDM (they are adjacent in x's row), and each pixel takes one VFMA of the gathered weights by its
//                  input. Neither operand is copied or reordered first, so pointwise layers read their input and
//                  weights where they lie. Per c: one gather, one LDM, one add, six VFMAs.
//   row block      out[n] = sum_k a[k] * b[k][n] for up to seven vectors of n at once (a linear layer's
//                  [in, out] weight, read a row at a time): per k one load of a[k] and, per vector, one load and
//                  one VFMA.
//
// The inner loops are assembly: gcc 12 neither emits writeback loads from intrinsics nor accepts the writeback
// gather's intrinsic (it rejects its constant offset after inlining), and without them each step of the loop
// pays for pointer arithmetic. They are low-overhead loops (WLS/LE) that touch no predicate.
#pragma once

#include <arm_mve.h>
#include <stdint.h>

namespace ember {
namespace helium {

// Six pixels' sums for four output channels: vector j holds pixel j, lane i channel i.
struct PixelSums {
  float32x4_t p0, p1, p2, p3, p4, p5;
};

// One step of the channel block for P pixels (an assembler macro body: P is a template constant): the gathered
// weights into qw, the P inputs into r4-r6, r8-r10 (r7 may be the frame pointer), the input row pointer on by
// one row, then the P multiply-adds.
#define EMBER_HELIUM_CHANNEL_STEP                                 \
  "   vldrw.u32 %q[wv], [%q[rows], #4]!\n"                         \
  ".if %c[P] == 1\n"                                              \
  "   ldr r4, [%[x]]\n"                                           \
  ".elseif %c[P] == 2\n"                                          \
  "   ldrd r4, r5, [%[x]]\n"                                      \
  ".elseif %c[P] == 3\n"                                          \
  "   ldm %[x], {r4, r5, r6}\n"                                   \
  ".elseif %c[P] == 4\n"                                          \
  "   ldm %[x], {r4, r5, r6, r8}\n"                               \
  ".elseif %c[P] == 5\n"                                          \
  "   ldm %[x], {r4, r5, r6, r8, r9}\n"                           \
  ".else\n"                                                       \
  "   ldm %[x], {r4, r5, r6, r8, r9, r10}\n"                      \
  ".endif\n"                                                      \
  "   add %[x], %[x], %[ldx]\n"                                   \
  "   vfma.f32 %q[s0], %q[wv], r4\n"                              \
  ".if %c[P] >= 2\n   vfma.f32 %q[s1], %q[wv], r5\n.endif\n"      \
  ".if %c[P] >= 3\n   vfma.f32 %q[s2], %q[wv], r6\n.endif\n"      \
  ".if %c[P] >= 4\n   vfma.f32 %q[s3], %q[wv], r8\n.endif\n"      \
  ".if %c[P] >= 5\n   vfma.f32 %q[s4], %q[wv], r9\n.endif\n"      \
  ".if %c[P] >= 6\n   vfma.f32 %q[s5], %q[wv], r10\n.endif\n"

// Adds sum over `k` steps of gathered weights times x[step][0..P) to `s`. `rows` holds the four weight rows'
// addresses minus one float (the gather writes back before it loads) and is left past the last step; x_row_bytes
// is the distance between x's rows. Steps go two per loop iteration, then an odd one.
template <int P>
inline void channel_block_steps(uint32x4_t& rows, const float* x, int32_t x_row_bytes, int32_t k, PixelSums& s) {
  static_assert(P >= 1 && P <= 6, "a channel block covers one to six pixels");
  float32x4_t wv;
  int32_t pairs;
  __asm__ volatile(
      "   lsrs %[pairs], %[k], #1\n"
      "   wls lr, %[pairs], 2f\n"
      "1:\n" EMBER_HELIUM_CHANNEL_STEP EMBER_HELIUM_CHANNEL_STEP
      "   le lr, 1b\n"
      "2: lsls %[pairs], %[k], #31\n"
      "   beq 3f\n" EMBER_HELIUM_CHANNEL_STEP
      "3:\n"
      : [s0] "+w"(s.p0), [s1] "+w"(s.p1), [s2] "+w"(s.p2), [s3] "+w"(s.p3), [s4] "+w"(s.p4), [s5] "+w"(s.p5),
        [rows] "+w"(rows), [wv] "=&w"(wv), [x] "+r"(x), [pairs] "=&r"(pairs)
      : [ldx] "r"(x_row_bytes), [k] "r"(k), [P] "i"(P)
      : "r4", "r5", "r6", "r8", "r9", "r10", "lr", "cc", "memory");
}

#undef EMBER_HELIUM_CHANNEL_STEP

// Up to seven vectors of a row block's sums (vector j: columns 4j..4j+3).
struct ColumnSums {
  float32x4_t v[7];
};

// One step of the row block for V vectors: a[k] into r4 (a steps on), V loads of b's row each met by a VFMA, b on
// by one row.
#define EMBER_HELIUM_ROW_STEP                                                    \
  "   ldr r4, [%[a]], #4\n"                                                      \
  "   vldrw.u32 %q[bv], [%[b]]\n"                                                \
  "   vfma.f32 %q[s0], %q[bv], r4\n"                                             \
  ".if %c[V] >= 2\n   vldrw.u32 %q[bv], [%[b], #16]\n   vfma.f32 %q[s1], %q[bv], r4\n.endif\n" \
  ".if %c[V] >= 3\n   vldrw.u32 %q[bv], [%[b], #32]\n   vfma.f32 %q[s2], %q[bv], r4\n.endif\n" \
  ".if %c[V] >= 4\n   vldrw.u32 %q[bv], [%[b], #48]\n   vfma.f32 %q[s3], %q[bv], r4\n.endif\n" \
  ".if %c[V] >= 5\n   vldrw.u32 %q[bv], [%[b], #64]\n   vfma.f32 %q[s4], %q[bv], r4\n.endif\n" \
  ".if %c[V] >= 6\n   vldrw.u32 %q[bv], [%[b], #80]\n   vfma.f32 %q[s5], %q[bv], r4\n.endif\n" \
  ".if %c[V] >= 7\n   vldrw.u32 %q[bv], [%[b], #96]\n   vfma.f32 %q[s6], %q[bv], r4\n.endif\n" \
  "   add %[b], %[b], %[ldb]\n"

// Adds sum over `k` rows of a[row] * b[row][0..4V) to `s` (b's rows b_row_bytes apart). Every load is a whole
// vector: the caller keeps the last row's (which may run past the matrix) out of here.
template <int V>
inline void row_block_steps(const float* a, const float* b, int32_t b_row_bytes, int32_t k, ColumnSums& s) {
  static_assert(V >= 1 && V <= 7, "a row block covers one to seven vectors");
  float32x4_t bv;
  __asm__ volatile(
      "   wls lr, %[k], 2f\n"
      "1:\n" EMBER_HELIUM_ROW_STEP
      "   le lr, 1b\n"
      "2:\n"
      : [s0] "+w"(s.v[0]), [s1] "+w"(s.v[1]), [s2] "+w"(s.v[2]), [s3] "+w"(s.v[3]), [s4] "+w"(s.v[4]),
        [s5] "+w"(s.v[5]), [s6] "+w"(s.v[6]), [bv] "=&w"(bv), [a] "+r"(a), [b] "+r"(b)
      : [ldb] "r"(b_row_bytes), [k] "r"(k), [V] "i"(V)
      : "r4", "lr", "memory");
}

#undef EMBER_HELIUM_ROW_STEP

}  // namespace helium
}  // namespace ember
