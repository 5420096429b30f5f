// convolution: 1-d and 2-d, grouped (depthwise included), stride, padding, dilation, optional bias. Direct loops
// in NCHW; transposed convolution is not supported yet (refused with a message). Also Ember's own
// convolution_clamp (convolution + relu/hardtanh/clamp, from exir's opt-in fuse_activations), Float only.
#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

void convolution_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                     ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                     bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out) {
  (void)output_padding;
  EMBER_KERNEL_CHECK(ctx, !transposed, NotSupported, "convolution.out: transposed convolution is not supported");
  const bool is1d = input.dim() == 3;
  EMBER_KERNEL_CHECK(ctx, (input.dim() == 4 || is1d) && weight.dim() == input.dim(), InvalidArgument,
                     "convolution.out: input must be 3-d or 4-d with a weight of the same rank (got %d-d and %d-d)",
                     static_cast<int>(input.dim()), static_cast<int>(weight.dim()));
  const size_t sd = is1d ? 1 : 2;
  EMBER_KERNEL_CHECK(ctx, stride.size() >= 1 && padding.size() >= 1 && dilation.size() >= 1, InvalidArgument,
                     "convolution.out: stride, padding and dilation must not be empty");
  const int64_t N = input.size(0), Cin = input.size(1), H = is1d ? 1 : input.size(2), W = input.size(is1d ? 2 : 3);
  const int64_t Cout = weight.size(0), Cg = weight.size(1), KH = is1d ? 1 : weight.size(2),
                KW = weight.size(is1d ? 2 : 3);
  auto at = [sd](ArrayRef<int64_t> v, size_t i) { return v.size() == sd ? v[i] : v[0]; };
  const int64_t sh = is1d ? 1 : at(stride, 0), sw = at(stride, sd - 1);
  const int64_t ph = is1d ? 0 : at(padding, 0), pw = at(padding, sd - 1);
  const int64_t dh = is1d ? 1 : at(dilation, 0), dw = at(dilation, sd - 1);
  EMBER_KERNEL_CHECK(ctx, groups > 0 && Cin % groups == 0 && Cout % groups == 0 && Cg == Cin / groups,
                     InvalidArgument, "convolution.out: %lld input channels, %lld groups and weight of %lld channels "
                     "per group do not agree", static_cast<long long>(Cin), static_cast<long long>(groups),
                     static_cast<long long>(Cg));
  // Beyond int32 (as PyTorch refuses) the output size arithmetic below could overflow int64.
  EMBER_KERNEL_CHECK(ctx, sh > 0 && sw > 0 && dh > 0 && dw > 0 && ph >= 0 && pw >= 0 && sh <= INT32_MAX &&
                              sw <= INT32_MAX && dh <= INT32_MAX && dw <= INT32_MAX && ph <= INT32_MAX &&
                              pw <= INT32_MAX, InvalidArgument,
                     "convolution.out: stride and dilation must be positive, padding non-negative, all below "
                     "2^31");
  const int64_t OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1;
  const int64_t OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
  EMBER_KERNEL_CHECK(ctx, OH > 0 && OW > 0, InvalidArgument, "convolution.out: the kernel is larger than the input");
  const int64_t shape4[4] = {N, Cout, OH, OW};
  const int64_t shape3[3] = {N, Cout, OW};
  EMBER_KERNEL_CHECK(ctx, is1d ? fit_output(out, shape3, 3) : fit_output(out, shape4, 4), InvalidArgument,
                     "convolution.out: out must be [%lld, %lld, %lld, %lld]", static_cast<long long>(N),
                     static_cast<long long>(Cout), static_cast<long long>(OH), static_cast<long long>(OW));
  EMBER_KERNEL_CHECK(ctx, bias == nullptr || (bias->dim() == 1 && bias->size(0) == Cout), InvalidArgument,
                     "convolution.out: bias must have %lld elements", static_cast<long long>(Cout));
  EMBER_KERNEL_CHECK(ctx, input.is_contiguous() && weight.is_contiguous() && out.is_contiguous(), NotSupported,
                     "convolution.out: only contiguous (NCHW) tensors are supported");
  EMBER_KERNEL_CHECK(ctx, input.scalar_type() == out.scalar_type() && weight.scalar_type() == out.scalar_type() &&
                              (bias == nullptr || bias->scalar_type() == out.scalar_type()),
                     InvalidArgument, "convolution.out: input, weight, bias and out must share a dtype");
  // Float is also compiled in when only the fused convolution_clamp (below) selected it: it runs these loops.
  constexpr uint32_t kMask =
      selected_dtypes::convolution_out_portable | selected_dtypes::convolution_clamp_out_portable;
  EMBER_DISPATCH(ctx, "convolution.out", kMask, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* x = input.const_data_ptr<T>();
    const T* w = weight.const_data_ptr<T>();
    const T* b = bias ? bias->const_data_ptr<T>() : nullptr;
    T* o = out.mutable_data_ptr<T>();
    const int64_t cout_g = Cout / groups;
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t co = 0; co < Cout; ++co) {
        const int64_t g = co / cout_g;
        const T* wk = w + co * Cg * KH * KW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          for (int64_t ow = 0; ow < OW; ++ow) {
            C acc = b ? static_cast<C>(b[co]) : C(0);
            for (int64_t ci = 0; ci < Cg; ++ci) {
              const T* xc = x + ((n * Cin) + g * Cg + ci) * H * W;
              const T* wc = wk + ci * KH * KW;
              for (int64_t kh = 0; kh < KH; ++kh) {
                const int64_t ih = oh * sh - ph + kh * dh;
                if (ih < 0 || ih >= H) continue;
                for (int64_t kw = 0; kw < KW; ++kw) {
                  const int64_t iw = ow * sw - pw + kw * dw;
                  if (iw < 0 || iw >= W) continue;
                  acc += static_cast<C>(xc[ih * W + iw]) * static_cast<C>(wc[kh * KW + kw]);
                }
              }
            }
            o[((n * Cout + co) * OH + oh) * OW + ow] = static_cast<T>(acc);
          }
        }
      }
    }
  });
}

