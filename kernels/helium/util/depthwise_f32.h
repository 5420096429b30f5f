// Depthwise convolution on MVE, from copies of the input planes with a border of zeros (so no tap needs a bounds
// check), in two forms:
//   channel lanes  3x3 taps at unit dilation and stride 1 or 2 (MobileNet's): four channels' planes interleaved,
//                  so one vector holds the four channels at one position; a tile of up to six outputs of one row
//                  takes per tap one load of the four channels' weights and, per output, one load and one VFMA.
//                  Small planes (a 3x3 output is one short row per channel) cost what large ones do per output.
//   rows           any other kernel, stride or dilation: one channel's plane, each output row swept four columns
//                  per vector, one gather and one VFMA by the tap's weight per tap.
#pragma once

#include <arm_mve.h>
#include <stdint.h>

#include "kernels/helium/util/channel_gemm_f32.h"
#include "kernels/helium/util/elementwise_f32.h"

namespace ember {
namespace helium {

// ---- rows -----------------------------------------------------------------------------------------------------

// A bordered plane: `rows` x `cols` floats, the input at (top, left), zeros around it.
struct BorderedPlane {
  float* data;
  int32_t rows, cols, top, left;
};

// The sweep's last vector in a row reads up to three column strides past the row's last output, and the plane's
// last row has nothing after it: this many floats of slack follow the plane in the scratch.
inline int32_t depthwise_slack_floats(int32_t column_stride) { return 3 * column_stride + 4; }

// Zeros the whole plane and its slack (the border stays zero while each channel's interior is copied in).
inline void zero_plane(const BorderedPlane& p, int32_t slack) { fill_floats(p.data, p.rows * p.cols + slack, 0.0f); }

// An H x W plane into the plane's interior.
inline void fill_plane(const BorderedPlane& p, const float* x, int32_t H, int32_t W) {
  float* row = p.data + p.top * p.cols + p.left;
  for (int32_t r = 0; r < H; ++r, row += p.cols, x += W) copy_floats(row, x, W);
}

struct DepthwiseRows {
  int32_t OH, OW;
  int32_t KH, KW, sh, sw, dh, dw;
  float lo, hi;
};

// One channel's output rows from its bordered plane: four columns per vector (a gather at the column stride), the
// taps in loops, so any kernel size, stride and dilation.
template <bool Clamp>
void depthwise_rows(const BorderedPlane& p, const DepthwiseRows& d, const float* w, float bias, float* out) {
  const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(d.sw));
  for (int32_t oh = 0; oh < d.OH; ++oh, out += d.OW) {
    const float* top = p.data + oh * d.sh * p.cols;
    for (int32_t ow = 0; ow < d.OW; ow += 4) {
      float32x4_t acc = vdupq_n_f32(bias);
      const float* tap_row = top + ow * d.sw;
      for (int32_t kh = 0; kh < d.KH; ++kh, tap_row += d.dh * p.cols) {
        for (int32_t kw = 0; kw < d.KW; ++kw) {
          acc = vfmaq_n_f32(acc, vldrwq_gather_shifted_offset_f32(tap_row + kw * d.dw, offsets), w[kh * d.KW + kw]);
        }
      }
      if (Clamp) acc = clamp_lanes(acc, d.lo, d.hi);
      vstrwq_p_f32(out + ow, acc, vctp32q(static_cast<uint32_t>(d.OW - ow < 4 ? d.OW - ow : 4)));
    }
  }
}

// ---- channel lanes --------------------------------------------------------------------------------------------

// Four channels' bordered planes interleaved: position (r, c) of lane i at data[(r * cols + c) * 4 + i].
struct LanePlanes {
  float* data;
  int32_t rows, cols, top, left;
};

// The interleaved copy stores each row's last four columns whole (zeros past the row's end, which land in the
// border, or in the next row before it is written): this many floats of slack follow the last row.
constexpr int32_t kLaneSlackFloats = 16;

inline int64_t lane_planes_floats(int64_t rows, int64_t cols) { return rows * cols * 4 + kLaneSlackFloats; }

inline void zero_lanes(const LanePlanes& p) { fill_floats(p.data, p.rows * p.cols * 4 + kLaneSlackFloats, 0.0f); }

// `quads` times, four columns of four rows (s0..s3, which step on) into d, interleaved by VST4 (d steps on).
inline void interleave_columns(float* d, const float* s0, const float* s1, const float* s2, const float* s3,
                               int32_t quads) {
  if (quads <= 0) return;
  __asm__ volatile(
      "   wls lr, %[n], 2f\n"
      "1: vldrw.u32 q0, [%[s0]], #16\n"
      "   vldrw.u32 q1, [%[s1]], #16\n"
      "   vldrw.u32 q2, [%[s2]], #16\n"
      "   vldrw.u32 q3, [%[s3]], #16\n"
      "   vst40.32 {q0, q1, q2, q3}, [%[d]]\n"
      "   vst41.32 {q0, q1, q2, q3}, [%[d]]\n"
      "   vst42.32 {q0, q1, q2, q3}, [%[d]]\n"
      "   vst43.32 {q0, q1, q2, q3}, [%[d]]!\n"
      "   le lr, 1b\n"
      "2:\n"
      : [d] "+r"(d), [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3)
      : [n] "r"(quads)
      : "q0", "q1", "q2", "q3", "lr", "memory");
}

// Four H x W planes (lane i's at src[i]) into the interior, interleaved four columns at a time; a row's last
// partial four are loaded with zeros past its end, which the border (or the next row, written after) takes.
inline void fill_lanes(const LanePlanes& p, const float* const src[4], int32_t H, int32_t W) {
  const int32_t quads = W / 4, rest = W - quads * 4;
  const mve_pred16_t m = vctp32q(static_cast<uint32_t>(rest));
  for (int32_t r = 0; r < H; ++r) {
    float* d = p.data + ((p.top + r) * p.cols + p.left) * 4;
    const int32_t at = r * W;
    interleave_columns(d, src[0] + at, src[1] + at, src[2] + at, src[3] + at, quads);
    if (rest == 0) continue;
    const int32_t tail = at + quads * 4;
    const float32x4x4_t v = {{vldrwq_z_f32(src[0] + tail, m), vldrwq_z_f32(src[1] + tail, m),
                              vldrwq_z_f32(src[2] + tail, m), vldrwq_z_f32(src[3] + tail, m)}};
    vst4q_f32(d + quads * 16, v);
  }
}

// What a run of lane tiles reads besides its operands (the assembly's layout, offsets in the comments).
struct alignas(16) LaneState {
  float32x4_t bias;        //  0: the four lanes' biases, which seed the sums
  uint32x4_t out_offsets;  // 16: byte offsets of the four lanes' output planes
  float lo, hi;            // 32, 36: the clamp (Clamp only)
  uint32_t saved;          // 40: the caller's predicate register while the tiles clamp (Clamp only)
};

// Tap (kh, kw) for the tile's P outputs: the four lanes' weights into q6, then per output j its input (row
// pointer `rr`, column j * S + kw) into q7 and one VFMA into qj.
#define EMBER_HELIUM_LANE_MAC(rr, kw, j)             \
  ".if %c[P] > " #j                                  \
  "\n"                                               \
  "   vldrw.u32 q7, [" rr ", #16*(%c[S]*" #j "+" #kw \
  ")]\n"                                             \
  "   vfma.f32 q" #j                                 \
  ", q6, q7\n"                                       \
  ".endif\n"
#define EMBER_HELIUM_LANE_TAP(rr, kh, kw)                                                                \
  "   vldrw.u32 q6, [%[w], #16*(3*" #kh "+" #kw ")]\n" EMBER_HELIUM_LANE_MAC(rr, kw, 0)                  \
      EMBER_HELIUM_LANE_MAC(rr, kw, 1) EMBER_HELIUM_LANE_MAC(rr, kw, 2) EMBER_HELIUM_LANE_MAC(rr, kw, 3) \
          EMBER_HELIUM_LANE_MAC(rr, kw, 4) EMBER_HELIUM_LANE_MAC(rr, kw, 5)
#define EMBER_HELIUM_LANE_ROW(rr, kh) \
  EMBER_HELIUM_LANE_TAP(rr, kh, 0) EMBER_HELIUM_LANE_TAP(rr, kh, 1) EMBER_HELIUM_LANE_TAP(rr, kh, 2)
// Output j's four lanes with one scatter. A group of fewer than four channels repeats its last channel in the
// spare lanes (plane, weights, bias and output plane), which store that channel's values again where they are.
#define EMBER_HELIUM_LANE_STORE(j) ".if %c[P] > " #j "\n   vstrw.32 q" #j ", [q6, #4*" #j "]\n.endif\n"

// `tiles` tiles of P outputs of one output row, 3x3 taps at column stride S: x is the first tile's top-left
// input position in the interleaved planes (rows row_bytes apart), w the taps' four-lane weights (9 x 4 floats),
// out the first output of lane 0 (the lanes' planes at st.out_offsets from it).
template <int S, int P, bool Clamp>
__attribute__((always_inline)) inline void lane_tiles(LaneState& st, const float* w, const float* x, int32_t row_bytes,
                                                      float* out, int32_t tiles) {
  static_assert(P >= 1 && P <= 6 && (S == 1 || S == 2), "tiles of one to six outputs at stride 1 or 2");
  if (tiles <= 0) return;
  __asm__ volatile(
      ".if %c[clamp]\n   vmrs lr, p0\n   str lr, [%[st], #40]\n.endif\n"
      "0: vldrw.u32 q0, [%[st]]\n"
      ".if %c[P] >= 2\n   vmov q1, q0\n.endif\n"
      ".if %c[P] >= 3\n   vmov q2, q0\n.endif\n"
      ".if %c[P] >= 4\n   vmov q3, q0\n.endif\n"
      ".if %c[P] >= 5\n   vmov q4, q0\n.endif\n"
      ".if %c[P] >= 6\n   vmov q5, q0\n.endif\n"
      "   add r4, %[x], %[rs]\n"
      "   add r5, r4, %[rs]\n"
      EMBER_HELIUM_LANE_ROW("%[x]", 0) EMBER_HELIUM_LANE_ROW("r4", 1) EMBER_HELIUM_LANE_ROW("r5", 2)
      ".if %c[clamp]\n" EMBER_HELIUM_CLAMP(32, 36) ".endif\n"
      "   vldrw.u32 q6, [%[st], #16]\n"
      "   vadd.i32 q6, q6, %[out]\n"
      EMBER_HELIUM_LANE_STORE(0) EMBER_HELIUM_LANE_STORE(1) EMBER_HELIUM_LANE_STORE(2)
      EMBER_HELIUM_LANE_STORE(3) EMBER_HELIUM_LANE_STORE(4) EMBER_HELIUM_LANE_STORE(5)
      "   add %[out], %[out], #4*%c[P]\n"
      "   add %[x], %[x], #16*%c[S]*%c[P]\n"
      "   subs %[tiles], %[tiles], #1\n"
      "   bne 0b\n"
      ".if %c[clamp]\n   ldr lr, [%[st], #40]\n   vmsr p0, lr\n.endif\n"
      : [x] "+r"(x), [out] "+r"(out), [tiles] "+r"(tiles)
      : [st] "r"(&st), [w] "r"(w), [rs] "r"(row_bytes), [S] "i"(S), [P] "i"(P), [clamp] "i"(Clamp ? 1 : 0)
      : "r4", "r5", "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "cc", "memory");
}

#undef EMBER_HELIUM_LANE_MAC
#undef EMBER_HELIUM_LANE_TAP
#undef EMBER_HELIUM_LANE_ROW
#undef EMBER_HELIUM_LANE_STORE

// Every output of four lanes (out: lane 0's output plane), 3x3 taps, column stride S, row stride d.sh.
template <int S, bool Clamp>
void depthwise3x3_lanes(const LanePlanes& p, const DepthwiseRows& d, LaneState& st, const float* w, float* out) {
  const int32_t row_bytes = p.cols * 16, whole = d.OW / 6, tail = d.OW - whole * 6;
  for (int32_t oh = 0; oh < d.OH; ++oh, out += d.OW) {
    const float* x = p.data + oh * d.sh * p.cols * 4;
    lane_tiles<S, 6, Clamp>(st, w, x, row_bytes, out, whole);
    // The rest of the row in tiles of three and one: fewer tile shapes, less flash.
    x += whole * 6 * S * 4;
    float* o = out + whole * 6;
    const int32_t threes = tail / 3;
    lane_tiles<S, 3, Clamp>(st, w, x, row_bytes, o, threes);
    lane_tiles<S, 1, Clamp>(st, w, x + threes * 3 * S * 4, row_bytes, o + threes * 3, tail - threes * 3);
  }
}

template <bool Clamp>
void depthwise3x3_lanes_any(const LanePlanes& p, const DepthwiseRows& d, LaneState& st, const float* w, float* out) {
  if (d.sw == 1) return depthwise3x3_lanes<1, Clamp>(p, d, st, w, out);
  depthwise3x3_lanes<2, Clamp>(p, d, st, w, out);
}

}  // namespace helium
}  // namespace ember
