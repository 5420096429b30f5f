// What the GEMM path of the int8 tiers reads, gathered from the NCHW input: panels, a block of output pixels' taps
// (the im2col matrix without storing it whole). The padding holds the input zero point, which stands for real 0,
// so the correction bias - zero_point * sum(w) holds at every output, as in kernels/quantized/op_conv2d.cc where
// padded taps are skipped. (The depthwise path builds its windows in the tiers' own code, tier_kernels.h.)
//
// A panel holds, per pixel vector j and reduction group q, the vector's pixels' four bytes of that group:
// panel[(j * k_groups + q) * lanes * 4 + pixel * 4 ...], in the tier's element form (Int8Tile: offset by 128 as
// unsigned bytes on the x86 dot tiers, int16 pairs on x86's kWide16, signed bytes on aarch64).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/optimized/int8/conv.h"

namespace ember {
namespace optimized {

// Pixels [p0, p0 + pixels) of one image's conv group into `panel`: xg is the group's first input channel (in place
// and gathered sources) or its first bordered plane (flat source, border_planes); `rows` is scratch for taps
// gathered on the way (plan.rows_bytes).
void gather_panel(const Int8ConvShape& s, const Int8ConvPlan& plan, const int8_t* xg, int32_t zero_point, int32_t p0,
                  int32_t pixels, uint8_t* panel, int8_t* rows);

// The group's Cg input planes bordered with the zero point and split by the stride's phase, for the flat source:
// per channel, stride x stride planes of plan.plane_rows x plan.plane_cols, phase (a, b) holding the bordered plane's
// rows a, a + s, ... and columns b, b + s, ...
void border_planes(const Int8ConvShape& s, const Int8ConvPlan& plan, const int8_t* xg, int32_t zero_point,
                   int8_t* planes);

}  // namespace optimized
}  // namespace ember
