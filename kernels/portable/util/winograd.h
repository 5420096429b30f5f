// Winograd's F(2x2, 3x3) and F(4x4, 3x3) at run time: the input and output transforms of ember::winograd_conv2d,
// written once over a value type T, which is float in the portable kernel and a whole vector of tiles or channels
// in the optimized one. The interpolation points are 0, 1, -1 and infinity for F(2, 3), and 0, 1, -1, 2, -2 and
// infinity for F(4, 3) (Lavin and Gray's choices); the weight transform G g G^T that goes with them runs at export
// (exir/lowering/winograd.py), so its matrices live there.
//
// An input patch d of (M + 2) x (M + 2) becomes V = B^T d B, its product with the transformed filter U is taken
// point by point (summed over input channels), and the result becomes the M x M outputs A^T M A. Each 2-d transform
// is the 1-d one down the columns, then along the rows. The filter's shape says which: [16, in, out] is F(2x2, 3x3),
// [36, in, out] F(4x4, 3x3).
#pragma once

#include <stdint.h>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace winograd {

// Always inlined: kernels/optimized instantiates these over vector types inside functions built for AVX2 or
// AVX-512, and an out-of-line copy would be built for the baseline instruction set instead.
#define EMBER_WINOGRAD_INLINE inline __attribute__((always_inline))

// F(M x M, 3x3): M outputs per tile side, In = M + 2 inputs, Points = In * In products per tile and channel pair.
template <int M>
struct Tile {
  static_assert(M == 2 || M == 4, "F(2x2, 3x3) and F(4x4, 3x3) only");
  static constexpr int kOut = M;
  static constexpr int kIn = M + 2;
  static constexpr int kPoints = kIn * kIn;

  // B^T applied to one column (or row) of inputs. Shared terms first, as the matrix's rows pair up.
  template <class T>
  static EMBER_WINOGRAD_INLINE void input_1d(const T* d, T* out) {
    if constexpr (M == 2) {
      out[0] = d[0] - d[2];
      out[1] = d[1] + d[2];
      out[2] = d[2] - d[1];
      out[3] = d[1] - d[3];
    } else {
      const T d4_d2 = d[4] - d[2];
      const T d3_d1 = d[3] - d[1];
      out[0] = d4_d2 + 4.0f * (d[0] - d[2]);
      out[1] = (d[3] + d[4]) - 4.0f * (d[1] + d[2]);
      out[2] = (d[4] - d[3]) + 4.0f * (d[1] - d[2]);
      out[3] = d4_d2 + 2.0f * d3_d1;
      out[4] = d4_d2 - 2.0f * d3_d1;
      out[5] = (d[5] - d[3]) + 4.0f * (d[1] - d[3]);
    }
  }

  // A^T applied to one column (or row) of products: M outputs.
  template <class T>
  static EMBER_WINOGRAD_INLINE void output_1d(const T* m, T* out) {
    if constexpr (M == 2) {
      out[0] = m[0] + m[1] + m[2];
      out[1] = m[1] - m[2] - m[3];
    } else {
      const T s12 = m[1] + m[2], d12 = m[1] - m[2], s34 = m[3] + m[4], d34 = m[3] - m[4];
      out[0] = m[0] + s12 + s34;
      out[1] = d12 + 2.0f * d34;
      out[2] = s12 + 4.0f * s34;
      out[3] = d12 + 8.0f * d34 + m[5];
    }
  }

  // V = B^T d B for a patch d[row][col]; v[a * In + b] is point (a, b).
  template <class T>
  static EMBER_WINOGRAD_INLINE void input_tile(const T d[kIn][kIn], T v[kPoints]) {
    T cols[kIn][kIn];  // cols[j][a]: B^T down column j
    for (int j = 0; j < kIn; ++j) {
      T column[kIn];
      for (int i = 0; i < kIn; ++i) column[i] = d[i][j];
      input_1d(column, cols[j]);
    }
    for (int a = 0; a < kIn; ++a) {
      T row[kIn];
      for (int j = 0; j < kIn; ++j) row[j] = cols[j][a];
      input_1d(row, v + a * kIn);
    }
  }

  // Y = A^T M A for the products m[a * In + b]; y[r][c] is output (r, c) of the tile.
  template <class T>
  static EMBER_WINOGRAD_INLINE void output_tile(const T m[kPoints], T y[kOut][kOut]) {
    T cols[kIn][kOut];  // cols[b][r]: A^T down column b
    for (int b = 0; b < kIn; ++b) {
      T column[kIn];
      for (int a = 0; a < kIn; ++a) column[a] = m[a * kIn + b];
      output_1d(column, cols[b]);
    }
    for (int r = 0; r < kOut; ++r) {
      T row[kIn];
      for (int b = 0; b < kIn; ++b) row[b] = cols[b][r];
      output_1d(row, y[r]);
    }
  }
};

// The tiling of one output plane: tiles of M x M outputs, the last row and column of tiles cut at the plane's edge.
struct WinogradGeometry {
  int64_t N = 0, Cin = 0, Cout = 0, H = 0, W = 0, ph = 0, pw = 0, OH = 0, OW = 0;
  int m = 0;  // outputs per tile side: 2 or 4
  int64_t tiles_h = 0, tiles_w = 0;

  int64_t tiles() const { return tiles_h * tiles_w; }
};

// Which F(m x m, 3x3) a filter of `points` transformed points is for: 2, 4, or 0 for neither.
inline int tile_for_points(int64_t points) { return points == 16 ? 2 : points == 36 ? 4 : 0; }

inline WinogradGeometry winograd_geometry(int64_t N, int64_t Cin, int64_t Cout, int64_t H, int64_t W, int64_t ph,
                                          int64_t pw, int m) {
  WinogradGeometry g;
  g.N = N, g.Cin = Cin, g.Cout = Cout, g.H = H, g.W = W, g.ph = ph, g.pw = pw, g.m = m;
  g.OH = H + 2 * ph - 2, g.OW = W + 2 * pw - 2;
  g.tiles_h = g.OH > 0 ? (g.OH + m - 1) / m : 0;
  g.tiles_w = g.OW > 0 ? (g.OW + m - 1) / m : 0;
  return g;
}

// The geometry from shapes alone (input [N, Cin, H, W], weight [16 or 36, Cin, Cout], padding), for a memory
// function; false, silently, for what check_winograd_conv2d refuses on shape grounds.
bool winograd_geometry(ArrayRef<int32_t> input, ArrayRef<int32_t> weight, ArrayRef<int64_t> padding,
                       WinogradGeometry& g);

// winograd_conv2d.out's checks, shared by every kernel so they refuse the same calls with the same messages:
// shapes, bounds, dtypes (Float) and layout (contiguous), then sizes `out`. On failure logs, records the error on
// ctx and returns false.
bool check_winograd_conv2d(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                           ArrayRef<int64_t> padding, double min, double max, Tensor& out, WinogradGeometry& g);

}  // namespace winograd
}  // namespace ember
