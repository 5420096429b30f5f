// The planar path of the Helium int8 convolution (util/conv_plan.h): depthwise layers and layers with few input
// channels. Per group, its input planes are copied once into planes bordered with the input zero point; then per
// output channel two passes over a run of int32 sums (the whole output plane at unit stride, one output row at
// other strides):
//   sum       four output columns per vector: one widening load (a gather at stride > 1) and one VMLA per tap and
//             input channel; a 3x3 kernel keeps its nine weights in registers and its three input rows in pointers;
//   finish    the channel's correction and requantization (util/requant_lanes.h) on four sums per vector.
// Keeping the passes apart keeps each loop's values in registers: the M55 has eight vector registers and thirteen
// general ones, and one loop holding nine weights, three row pointers and the requantization parameters spills.
#include <arm_mve.h>

#include "kernels/helium/util/bytes.h"
#include "kernels/helium/util/channel_block.h"
#include "kernels/helium/util/conv_call.h"
#include "kernels/helium/util/finish_row.h"
#include "kernels/helium/util/requant_lanes.h"
#include "kernels/helium/util/sum_rows_3x3.h"

namespace ember {
namespace helium {
namespace {

// Input channel `c` into a bordered plane: the whole plane set to the zero point (16 bytes a store), then the
// input's rows copied inside the border. Two short vector loops per row cost more than the one fill.
void border_plane(const ConvCall& k, const ConvPlan& plan, int32_t c, int8_t* plane) {
  const ConvShape& s = k.s;
  const int32_t cols = plan.plane_cols;
  fill_bytes(plane, static_cast<int8_t>(k.q->header.input_zero_point), plan.plane_rows * cols);
  const int8_t* src = k.x + c * s.H * s.W;
  int8_t* row = plane + s.ph * cols + s.pw;
  for (int32_t r = 0; r < s.H; ++r, row += cols, src += s.W) copy_bytes(row, src, s.W);
}

// Four output columns' widened inputs for one tap: contiguous at unit stride, else a gather.
template <bool kUnitStride>
inline int32x4_t load_columns(const int8_t* p, uint32x4_t offsets) {
  if (kUnitStride) return vldrbq_s32(p);
  return vldrbq_gather_offset_s32(p, offsets);
}

struct RowSweep {
  int32_t vectors;   // four-column vectors in the row
  int32_t step;      // input bytes between them (4 * stride)
  uint32x4_t offsets;  // a gather's column offsets (0, stride, 2 stride, 3 stride)
};

// Any kernel size, dilation and stride (the 3x3 kernels at strides 1 and 2 have their own loops in
// util/sum_rows_3x3.h).
template <bool kUnitStride>
void sum_row_any(int32_t* sums, const int8_t* top, int32_t cols, const int8_t* wk, const ConvShape& s,
                 const RowSweep& row, bool first) {
  for (int32_t v = 0; v < row.vectors; ++v, sums += 4, top += row.step) {
    int32x4_t acc = first ? vdupq_n_s32(0) : vldrwq_s32(sums);
    for (int32_t kh = 0; kh < s.KH; ++kh) {
      const int8_t* r = top + kh * s.dh * cols;
      for (int32_t kw = 0; kw < s.KW; ++kw) {
        acc = vmlaq_n_s32(acc, load_columns<kUnitStride>(r + kw * s.dw, row.offsets), wk[kh * s.KW + kw]);
      }
    }
    vstrwq_s32(sums, acc);
  }
}

// sums (+)= one input channel's taps for `row.vectors` vectors of outputs whose first input is at `top`.
template <bool kUnitStride>
void sum_outputs(int32_t* sums, const int8_t* top, int32_t cols, const int8_t* w, const ConvShape& s,
                 const RowSweep& row, bool first) {
  const bool three_by_three = s.KH == 3 && s.KW == 3 && s.dh == 1 && s.dw == 1;
  if (!three_by_three) {
    sum_row_any<kUnitStride>(sums, top, cols, w, s, row, first);
  } else if (kUnitStride) {
    if (first) {
      sum_row_3x3_unit<RowStart::kWrite>(sums, top, cols, w, row.vectors);
    } else {
      sum_row_3x3_unit<RowStart::kAccumulate>(sums, top, cols, w, row.vectors);
    }
  } else if (s.sw == 2) {
    if (first) {
      sum_row_3x3_stride2<RowStart::kWrite>(sums, top, cols, w, row.vectors);
    } else {
      sum_row_3x3_stride2<RowStart::kAccumulate>(sums, top, cols, w, row.vectors);
    }
  } else {
    sum_row_any<kUnitStride>(sums, top, cols, w, s, row, first);
  }
}

// At unit stride, output (oh, ow) reads the bordered planes from oh * cols + ow on, so the whole output plane is
// one run of oh * cols + ow positions: one sum loop per input channel and one finishing pass for the channel,
// whatever the plane's shape (a 25x5 plane would otherwise pay both loops' setup 25 times for 5 outputs each).
// The positions with ow >= OW are computed and dropped when the rows are copied out.
void planar_channel_flat(const ConvCall& k, const ConvPlan& plan, int32_t oc, const int8_t* planes, int32_t* sums,
                         int8_t* staging) {
  const ConvShape& s = k.s;
  const int32_t taps = s.KH * s.KW, cols = plan.plane_cols;
  const int8_t* wk = k.w + oc * s.Cg * taps;
  const RowSweep run{plan.sum_vectors, 4, vidupq_n_u32(0, 1)};
  for (int32_t ci = 0; ci < s.Cg; ++ci) {
    sum_outputs<true>(sums, planes + ci * plan.plane_bytes, cols, wk + ci * taps, s, run, ci == 0);
  }
  const int64_t wide =
      k.q->corrections_fit() ? 0 : wide_correction(wk, s.Cg * taps, k.bias, oc, k.q->header.input_zero_point);
  finish_row(sums, s.OH * cols, *k.q, oc, wide, staging);
  int8_t* out = k.o + oc * s.OH * s.OW;
  for (int32_t oh = 0; oh < s.OH; ++oh) copy_bytes(out + oh * s.OW, staging + oh * cols, s.OW);
}

// Other strides: row by row.
void planar_channel_rows(const ConvCall& k, const ConvPlan& plan, int32_t oc, const int8_t* planes, int32_t* sums) {
  const ConvShape& s = k.s;
  const int32_t taps = s.KH * s.KW, cols = plan.plane_cols;
  const int8_t* wk = k.w + oc * s.Cg * taps;
  const RowSweep row{plan.sum_vectors, 4 * s.sw, vmulq_n_u32(vidupq_n_u32(0, 1), static_cast<uint32_t>(s.sw))};
  const int64_t wide =
      k.q->corrections_fit() ? 0 : wide_correction(wk, s.Cg * taps, k.bias, oc, k.q->header.input_zero_point);
  int8_t* out = k.o + oc * s.OH * s.OW;
  for (int32_t oh = 0; oh < s.OH; ++oh, out += s.OW) {
    const int32_t top = oh * s.sh * cols;
    for (int32_t ci = 0; ci < s.Cg; ++ci) {
      sum_outputs<false>(sums, planes + ci * plan.plane_bytes + top, cols, wk + ci * taps, s, row, ci == 0);
    }
    finish_row(sums, s.OW, *k.q, oc, wide, out);
  }
}

}  // namespace

void run_planar(const ConvCall& k, const ConvPlan& plan) {
  const ConvShape& s = k.s;
  int8_t* planes = reinterpret_cast<int8_t*>(k.scratch);
  int32_t* sums = reinterpret_cast<int32_t*>(k.scratch + static_cast<size_t>(plan.plane_bytes) * s.Cg);
  int8_t* staging = reinterpret_cast<int8_t*>(sums + 4 * plan.sum_vectors);
  const int32_t per_group = s.OC / s.groups;
  for (int32_t g = 0; g < s.groups; ++g) {
    for (int32_t ci = 0; ci < s.Cg; ++ci) border_plane(k, plan, g * s.Cg + ci, planes + ci * plan.plane_bytes);
    for (int32_t oc = g * per_group; oc < (g + 1) * per_group; ++oc) {
      if (plan.flat) {
        planar_channel_flat(k, plan, oc, planes, sums, staging);
      } else {
        planar_channel_rows(k, plan, oc, planes, sums);
      }
    }
  }
}

}  // namespace helium
}  // namespace ember
