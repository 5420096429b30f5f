// The int8 convolution and linear layers of kernels/optimized (op_quantized_conv2d.cc, op_quantized_linear.cc):
// their plan, decided from shapes and the CPU's tier (level.h) so that the memory function and the kernel agree on
// the scratch, the state their prepare step fills, and the per-tier kernels that do the arithmetic.
//
// Two paths compute a convolution:
//   gemm       every shape: the output pixels' taps gathered into a panel (im2col, padding filled with the input
//              zero point, which stands for real 0), the reduction dim packed in groups of the tier's dot product,
//              then register tiles of output channels x pixels summed over the whole reduction in int32. Where the
//              taps can be read in place, the panel is packed straight from them: a 1x1 layer at unit stride reads
//              the input planes; any other layer with the same stride s both ways reads the group's planes
//              bordered with the zero point and split by the stride's phase (s x s planes of every s-th row and
//              column; one plane at unit stride), over "flat" pixels: every column of a phase plane's width, so
//              each tap is one run of one phase plane (the columns past the output's are computed, kept in
//              staging and not copied out); other strides gather each tap's row first;
//   depthwise  one input channel per group (a channel multiplier allowed) at strides and dilations whose taps a
//              vector shuffle can gather: each input plane is copied bordered with the zero point, then each of its
//              rows becomes a row of windows
//              (the 32-bit lane of output column c holds the taps a dot product takes at c, tile.group of them),
//              once per input channel; every output row then sums whole vectors of windows, one dot product per
//              group of taps and kernel row, with no shuffle left in its loop.
// Both end in the same requantization as kernels/quantized (finish.h), so every path gives the scalar kernel's bits.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/optimized/int8/level.h"
#include "kernels/quantized/util/channel_params.h"
#include "runtime/core/error.h"
#include "runtime/kernel/kernel_args.h"

namespace ember {
namespace optimized {

struct Int8ConvShape {
  int32_t C, H, W;  // input channels and plane
  int32_t OC, Cg, KH, KW;
  int32_t OH, OW;
  int32_t sh, sw, ph, pw, dh, dw;
  int32_t groups;
};

enum class Int8ConvPath : int32_t { kScalar = 0, kGemm = 1, kDepthwise = 2 };

// Where a GEMM panel's taps come from (conv.h, the gemm path).
enum class GemmSource : int32_t { kInPlace, kFlat, kGathered };

struct Int8ConvPlan {
  Int8ConvPath path;
  Int8Level level;
  Int8Tile tile;
  // gemm
  int32_t taps;           // Cg * KH * KW
  int32_t k_groups;       // taps in groups of tile.group, rounded up
  int32_t blocks;         // weight blocks of tile.rows output channels per conv group
  int32_t panel_vectors;  // pixel vectors gathered per panel
  GemmSource source;
  int32_t pixels;         // pixels the GEMM computes: the output plane's, or the flat ones (OH - 1 rows of the
                          // bordered width and one of the output's)
  size_t panel_bytes, rows_bytes, staging_bytes;  // scratch: the panel, rows of gathered taps, the flat outputs
  // depthwise
  int32_t kw_groups;      // a kernel row's taps in groups of tile.group, rounded up
  int32_t group_step;     // windows between one group of taps and the next (tile.group * dw / sw)
  int32_t window_rows;    // input rows (bordered) the outputs read
  int32_t window_pitch;   // windows per row: the output row in whole vectors and the last group's reach
  // depthwise, and the gemm path's flat pixels: bordered planes
  int32_t plane_rows, plane_cols;  // rows and elements per row of a bordered input plane (gemm: of a phase plane)
  size_t plane_bytes;     // depthwise: one plane (window_rows rows) and the slack its last windows read past it;
                          // gemm: the group's phase planes
  size_t scratch;
  size_t weight_bytes;  // packed weights kept in the state
};

// The path a call takes on `level`; shapes the checks refuse are never planned (callers check first).
Int8ConvPlan plan_int8_conv(const Int8ConvShape& s, Int8Level level);

// The state of the int8 convolution: kernels/quantized's (header and ChannelParams, so a call handed on to the
// scalar kernel finds its own state), then this header, the requantization of each output channel in the form the
// vector code takes it, and the weights packed for the tier's tiles.
struct Int8ConvHeader {
  int32_t level;  // Int8Level the weights were packed for; execute runs that tier
  int32_t path;   // Int8ConvPath
  int32_t weights_offset;  // bytes from the state's start to the packed weights
  // What the packing and the path were decided from: a call that differs (a direct caller's) goes to the scalar
  // kernel rather than read the weights in another layout.
  int32_t groups, Cg, KH, KW, sw_dw;  // sw_dw: sw * 65536 + dw
};

// One output channel's requantization: the int32 sum of the tier's products plus `correction` is the scalar kernel's
// accumulator (bias plus the products of x - zero_point), then RequantSteps. `exact` when that sum cannot overflow
// int32 (|correction| plus the products' bound fits); otherwise the channel is finished in 64 bits (finish.h).
struct RowFinish {
  int32_t correction;
  int32_t multiplier;
  int16_t left, right;
  int32_t exact;
};
static_assert(sizeof(Int8ConvHeader) == 32 && sizeof(RowFinish) == 16, "state is planned in 16-byte units");

inline const Int8ConvHeader* int8_conv_header(const quantized::RequantHeader* q) {
  return reinterpret_cast<const Int8ConvHeader*>(quantized::channel_params(q) + q->channels);
}
inline const RowFinish* row_finish(const quantized::RequantHeader* q) {
  return reinterpret_cast<const RowFinish*>(int8_conv_header(q) + 1);
}

inline bool int8_conv_matches(const Int8ConvHeader& h, int64_t groups, int64_t Cg, int64_t KH, int64_t KW, int64_t sw,
                              int64_t dw) {
  return h.groups == groups && h.Cg == Cg && h.KH == KH && h.KW == KW && sw < 65536 && dw < 65536 &&
         h.sw_dw == sw * 65536 + dw;
}

// Whether a plane's bordered and output sizes leave the plan's int32 arithmetic room (larger ones go to the scalar
// kernel, which works in int64).
inline bool int8_conv_plannable(int64_t H, int64_t W, int64_t ph, int64_t pw, int64_t OH, int64_t OW) {
  return OH > 0 && OW > 0 && OH * OW <= INT32_MAX / 4 && (H + 2 * ph) * (W + 2 * pw) <= INT32_MAX / 4;
}

// The shape a conv2d instruction states (ember_quantized::conv2d.out's arguments), for the memory function and the
// prepare step; false when the checks would refuse it.
bool int8_conv_shape_from_args(const KernelArgs& args, Int8ConvShape* s);

KernelMemory int8_conv_memory(const KernelArgs& args, const quantized::RequantArgs& at);
Error int8_conv_prepare(const KernelArgs& args, const quantized::RequantArgs& at, void* state);

// Per-channel requantization for `count` channels from their ChannelParams, for activations carrying `offset`.
void derive_row_finish(const quantized::RequantHeader& q, const quantized::ChannelParams* params, const int8_t* weights,
                       int64_t taps, int32_t offset, int64_t count, RowFinish* out);

}  // namespace optimized
}  // namespace ember
