// convolution: 1-d and 2-d, grouped (depthwise included), stride, padding, dilation, optional bias. Direct loops
// in NCHW; transposed convolution is not supported yet (refused with a message).
#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/conv_util.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

void convolution_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                     ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                     bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out) {
  (void)output_padding;
  ConvGeometry geo;
  if (!check_convolution(ctx, input, weight, bias, stride, padding, dilation, transposed, groups, out, geo)) return;
  const int64_t N = geo.N, Cin = geo.Cin, H = geo.H, W = geo.W, Cout = geo.Cout, Cg = geo.Cg, KH = geo.KH,
                KW = geo.KW, sh = geo.sh, sw = geo.sw, ph = geo.ph, pw = geo.pw, dh = geo.dh, dw = geo.dw,
                OH = geo.OH, OW = geo.OW;
  EMBER_DISPATCH(ctx, "convolution.out", selected_dtypes::convolution_out_portable, out.scalar_type(), [&](auto tag) {
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

}  // namespace portable
}  // namespace ember
