// 2-d pooling over NCHW (or CHW), contiguous or channels-last: max_pool2d_with_indices, avg_pool2d, with ATen's
// padding, dilation, ceil_mode, count_include_pad and divisor_override.
#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/portable/util/spatial_util.h"

namespace ember {
namespace portable {

void max_pool2d_with_indices_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size,
                                 ArrayRef<int64_t> stride, ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                                 bool ceil_mode, Tensor& out, Tensor& indices) {
  PoolGeometry g;
  EMBER_KERNEL_CHECK(ctx, pool_geometry(self, kernel_size, stride, padding, dilation, ceil_mode, &g), InvalidArgument,
                     "max_pool2d_with_indices.out: invalid geometry for a %d-d input (kernel, stride and dilation "
                     "in [1, 2^31), padding at most half the kernel)",
                     static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx, fit_pooled(out, self, g) && fit_pooled(indices, self, g), InvalidArgument,
                     "max_pool2d_with_indices.out: out and indices must be %lldx%lld per channel",
                     static_cast<long long>(g.OH), static_cast<long long>(g.OW));
  EMBER_KERNEL_CHECK(ctx, indices.scalar_type() == ScalarType::Long && self.scalar_type() == out.scalar_type(),
                     InvalidArgument, "max_pool2d_with_indices.out: indices must be Long and out match self's dtype");
  EMBER_KERNEL_CHECK(ctx, same_spatial_dim_order(self, out) && same_spatial_dim_order(self, indices), NotSupported,
                     "%s: self and its outputs must all be contiguous or all channels-last",
                     "max_pool2d_with_indices.out");
  EMBER_DISPATCH(ctx, "max_pool2d_with_indices.out", selected_dtypes::max_pool2d_with_indices_out_portable,
                 self.scalar_type(), [&](auto tag) {
                   using T = typename decltype(tag)::type;
                   using C = compute_t<T>;
                   const Nchw vi = nchw_of(self), vo = nchw_of(out), vx = nchw_of(indices);
                   const T* x = self.const_data_ptr<T>();
                   T* o = out.mutable_data_ptr<T>();
                   int64_t* ix = indices.mutable_data_ptr<int64_t>();
                   for (int64_t n = 0; n < g.batch; ++n) {
                     for (int64_t c = 0; c < g.C; ++c) {
                       const T* xp = x + vi.at(n, c, 0, 0);
                       for (int64_t oh = 0; oh < g.OH; ++oh) {
                         for (int64_t ow = 0; ow < g.OW; ++ow) {
                           C best;
                           int64_t best_i;
                           max_window(xp, vi.sh, vi.sw, g, oh, ow, &best, &best_i);
                           o[vo.at(n, c, oh, ow)] = static_cast<T>(best);
                           ix[vx.at(n, c, oh, ow)] = best_i;
                         }
                       }
                     }
                   }
                 });
}

// Ember's own max pooling without indices (exir's opt-in fuse_activations, where the program reads none): the same
// windows, Float only.
void max_pool2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                    ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation, bool ceil_mode, Tensor& out) {
  PoolGeometry g;
  EMBER_KERNEL_CHECK(ctx, pool_geometry(self, kernel_size, stride, padding, dilation, ceil_mode, &g), InvalidArgument,
                     "max_pool2d.out: invalid geometry for a %d-d input (kernel, stride and dilation in [1, 2^31), "
                     "padding at most half the kernel)",
                     static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx, fit_pooled(out, self, g), InvalidArgument,
                     "max_pool2d.out: out must be %lldx%lld per channel", static_cast<long long>(g.OH),
                     static_cast<long long>(g.OW));
  constexpr bool kFloat = (selected_dtypes::max_pool2d_out_portable >> static_cast<int>(ScalarType::Float)) & 1u;
  EMBER_KERNEL_CHECK(ctx, kFloat && self.scalar_type() == ScalarType::Float && out.scalar_type() == ScalarType::Float,
                     InvalidArgument,
                     "max_pool2d.out: self is %s, but this kernel computes Float only (in a build that selected it)",
                     scalar_type_name(self.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, same_spatial_dim_order(self, out), NotSupported,
                     "%s: self and out must both be contiguous or both channels-last", "max_pool2d.out");
  const Nchw vi = nchw_of(self), vo = nchw_of(out);
  const float* x = self.const_data_ptr<float>();
  float* o = out.mutable_data_ptr<float>();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t c = 0; c < g.C; ++c) {
      const float* xp = x + vi.at(n, c, 0, 0);
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          float best;
          int64_t unused;
          max_window(xp, vi.sh, vi.sw, g, oh, ow, &best, &unused);
          o[vo.at(n, c, oh, ow)] = best;
        }
      }
    }
  }
}

