// int8 dot products on MVE: VMLADAVA multiplies 16 int8 pairs and adds all sixteen products to a 32-bit scalar
// in one instruction. The sums are exact (the callers' bound, kMaxAccumulatedProducts, keeps them in int32), so
// their order does not matter and any blocking gives the scalar kernels' bits.
//
// The loop is written in assembly because what it needs is out of the intrinsics' reach in gcc 12: loads that
// advance their pointer (VLDRB with writeback) and a tail-predicated low-overhead loop (DLSTP/LETP), which runs
// the k % 16 remainder as a last, predicated pass instead of a second copy of the body. Each 16 inputs then cost
// one load, one load and one VMLADAVA per weight row, and LETP: 10 instructions for 64 products.
#pragma once

#include <arm_mve.h>
#include <stdint.h>

namespace ember {
namespace helium {

struct Sums4 {
  int32_t s0, s1, s2, s3;
};

// sum_k x[k] * w_r[k] for four weight rows at once, each 16 inputs loaded once for the four rows.
inline Sums4 dot4(const int8_t* x, const int8_t* w0, const int8_t* w1, const int8_t* w2, const int8_t* w3, int32_t k) {
  int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  if (k <= 0) return Sums4{0, 0, 0, 0};
  // "Te": an even-numbered core register, which VMLADAVA's accumulator must be.
  __asm__ volatile(
      "   dlstp.8 lr, %[k]\n"
      "1: vldrb.8 q0, [%[x]], #16\n"
      "   vldrb.8 q1, [%[w0]], #16\n"
      "   vmladava.s8 %[s0], q0, q1\n"
      "   vldrb.8 q2, [%[w1]], #16\n"
      "   vmladava.s8 %[s1], q0, q2\n"
      "   vldrb.8 q1, [%[w2]], #16\n"
      "   vmladava.s8 %[s2], q0, q1\n"
      "   vldrb.8 q2, [%[w3]], #16\n"
      "   vmladava.s8 %[s3], q0, q2\n"
      "   letp lr, 1b\n"
      : [s0] "+Te"(s0), [s1] "+Te"(s1), [s2] "+Te"(s2), [s3] "+Te"(s3), [x] "+r"(x), [w0] "+r"(w0), [w1] "+r"(w1),
        [w2] "+r"(w2), [w3] "+r"(w3)
      : [k] "r"(k)
      : "q0", "q1", "q2", "lr", "memory");
  return Sums4{s0, s1, s2, s3};
}

inline int32x4_t as_lanes(const Sums4& s) {
  int32x4_t v = vdupq_n_s32(s.s0);
  v = vsetq_lane_s32(s.s1, v, 1);
  v = vsetq_lane_s32(s.s2, v, 2);
  return vsetq_lane_s32(s.s3, v, 3);
}

}  // namespace helium
}  // namespace ember
