// Upsampling over NCHW or CHW, contiguous or channels-last: upsample_bilinear2d (align_corners either way, from an
// output size or scale factors), upsample_nearest2d, and _upsample_bilinear2d_aa (antialiased: a triangle
// filter widened by the downscale factor, as PIL and ATen do). Index and weight arithmetic follows ATen's
// (area_pixel_compute_scale and friends) in the compute type, so results match eager.
#include <math.h>
#include <string.h>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/portable/util/spatial_util.h"

namespace ember {
namespace portable {
namespace {

// ATen's area_pixel_compute_scale: input pixels per output pixel.
template <typename C>
C pixel_scale(int64_t in, int64_t out, bool align_corners, double scale) {
  if (align_corners) return out > 1 ? static_cast<C>(in - 1) / static_cast<C>(out - 1) : C(0);
  return scale > 0 ? static_cast<C>(1.0 / scale) : static_cast<C>(in) / static_cast<C>(out);
}

// Output sizes from output_size or scale_factors (exactly one given, two items), as ATen's compute_output_size.
// Returns false (ctx failed) on a bad combination.
bool upsample_sizes(KernelContext& ctx, const char* name, const Tensor& in, Optional<ArrayRef<int64_t>> size,
                    Optional<ArrayRef<double>> scales, int64_t* oh, int64_t* ow, double* sh, double* sw) {
  if (in.dim() != 4 && in.dim() != 3) {
    EMBER_LOG(ERROR, "%s: input must be 3-d or 4-d, got %d-d", name, static_cast<int>(in.dim()));
    ctx.fail(Error::InvalidArgument);
    return false;
  }
  const Nchw v = nchw_of(in);
  *sh = *sw = 0;
  if (size.has_value() == scales.has_value() || (size.has_value() && size.value().size() != 2) ||
      (scales.has_value() && scales.value().size() != 2)) {
    EMBER_LOG(ERROR, "%s: give exactly one of output_size and scale_factors, with two values", name);
    ctx.fail(Error::InvalidArgument);
    return false;
  }
  if (size.has_value()) {
    *oh = size.value()[0];
    *ow = size.value()[1];
  } else {
    *sh = scales.value()[0];
    *sw = scales.value()[1];
    // Bounded so that the floor below fits an int32 output size (larger ones are refused by fit_output).
    if (!(*sh > 0 && *sw > 0 && *sh < 1e9 && *sw < 1e9)) {
      EMBER_LOG(ERROR, "%s: scale factors (%g, %g) must be positive and finite", name, *sh, *sw);
      ctx.fail(Error::InvalidArgument);
      return false;
    }
    *oh = static_cast<int64_t>(floor(static_cast<double>(v.H) * *sh));
    *ow = static_cast<int64_t>(floor(static_cast<double>(v.W) * *sw));
  }
  if (*oh <= 0 || *ow <= 0 || *oh > INT32_MAX || *ow > INT32_MAX || v.H <= 0 || v.W <= 0) {
    EMBER_LOG(ERROR, "%s: input %lldx%lld and output %lldx%lld must both be non-empty", name,
              static_cast<long long>(v.H), static_cast<long long>(v.W), static_cast<long long>(*oh),
              static_cast<long long>(*ow));
    ctx.fail(Error::InvalidArgument);
    return false;
  }
  return true;
}

// Shape, dim order and dtype checks on out. Returns false (ctx failed) when out does not fit.
bool fit_upsampled(KernelContext& ctx, const char* name, const Tensor& in, int64_t oh, int64_t ow, Tensor& out) {
  const Nchw v = nchw_of(in);
  const int64_t s4[4] = {v.N, v.C, oh, ow};
  const int64_t s3[3] = {v.C, oh, ow};
  if (!(in.dim() == 4 ? fit_output(out, s4, 4) : fit_output(out, s3, 3))) {
    EMBER_LOG(ERROR, "%s: out must be %lldx%lld per channel", name, static_cast<long long>(oh),
              static_cast<long long>(ow));
    ctx.fail(Error::InvalidArgument);
    return false;
  }
  if (!same_spatial_dim_order(in, out)) {
    EMBER_LOG(ERROR, "%s: input and out must both be contiguous or both channels-last", name);
    ctx.fail(Error::NotSupported);
    return false;
  }
  if (in.scalar_type() != out.scalar_type()) {
    EMBER_LOG(ERROR, "%s: input is %s but out is %s", name, scalar_type_name(in.scalar_type()),
              scalar_type_name(out.scalar_type()));
    ctx.fail(Error::InvalidArgument);
    return false;
  }
  return true;
}

// A source coordinate as an index in [0, in - 1]. A scale factor near 0 makes its reciprocal infinite and the
// coordinate NaN or beyond int64, whose conversion is undefined (kernel_fuzz at 7749dd9): those clamp instead.
template <typename C>
int64_t clamp_index(C v, int64_t in) {
  if (!(v > C(0))) return 0;
  if (!(v < static_cast<C>(in - 1))) return in - 1;
  return static_cast<int64_t>(v);
}

// One bilinear source position: the two taps and their weights (ATen's compute_source_index_and_lambda).
template <typename C>
void linear_taps(C scale, int64_t dst, int64_t in, bool align_corners, int64_t* i0, int64_t* i1, C* l0, C* l1) {
  C src = align_corners ? scale * static_cast<C>(dst) : scale * (static_cast<C>(dst) + C(0.5)) - C(0.5);
  if (src < 0) src = 0;
  *i0 = clamp_index(src, in);
  *i1 = *i0 + (*i0 < in - 1 ? 1 : 0);
  *l1 = src - static_cast<C>(*i0);
  if (*l1 > 1) *l1 = 1;
  *l0 = C(1) - *l1;
}

}  // namespace

void upsample_bilinear2d_vec_out(KernelContext& ctx, const Tensor& input, Optional<ArrayRef<int64_t>> output_size,
                                 bool align_corners, Optional<ArrayRef<double>> scale_factors, Tensor& out) {
  const char* name = "upsample_bilinear2d.vec_out";
  int64_t OH, OW;
  double sh, sw;
  if (!upsample_sizes(ctx, name, input, output_size, scale_factors, &OH, &OW, &sh, &sw)) return;
  if (!fit_upsampled(ctx, name, input, OH, OW, out)) return;
  EMBER_DISPATCH(ctx, name, selected_dtypes::upsample_bilinear2d_vec_out_portable, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    // The loops below walk the output's rows and columns outside its batch and channels: with N or C zero, OH x OW
    // may still claim 2^31 positions to compute taps for and write nothing.
    if (out.numel() == 0) return;
    const Nchw vi = nchw_of(input), vo = nchw_of(out);
    const T* x = input.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    const C rh = pixel_scale<C>(vi.H, OH, align_corners, sh), rw = pixel_scale<C>(vi.W, OW, align_corners, sw);
    for (int64_t oh = 0; oh < OH; ++oh) {
      int64_t h0, h1;
      C a0, a1;
      linear_taps(rh, oh, vi.H, align_corners, &h0, &h1, &a0, &a1);
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t w0, w1;
        C b0, b1;
        linear_taps(rw, ow, vi.W, align_corners, &w0, &w1, &b0, &b1);
        for (int64_t n = 0; n < vi.N; ++n) {
          for (int64_t c = 0; c < vi.C; ++c) {
            const T* p = x + vi.at(n, c, 0, 0);
            const C v = a0 * (b0 * static_cast<C>(p[h0 * vi.sh + w0 * vi.sw]) +
                              b1 * static_cast<C>(p[h0 * vi.sh + w1 * vi.sw])) +
                        a1 * (b0 * static_cast<C>(p[h1 * vi.sh + w0 * vi.sw]) +
                              b1 * static_cast<C>(p[h1 * vi.sh + w1 * vi.sw]));
            o[vo.at(n, c, oh, ow)] = static_cast<T>(v);
          }
        }
      }
    }
  });
}

