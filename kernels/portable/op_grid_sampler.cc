// grid_sampler_2d: samples an N x C x H x W input at the normalized (x, y) points of an N x OH x OW x 2 grid.
// Interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection; align_corners as
// ATen's grid_sampler_unnormalize and compute_coordinates, whose arithmetic this follows in the compute type.
#include <math.h>

#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/kernel_util.h"
#include "kernels/portable/util/spatial_util.h"

namespace ember {
namespace portable {
namespace {

template <typename C>
C unnormalize(C coord, int64_t size, bool align_corners) {
  return align_corners ? (coord + 1) / 2 * static_cast<C>(size - 1) : ((coord + 1) * static_cast<C>(size) - 1) / 2;
}

template <typename C>
C clip(C v, int64_t size) {
  const C hi = static_cast<C>(size - 1);
  return v < 0 ? C(0) : v > hi ? hi : v;  // NaN becomes 0 at the first comparison's else branch below
}

// Reflects v into [lo2 / 2, hi2 / 2] (bounds given doubled, as ATen does).
template <typename C>
C reflect(C v, int64_t lo2, int64_t hi2) {
  if (lo2 == hi2) return C(0);
  const C lo = static_cast<C>(lo2) / 2, span = static_cast<C>(hi2 - lo2) / 2;
  v = fabs(v - lo);
  const C extra = fmod(v, span);
  // The parity of the flips, taken in floating point: v may be infinite or beyond int64 (kernel_fuzz found inf
  // here at 2ae0bf7), and such a conversion is undefined. An infinite v gives NaN, which clip() makes 0.
  const bool even = fmod(floor(v / span), C(2)) == C(0);
  return even ? extra + lo : span - extra + lo;
}

template <typename C>
C apply_padding(C v, int64_t size, int64_t padding, bool align_corners) {
  if (padding == 1) return clip(v, size);
  if (padding == 2) {
    v = align_corners ? reflect(v, 0, 2 * (size - 1)) : reflect(v, -1, 2 * size - 1);
    return clip(v, size);
  }
  return v;
}

// Coordinates far outside any grid are treated as outside (a float beyond int64 has no defined conversion).
template <typename C>
bool to_index(C v, int64_t* i) {
  if (!(v > C(-1e9) && v < C(1e9))) return false;
  *i = static_cast<int64_t>(v);
  return true;
}

template <typename C>
C cubic1(C x, C A) {
  return ((A + 2) * x - (A + 3)) * x * x + 1;
}
template <typename C>
C cubic2(C x, C A) {
  return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

}  // namespace

void grid_sampler_2d_out(KernelContext& ctx, const Tensor& input, const Tensor& grid, int64_t interpolation_mode,
                         int64_t padding_mode, bool align_corners, Tensor& out) {
  const char* name = "grid_sampler_2d.out";
  EMBER_KERNEL_CHECK(ctx, input.dim() == 4 && grid.dim() == 4 && grid.size(3) == 2 && grid.size(0) == input.size(0),
                     InvalidArgument,
                     "%s: input must be 4-d and grid N x H x W x 2 with the same N (got %d-d and "
                     "%d-d)",
                     name, static_cast<int>(input.dim()), static_cast<int>(grid.dim()));
  EMBER_KERNEL_CHECK(ctx, interpolation_mode >= 0 && interpolation_mode <= 2 && padding_mode >= 0 && padding_mode <= 2,
                     InvalidArgument, "%s: interpolation mode %lld and padding mode %lld must be 0, 1 or 2", name,
                     static_cast<long long>(interpolation_mode), static_cast<long long>(padding_mode));
  EMBER_KERNEL_CHECK(ctx, input.size(2) > 0 && input.size(3) > 0, InvalidArgument, "%s: the input plane is empty",
                     name);
  const int64_t shape[4] = {input.size(0), input.size(1), grid.size(1), grid.size(2)};
  EMBER_KERNEL_CHECK(ctx, fit_output(out, shape, 4), InvalidArgument, "%s: out must be [%d, %d, %d, %d]", name,
                     static_cast<int>(input.size(0)), static_cast<int>(input.size(1)), static_cast<int>(grid.size(1)),
                     static_cast<int>(grid.size(2)));
  EMBER_KERNEL_CHECK(ctx, same_spatial_dim_order(input, out) && grid.is_contiguous(), NotSupported,
                     "%s: input and out must both be contiguous or both channels-last, grid contiguous", name);
  EMBER_KERNEL_CHECK(ctx, input.scalar_type() == out.scalar_type() && grid.scalar_type() == out.scalar_type(),
                     InvalidArgument, "%s: input, grid and out must share a dtype", name);
  EMBER_DISPATCH(ctx, name, selected_dtypes::grid_sampler_2d_out_portable, out.scalar_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const Nchw vi = nchw_of(input), vo = nchw_of(out);
    const T* x = input.const_data_ptr<T>();
    const T* gr = grid.const_data_ptr<T>();
    T* o = out.mutable_data_ptr<T>();
    const int64_t H = vi.H, W = vi.W;
    // Value at integer (h, w) of plane (n, c), zero outside.
    auto at = [&](int64_t n, int64_t c, int64_t h, int64_t w) {
      return h >= 0 && h < H && w >= 0 && w < W ? static_cast<C>(x[vi.at(n, c, h, w)]) : C(0);
    };
    for (int64_t n = 0; n < vi.N; ++n) {
      for (int64_t oh = 0; oh < vo.H; ++oh) {
        for (int64_t ow = 0; ow < vo.W; ++ow) {
          const T* g = gr + ((n * vo.H + oh) * vo.W + ow) * 2;
          const C ux = unnormalize(static_cast<C>(g[0]), W, align_corners);
          const C uy = unnormalize(static_cast<C>(g[1]), H, align_corners);
          if (interpolation_mode == 2) {
            // Bicubic: 4 x 4 taps around the unpadded point, each tap's coordinate padded on its own.
            const C fx = floor(ux), fy = floor(uy), tx = ux - fx, ty = uy - fy;
            const C A = C(-0.75);
            const C cx[4] = {cubic2(tx + 1, A), cubic1(tx, A), cubic1(1 - tx, A), cubic2(2 - tx, A)};
            const C cy[4] = {cubic2(ty + 1, A), cubic1(ty, A), cubic1(1 - ty, A), cubic2(2 - ty, A)};
            int64_t bx = 0, by = 0;
            const bool finite = to_index(fx, &bx) && to_index(fy, &by);
            for (int64_t c = 0; c < vi.C; ++c) {
              C acc = 0;
              for (int i = 0; finite && i < 4; ++i) {
                C row = 0;
                for (int j = 0; j < 4; ++j) {
                  const C px = apply_padding(static_cast<C>(bx - 1 + j), W, padding_mode, align_corners);
                  const C py = apply_padding(static_cast<C>(by - 1 + i), H, padding_mode, align_corners);
                  int64_t ix, iy;
                  const C v = to_index(px, &ix) && to_index(py, &iy) ? at(n, c, iy, ix) : C(0);
                  row += cx[j] * v;
                }
                acc += cy[i] * row;
              }
              o[vo.at(n, c, oh, ow)] = static_cast<T>(acc);
            }
            continue;
          }
          const C px = apply_padding(ux, W, padding_mode, align_corners);
          const C py = apply_padding(uy, H, padding_mode, align_corners);
          if (interpolation_mode == 1) {
            int64_t ix = -1, iy = -1;
            const bool ok = to_index(nearbyint(px), &ix) && to_index(nearbyint(py), &iy);
            for (int64_t c = 0; c < vi.C; ++c) o[vo.at(n, c, oh, ow)] = static_cast<T>(ok ? at(n, c, iy, ix) : C(0));
            continue;
          }
          const C fx = floor(px), fy = floor(py);
          int64_t ix = 0, iy = 0;
          const bool ok = to_index(fx, &ix) && to_index(fy, &iy);
          const C tx = px - fx, ty = py - fy;
          const C nw = (1 - tx) * (1 - ty), ne = tx * (1 - ty), sw = (1 - tx) * ty, se = tx * ty;
          for (int64_t c = 0; c < vi.C; ++c) {
            const C v = ok ? at(n, c, iy, ix) * nw + at(n, c, iy, ix + 1) * ne + at(n, c, iy + 1, ix) * sw +
                                 at(n, c, iy + 1, ix + 1) * se
                           : C(0);
            o[vo.at(n, c, oh, ow)] = static_cast<T>(v);
          }
        }
      }
    }
  });
}

}  // namespace portable
}  // namespace ember
