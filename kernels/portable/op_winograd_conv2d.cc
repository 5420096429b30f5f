// ember::winograd_conv2d for Float, tile by tile: each input patch (4x4 for F(2x2, 3x3), 6x6 for F(4x4, 3x3)) of
// every input channel transformed into scratch, then per output channel the point-wise sums over input channels and
// the output transform. The reference loop: kernels/optimized computes the same sums in another order, many tiles at a
// time. Computes Float only; the op exists only in programs exported with ExecutorchBackendConfig(winograd=True).
#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/winograd.h"

namespace ember {
namespace portable {

using winograd::WinogradGeometry;

namespace {

// Floats of scratch: one tile's transformed patches, every input channel (36 floats each at most).
int64_t scratch_floats(const WinogradGeometry& g) { return g.Cin * (g.m + 2) * (g.m + 2); }

// The patch of plane x whose top-left input is (y0, x0), zeros outside the plane.
template <int In>
void load_patch(const WinogradGeometry& g, const float* x, int64_t y0, int64_t x0, float d[In][In]) {
  for (int i = 0; i < In; ++i) {
    const int64_t y = y0 + i;
    for (int j = 0; j < In; ++j) {
      const int64_t c = x0 + j;
      d[i][j] = (y >= 0 && y < g.H && c >= 0 && c < g.W) ? x[y * g.W + c] : 0.0f;
    }
  }
}

template <int M>
void convolve(const WinogradGeometry& g, const float* x, const float* u, const float* bias, float lo, float hi,
              float* v, float* o) {
  using F = winograd::Tile<M>;
  constexpr int kIn = F::kIn, kOut = F::kOut, kPoints = F::kPoints;
  const int64_t plane = g.OH * g.OW;
  for (int64_t n = 0; n < g.N; ++n) {
    const float* xn = x + n * g.Cin * g.H * g.W;
    float* on = o + n * g.Cout * plane;
    for (int64_t th = 0; th < g.tiles_h; ++th) {
      for (int64_t tw = 0; tw < g.tiles_w; ++tw) {
        const int64_t oy = th * kOut, ox = tw * kOut;
        for (int64_t ci = 0; ci < g.Cin; ++ci) {
          float d[kIn][kIn];
          load_patch<kIn>(g, xn + ci * g.H * g.W, oy - g.ph, ox - g.pw, d);
          F::input_tile(d, v + ci * kPoints);
        }
        for (int64_t co = 0; co < g.Cout; ++co) {
          float m[kPoints] = {};
          for (int64_t ci = 0; ci < g.Cin; ++ci) {
            const float* vc = v + ci * kPoints;
            for (int p = 0; p < kPoints; ++p) m[p] += vc[p] * u[(p * g.Cin + ci) * g.Cout + co];
          }
          float y[kOut][kOut];
          F::output_tile(m, y);
          const float b = bias ? bias[co] : 0.0f;
          float* oc = on + co * plane;
          for (int r = 0; r < kOut && oy + r < g.OH; ++r) {
            for (int c = 0; c < kOut && ox + c < g.OW; ++c) {
              float val = y[r][c] + b;
              // NaN stays NaN, as in ATen: both comparisons are false for it.
              val = val < lo ? lo : val;
              oc[(oy + r) * g.OW + ox + c] = val > hi ? hi : val;
            }
          }
        }
      }
    }
  }
}

}  // namespace

KernelMemory winograd_conv2d_memory(const KernelArgs& a) {
  WinogradGeometry g;
  int64_t pad[2];
  if (a.list_size(3) != 2) return {};
  for (size_t k = 0; k < 2; ++k) pad[k] = a.list_item(3, k);
  if (!winograd::winograd_geometry(a.sizes(0), a.sizes(1), ArrayRef<int64_t>(pad, 2), g)) {
    return {};  // the kernel says why
  }
  KernelMemory m;
  m.scratch = round16(static_cast<size_t>(scratch_floats(g)) * sizeof(float));
  return m;
}

void winograd_conv2d_out(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                         ArrayRef<int64_t> padding, double min, double max, Tensor& out) {
  constexpr bool kFloat = (selected_dtypes::winograd_conv2d_out_portable >> static_cast<int>(ScalarType::Float)) & 1u;
  EMBER_KERNEL_CHECK(ctx, kFloat, InvalidArgument,
                     "winograd_conv2d.out: this build's selection has no Float for it; select the program's "
                     "operators again (python -m selective_build.select)");
  WinogradGeometry g;
  if (!winograd::check_winograd_conv2d(ctx, input, weight, bias, padding, min, max, out, g)) return;
  const size_t need = static_cast<size_t>(scratch_floats(g)) * sizeof(float);
  EMBER_KERNEL_CHECK(ctx, ctx.scratch().size() >= need, InvalidArgument,
                     "winograd_conv2d.out: needs %zu bytes of scratch, was given %zu (its memory function plans them)",
                     need, ctx.scratch().size());
  auto run = g.m == 2 ? &convolve<2> : &convolve<4>;
  run(g, input.const_data_ptr<float>(), weight.const_data_ptr<float>(), bias ? bias->const_data_ptr<float>() : nullptr,
      static_cast<float>(min), static_cast<float>(max), reinterpret_cast<float*>(ctx.scratch().data()),
      out.mutable_data_ptr<float>());
}

}  // namespace portable
}  // namespace ember
