// convolution: 1-d and 2-d, grouped (depthwise included), stride, padding, dilation, optional bias. Direct loops
// in NCHW. Ember's own convolution_general computes the rest of aten::convolution (transposed with output_padding,
// 1-3 d, and 3-d) in one gather loop: exir routes those calls to it, so the 3 KB it costs are linked only where a
// program uses one. Also Ember's own convolution_clamp and convolution_silu (convolution + relu/hardtanh/clamp or
// SiLU, from exir's opt-in fuse_activations), Float only.
#include <math.h>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

namespace {

// The geometry of a convolution of any spatial rank 1-3, padded to three spatial dims (leading ones of size 1).
struct GeneralConv {
  int rank;                    // spatial dims: 1, 2 or 3
  bool transposed;
  int64_t N, Cin, Cout, groups;
  int64_t cin_g, cout_g;       // channels per group
  int64_t in[3], k[3], out[3], s[3], p[3], d[3];
};

// A list argument's value for spatial dim i of `rank`: PyTorch passes one per dim, or one for all.
bool list_value(ArrayRef<int64_t> v, int rank, int i, int64_t& value) {
  if (v.size() == static_cast<size_t>(rank)) {
    value = v[i];
  } else if (v.size() == 1) {
    value = v[0];
  } else {
    return false;
  }
  return true;
}

// Shape checks first, then sizes `out`. The transposed weight is [Cin, Cout / groups, k...]; the forward one is
// [Cout, Cin / groups, k...], as in ATen.
bool check_general(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                   ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed,
                   ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out, GeneralConv& g) {
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.dim() >= 3 && input.dim() <= 5 && weight.dim() == input.dim(), InvalidArgument,
                              "convolution_general.out: input must be 3-d, 4-d or 5-d with a weight of the same rank "
                              "(got %d-d and %d-d)",
                              static_cast<int>(input.dim()), static_cast<int>(weight.dim()));
  g.rank = static_cast<int>(input.dim()) - 2;
  g.transposed = transposed;
  g.N = input.size(0);
  g.Cin = input.size(1);
  g.groups = groups;
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, groups > 0 && groups <= INT32_MAX, InvalidArgument,
                              "convolution_general.out: groups must be positive (got %lld)",
                              static_cast<long long>(groups));
  if (transposed) {
    g.cin_g = g.Cin / groups;
    g.cout_g = weight.size(1);
    g.Cout = g.cout_g * groups;
    EMBER_KERNEL_CHECK_OR_FALSE(
        ctx, g.Cin % groups == 0 && weight.size(0) == g.Cin, InvalidArgument,
        "convolution_general.out: transposed weight has %lld input channels, the input %lld (%lld "
        "groups)",
        static_cast<long long>(weight.size(0)), static_cast<long long>(g.Cin), static_cast<long long>(groups));
  } else {
    g.Cout = weight.size(0);
    g.cin_g = weight.size(1);
    g.cout_g = g.Cout / groups;
    EMBER_KERNEL_CHECK_OR_FALSE(
        ctx, g.Cin % groups == 0 && g.Cout % groups == 0 && g.cin_g == g.Cin / groups, InvalidArgument,
        "convolution_general.out: %lld input channels, %lld groups and weight of %lld channels per "
        "group do not agree",
        static_cast<long long>(g.Cin), static_cast<long long>(groups), static_cast<long long>(g.cin_g));
  }
  int64_t out_sizes[5] = {g.N, g.Cout, 1, 1, 1};
  for (int a = 0; a < 3; ++a) {
    g.in[a] = g.k[a] = g.out[a] = g.s[a] = g.d[a] = 1;
    g.p[a] = 0;
  }
  for (int i = 0; i < g.rank; ++i) {
    const int a = 3 - g.rank + i;
    int64_t op = 0;
    EMBER_KERNEL_CHECK_OR_FALSE(
        ctx,
        list_value(stride, g.rank, i, g.s[a]) && list_value(padding, g.rank, i, g.p[a]) &&
            list_value(dilation, g.rank, i, g.d[a]) &&
            (!transposed || output_padding.empty() || list_value(output_padding, g.rank, i, op)),
        InvalidArgument, "convolution_general.out: stride, padding, dilation and output_padding need 1 or %d values",
        g.rank);
    // Below 2^31 each (as PyTorch refuses beyond), so no size arithmetic below overflows int64.
    EMBER_KERNEL_CHECK_OR_FALSE(
        ctx,
        g.s[a] > 0 && g.d[a] > 0 && g.p[a] >= 0 && op >= 0 && g.s[a] <= INT32_MAX && g.d[a] <= INT32_MAX &&
            g.p[a] <= INT32_MAX && (op < g.s[a] || op < g.d[a]),
        InvalidArgument,
        "convolution_general.out: stride and dilation must be positive, padding non-negative, all "
        "below 2^31, and output_padding (%lld) below the stride or the dilation",
        static_cast<long long>(op));
    g.in[a] = input.size(2 + i);
    g.k[a] = weight.size(2 + i);
    g.out[a] = transposed ? (g.in[a] - 1) * g.s[a] - 2 * g.p[a] + g.d[a] * (g.k[a] - 1) + op + 1
                          : (g.in[a] + 2 * g.p[a] - g.d[a] * (g.k[a] - 1) - 1) / g.s[a] + 1;
    EMBER_KERNEL_CHECK_OR_FALSE(ctx, g.out[a] > 0 && g.k[a] > 0, InvalidArgument,
                                "convolution_general.out: spatial dim %d would have %lld outputs", i,
                                static_cast<long long>(g.out[a]));
    out_sizes[2 + i] = g.out[a];
  }
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, fit_output(out, out_sizes, static_cast<size_t>(input.dim())), InvalidArgument,
                              "convolution_general.out: out must be %d-d: [%lld, %lld, %lld, ...]",
                              static_cast<int>(input.dim()), static_cast<long long>(g.N),
                              static_cast<long long>(g.Cout), static_cast<long long>(out_sizes[2]));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, bias == nullptr || (bias->dim() == 1 && bias->size(0) == g.Cout), InvalidArgument,
                              "convolution_general.out: bias must have %lld elements", static_cast<long long>(g.Cout));
  EMBER_KERNEL_CHECK_OR_FALSE(ctx, input.is_contiguous() && weight.is_contiguous() && out.is_contiguous(), NotSupported,
                              "convolution_general.out: only contiguous tensors are supported");
  EMBER_KERNEL_CHECK_OR_FALSE(ctx,
                              input.scalar_type() == out.scalar_type() && weight.scalar_type() == out.scalar_type() &&
                                  (bias == nullptr || bias->scalar_type() == out.scalar_type()),
                              InvalidArgument,
                              "convolution_general.out: input, weight, bias and out must share a dtype");
  return true;
}

