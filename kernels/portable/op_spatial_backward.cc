// Backward passes of the spatial ops: convolution_backward (1-d and 2-d, grouped, strided, padded, dilated; not
// transposed) and max_pool2d_with_indices_backward. Each output element is gathered and written once, so Half and
// BFloat16 accumulate in float and round once.
#include <string.h>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/conv_util.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/portable/util/spatial_util.h"

namespace ember {
namespace portable {
namespace {

// convolution's geometry from the input and weight (no output to fit): false with a message on ctx otherwise.
bool backward_geometry(KernelContext& ctx, const Tensor& input, const Tensor& weight, ArrayRef<int64_t> stride,
                       ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, int64_t groups, ConvGeometry* g) {
  const char* name = "convolution_backward.out";
  const bool is1d = input.dim() == 3;
  const size_t sd = is1d ? 1 : 2;
  bool ok = (input.dim() == 4 || is1d) && weight.dim() == input.dim() && stride.size() >= 1 && padding.size() >= 1 &&
            dilation.size() >= 1;
  if (!ok) {
    EMBER_LOG(ERROR,
              "%s: input must be 3-d or 4-d with a weight of the same rank (got %d-d and %d-d) and stride, "
              "padding and dilation non-empty",
              name, static_cast<int>(input.dim()), static_cast<int>(weight.dim()));
    ctx.fail(Error::InvalidArgument);
    return false;
  }
  auto at = [sd](ArrayRef<int64_t> v, size_t i) { return v.size() == sd ? v[i] : v[0]; };
  ConvGeometry v;
  v.N = input.size(0);
  v.Cin = input.size(1);
  v.H = is1d ? 1 : input.size(2);
  v.W = input.size(is1d ? 2 : 3);
  v.Cout = weight.size(0);
  v.Cg = weight.size(1);
  v.KH = is1d ? 1 : weight.size(2);
  v.KW = weight.size(is1d ? 2 : 3);
  v.groups = groups;
  v.sh = is1d ? 1 : at(stride, 0);
  v.sw = at(stride, sd - 1);
  v.ph = is1d ? 0 : at(padding, 0);
  v.pw = at(padding, sd - 1);
  v.dh = is1d ? 1 : at(dilation, 0);
  v.dw = at(dilation, sd - 1);
  ok = groups > 0 && groups <= INT32_MAX && v.Cin % groups == 0 && v.Cout % groups == 0 && v.Cg == v.Cin / groups;
  // Beyond int32 (as PyTorch refuses) the output size arithmetic below could overflow int64.
  ok = ok && v.sh > 0 && v.sw > 0 && v.dh > 0 && v.dw > 0 && v.ph >= 0 && v.pw >= 0 && v.sh <= INT32_MAX &&
       v.sw <= INT32_MAX && v.dh <= INT32_MAX && v.dw <= INT32_MAX && v.ph <= INT32_MAX && v.pw <= INT32_MAX;
  if (!ok) {
    EMBER_LOG(ERROR,
              "%s: %lld input channels, %lld groups and a weight of %lld channels per group do not agree, or "
              "stride/dilation are not positive or padding negative (all below 2^31)",
              name, static_cast<long long>(v.Cin), static_cast<long long>(groups), static_cast<long long>(v.Cg));
    ctx.fail(Error::InvalidArgument);
    return false;
  }
  v.OH = (v.H + 2 * v.ph - v.dh * (v.KH - 1) - 1) / v.sh + 1;
  v.OW = (v.W + 2 * v.pw - v.dw * (v.KW - 1) - 1) / v.sw + 1;
  if (v.OH <= 0 || v.OW <= 0) {
    EMBER_LOG(ERROR, "%s: the kernel is larger than the input", name);
    ctx.fail(Error::InvalidArgument);
    return false;
  }
  *g = v;
  return true;
}

}  // namespace

void convolution_backward_out(KernelContext& ctx, const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                              Optional<ArrayRef<int64_t>> bias_sizes, ArrayRef<int64_t> stride,
                              ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed,
                              ArrayRef<int64_t> output_padding, int64_t groups, ArrayRef<bool> output_mask,
                              Tensor& out0, Tensor& out1, Tensor& out2) {
  (void)output_padding;
  const char* name = "convolution_backward.out";
  EMBER_KERNEL_CHECK(ctx, !transposed, NotSupported, "%s: transposed convolution is not supported", name);
  EMBER_KERNEL_CHECK(ctx, output_mask.size() == 3, InvalidArgument, "%s: output_mask has %d values, not 3", name,
                     static_cast<int>(output_mask.size()));
  ConvGeometry g;
  if (!backward_geometry(ctx, input, weight, stride, padding, dilation, groups, &g)) return;
  const bool is1d = input.dim() == 3;
  const int64_t go4[4] = {g.N, g.Cout, g.OH, g.OW}, go3[3] = {g.N, g.Cout, g.OW};
  EMBER_KERNEL_CHECK(ctx,
                     grad_output.dim() == input.dim() &&
                         grad_output.sizes().size() == static_cast<size_t>(is1d ? 3 : 4) &&
                         grad_output.size(0) == g.N && grad_output.size(1) == g.Cout &&
                         (is1d || grad_output.size(2) == g.OH) && grad_output.size(is1d ? 2 : 3) == g.OW,
                     InvalidArgument, "%s: grad_output must be [%lld, %lld, %lld, %lld]", name,
                     static_cast<long long>(go4[0]), static_cast<long long>(go4[1]), static_cast<long long>(go4[2]),
                     static_cast<long long>(go4[3]));
  (void)go3;
  const bool want_in = output_mask[0], want_w = output_mask[1], want_b = output_mask[2];
  EMBER_KERNEL_CHECK(ctx, !want_in || fit_output(out0, input.sizes()), InvalidArgument,
                     "%s: out0 (grad_input) must have input's shape", name);
  EMBER_KERNEL_CHECK(ctx, !want_w || fit_output(out1, weight.sizes()), InvalidArgument,
                     "%s: out1 (grad_weight) must have weight's shape", name);
  const int64_t bshape[1] = {g.Cout};
  EMBER_KERNEL_CHECK(ctx,
                     !want_b || ((!bias_sizes.has_value() ||
                                  (bias_sizes.value().size() == 1 && bias_sizes.value()[0] == g.Cout)) &&
                                 fit_output(out2, bshape, 1)),
                     InvalidArgument, "%s: out2 (grad_bias) and bias_sizes must be [%lld]", name,
                     static_cast<long long>(g.Cout));
  EMBER_KERNEL_CHECK(ctx,
                     grad_output.is_contiguous() && input.is_contiguous() && weight.is_contiguous() &&
                         (!want_in || out0.is_contiguous()) && (!want_w || out1.is_contiguous()),
                     NotSupported, "%s: only contiguous (NCHW) tensors are supported", name);
  const ScalarType st = grad_output.scalar_type();
  EMBER_KERNEL_CHECK(ctx,
                     input.scalar_type() == st && weight.scalar_type() == st &&
                         (!want_in || out0.scalar_type() == st) && (!want_w || out1.scalar_type() == st) &&
                         (!want_b || out2.scalar_type() == st),
                     InvalidArgument, "%s: grad_output, input, weight and the outputs must share a dtype", name);
  EMBER_DISPATCH(ctx, name, selected_dtypes::convolution_backward_out_portable, st, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* go = grad_output.const_data_ptr<T>();
    const T* x = input.const_data_ptr<T>();
    const T* w = weight.const_data_ptr<T>();
    const int64_t cout_g = g.Cout / g.groups, plane = g.OH * g.OW;
    if (want_in) {
      // grad_input[n, ci, ih, iw] = sum over the taps whose window covers (ih, iw) of grad_output * weight.
      T* gi = out0.mutable_data_ptr<T>();
      for (int64_t n = 0; n < g.N; ++n) {
        for (int64_t ci = 0; ci < g.Cin; ++ci) {
          const int64_t grp = ci / g.Cg, cig = ci % g.Cg;
          for (int64_t ih = 0; ih < g.H; ++ih) {
            for (int64_t iw = 0; iw < g.W; ++iw) {
              C acc = 0;
              for (int64_t kh = 0; kh < g.KH; ++kh) {
                const int64_t th = ih + g.ph - kh * g.dh;
                if (th < 0 || th % g.sh != 0 || th / g.sh >= g.OH) continue;
                for (int64_t kw = 0; kw < g.KW; ++kw) {
                  const int64_t tw = iw + g.pw - kw * g.dw;
                  if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.OW) continue;
                  const int64_t at_o = (th / g.sh) * g.OW + tw / g.sw;
                  for (int64_t co = grp * cout_g; co < (grp + 1) * cout_g; ++co) {
                    acc += static_cast<C>(go[(n * g.Cout + co) * plane + at_o]) *
                           static_cast<C>(w[((co * g.Cg + cig) * g.KH + kh) * g.KW + kw]);
                  }
                }
              }
              gi[((n * g.Cin + ci) * g.H + ih) * g.W + iw] = static_cast<T>(acc);
            }
          }
        }
      }
    }
    if (want_w) {
      // grad_weight[co, cig, kh, kw] = sum over images and output positions of grad_output * the input it saw.
      T* gw = out1.mutable_data_ptr<T>();
      for (int64_t co = 0; co < g.Cout; ++co) {
        const int64_t grp = co / cout_g;
        for (int64_t cig = 0; cig < g.Cg; ++cig) {
          for (int64_t kh = 0; kh < g.KH; ++kh) {
            for (int64_t kw = 0; kw < g.KW; ++kw) {
              C acc = 0;
              for (int64_t n = 0; n < g.N; ++n) {
                const T* xc = x + (n * g.Cin + grp * g.Cg + cig) * g.H * g.W;
                const T* gc = go + (n * g.Cout + co) * plane;
                for (int64_t oh = 0; oh < g.OH; ++oh) {
                  const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
                  if (ih < 0 || ih >= g.H) continue;
                  for (int64_t ow = 0; ow < g.OW; ++ow) {
                    const int64_t iw = ow * g.sw - g.pw + kw * g.dw;
                    if (iw < 0 || iw >= g.W) continue;
                    acc += static_cast<C>(gc[oh * g.OW + ow]) * static_cast<C>(xc[ih * g.W + iw]);
                  }
                }
              }
              gw[((co * g.Cg + cig) * g.KH + kh) * g.KW + kw] = static_cast<T>(acc);
            }
          }
        }
      }
    }
    if (want_b) {
      T* gb = out2.mutable_data_ptr<T>();
      for (int64_t co = 0; co < g.Cout; ++co) {
        C acc = 0;
        for (int64_t n = 0; n < g.N; ++n) {
          const T* gc = go + (n * g.Cout + co) * plane;
          for (int64_t i = 0; i < plane; ++i) acc += static_cast<C>(gc[i]);
        }
        gb[co] = static_cast<T>(acc);
      }
    }
  });
}

