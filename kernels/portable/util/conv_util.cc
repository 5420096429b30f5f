#include "kernels/portable/util/conv_util.h"

#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

// This file's short name for EMBER_KERNEL_CHECK_OR_FALSE (runtime/kernel/kernel_context.h).
#define CHECK EMBER_KERNEL_CHECK_OR_FALSE

bool conv_geometry(ArrayRef<int32_t> input, ArrayRef<int32_t> weight, ArrayRef<int64_t> stride,
                   ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed, int64_t groups,
                   ConvGeometry& g) {
  const bool is1d = input.size() == 3;
  if (transposed || (input.size() != 4 && !is1d) || weight.size() != input.size()) return false;
  if (stride.empty() || padding.empty() || dilation.empty()) return false;
  const size_t sd = is1d ? 1 : 2;
  auto at = [sd](ArrayRef<int64_t> v, size_t i) { return v.size() == sd ? v[i] : v[0]; };
  g.N = input[0], g.Cin = input[1], g.H = is1d ? 1 : input[2], g.W = input[is1d ? 2 : 3];
  g.Cout = weight[0], g.Cg = weight[1], g.KH = is1d ? 1 : weight[2], g.KW = weight[is1d ? 2 : 3];
  g.groups = groups;
  g.sh = is1d ? 1 : at(stride, 0), g.sw = at(stride, sd - 1);
  g.ph = is1d ? 0 : at(padding, 0), g.pw = at(padding, sd - 1);
  g.dh = is1d ? 1 : at(dilation, 0), g.dw = at(dilation, sd - 1);
  if (groups <= 0 || g.Cin % groups != 0 || g.Cout % groups != 0 || g.Cg != g.Cin / groups) return false;
  // Beyond int32 (as PyTorch refuses) the output size arithmetic below could overflow int64.
  for (int64_t v : {g.sh, g.sw, g.dh, g.dw}) {
    if (v <= 0 || v > INT32_MAX) return false;
  }
  if (g.ph < 0 || g.pw < 0 || g.ph > INT32_MAX || g.pw > INT32_MAX) return false;
  g.OH = (g.H + 2 * g.ph - g.dh * (g.KH - 1) - 1) / g.sh + 1;
  g.OW = (g.W + 2 * g.pw - g.dw * (g.KW - 1) - 1) / g.sw + 1;
  return g.OH > 0 && g.OW > 0;
}

bool check_convolution(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                       ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed,
                       int64_t groups, Tensor& out, ConvGeometry& geo) {
  CHECK(ctx, !transposed, NotSupported, "convolution.out: transposed: re-export with Ember's exir");
  const bool is1d = input.dim() == 3;
  CHECK(ctx, (input.dim() == 4 || is1d) && weight.dim() == input.dim(), InvalidArgument,
        "convolution.out: input must be 3-d or 4-d with a weight of the same rank (got %d-d and %d-d)",
        static_cast<int>(input.dim()), static_cast<int>(weight.dim()));
  const size_t sd = is1d ? 1 : 2;
  CHECK(ctx, stride.size() >= 1 && padding.size() >= 1 && dilation.size() >= 1, InvalidArgument,
        "convolution.out: stride, padding and dilation must not be empty");
  const int64_t N = input.size(0), Cin = input.size(1), H = is1d ? 1 : input.size(2), W = input.size(is1d ? 2 : 3);
  const int64_t Cout = weight.size(0), Cg = weight.size(1), KH = is1d ? 1 : weight.size(2),
                KW = weight.size(is1d ? 2 : 3);
  auto at = [sd](ArrayRef<int64_t> v, size_t i) { return v.size() == sd ? v[i] : v[0]; };
  const int64_t sh = is1d ? 1 : at(stride, 0), sw = at(stride, sd - 1);
  const int64_t ph = is1d ? 0 : at(padding, 0), pw = at(padding, sd - 1);
  const int64_t dh = is1d ? 1 : at(dilation, 0), dw = at(dilation, sd - 1);
  CHECK(ctx, groups > 0 && Cin % groups == 0 && Cout % groups == 0 && Cg == Cin / groups, InvalidArgument,
        "convolution.out: %lld input channels, %lld groups and weight of %lld channels "
        "per group do not agree",
        static_cast<long long>(Cin), static_cast<long long>(groups), static_cast<long long>(Cg));
  // Beyond int32 (as PyTorch refuses) the output size arithmetic below could overflow int64.
  CHECK(ctx,
        sh > 0 && sw > 0 && dh > 0 && dw > 0 && ph >= 0 && pw >= 0 && sh <= INT32_MAX && sw <= INT32_MAX &&
            dh <= INT32_MAX && dw <= INT32_MAX && ph <= INT32_MAX && pw <= INT32_MAX,
        InvalidArgument, "convolution.out: stride and dilation must be positive, padding non-negative, all below 2^31");
  const int64_t OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1;
  const int64_t OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
  CHECK(ctx, OH > 0 && OW > 0, InvalidArgument, "convolution.out: the kernel is larger than the input");
  const int64_t shape4[4] = {N, Cout, OH, OW};
  const int64_t shape3[3] = {N, Cout, OW};
  CHECK(ctx, is1d ? fit_output(out, shape3, 3) : fit_output(out, shape4, 4), InvalidArgument,
        "convolution.out: out must be [%lld, %lld, %lld, %lld]", static_cast<long long>(N),
        static_cast<long long>(Cout), static_cast<long long>(OH), static_cast<long long>(OW));
  CHECK(ctx, bias == nullptr || (bias->dim() == 1 && bias->size(0) == Cout), InvalidArgument,
        "convolution.out: bias must have %lld elements", static_cast<long long>(Cout));
  CHECK(ctx, input.is_contiguous() && weight.is_contiguous() && out.is_contiguous(), NotSupported,
        "convolution.out: only contiguous (NCHW) tensors are supported");
  CHECK(ctx,
        input.scalar_type() == out.scalar_type() && weight.scalar_type() == out.scalar_type() &&
            (bias == nullptr || bias->scalar_type() == out.scalar_type()),
        InvalidArgument, "convolution.out: input, weight, bias and out must share a dtype");
  geo = ConvGeometry{N, Cin, H, W, Cout, Cg, KH, KW, groups, sh, sw, ph, pw, dh, dw, OH, OW};
  return true;
}

}  // namespace portable
}  // namespace ember