// The input position that output position `o` reads through kernel tap `t` along axis `a`, or -1. Forward:
// i = o*s - p + t*d. Transposed (the forward convolution's gradient): o = i*s - p + t*d solved for i, which exists
// only where the stride divides it; gathering this way keeps the sum in C (a scatter would round each partial sum
// to T for Half).
inline int64_t source(const GeneralConv& g, int a, int64_t o, int64_t t) {
  if (!g.transposed) {
    const int64_t i = o * g.s[a] - g.p[a] + t * g.d[a];
    return i >= 0 && i < g.in[a] ? i : -1;
  }
  const int64_t q = o + g.p[a] - t * g.d[a];
  if (q < 0 || q % g.s[a] != 0) return -1;
  const int64_t i = q / g.s[a];
  return i < g.in[a] ? i : -1;
}

template <typename T, typename C>
void convolve_general(const GeneralConv& g, const T* x, const T* w, const T* b, T* o) {
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2], taps = g.k[0] * g.k[1] * g.k[2];
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t co = 0; co < g.Cout; ++co) {
      const int64_t grp = co / g.cout_g, cog = co % g.cout_g;
      for (int64_t od = 0; od < g.out[0]; ++od) {
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            C acc = b ? static_cast<C>(b[co]) : C(0);
            for (int64_t ci = 0; ci < g.cin_g; ++ci) {
              const T* xc = x + (n * g.Cin + grp * g.cin_g + ci) * in_plane;
              // Forward weight [Cout][cin_g][taps]; transposed [Cin][cout_g][taps].
              const T* wc =
                  g.transposed ? w + ((grp * g.cin_g + ci) * g.cout_g + cog) * taps : w + (co * g.cin_g + ci) * taps;
              for (int64_t kd = 0; kd < g.k[0]; ++kd) {
                const int64_t id = source(g, 0, od, kd);
                if (id < 0) continue;
                for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                  const int64_t ih = source(g, 1, oh, kh);
                  if (ih < 0) continue;
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    const int64_t iw = source(g, 2, ow, kw);
                    if (iw < 0) continue;
                    acc += static_cast<C>(xc[(id * g.in[1] + ih) * g.in[2] + iw]) *
                           static_cast<C>(wc[(kd * g.k[1] + kh) * g.k[2] + kw]);
                  }
                }
              }
            }
            *o++ = static_cast<T>(acc);
          }
        }
      }
    }
  }
}

}  // namespace