void max_pool2d_with_indices_backward_out(KernelContext& ctx, const Tensor& grad_output, const Tensor& self,
                                          ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                                          ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool ceil_mode,
                                          const Tensor& indices, Tensor& grad_input) {
  const char* name = "max_pool2d_with_indices_backward.grad_input";
  PoolGeometry g;
  EMBER_KERNEL_CHECK(ctx, pool_geometry(self, kernel_size, stride, padding, dilation, ceil_mode, &g), InvalidArgument,
                     "%s: invalid geometry for a %d-d input (kernel, stride and dilation in [1, 2^31), padding at "
                     "most half the kernel)",
                     name, static_cast<int>(self.dim()));
  const int64_t s4[4] = {g.batch, g.C, g.OH, g.OW}, s3[3] = {g.C, g.OH, g.OW};
  const ArrayRef<int64_t> want(self.dim() == 4 ? s4 : s3, static_cast<size_t>(self.dim()));
  auto has_pooled_shape = [&](const Tensor& t) {
    if (t.dim() != self.dim()) return false;
    for (size_t d = 0; d < want.size(); ++d)
      if (t.sizes()[d] != want[d]) return false;
    return true;
  };
  EMBER_KERNEL_CHECK(ctx, has_pooled_shape(grad_output) && has_pooled_shape(indices), InvalidArgument,
                     "%s: grad_output and indices must be %lldx%lld per channel", name, static_cast<long long>(g.OH),
                     static_cast<long long>(g.OW));
  EMBER_KERNEL_CHECK(ctx, fit_output(grad_input, self.sizes()), InvalidArgument,
                     "%s: grad_input must have self's shape", name);
  EMBER_KERNEL_CHECK(ctx,
                     same_spatial_dim_order(self, grad_input) && same_spatial_dim_order(self, grad_output) &&
                         same_spatial_dim_order(self, indices),
                     NotSupported, "%s: all tensors must be contiguous or all channels-last", name);
  EMBER_KERNEL_CHECK(ctx,
                     indices.scalar_type() == ScalarType::Long &&
                         grad_output.scalar_type() == grad_input.scalar_type() &&
                         self.scalar_type() == grad_input.scalar_type(),
                     InvalidArgument, "%s: indices must be Long, grad_output, self and grad_input share a dtype", name);
  const Nchw vo = nchw_of(grad_output), vi = nchw_of(grad_input);
  const int64_t* ix = indices.const_data_ptr<int64_t>();
  const int64_t plane = g.H * g.W;
  // An index outside its plane would write elsewhere: refused before anything is written.
  for (int64_t n = 0; n < vo.N; ++n)
    for (int64_t c = 0; c < vo.C; ++c)
      for (int64_t h = 0; h < vo.H; ++h)
        for (int64_t w = 0; w < vo.W; ++w) {
          const int64_t i = ix[vo.at(n, c, h, w)];
          EMBER_KERNEL_CHECK(ctx, i >= 0 && i < plane, InvalidArgument, "%s: index %lld is outside the %lldx%lld plane",
                             name, static_cast<long long>(i), static_cast<long long>(g.H), static_cast<long long>(g.W));
        }
  EMBER_DISPATCH(ctx, name, selected_dtypes::max_pool2d_with_indices_backward_out_portable, grad_input.scalar_type(),
                 [&](auto tag) {
                   using T = typename decltype(tag)::type;
                   const T* go = grad_output.const_data_ptr<T>();
                   T* gi = grad_input.mutable_data_ptr<T>();
                   memset(static_cast<void*>(gi), 0, grad_input.nbytes());
                   // Overlapping windows add into the same element, in T, as ATen's CPU kernel does.
                   for (int64_t n = 0; n < vo.N; ++n)
                     for (int64_t c = 0; c < vo.C; ++c)
                       for (int64_t h = 0; h < vo.H; ++h)
                         for (int64_t w = 0; w < vo.W; ++w) {
                           const int64_t at = vo.at(n, c, h, w), i = ix[at];
                           T& dst = gi[vi.at(n, c, i / g.W, i % g.W)];
                           dst = static_cast<T>(static_cast<compute_t<T>>(dst) + static_cast<compute_t<T>>(go[at]));
                         }
                 });
}

}  // namespace portable
}  // namespace ember