// Ember's fused convolution + relu/hardtanh/clamp (exir's opt-in fuse_activations): the convolution above, then
// one clamp over its output in place. kernels/optimized clamps each row while it is still in cache instead.
void convolution_clamp_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                           ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                           bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, double min, double max,
                           Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == ScalarType::Float, InvalidArgument,
                     "convolution_clamp.out: out is %s, but the fused kernel computes Float only; export with "
                     "ExecutorchBackendConfig(fuse_activations=False) to run the convolution and its activation as "
                     "separate kernels", scalar_type_name(out.scalar_type()));
  // exir never fuses a NaN bound (torch.clamp would make every element NaN, not compare-and-select).
  EMBER_KERNEL_CHECK(ctx, min == min && max == max, InvalidArgument,
                     "convolution_clamp.out: bounds [%g, %g] include NaN", min, max);
  constexpr bool kFloat =
      (selected_dtypes::convolution_clamp_out_portable >> static_cast<int>(ScalarType::Float)) & 1u;
  EMBER_KERNEL_CHECK(ctx, kFloat, InvalidArgument,
                     "convolution_clamp.out: this build's selection has no Float for it; select the program's "
                     "operators again (python -m selective_build.select)");
  convolution_out(ctx, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, out);
  if (ctx.failure() != Error::Ok) return;
  const float lo = static_cast<float>(min), hi = static_cast<float>(max);
  float* o = out.mutable_data_ptr<float>();
  const int64_t n = out.numel();
  // NaN stays NaN, as in ATen: both comparisons are false for it.
  for (int64_t i = 0; i < n; ++i) {
    const float v = o[i] < lo ? lo : o[i];
    o[i] = v > hi ? hi : v;
  }
}

}  // namespace portable
}  // namespace ember