void upsample_nearest2d_vec_out(KernelContext& ctx, const Tensor& input, Optional<ArrayRef<int64_t>> output_size,
                                Optional<ArrayRef<double>> scale_factors, Tensor& out) {
  const char* name = "upsample_nearest2d.vec_out";
  int64_t OH, OW;
  double sh, sw;
  if (!upsample_sizes(ctx, name, input, output_size, scale_factors, &OH, &OW, &sh, &sw)) return;
  if (!fit_upsampled(ctx, name, input, OH, OW, out)) return;
  // Nearest moves elements without arithmetic: one byte-copying loop for every dtype the build admits.
  EMBER_DISPATCH(ctx, name, selected_dtypes::upsample_nearest2d_vec_out_portable, out.scalar_type(), [&](auto) {});
  const Nchw vi = nchw_of(input), vo = nchw_of(out);
  // ATen's nearest_idx computes the scale and index in float.
  const float rh = sh > 0 ? static_cast<float>(1.0 / sh) : static_cast<float>(vi.H) / static_cast<float>(OH);
  const float rw = sw > 0 ? static_cast<float>(1.0 / sw) : static_cast<float>(vi.W) / static_cast<float>(OW);
  auto src = [](int64_t dst, int64_t in, int64_t outn, float r) {
    if (outn == in) return dst;
    if (outn == 2 * in) return dst >> 1;
    return clamp_index(floorf(static_cast<float>(dst) * r), in);
  };
  const size_t es = input.element_size();
  const uint8_t* x = static_cast<const uint8_t*>(input.const_data_ptr());
  uint8_t* o = static_cast<uint8_t*>(out.mutable_data_ptr());
  for (int64_t n = 0; n < vi.N; ++n) {
    for (int64_t c = 0; c < vi.C; ++c) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t ih = src(oh, vi.H, OH, rh);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t iw = src(ow, vi.W, OW, rw);
          memmove(o + static_cast<size_t>(vo.at(n, c, oh, ow)) * es, x + static_cast<size_t>(vi.at(n, c, ih, iw)) * es,
                  es);
        }
      }
    }
  }
}

