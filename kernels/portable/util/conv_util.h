// convolution.out's argument checks and geometry for kernels other than portable's, so they refuse the same calls
// with the same messages. portable/op_convolution.cc keeps the same checks inline in its kernel: called from
// there (inline or not, geometry by value or not), its direct loops ran 20-30% more instructions (callgrind,
// small CNN: 23.1M as is, 26.6M-32.2M through this function), so the copy is deliberate; change both together.
#pragma once

#include <stdint.h>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace portable {

// A 1-d convolution is a 2-d one with H = KH = 1.
struct ConvGeometry {
  int64_t N, Cin, H, W;     // input
  int64_t Cout, Cg, KH, KW; // weight: Cout x Cg (input channels per group) x KH x KW
  int64_t groups;
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t OH, OW;
};

// The geometry of a convolution from shapes and arguments alone (no tensors): what a kernel's memory function
// (runtime/kernel/kernel_args.h) sizes its scratch from. False, silently, for anything check_convolution refuses
// on shape grounds; check_convolution then names the fault.
bool conv_geometry(ArrayRef<int32_t> input, ArrayRef<int32_t> weight, ArrayRef<int64_t> stride,
                   ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed, int64_t groups,
                   ConvGeometry& g);

// Checks shapes, then dtypes, and sizes `out`. On failure logs, records the error on ctx and returns false.
bool check_convolution(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                       ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed,
                       int64_t groups, Tensor& out, ConvGeometry& g);

}  // namespace portable
}  // namespace ember
