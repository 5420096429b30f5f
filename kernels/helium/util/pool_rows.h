// The int8 pooling kernels' window taps on MVE, NCHW: sixteen outputs of one output row per vector, each tap of
// their windows one vector whose lane j holds the input under output j's window at that tap. Max pooling takes the
// VMAX of the taps, average pooling sums them; both visit a window's taps in ATen's order (rows, then columns).
//
// How a tap's vector is loaded depends on the column stride and on whether a full vector's reads stay inside the
// plane (the block's lanes past the row's last output read bytes no one stores, which is only allowed inside it):
//   unit stride   one contiguous load per tap;
//   stride 2      VLD2 de-interleaves 32 bytes into the even and odd columns: two neighbouring taps of a window
//                 (dilation 1) per load pair;
//   otherwise     a byte gather at offsets j * stride, predicated to the block's outputs (strides up to 17, the
//                 offsets being bytes), which is also how blocks near the plane's end load.
#pragma once

#include <arm_mve.h>
#include <stdint.h>

namespace ember {
namespace helium {

// A pooling call's geometry in 32 bits (the callers check that planes and windows fit).
struct PoolRows {
  int32_t H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW;
};

// The kernel rows [*lo, *hi) of output row oh that fall inside the input (empty when the window lies in padding).
inline void valid_rows(const PoolRows& p, int32_t oh, int32_t* lo, int32_t* hi) {
  const int32_t h0 = oh * p.SH - p.PH;
  *lo = h0 < 0 ? (-h0 + p.DH - 1) / p.DH : 0;
  *hi = h0 >= p.H ? 0 : (p.H - 1 - h0) / p.DH + 1;
  if (*hi > p.KH) *hi = p.KH;
  if (*lo > *hi) *lo = *hi;
}

// Output columns [*lo, *hi) whose windows lie wholly inside the input's columns.
inline void inside_columns(const PoolRows& p, int32_t* lo, int32_t* hi) {
  *lo = p.PW > 0 ? (p.PW + p.SW - 1) / p.SW : 0;
  const int32_t last = p.W - 1 - (p.KW - 1) * p.DW + p.PW;  // the last window start inside, plus the padding
  *hi = last < 0 ? 0 : last / p.SW + 1;
  if (*hi > p.OW) *hi = p.OW;
  if (*lo > *hi) *lo = *hi;
}

// Whether the vector loads can serve the column stride at all (the gathers' byte offsets reach 15 * stride).
inline bool vector_stride(const PoolRows& p) { return p.SW <= 17; }

enum class TapLoads { kContiguous, kPairs, kGather };

// The loads full vectors use at the call's column stride.
inline TapLoads full_loads(const PoolRows& p) {
  return p.SW == 1 ? TapLoads::kContiguous : p.SW == 2 ? TapLoads::kPairs : TapLoads::kGather;
}

// Whether the full-vector loads of a block starting at input column c, whose windows end at input row last_row, read
// only bytes inside the plane.
inline bool full_loads_fit(const PoolRows& p, int32_t last_row, int32_t c) {
  const int32_t reach = (p.KW - 1) * p.DW + (p.SW == 1 ? 16 : 32);
  return static_cast<int64_t>(last_row) * p.W + c + reach <= static_cast<int64_t>(p.H) * p.W;
}

// The output rows [0, result) whose blocks over columns [lo, hi) may all use full-vector loads (the rest gather):
// the windows' last input row never decreases down the plane, so those rows are a prefix. Rows whose windows lie
// wholly in the padding count as gathering (no block runs for them).
inline int32_t full_load_rows(const PoolRows& p, int32_t lo, int32_t hi) {
  if (p.SW > 2 || lo >= hi) return 0;
  const int32_t last_c = (lo + (hi - lo - 1) / 16 * 16) * p.SW - p.PW;
  int32_t oh = p.OH;
  for (; oh > 0; --oh) {
    int32_t kh_lo, kh_hi;
    valid_rows(p, oh - 1, &kh_lo, &kh_hi);
    const int32_t last_row = (oh - 1) * p.SH - p.PH + (kh_hi - 1) * p.DH;
    if (kh_lo < kh_hi && full_loads_fit(p, last_row, last_c)) break;
  }
  return oh;
}

// VLD2 of 32 bytes at `at`. The address goes through an empty asm: gcc 12 otherwise folds the step to the next
// load into the VLD21 as a register writeback, which the instruction does not have (the assembler refuses it).
inline int8x16x2_t load_pairs(const int8_t* at) {
  asm("" : "+r"(at));
  return vld2q_s8(at);
}

// Calls f(kw, v) for kw = 0 .. KW - 1 in order, lane j of v holding row[kw * DW + j * SW]: all sixteen lanes for
// full loads, lanes below `active`'s count for gathers (the rest zero). The load kind is a run-time choice per
// window row (a branch per row rather than a copy of the callers' blocks per kind, which would cost flash).
template <typename F>
inline void row_taps(const PoolRows& p, TapLoads loads, const int8_t* row, uint8x16_t offsets, mve_pred16_t active,
                     F&& f) {
  switch (loads) {
    case TapLoads::kContiguous:
      for (int32_t kw = 0; kw < p.KW; ++kw) f(kw, vldrbq_s8(row + kw * p.DW));
      break;
    case TapLoads::kPairs:
      if (p.DW == 1) {
        int32_t kw = 0;
        for (; kw + 1 < p.KW; kw += 2) {
          const int8x16x2_t v = load_pairs(row + kw);
          f(kw, v.val[0]);
          f(kw + 1, v.val[1]);
        }
        if (kw < p.KW) f(kw, load_pairs(row + kw).val[0]);
      } else {
        for (int32_t kw = 0; kw < p.KW; ++kw) f(kw, load_pairs(row + kw * p.DW).val[0]);
      }
      break;
    case TapLoads::kGather:
      for (int32_t kw = 0; kw < p.KW; ++kw) f(kw, vldrbq_gather_offset_z_s8(row + kw * p.DW, offsets, active));
      break;
  }
}

}  // namespace helium
}  // namespace ember