void avg_pool2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> kernel_size, ArrayRef<int64_t> stride,
                    ArrayRef<int64_t> padding, bool ceil_mode, bool count_include_pad,
                    Optional<int64_t> divisor_override, Tensor& out) {
  PoolGeometry g;
  const int64_t one[2] = {1, 1};
  EMBER_KERNEL_CHECK(ctx, pool_geometry(self, kernel_size, stride, padding, ArrayRef<int64_t>(one, 2), ceil_mode, &g),
                     InvalidArgument,
                     "avg_pool2d.out: invalid geometry for a %d-d input (kernel and "
                     "stride in [1, 2^31), padding at most half the kernel)",
                     static_cast<int>(self.dim()));
  EMBER_KERNEL_CHECK(ctx, fit_pooled(out, self, g), InvalidArgument,
                     "avg_pool2d.out: out must be %lldx%lld per channel", static_cast<long long>(g.OH),
                     static_cast<long long>(g.OW));
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == self.scalar_type(), InvalidArgument,
                     "avg_pool2d.out: self is %s but out is %s", scalar_type_name(self.scalar_type()),
                     scalar_type_name(out.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, !divisor_override.has_value() || divisor_override.value() != 0, InvalidArgument,
                     "avg_pool2d.out: divisor_override must not be 0");
  EMBER_KERNEL_CHECK(ctx, same_spatial_dim_order(self, out), NotSupported,
                     "%s: self and its outputs must all be contiguous or all channels-last", "avg_pool2d.out");
  EMBER_DISPATCH(ctx, "avg_pool2d.out", selected_dtypes::avg_pool2d_out_portable, self.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const Nchw vi = nchw_of(self), vo = nchw_of(out);
    const T* x = self.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    for (int64_t plane = 0; plane < g.batch * g.C; ++plane) {
      const int64_t n = plane / g.C, c = plane % g.C;
      const T* xp = x + vi.at(n, c, 0, 0);
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
            for (int64_t iw = ws; iw < w1; ++iw) sum += static_cast<C>(xp[ih * vi.sh + iw * vi.sw]);
          const int64_t divisor = divisor_override.has_value() ? divisor_override.value()
                                  : count_include_pad          ? padded
                                                               : (h1 - hs) * (w1 - ws);
          o[vo.at(n, c, oh, ow)] = static_cast<T>(sum / static_cast<C>(divisor));
        }
      }
    }
  });
}

// ATen's adaptive windows: output index o of n covers input [floor(o * in / n), ceil((o + 1) * in / n)).
void adaptive_avg_pool2d_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> output_size, Tensor& out) {
  const char* name = "_adaptive_avg_pool2d.out";
  EMBER_KERNEL_CHECK(ctx, (self.dim() == 3 || self.dim() == 4) && output_size.size() == 2, InvalidArgument,
                     "%s: input must be 3-d or 4-d and output_size two values (got %d-d, %d values)", name,
                     static_cast<int>(self.dim()), static_cast<int>(output_size.size()));
  const Nchw vi = nchw_of(self);
  const int64_t OH = output_size[0], OW = output_size[1];
  EMBER_KERNEL_CHECK(ctx, OH >= 0 && OW >= 0 && OH <= INT32_MAX && OW <= INT32_MAX && vi.H > 0 && vi.W > 0,
                     InvalidArgument, "%s: output %lldx%lld must be non-negative and the input plane non-empty", name,
                     static_cast<long long>(OH), static_cast<long long>(OW));
  const int64_t s4[4] = {vi.N, vi.C, OH, OW}, s3[3] = {vi.C, OH, OW};
  EMBER_KERNEL_CHECK(ctx, self.dim() == 4 ? fit_output(out, s4, 4) : fit_output(out, s3, 3), InvalidArgument,
                     "%s: out must be %lldx%lld per channel", name, static_cast<long long>(OH),
                     static_cast<long long>(OW));
  EMBER_KERNEL_CHECK(ctx, same_spatial_dim_order(self, out), NotSupported,
                     "%s: self and its outputs must all be contiguous or all channels-last", name);
  EMBER_KERNEL_CHECK(ctx, out.scalar_type() == self.scalar_type(), InvalidArgument, "%s: self is %s but out is %s",
                     name, scalar_type_name(self.scalar_type()), scalar_type_name(out.scalar_type()));
  EMBER_DISPATCH(ctx, name, selected_dtypes::adaptive_avg_pool2d_out_portable, self.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const Nchw vo = nchw_of(out);
    const T* x = self.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t h0 = oh * vi.H / OH, h1 = ((oh + 1) * vi.H + OH - 1) / OH;
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t w0 = ow * vi.W / OW, w1 = ((ow + 1) * vi.W + OW - 1) / OW;
        const C count = static_cast<C>((h1 - h0) * (w1 - w0));
        for (int64_t n = 0; n < vi.N; ++n) {
          for (int64_t c = 0; c < vi.C; ++c) {
            const T* p = x + vi.at(n, c, 0, 0);
            C sum = 0;
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t w = w0; w < w1; ++w) sum += static_cast<C>(p[h * vi.sh + w * vi.sw]);
            o[vo.at(n, c, oh, ow)] = static_cast<T>(sum / count);
          }
        }
      }
    }
  });
}

}  // namespace portable
}  // namespace ember
