// Winograd's F(4x4, 3x3) at run time: the input and output transforms of ember::winograd_conv2d, written once over
// a value type T, which is float in the portable kernel and a whole vector of tiles or channels in the optimized
// one. The interpolation points are 0, 1, -1, 2, -2 and infinity (Lavin and Gray's choice for F(4, 3)); the weight
// transform G g G^T that goes with them runs at export (exir/lowering/winograd.py), so its matrix lives there.
//
// A 6x6 input patch d becomes V = B^T d B, its product with the transformed filter U is taken point by point (36
// products, summed over input channels), and the 6x6 result M becomes the 4x4 outputs A^T M A. Each 2-d transform is
// the 1-d one down the columns, then along the rows.
#pragma once

#include <stdint.h>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace winograd {

constexpr int kOut = 4;      // outputs per tile side
constexpr int kIn = 6;       // inputs per tile side: kOut + 3 - 1
constexpr int kPoints = 36;  // kIn * kIn: the point-wise products per tile and channel pair

// Always inlined: kernels/optimized instantiates these over vector types inside functions built for AVX2 or
// AVX-512, and an out-of-line copy would be built for the baseline instruction set instead.
#define EMBER_WINOGRAD_INLINE inline __attribute__((always_inline))

// B^T applied to one column (or row) of six inputs. Shared terms first, as the matrix's rows pair up.
template <class T>
EMBER_WINOGRAD_INLINE void input_1d(T d0, T d1, T d2, T d3, T d4, T d5, T out[kIn]) {
  const T d4_d2 = d4 - d2;
  const T d3_d1 = d3 - d1;
  out[0] = d4_d2 + 4.0f * (d0 - d2);
  out[1] = (d3 + d4) - 4.0f * (d1 + d2);
  out[2] = (d4 - d3) + 4.0f * (d1 - d2);
  out[3] = d4_d2 + 2.0f * d3_d1;
  out[4] = d4_d2 - 2.0f * d3_d1;
  out[5] = (d5 - d3) + 4.0f * (d1 - d3);
}

// A^T applied to one column (or row) of six products: four outputs.
template <class T>
EMBER_WINOGRAD_INLINE void output_1d(T m0, T m1, T m2, T m3, T m4, T m5, T out[kOut]) {
  const T s12 = m1 + m2, d12 = m1 - m2, s34 = m3 + m4, d34 = m3 - m4;
  out[0] = m0 + s12 + s34;
  out[1] = d12 + 2.0f * d34;
  out[2] = s12 + 4.0f * s34;
  out[3] = d12 + 8.0f * d34 + m5;
}

// V = B^T d B for a patch d[row][col]; v[a * 6 + b] is point (a, b).
template <class T>
EMBER_WINOGRAD_INLINE void input_tile(const T d[kIn][kIn], T v[kPoints]) {
  T cols[kIn][kIn];  // cols[a][j]: B^T down column j
  for (int j = 0; j < kIn; ++j) {
    T o[kIn];
    input_1d(d[0][j], d[1][j], d[2][j], d[3][j], d[4][j], d[5][j], o);
    for (int a = 0; a < kIn; ++a) cols[a][j] = o[a];
  }
  for (int a = 0; a < kIn; ++a) {
    input_1d(cols[a][0], cols[a][1], cols[a][2], cols[a][3], cols[a][4], cols[a][5], v + a * kIn);
  }
}

// Y = A^T M A for the 36 products m[a * 6 + b]; y[r][c] is output (r, c) of the tile.
template <class T>
EMBER_WINOGRAD_INLINE void output_tile(const T m[kPoints], T y[kOut][kOut]) {
  T cols[kOut][kIn];  // cols[r][b]: A^T down column b
  for (int b = 0; b < kIn; ++b) {
    T o[kOut];
    output_1d(m[b], m[kIn + b], m[2 * kIn + b], m[3 * kIn + b], m[4 * kIn + b], m[5 * kIn + b], o);
    for (int r = 0; r < kOut; ++r) cols[r][b] = o[r];
  }
  for (int r = 0; r < kOut; ++r)
    output_1d(cols[r][0], cols[r][1], cols[r][2], cols[r][3], cols[r][4], cols[r][5], y[r]);
}

// The tiling of one output plane: tiles of 4x4 outputs, the last row and column of tiles cut at the plane's edge.
struct WinogradGeometry {
  int64_t N = 0, Cin = 0, Cout = 0, H = 0, W = 0, ph = 0, pw = 0, OH = 0, OW = 0;
  int64_t tiles_h = 0, tiles_w = 0;

  int64_t tiles() const { return tiles_h * tiles_w; }
};

inline WinogradGeometry winograd_geometry(int64_t N, int64_t Cin, int64_t Cout, int64_t H, int64_t W, int64_t ph,
                                          int64_t pw) {
  WinogradGeometry g;
  g.N = N, g.Cin = Cin, g.Cout = Cout, g.H = H, g.W = W, g.ph = ph, g.pw = pw;
  g.OH = H + 2 * ph - 2, g.OW = W + 2 * pw - 2;
  g.tiles_h = g.OH > 0 ? (g.OH + kOut - 1) / kOut : 0;
  g.tiles_w = g.OW > 0 ? (g.OW + kOut - 1) / kOut : 0;
  return g;
}

// The geometry from shapes alone (input [N, Cin, H, W], weight [36, Cin, Cout], padding), for a memory function;
// false, silently, for what check_winograd_conv2d refuses on shape grounds.
bool winograd_geometry(ArrayRef<int32_t> input, ArrayRef<int32_t> weight, ArrayRef<int64_t> padding,
                       WinogradGeometry& g);

// winograd_conv2d.out's checks, shared by every kernel so they refuse the same calls with the same messages:
// shapes, bounds, dtypes (Float) and layout (contiguous), then sizes `out`. On failure logs, records the error on
// ctx and returns false.
bool check_winograd_conv2d(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                           ArrayRef<int64_t> padding, double min, double max, Tensor& out, WinogradGeometry& g);

}  // namespace winograd
}  // namespace ember
