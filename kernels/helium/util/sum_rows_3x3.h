// A 3x3 kernel's taps over one input channel, for a row of outputs four columns per vector: the inner loop of the
// planar convolution path (util/conv_planar.cc), in assembly because it has to hold nine weights, three row
// pointers and the output pointer in the thirteen general registers with nothing spilled, which gcc 12 does not
// manage from intrinsics (it spilled half the weights and reloaded them every vector). Per vector of four
// outputs: nine widening loads, nine VMLA, one store (one load more to accumulate onto earlier channels) and LE.
#pragma once

#include <stdint.h>

namespace ember {
namespace helium {

// Which sums the row starts from: written (the group's first input channel) or added to (the others).
enum class RowStart { kWrite, kAccumulate };

// The loop after the first tap: the rest of row a, then rows b and c, the store and the loop end.
#define EMBER_SUM_ROW_3X3_REST    \
  "   vmla.s32 q3, q0, %[w1]\n"   \
  "   vmla.s32 q3, q1, %[w2]\n"   \
  "   vldrb.s32 q0, [%[b], #1]\n" \
  "   vldrb.s32 q1, [%[b], #2]\n" \
  "   vldrb.s32 q2, [%[b]], #4\n" \
  "   vmla.s32 q3, q2, %[w3]\n"   \
  "   vmla.s32 q3, q0, %[w4]\n"   \
  "   vmla.s32 q3, q1, %[w5]\n"   \
  "   vldrb.s32 q0, [%[c], #1]\n" \
  "   vldrb.s32 q1, [%[c], #2]\n" \
  "   vldrb.s32 q2, [%[c]], #4\n" \
  "   vmla.s32 q3, q2, %[w6]\n"   \
  "   vmla.s32 q3, q0, %[w7]\n"   \
  "   vmla.s32 q3, q1, %[w8]\n"   \
  "   vstrw.32 q3, [%[s]], #16\n" \
  "   le lr, 1b\n"

#define EMBER_SUM_ROW_3X3_OPERANDS                                                                    \
  : [s] "+r"(sums), [a] "+l"(r0), [b] "+l"(r1), [c] "+l"(r2), [n] "+r"(count)                                 \
  : [w0] "r"(w0), [w1] "r"(w1), [w2] "r"(w2), [w3] "r"(w3), [w4] "r"(w4), [w5] "r"(w5), [w6] "r"(w6),        \
    [w7] "r"(w7), [w8] "r"(w8)                                                                                 \
  : "q0", "q1", "q2", "q3", "memory"

#define EMBER_SUM_ROW_3X3_S2_OPERANDS                                                                 \
  : [s] "+r"(sums), [a] "+l"(r0), [b] "+l"(r1), [c] "+l"(r2), [n] "+r"(count)                                 \
  : [w0] "r"(w0), [w1] "r"(w1), [w2] "r"(w2), [w3] "r"(w3), [w4] "r"(w4), [w5] "r"(w5), [w6] "r"(w6),        \
    [w7] "r"(w7), [w8] "r"(w8), [o0] "w"(offsets0), [o1] "w"(offsets1), [o2] "w"(offsets2)                    \
  : "q0", "q1", "q2", "q3", "memory"

// Unit stride: sums[4v + j] (+)= sum over the 3x3 taps of w[kh*3 + kw] * row_kh[4v + j + kw], rows `cols` apart
// from r0, for v < vectors (at least 1). Reads up to 3 bytes past the last output's taps (plan_conv's slack).
// Not inlined: only in a function of its own are all fourteen registers free for it. "l": the widening loads
// take a base register from r0-r7.
template <RowStart kStart>
__attribute__((noinline)) void sum_row_3x3_unit(int32_t* sums, const int8_t* r0, int32_t cols, const int8_t* w,
                                                int32_t vectors) {
  const int8_t* r1 = r0 + cols;
  const int8_t* r2 = r1 + cols;
  const int32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7], w8 = w[8];
  // The loop count lives in LR, the low-overhead loop's counter: the thirteen other registers are all taken.
  register int32_t count __asm__("lr") = vectors;
  if (kStart == RowStart::kWrite) {
    __asm__ volatile(
        "   dls lr, lr\n"
        "1: vldrb.s32 q0, [%[a], #1]\n"
        "   vldrb.s32 q1, [%[a], #2]\n"
        "   vldrb.s32 q2, [%[a]], #4\n"
        "   vmul.i32 q3, q2, %[w0]\n" EMBER_SUM_ROW_3X3_REST EMBER_SUM_ROW_3X3_OPERANDS);
  } else {
    __asm__ volatile(
        "   dls lr, lr\n"
        "1: vldrb.s32 q0, [%[a], #1]\n"
        "   vldrb.s32 q1, [%[a], #2]\n"
        "   vldrb.s32 q2, [%[a]], #4\n"
        "   vldrw.32 q3, [%[s]]\n"
        "   vmla.s32 q3, q2, %[w0]\n" EMBER_SUM_ROW_3X3_REST EMBER_SUM_ROW_3X3_OPERANDS);
  }
}

// Stride 2 (MobileNet's downsampling layers): the same taps through gathers at even offsets (0, 2, 4, 6 from each
// tap's column), and the row pointers step by eight.
#define EMBER_SUM_ROW_3X3_S2_REST     \
  "   vmla.s32 q3, q0, %[w1]\n"       \
  "   vmla.s32 q3, q1, %[w2]\n"       \
  "   vldrb.s32 q0, [%[b], %q[o0]]\n" \
  "   vldrb.s32 q1, [%[b], %q[o1]]\n" \
  "   vldrb.s32 q2, [%[b], %q[o2]]\n" \
  "   adds %[b], #8\n"                \
  "   vmla.s32 q3, q0, %[w3]\n"       \
  "   vmla.s32 q3, q1, %[w4]\n"       \
  "   vmla.s32 q3, q2, %[w5]\n"       \
  "   vldrb.s32 q0, [%[c], %q[o0]]\n" \
  "   vldrb.s32 q1, [%[c], %q[o1]]\n" \
  "   vldrb.s32 q2, [%[c], %q[o2]]\n" \
  "   adds %[c], #8\n"                \
  "   vmla.s32 q3, q0, %[w6]\n"       \
  "   vmla.s32 q3, q1, %[w7]\n"       \
  "   vmla.s32 q3, q2, %[w8]\n"       \
  "   vstrw.32 q3, [%[s]], #16\n"     \
  "   le lr, 1b\n"

// Stride 2: sums[4v + j] (+)= sum over the taps of w[kh*3 + kw] * row_kh[2 (4v + j) + kw]. Reads up to 7 bytes
// past the last output's taps (plan_conv's slack).
template <RowStart kStart>
__attribute__((noinline)) void sum_row_3x3_stride2(int32_t* sums, const int8_t* r0, int32_t cols, const int8_t* w,
                                                   int32_t vectors) {
  const int8_t* r1 = r0 + cols;
  const int8_t* r2 = r1 + cols;
  const int32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7], w8 = w[8];
  // Gather offsets of a row's three columns: 0, 2, 4, 6 from each.
  const uint32x4_t offsets0 = vidupq_n_u32(0, 2), offsets1 = vidupq_n_u32(1, 2), offsets2 = vidupq_n_u32(2, 2);
  register int32_t count __asm__("lr") = vectors;
  if (kStart == RowStart::kWrite) {
    __asm__ volatile(
        "   dls lr, lr\n"
        "1: vldrb.s32 q0, [%[a], %q[o1]]\n"
        "   vldrb.s32 q1, [%[a], %q[o2]]\n"
        "   vldrb.s32 q2, [%[a], %q[o0]]\n"
        "   adds %[a], #8\n"
        "   vmul.i32 q3, q2, %[w0]\n" EMBER_SUM_ROW_3X3_S2_REST EMBER_SUM_ROW_3X3_S2_OPERANDS);
  } else {
    __asm__ volatile(
        "   dls lr, lr\n"
        "1: vldrb.s32 q0, [%[a], %q[o1]]\n"
        "   vldrb.s32 q1, [%[a], %q[o2]]\n"
        "   vldrb.s32 q2, [%[a], %q[o0]]\n"
        "   adds %[a], #8\n"
        "   vldrw.32 q3, [%[s]]\n"
        "   vmla.s32 q3, q2, %[w0]\n" EMBER_SUM_ROW_3X3_S2_REST EMBER_SUM_ROW_3X3_S2_OPERANDS);
  }
}

#undef EMBER_SUM_ROW_3X3_REST
#undef EMBER_SUM_ROW_3X3_OPERANDS
#undef EMBER_SUM_ROW_3X3_S2_REST
#undef EMBER_SUM_ROW_3X3_S2_OPERANDS

}  // namespace helium
}  // namespace ember