void upsample_bilinear2d_aa_out(KernelContext& ctx, const Tensor& self, ArrayRef<int64_t> output_size,
                                bool align_corners, Optional<double> scales_h, Optional<double> scales_w, Tensor& out) {
  const char* name = "_upsample_bilinear2d_aa.out";
  int64_t OH, OW;
  double unused_h, unused_w;
  if (!upsample_sizes(ctx, name, self, Optional<ArrayRef<int64_t>>(output_size), Optional<ArrayRef<double>>(), &OH, &OW,
                      &unused_h, &unused_w))
    return;
  if (!fit_upsampled(ctx, name, self, OH, OW, out)) return;
  EMBER_DISPATCH(ctx, name, selected_dtypes::upsample_bilinear2d_aa_out_portable, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    // As in upsample_bilinear2d: an empty batch or channel dim leaves OH x OW windows to compute for nothing
    // (kernel_fuzz's timeout at 23b2c3e, 6.23M executions into the long run).
    if (out.numel() == 0) return;
    const Nchw vi = nchw_of(self), vo = nchw_of(out);
    const T* x = self.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    const double ssh = scales_h.has_value() ? scales_h.value() : 0.0;
    const double ssw = scales_w.has_value() ? scales_w.value() : 0.0;
    const C rh = pixel_scale<C>(vi.H, OH, align_corners, ssh), rw = pixel_scale<C>(vi.W, OW, align_corners, ssw);
    // The filter's half-width in input pixels, and its taps for one output index: [lo, lo + n).
    auto window = [](C r, int64_t dst, int64_t in, int64_t* lo, int64_t* n, C* center, C* inv) {
      const C support = r >= C(1) ? r : C(1);
      *inv = r >= C(1) ? C(1) / r : C(1);
      *center = r * (static_cast<C>(dst) + C(0.5));  // align_corners only changes r
      const int64_t a = clamp_index(*center - support + C(0.5), in + 1);  // in [0, in]
      const int64_t b = clamp_index(*center + support + C(0.5), in + 1);
      *lo = a;
      *n = b > a ? b - a : 0;
    };
    auto tri = [](C t) {
      t = t < 0 ? -t : t;
      return t < C(1) ? C(1) - t : C(0);
    };
    for (int64_t oh = 0; oh < OH; ++oh) {
      int64_t h_lo, h_n;
      C hc, hinv;
      window(rh, oh, vi.H, &h_lo, &h_n, &hc, &hinv);
      C hsum = 0;
      for (int64_t j = 0; j < h_n; ++j) hsum += tri((static_cast<C>(j + h_lo) - hc + C(0.5)) * hinv);
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t w_lo, w_n;
        C wc, winv;
        window(rw, ow, vi.W, &w_lo, &w_n, &wc, &winv);
        C wsum = 0;
        for (int64_t j = 0; j < w_n; ++j) wsum += tri((static_cast<C>(j + w_lo) - wc + C(0.5)) * winv);
        const C hnorm = hsum != 0 ? C(1) / hsum : C(0), wnorm = wsum != 0 ? C(1) / wsum : C(0);
        for (int64_t n = 0; n < vi.N; ++n) {
          for (int64_t c = 0; c < vi.C; ++c) {
            const T* p = x + vi.at(n, c, 0, 0);
            C acc = 0;
            for (int64_t i = 0; i < h_n; ++i) {
              const C wy = tri((static_cast<C>(i + h_lo) - hc + C(0.5)) * hinv) * hnorm;
              C row = 0;
              for (int64_t j = 0; j < w_n; ++j) {
                const C wx = tri((static_cast<C>(j + w_lo) - wc + C(0.5)) * winv) * wnorm;
                row += wx * static_cast<C>(p[(i + h_lo) * vi.sh + (j + w_lo) * vi.sw]);
              }
              acc += wy * row;
            }
            o[vo.at(n, c, oh, ow)] = static_cast<T>(acc);
          }
        }
      }
    }
  });
}

}  // namespace portable
}  // namespace ember