void convolution_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                     ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool transposed,
                     ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out) {
  (void)output_padding;
  // A program from another exporter may call it transposed (or 3-d, refused below); Ember's exir never does.
  EMBER_KERNEL_CHECK(ctx, !transposed, NotSupported, "convolution.out: transposed: re-export with Ember's exir");
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
  EMBER_KERNEL_CHECK(ctx, groups > 0 && Cin % groups == 0 && Cout % groups == 0 && Cg == Cin / groups, InvalidArgument,
                     "convolution.out: %lld input channels, %lld groups and weight of %lld channels "
                     "per group do not agree",
                     static_cast<long long>(Cin), static_cast<long long>(groups), static_cast<long long>(Cg));
  // Beyond int32 (as PyTorch refuses) the output size arithmetic below could overflow int64.
  EMBER_KERNEL_CHECK(ctx,
                     sh > 0 && sw > 0 && dh > 0 && dw > 0 && ph >= 0 && pw >= 0 && sh <= INT32_MAX && sw <= INT32_MAX &&
                         dh <= INT32_MAX && dw <= INT32_MAX && ph <= INT32_MAX && pw <= INT32_MAX,
                     InvalidArgument,
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
  EMBER_KERNEL_CHECK(ctx,
                     input.scalar_type() == out.scalar_type() && weight.scalar_type() == out.scalar_type() &&
                         (bias == nullptr || bias->scalar_type() == out.scalar_type()),
                     InvalidArgument, "convolution.out: input, weight, bias and out must share a dtype");
  // Input, weight and out are read and written through their strides, so any dim order works: contiguous NCHW,
  // or channels-last from a model exported in that memory format (weights included).
  const ArrayRef<int32_t> xs = input.strides(), ws = weight.strides(), os = out.strides();
  const int64_t xsn = xs[0], xsc = xs[1], xsh = is1d ? 0 : xs[2], xsw = xs[sd + 1];
  const int64_t wso = ws[0], wsc = ws[1], wsh = is1d ? 0 : ws[2], wsw = ws[sd + 1];
  const int64_t osn = os[0], osc = os[1], osh = is1d ? 0 : os[2], osw = os[sd + 1];
  // Float is also compiled in when only a fused convolution (below) selected it: it runs these loops.
  constexpr uint32_t kMask = selected_dtypes::convolution_out_portable |
                             selected_dtypes::convolution_clamp_out_portable |
                             selected_dtypes::convolution_silu_out_portable;
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
        const T* wk = w + co * wso;
        for (int64_t oh = 0; oh < OH; ++oh) {
          for (int64_t ow = 0; ow < OW; ++ow) {
            C acc = b ? static_cast<C>(b[co]) : C(0);
            for (int64_t ci = 0; ci < Cg; ++ci) {
              const T* xc = x + n * xsn + (g * Cg + ci) * xsc;
              const T* wc = wk + ci * wsc;
              for (int64_t kh = 0; kh < KH; ++kh) {
                const int64_t ih = oh * sh - ph + kh * dh;
                if (ih < 0 || ih >= H) continue;
                for (int64_t kw = 0; kw < KW; ++kw) {
                  const int64_t iw = ow * sw - pw + kw * dw;
                  if (iw < 0 || iw >= W) continue;
                  acc += static_cast<C>(xc[ih * xsh + iw * xsw]) * static_cast<C>(wc[kh * wsh + kw * wsw]);
                }
              }
            }
            o[n * osn + co * osc + oh * osh + ow * osw] = static_cast<T>(acc);
          }
        }
      }
    }
  });
}

void convolution_general_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                             ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                             bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out) {
  GeneralConv g;
  if (!check_general(ctx, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, out, g)) {
    return;
  }
  EMBER_DISPATCH(ctx, "convolution_general.out", selected_dtypes::convolution_general_out_portable, out.scalar_type(),
                 [&](auto tag) {
                   using T = typename decltype(tag)::type;
                   convolve_general<T, compute_t<T>>(g, input.const_data_ptr<T>(), weight.const_data_ptr<T>(),
                                                     bias ? bias->const_data_ptr<T>() : nullptr,
                                                     out.mutable_data_ptr<T>());
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
                     "separate kernels",
                     scalar_type_name(out.scalar_type()));
  // exir never fuses a NaN bound (torch.clamp would make every element NaN, not compare-and-select).
  EMBER_KERNEL_CHECK(ctx, min == min && max == max, InvalidArgument,
                     "convolution_clamp.out: bounds [%g, %g] include NaN", min, max);
  constexpr bool kFloat = (selected_dtypes::convolution_clamp_out_portable >> static_cast<int>(ScalarType::Float)) & 1u;
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

// Ember's fused convolution + SiLU: the convolution above, then SiLU over its output in place, computed as
// portable's silu computes it (in double, rounded once).
void convolution_silu_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                          ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                          bool transposed, ArrayRef<int64_t> output_padding, int64_t groups, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == ScalarType::Float, InvalidArgument,
                     "convolution_silu.out: out is %s, but the fused kernel computes Float only; export with "
                     "ExecutorchBackendConfig(fuse_activations=False) to run the convolution and its activation as "
                     "separate kernels",
                     scalar_type_name(out.scalar_type()));
  constexpr bool kFloat = (selected_dtypes::convolution_silu_out_portable >> static_cast<int>(ScalarType::Float)) & 1u;
  EMBER_KERNEL_CHECK(ctx, kFloat, InvalidArgument,
                     "convolution_silu.out: this build's selection has no Float for it; select the program's "
                     "operators again (python -m selective_build.select)");
  convolution_out(ctx, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, out);
  if (ctx.failure() != Error::Ok) return;
  float* o = out.mutable_data_ptr<float>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    o[i] = static_cast<float>(static_cast<double>(o[i]) / (1.0 + exp(-static_cast<double>(o[i]))));
  }
}

}  // namespace portable
}  // namespace ember
