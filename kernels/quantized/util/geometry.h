// The shape checks of the requantizing kernels, shared by every library that implements them (kernels/quantized's
// scalar loops and kernels/helium's MVE ones), so the same call is refused with the same message whichever
// library a build registers. Each returns false after recording the error on `ctx`.
#pragma once

#include <stdint.h>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace quantized {

struct Conv2dGeometry {
  int64_t N, C, H, W;        // input, NCHW
  int64_t OC, Cg, KH, KW;    // weight, OIHW (Cg = input channels per group)
  int64_t OH, OW;            // output plane
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t groups;
};

// ember_quantized::conv2d.out's arguments: shapes, strides and padding, contiguous int8 tensors, a state its
// prepare step filled for this weight. Resizes `out` where it is bounded-dynamic.
bool conv2d_geometry(KernelContext& ctx, const Tensor& input, const Tensor& weight, ArrayRef<int64_t> stride,
                     ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, int64_t groups, Tensor& out,
                     Conv2dGeometry* g);

struct LinearGeometry {
  int64_t rows;  // the product of the input's leading dims
  int64_t IC, OC;
};

// ember_quantized::linear.out's arguments, as conv2d_geometry.
bool linear_geometry(KernelContext& ctx, const Tensor& input, const Tensor& weight, Tensor& out,
                     LinearGeometry* g);

}  // namespace quantized
}  // namespace ember
