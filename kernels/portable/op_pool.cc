// 2-d pooling over NCHW (or CHW): max_pool2d_with_indices, avg_pool2d, with ATen's padding, dilation, ceil_mode,
// count_include_pad and divisor_override.
#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {
namespace {

struct PoolGeometry {
  int64_t batch, C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW;
};

int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t out = (ceil_mode ? span + s - 1 : span) / s + 1;
  // ATen: with ceil_mode the last window must start inside the input or left padding.
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

bool geometry(const Tensor& in, ArrayRef<int64_t> k, ArrayRef<int64_t> s, ArrayRef<int64_t> p, ArrayRef<int64_t> d,
              bool ceil_mode, PoolGeometry* g) {
  if ((in.dim() != 3 && in.dim() != 4) || k.size() < 1) return false;
  auto pick = [](ArrayRef<int64_t> v, size_t i, int64_t dflt) {
    return v.size() == 0 ? dflt : v.size() == 1 ? v[0] : v[i];
  };
  const int off = in.dim() == 4 ? 1 : 0;
  g->batch = off ? in.size(0) : 1;
  g->C = in.size(off);
  g->H = in.size(off + 1);
  g->W = in.size(off + 2);
  g->KH = pick(k, 0, 1);
  g->KW = pick(k, 1, 1);
  g->SH = pick(s, 0, g->KH);
  g->SW = pick(s, 1, g->KW);
  g->PH = pick(p, 0, 0);
  g->PW = pick(p, 1, 0);
  g->DH = pick(d, 0, 1);
  g->DW = pick(d, 1, 1);
  // Arguments beyond int32 are refused as PyTorch refuses them; within it the size arithmetic below fits int64.
  for (int64_t v : {g->KH, g->KW, g->SH, g->SW, g->PH, g->PW, g->DH, g->DW}) {
    if (v > INT32_MAX) return false;
  }
  if (g->KH <= 0 || g->KW <= 0 || g->SH <= 0 || g->SW <= 0 || g->DH <= 0 || g->DW <= 0 || g->PH < 0 || g->PW < 0 ||
      2 * g->PH > g->KH || 2 * g->PW > g->KW)
    return false;
  g->OH = pooled_size(g->H, g->KH, g->SH, g->PH, g->DH, ceil_mode);
  g->OW = pooled_size(g->W, g->KW, g->SW, g->PW, g->DW, ceil_mode);
  return g->OH > 0 && g->OW > 0;
}

bool fit_pooled(Tensor& out, const Tensor& in, const PoolGeometry& g) {
  const int64_t s4[4] = {g.batch, g.C, g.OH, g.OW};
  const int64_t s3[3] = {g.C, g.OH, g.OW};
  return in.dim() == 4 ? fit_output(out, s4, 4) : fit_output(out, s3, 3);
}

}  // namespace

void max_pool2d_with_indices_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size,
                                 ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                                 bool ceil_mode, Tensor& out, Tensor& indices) {
  PoolGeometry g;
  EMBER_KERNEL_CHECK(ctx, geometry(self, kernel_size, stride, padding, dilation, ceil_mode, &g), InvalidArgument,
                     "max_pool2d_with_indices.out: invalid geometry for a %d-d input (kernel, stride and dilation "
                     "in [1, 2^31), padding at most half the kernel)", static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx, fit_pooled(out, self, g) && fit_pooled(indices, self, g), InvalidArgument,
                     "max_pool2d_with_indices.out: out and indices must be %lldx%lld per channel",
                     static_cast<long long>(g.OH), static_cast<long long>(g.OW));
  EMBER_KERNEL_CHECK(ctx, indices.scalar_type() == ScalarType::Long && self.scalar_type() == out.scalar_type(),
                     InvalidArgument, "max_pool2d_with_indices.out: indices must be Long and out match self's dtype");
  EMBER_DISPATCH(ctx, "max_pool2d_with_indices.out", selected_dtypes::max_pool2d_with_indices_out_portable,
                 self.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* x = self.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    int64_t* ix = indices.mutable_data_ptr<int64_t>();
    for (int64_t plane = 0; plane < g.batch * g.C; ++plane) {
      const T* xp = x + plane * g.H * g.W;
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          C best = C(0);
          int64_t best_i = -1;
          for (int64_t kh = 0; kh < g.KH; ++kh) {
            const int64_t ih = oh * g.SH - g.PH + kh * g.DH;
            if (ih < 0 || ih >= g.H) continue;
            for (int64_t kw = 0; kw < g.KW; ++kw) {
              const int64_t iw = ow * g.SW - g.PW + kw * g.DW;
              if (iw < 0 || iw >= g.W) continue;
              const C v = static_cast<C>(xp[ih * g.W + iw]);
              if (best_i < 0 || v > best || v != v) {  // NaN propagates, as in ATen
                best = v;
                best_i = ih * g.W + iw;
              }
            }
          }
          const int64_t at = (plane * g.OH + oh) * g.OW + ow;
          o[at] = static_cast<T>(best);
          ix[at] = best_i;
        }
      }
    }
  });
}

void avg_pool2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                    ArrayRef<int64_t> padding, bool ceil_mode, bool count_include_pad,
                    Optional<int64_t> divisor_override, Tensor& out) {
  PoolGeometry g;
  const int64_t one[2] = {1, 1};
  EMBER_KERNEL_CHECK(ctx, geometry(self, kernel_size, stride, padding, ArrayRef<int64_t>(one, 2), ceil_mode, &g),
                     InvalidArgument, "avg_pool2d.out: invalid geometry for a %d-d input (kernel and "
                     "stride in [1, 2^31), padding at most half the kernel)", static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx, fit_pooled(out, self, g), InvalidArgument, "avg_pool2d.out: out must be %lldx%lld per channel",
                     static_cast<long long>(g.OH), static_cast<long long>(g.OW));
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == self.scalar_type(), InvalidArgument,
                     "avg_pool2d.out: self is %s but out is %s", scalar_type_name(self.scalar_type()),
                     scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, !divisor_override.has_value() || divisor_override.value() != 0, InvalidArgument,
                     "avg_pool2d.out: divisor_override must not be 0");
  EMBER_DISPATCH(ctx, "avg_pool2d.out", selected_dtypes::avg_pool2d_out_portable, self.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* x = self.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    for (int64_t plane = 0; plane < g.batch * g.C; ++plane) {
      const T* xp = x + plane * g.H * g.W;
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          const int64_t h0 = oh * g.SH - g.PH, w0 = ow * g.SW - g.PW;
          int64_t h1 = h0 + g.KH, w1 = w0 + g.KW;
          const int64_t hp = h1 < g.H + g.PH ? h1 : g.H + g.PH, wp = w1 < g.W + g.PW ? w1 : g.W + g.PW;
          const int64_t padded = (hp - h0) * (wp - w0);
          const int64_t hs = h0 > 0 ? h0 : 0, ws = w0 > 0 ? w0 : 0;
          h1 = h1 < g.H ? h1 : g.H;
          w1 = w1 < g.W ? w1 : g.W;
          C sum = C(0);
          for (int64_t ih = hs; ih < h1; ++ih)
            for (int64_t iw = ws; iw < w1; ++iw) sum += static_cast<C>(xp[ih * g.W + iw]);
          const int64_t divisor = divisor_override.has_value() ? divisor_override.value()
                                  : count_include_pad         ? padded
                                                              : (h1 - hs) * (w1 - ws);
          o[(plane * g.OH + oh) * g.OW + ow] = static_cast<T>(sum / static_cast<C>(divisor));
        }
      }
    }
  });
}

}  // namespace portable
}  // namespace ember
