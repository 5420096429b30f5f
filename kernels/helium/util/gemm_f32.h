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
// pays for pointer arithmetic. They are low-overhead loops (WLS/LE); those that clamp save and restore the
// predicate register around themselves, since the compiler does not know an asm statement changes it.
#pragma once

#include <arm_mve.h>
#include <stdint.h>

namespace ember {
namespace helium {

// What a run of channel-block tiles reads besides its operands, kept in memory because the loop needs every
// vector register: the layout is the assembly's (offsets in the comments).
struct alignas(16) ChannelBlockState {
  uint32x4_t rows;         //  0: the four weight rows' addresses minus one float (the gather writes back first)
  float32x4_t bias;        // 16: the four channels' biases, which seed the sums
  uint32x4_t out_offsets;  // 32: byte offsets of the four channels' output rows
  int32_t pairs;           // 48: k / 2, the loop's iterations of two steps
  int32_t odd;             // 52: k % 2, a last single step
  int32_t rewind;          // 56: bytes from the input after the last step to the next tile's first input
  float lo, hi;            // 60, 64: the clamp (Clamp only)
  uint32_t saved;          // 68: the caller's predicate register while the tiles clamp (Clamp only)
};

// One step of a tile of P pixels (P a template constant): the four channels' weights for this input row gathered
// into q6 (q7 holds their addresses and steps on), the P inputs into r4-r6, r8-r10 (r7 may be the frame pointer),
// the input pointer on by one row, then one VFMA per pixel into q0..q(P-1).
#define EMBER_HELIUM_CHANNEL_STEP                    \
  "   vldrw.u32 q6, [q7, #4]!\n"                     \
  ".if %c[P] == 1\n"                                 \
  "   ldr r4, [%[x]]\n"                              \
  ".elseif %c[P] == 2\n"                             \
  "   ldrd r4, r5, [%[x]]\n"                         \
  ".elseif %c[P] == 3\n"                             \
  "   ldm %[x], {r4, r5, r6}\n"                      \
  ".elseif %c[P] == 4\n"                             \
  "   ldm %[x], {r4, r5, r6, r8}\n"                  \
  ".elseif %c[P] == 5\n"                             \
  "   ldm %[x], {r4, r5, r6, r8, r9}\n"              \
  ".else\n"                                          \
  "   ldm %[x], {r4, r5, r6, r8, r9, r10}\n"         \
  ".endif\n"                                         \
  "   add %[x], %[x], %[ldx]\n"                      \
  "   vfma.f32 q0, q6, r4\n"                         \
  ".if %c[P] >= 2\n   vfma.f32 q1, q6, r5\n.endif\n" \
  ".if %c[P] >= 3\n   vfma.f32 q2, q6, r6\n.endif\n" \
  ".if %c[P] >= 4\n   vfma.f32 q3, q6, r8\n.endif\n" \
  ".if %c[P] >= 5\n   vfma.f32 q4, q6, r9\n.endif\n" \
  ".if %c[P] >= 6\n   vfma.f32 q5, q6, r10\n.endif\n"

// The clamp over the P sums, with the scalar kernels' comparisons so that NaN stays NaN: MVE's LT also holds for
// unordered operands, so "below lo" is lo > sum (q7 holds lo), "above hi" is sum > hi (lr holds hi); GT holds for
// ordered operands only. Shared with depthwise_f32.h's tiles, which hold their sums in the same registers.
#define EMBER_HELIUM_CLAMP_LANE(j) ".if %c[P] > " #j "\n   vpt.f32 gt, q7, q" #j "\n   vmovt q" #j ", q7\n.endif\n"
#define EMBER_HELIUM_CLAMP_HIGH(j) ".if %c[P] > " #j "\n   vpt.f32 gt, q" #j ", lr\n   vdupt.32 q" #j ", lr\n.endif\n"
#define EMBER_HELIUM_CLAMP(lo_offset, hi_offset)                                                         \
  "   ldr lr, [%[st], #" #lo_offset                                                                      \
  "]\n"                                                                                                  \
  "   vdup.32 q7, lr\n" EMBER_HELIUM_CLAMP_LANE(0) EMBER_HELIUM_CLAMP_LANE(1) EMBER_HELIUM_CLAMP_LANE(2) \
      EMBER_HELIUM_CLAMP_LANE(3) EMBER_HELIUM_CLAMP_LANE(4)                                              \
          EMBER_HELIUM_CLAMP_LANE(5) "   ldr lr, [%[st], #" #hi_offset "]\n" EMBER_HELIUM_CLAMP_HIGH(0)  \
              EMBER_HELIUM_CLAMP_HIGH(1) EMBER_HELIUM_CLAMP_HIGH(2) EMBER_HELIUM_CLAMP_HIGH(3)           \
                  EMBER_HELIUM_CLAMP_HIGH(4) EMBER_HELIUM_CLAMP_HIGH(5)

// Pixel j's four channels stored into their output rows with one scatter (q6: the rows' addresses for pixel 0).
// A block of fewer than four channels repeats its last channel in the spare lanes, weights, bias, output row and
// all, so the spare lanes store that channel's values again where they already are: no predicate needed.
#define EMBER_HELIUM_STORE_PIXEL(j) ".if %c[P] > " #j "\n   vstrw.32 q" #j ", [q6, #4*" #j "]\n.endif\n"

// `tiles` tiles of P pixels each, for four output channels: tile t's sums are bias + sum over k input rows of the
// gathered weights times x[row][t * P + j], clamped when Clamp, stored at out + t * P + j (+ the channels' row
// offsets). x points at the first tile's first input, rows x_row_bytes apart. Per step: one gather, one LDM, one
// add and P VFMAs, two steps per loop iteration.
template <int P, bool Clamp>
__attribute__((always_inline)) inline void channel_block_tiles(ChannelBlockState& st, const float* x,
                                                               int32_t x_row_bytes, float* out, int32_t tiles) {
  static_assert(P >= 1 && P <= 6, "a tile covers one to six pixels");
  if (tiles <= 0) return;
  __asm__ volatile(
      ".if %c[clamp]\n   vmrs lr, p0\n   str lr, [%[st], #68]\n.endif\n"
      "0: vldrw.u32 q7, [%[st]]\n"
      "   vldrw.u32 q0, [%[st], #16]\n"
      ".if %c[P] >= 2\n   vmov q1, q0\n.endif\n"
      ".if %c[P] >= 3\n   vmov q2, q0\n.endif\n"
      ".if %c[P] >= 4\n   vmov q3, q0\n.endif\n"
      ".if %c[P] >= 5\n   vmov q4, q0\n.endif\n"
      ".if %c[P] >= 6\n   vmov q5, q0\n.endif\n"
      "   ldr lr, [%[st], #48]\n"
      "   wls lr, lr, 2f\n"
      "1:\n" EMBER_HELIUM_CHANNEL_STEP EMBER_HELIUM_CHANNEL_STEP
      "   le lr, 1b\n"
      "2: ldr lr, [%[st], #52]\n"
      "   cmp lr, #0\n"
      "   beq 3f\n" EMBER_HELIUM_CHANNEL_STEP
      "3: ldr lr, [%[st], #56]\n"
      "   sub %[x], %[x], lr\n"
      ".if %c[clamp]\n" EMBER_HELIUM_CLAMP(60, 64) ".endif\n"
      "   vldrw.u32 q6, [%[st], #32]\n"
      "   vadd.i32 q6, q6, %[out]\n"
      EMBER_HELIUM_STORE_PIXEL(0) EMBER_HELIUM_STORE_PIXEL(1) EMBER_HELIUM_STORE_PIXEL(2)
      EMBER_HELIUM_STORE_PIXEL(3) EMBER_HELIUM_STORE_PIXEL(4) EMBER_HELIUM_STORE_PIXEL(5)
      "   add %[out], %[out], #4*%c[P]\n"
      "   subs %[tiles], %[tiles], #1\n"
      "   bne 0b\n"
      ".if %c[clamp]\n   ldr lr, [%[st], #68]\n   vmsr p0, lr\n.endif\n"
      : [x] "+r"(x), [out] "+r"(out), [tiles] "+r"(tiles)
      : [st] "r"(&st), [ldx] "r"(x_row_bytes), [P] "i"(P), [clamp] "i"(Clamp ? 1 : 0)
      : "r4", "r5", "r6", "r8", "r9", "r10", "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "cc", "memory");
}

#undef EMBER_HELIUM_CHANNEL_STEP
#undef EMBER_HELIUM_STORE_PIXEL

// Up to seven vectors of a row block's sums (vector j: columns 4j..4j+3).
struct ColumnSums {
  float32x4_t v[7];
};

// One step of the row block for V vectors: a[k] into r4 (a steps on), V loads of b's row each met by a VFMA, b on
// by one row.
#define EMBER_HELIUM_ROW_STEP                                                                  \
  "   ldr r4, [%[a]], #4\n"                                                                    \
  "   vldrw.u32 %q[bv], [%[b]]\n"                                                              \
  "   vfma.f32 %q[s0], %q[bv], r4\n"                                                           \
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
