// The register tiles and blocking loops of the SGEMM, as templates over the vector type and tile shape. Included by
// gemm.cc (the baseline instruction set) and gemm_avx2.cc (every function in it built for AVX2+FMA), each
// instantiating its own tiles. Everything here is in an unnamed namespace on purpose: each translation unit keeps
// its own copy, so an AVX2-compiled helper can never be merged with, and called in place of, the baseline one.
//
// A tile of MR rows x NR columns of C lives in registers while K runs; B is read a row of NR floats at a time and A
// one float per row, so neither is packed and no scratch memory is needed beyond a zero-padded copy of the right
// edge. Blocking keeps a KC x NR panel of B in L1 while MC rows of A stream from L2 (for a B wider than L2 and a C
// of many rows, see sgemm_blocked's column chunks). Tile shapes per instruction set are chosen so the
// accumulators, one B row and one broadcast A value fit the register file without spilling.
#pragma once

#include <stdint.h>

#include "compute/gemm.h"
#include "compute/simd.h"

namespace ember {
namespace optimized {
namespace {

// One float of A in every lane. gemm_avx2.cc specializes this to a single broadcast load; elsewhere vsplat's
// scalar add and shuffle are what gcc makes of every generic spelling (lane-by-lane fills come out as inserts).
template <class V>
EMBER_ALWAYS_INLINE V broadcast(const float* p) {
  return vsplat<V>(*p);
}

constexpr int64_t kKC = kPackedKBlock;  // K per block: a KC x NR panel of B is 8-24 KB
constexpr int64_t kMC = 96;   // rows of A per block (a multiple of every MR below)
constexpr int64_t kL2Floats = 48 * 1024;  // a block of B that stays in L2 (192 KB, with room for A and C)
// Up to this many rows of C, writing them all at once is cheaper than re-reading B from L2 per strip (measured per
// layer on MobileNetV2 224: 16-64 rows faster in panel order, 96 and 144 rows in strips).
constexpr int64_t kFewStreams = 64;

// C[m0 .. m0+MR, n0 .. n0+nc] for k in [k0, k0+kc). The first K block writes C, later ones add to it, and the
// last applies alpha, the biases and the clamp.
// B's panel is read at `b` with row stride `ldb`, always NR columns wide (at the right edge, possibly from a
// zero-padded copy); nc of them are stored: all NR unless Edge, which alone carries the code for a partial vector.
template <class V, int MR, int NV, bool Edge>
EMBER_ALWAYS_INLINE void tile(const Gemm& g, const float* b, int64_t ldb, int64_t m0, int64_t n0, int64_t k0,
                              int64_t kc, int64_t nc, bool first, bool last) {
  constexpr int L = Lanes<V>::value;
  const float* a = g.a + m0 * g.lda + k0;
  V acc[MR][NV];
  EMBER_UNROLL
  for (int r = 0; r < MR; ++r) EMBER_UNROLL
  for (int v = 0; v < NV; ++v) acc[r][v] = V{};
  for (int64_t k = 0; k < kc; ++k) {
    V bv[NV];
    EMBER_UNROLL
    for (int v = 0; v < NV; ++v) bv[v] = vload<V>(b + k * ldb + v * L);
    EMBER_UNROLL
    for (int r = 0; r < MR; ++r) {
      const V av = broadcast<V>(a + r * g.lda + k);
      EMBER_UNROLL
      for (int v = 0; v < NV; ++v) acc[r][v] += av * bv[v];
    }
  }
  // The epilogue in registers, straight to C; at the right edge, a last partial vector through a buffer, lane by
  // lane in a loop of its own (unrolled per row, it would be most of an edge tile's code).
  const V al = vsplat<V>(g.alpha), lo = vsplat<V>(g.lo), hi = vsplat<V>(g.hi);
  const int64_t whole = Edge ? nc / L : NV, rest = Edge ? nc % L : 0;
  float part[Edge ? MR : 1][L];
  EMBER_UNROLL
  for (int r = 0; r < MR; ++r) {
    const V rb = vsplat<V>(g.row_bias ? g.row_bias[m0 + r] : 0.0f);
    float* crow = g.c + (m0 + r) * g.ldc + n0;
    EMBER_UNROLL
    for (int v = 0; v < NV; ++v) {
      if (!Edge || v < whole) {
        V x = acc[r][v];
        if (!first) x += vload<V>(crow + v * L);
        if (last) {
          x = x * al + rb;
          if (g.col_bias) x += vload<V>(g.col_bias + n0 + v * L);
          x = x < lo ? lo : x;
          x = x > hi ? hi : x;
        }
        vstore<V>(crow + v * L, x);
      } else if (v == whole) {
        vstore<V>(part[Edge ? r : 0], acc[r][v]);
      }
    }
  }
  if (!Edge || rest == 0) return;
  const float* cb = g.col_bias ? g.col_bias + n0 + whole * L : nullptr;
  for (int r = 0; r < MR; ++r) {
    const float rbs = g.row_bias ? g.row_bias[m0 + r] : 0.0f;
    float* cp = g.c + (m0 + r) * g.ldc + n0 + whole * L;
    for (int64_t j = 0; j < rest; ++j) {
      float x = part[r][j];
      if (!first) x += cp[j];
      if (last) {
        x = g.alpha * x + rbs + (cb ? cb[j] : 0.0f);
        x = x < g.lo ? g.lo : x;
        x = x > g.hi ? g.hi : x;
      }
      cp[j] = x;
    }
  }
}

// Rows [m0, m0 + mr) of C, mr <= MR: one tile of MR rows, or the remainder in tiles of 8, 4, 2 and 1 rows, so
// each tile width has a handful of row counts compiled, not all of them.
template <class V, int MR, int NV, bool Edge>
EMBER_ALWAYS_INLINE void rows(int64_t mr, const Gemm& g, const float* b, int64_t ldb, int64_t m0, int64_t n0,
                              int64_t k0, int64_t kc, int64_t nc, bool first, bool last) {
  if (mr == MR) return tile<V, MR, NV, Edge>(g, b, ldb, m0, n0, k0, kc, nc, first, last);
  if constexpr (MR > 8) {
    if (mr >= 8) tile<V, 8, NV, Edge>(g, b, ldb, m0, n0, k0, kc, nc, first, last), m0 += 8, mr -= 8;
  }
  if constexpr (MR > 4) {
    if (mr >= 4) tile<V, 4, NV, Edge>(g, b, ldb, m0, n0, k0, kc, nc, first, last), m0 += 4, mr -= 4;
  }
  if constexpr (MR > 2) {
    if (mr >= 2) tile<V, 2, NV, Edge>(g, b, ldb, m0, n0, k0, kc, nc, first, last), m0 += 2, mr -= 2;
  }
  if (mr >= 1) tile<V, 1, NV, Edge>(g, b, ldb, m0, n0, k0, kc, nc, first, last);
}

// One tile-column of the right edge, NV (1 or 2) vectors wide: columns [n0, n_end), from a zero-padded copy of B
// when they are fewer than NV vectors. Narrow tiles have more rows than the main tile where that is small (at least
// eight at one vector, six at two), so enough independent accumulators hide the multiply-add latency.
template <class V, int MR, int NV>
EMBER_ALWAYS_INLINE void edge_tiles(const Gemm& g, float* scratch, bool fill, int64_t m_begin, int64_t m_end,
                                    int64_t n0, int64_t n_end, int64_t k0, int64_t kc, bool first, bool last) {
  constexpr int NR = NV * Lanes<V>::value;
  constexpr int ER = MR > 4 + 4 / NV ? MR : 4 + 4 / NV;  // 8 rows at one vector, 6 at two
  static_assert(kMC % ER == 0, "row blocks must hold whole tiles");
  const int64_t nc = n_end - n0;
  const float* b = g.b + k0 * g.ldb + n0;
  int64_t ldb = g.ldb;
  if (nc < NR) {
    // `fill` is false when this K block's copy is already there (row blocks after the first).
    for (int64_t k = 0; fill && k < kc; ++k) {
      float* d = scratch + k * NR;
      for (int64_t j = 0; j < nc; ++j) d[j] = b[k * g.ldb + j];
      for (int64_t j = nc; j < NR; ++j) d[j] = 0.0f;
    }
    b = scratch, ldb = NR;
  }
  for (int64_t m0 = m_begin; m0 < m_end; m0 += ER) {
    const int64_t mr = m_end - m0 < ER ? m_end - m0 : ER;
    rows<V, ER, NV, true>(mr, g, b, ldb, m0, n0, k0, kc, nc, first, last);
  }
}

// The right edge, columns [n0, n_end), fewer than a whole tile: in tiles one or two vectors wide, so N = 49 (a 7x7
// plane) costs two whole tiles and one a vector wide, and N = 9 (3x3) one two vectors wide, not a whole tile each.
// Only the last can be partial, so `scratch` holds at most one copy.
template <class V, int MR>
EMBER_ALWAYS_INLINE void edge(const Gemm& g, float* scratch, bool fill, int64_t m_begin, int64_t m_end, int64_t n0,
                              int64_t n_end, int64_t k0, int64_t kc, bool first, bool last) {
  constexpr int64_t L = Lanes<V>::value;
  while (n_end - n0 > L) {
    const int64_t e = n_end - n0 < 2 * L ? n_end : n0 + 2 * L;
    edge_tiles<V, MR, 2>(g, scratch, fill, m_begin, m_end, n0, e, k0, kc, first, last);
    n0 = e;
  }
  if (n0 < n_end) edge_tiles<V, MR, 1>(g, scratch, fill, m_begin, m_end, n0, n_end, k0, kc, first, last);
}

// Copies rows [0, kc) of an NR-wide panel of B (row stride ldb) into `panel`, contiguous.
template <class V, int NV>
EMBER_ALWAYS_INLINE void pack_panel(const float* b, int64_t ldb, int64_t kc, float* panel) {
  constexpr int L = Lanes<V>::value;
  for (int64_t k = 0; k < kc; ++k) {
    EMBER_UNROLL
    for (int v = 0; v < NV; ++v) vstore<V>(panel + k * NV * L + v * L, vload<V>(b + k * ldb + v * L));
  }
}

// Below this many rows of B a panel read in place fits L1 already (128 rows of two or three lines, 16-24 KB), and
// copying it cost EfficientNet-B0's pointwise layers (K = 40-112) 4-7%.
constexpr int64_t kPackMinK = 128;

// Rows of C that one packed panel of B serves in a single pass, when A's K block (M x KC floats, 256 KB at most)
// stays in L2 while each panel passes over it once.
constexpr int64_t kPackedAFloats = 64 * 1024;

// Pack: copy each NR-wide panel of B contiguous (KC x NR floats, 24 KB for AVX2's 4 x 24 tile) before the rows of C
// use it, so they take it from L1. Read in place, a panel's rows are ldb apart: two or three partly used lines
// each, 40 KB for the panel, past L1, and with ldb a multiple of 1 K floats every row falls in the same L1 set.
// A transformer's linear layers (M = 128-197 tokens, K = 192-1024, N up to 4 K) fit kPackedAFloats: all of M is
// one row block, whatever N, and each panel is copied once per K block.
template <class V, int MR, int NV, bool Pack>
EMBER_ALWAYS_INLINE void sgemm_blocked(const Gemm& g) {
  constexpr int64_t NR = NV * Lanes<V>::value;
  static_assert(kMC % MR == 0, "row blocks must hold whole tiles");
  float scratch[kKC * 2 * Lanes<V>::value];
  alignas(64) float panel[Pack ? kKC * NR : 1];
  const bool one_block = Pack && g.K >= kPackMinK && g.M * (g.K < kKC ? g.K : kKC) <= kPackedAFloats;
  const int64_t mc = one_block ? g.M : kMC;
  // (M or N of 0 runs no tile.)
  for (int64_t k0 = 0; k0 < g.K; k0 += kKC) {
    const int64_t kc = g.K - k0 < kKC ? g.K - k0 : kKC;
    const bool first = k0 == 0, last = k0 + kc == g.K;
    int64_t chunk = kL2Floats / kc / NR * NR;
    if (chunk < NR) chunk = NR;
    if (one_block || g.N <= chunk || g.M <= kFewStreams) {
      // B's block fits L2, C has few rows, or all of C is one packed row block: one NR-wide panel of B stays in L1
      // while a row block of C (MC rows, or all M) passes over it.
      for (int64_t mb = 0; mb < g.M; mb += mc) {
        const int64_t me = g.M - mb < mc ? g.M : mb + mc;
        int64_t n0 = 0;
        for (; n0 + NR <= g.N; n0 += NR) {
          const float* b = g.b + k0 * g.ldb + n0;
          int64_t ldb = g.ldb;
          if (one_block || (Pack && kc >= kPackMinK)) {
            pack_panel<V, NV>(b, ldb, kc, panel);
            b = panel, ldb = NR;
          }
          for (int64_t m0 = mb; m0 < me; m0 += MR) {
            const int64_t mr = me - m0 < MR ? me - m0 : MR;
            rows<V, MR, NV, false>(mr, g, b, ldb, m0, n0, k0, kc, NR, first, last);
          }
        }
        if (n0 < g.N) edge<V, MR>(g, scratch, mb == 0, mb, me, n0, g.N, k0, kc, first, last);
      }
      continue;
    }
    // B is wider than L2 (a large plane) and C has many rows: per chunk of columns that fits, each MR-row strip of
    // C is written left to right, MR write streams instead of MC, and the chunk is re-read from L2. MobileNetV2's
    // 112x112 expansion (96 x 16 x 12544) ran in 0.9 ms instead of 1.6 ms this way, with the model's other layers
    // in between.
    for (int64_t c0 = 0; c0 < g.N; c0 += chunk) {
      const int64_t ce = g.N - c0 < chunk ? g.N : c0 + chunk;
      const int64_t whole = c0 + (ce - c0) / NR * NR;
      for (int64_t m0 = 0; m0 < g.M; m0 += MR) {
        const int64_t mr = g.M - m0 < MR ? g.M - m0 : MR;
        for (int64_t n0 = c0; n0 < whole; n0 += NR) {
          rows<V, MR, NV, false>(mr, g, g.b + k0 * g.ldb + n0, g.ldb, m0, n0, k0, kc, NR, first, last);
        }
      }
      if (whole < ce) edge<V, MR>(g, scratch, true, 0, g.M, whole, ce, k0, kc, first, last);
    }
  }
}

// Few rows (a linear layer at batch 1-4): the GEMM is a pass over B, which is the weights and often larger than
// L2. Reading B's rows in order, eight (then four) at a time, lets the hardware prefetcher stream it; the rows of C
// stay in L1 and take the updates in one pass.
constexpr int64_t kFewRows = 4;

// Rows [k, k + 4Q) of B into every row of C: Q runs of four per load and store of C. Each element takes the same
// sums in the same order whatever Q is (four products, then added to C, run by run); more runs per pass only
// spare C's loads and stores (8 rows a pass: SmolLM-135M fp32 decode 51-53 -> 55-57 tok/s on AVX2).
template <class V, int Q>
EMBER_ALWAYS_INLINE void few_rows_pass(const Gemm& g, int64_t k) {
  constexpr int L = Lanes<V>::value;
  const float* b[4 * Q];
  EMBER_UNROLL
  for (int i = 0; i < 4 * Q; ++i) b[i] = g.b + (k + i) * g.ldb;
  for (int64_t m = 0; m < g.M; ++m) {
    const float* a = g.a + m * g.lda + k;
    float* crow = g.c + m * g.ldc;
    V av[4 * Q];
    EMBER_UNROLL
    for (int i = 0; i < 4 * Q; ++i) av[i] = broadcast<V>(a + i);
    int64_t n = 0;
    for (; n + L <= g.N; n += L) {
      V c = vload<V>(crow + n);
      EMBER_UNROLL
      for (int r = 0; r < 4 * Q; r += 4) {
        c += av[r] * vload<V>(b[r] + n) + av[r + 1] * vload<V>(b[r + 1] + n) + av[r + 2] * vload<V>(b[r + 2] + n) +
             av[r + 3] * vload<V>(b[r + 3] + n);
      }
      vstore<V>(crow + n, c);
    }
    for (; n < g.N; ++n) {
      EMBER_UNROLL
      for (int r = 0; r < 4 * Q; r += 4) {
        crow[n] += a[r] * b[r][n] + a[r + 1] * b[r + 1][n] + a[r + 2] * b[r + 2][n] + a[r + 3] * b[r + 3][n];
      }
    }
  }
}

template <class V>
EMBER_ALWAYS_INLINE void sgemm_few_rows(const Gemm& g) {
  const int64_t N = g.N, K = g.K;
  for (int64_t m = 0; m < g.M; ++m) {
    float* crow = g.c + m * g.ldc;
    for (int64_t n = 0; n < N; ++n) crow[n] = 0.0f;
  }
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) few_rows_pass<V, 2>(g, k);
  for (; k + 4 <= K; k += 4) few_rows_pass<V, 1>(g, k);
  for (; k < K; ++k) {
    const float* b0 = g.b + k * g.ldb;
    for (int64_t m = 0; m < g.M; ++m) {
      const float a0 = g.a[m * g.lda + k];
      float* crow = g.c + m * g.ldc;
      for (int64_t n = 0; n < N; ++n) crow[n] += a0 * b0[n];
    }
  }
  for (int64_t m = 0; m < g.M; ++m) {
    float* crow = g.c + m * g.ldc;
    const float rb = g.row_bias ? g.row_bias[m] : 0.0f;
    const float* cb = g.col_bias;
    for (int64_t n = 0; n < N; ++n) {
      float x = g.alpha * crow[n] + rb + (cb ? cb[n] : 0.0f);
      x = x < g.lo ? g.lo : x;
      crow[n] = x > g.hi ? g.hi : x;
    }
  }
}

// B filled by a function (gemm.h's PackedB), N <= kPackedMaxN. Per K block, every panel is filled once into
// scratch, as sgemm_blocked splits columns: whole NR-wide panels, then the right edge in panels two vectors and one
// vector wide (zero-padded, so the tiles need no copy of their own); then each row block of C passes over them,
// A's block in L2 and one panel at a time in L1. With a pool, the panels are filled in parallel, then rows are
// computed in parallel (a contiguous share of rows per task, so each thread keeps its part of A); each element's
// sum runs over K in the same order either way.
template <class V, int MR, int NV>
struct PackedCall {
  static constexpr int64_t L = Lanes<V>::value, NR = NV * L;
  static constexpr int ER2 = MR > 6 ? MR : 6, ER1 = MR > 8 ? MR : 8;  // rows of the edge tiles, as edge_tiles's
  static_assert(NR <= kPanelMaxWidth, "PackedB's panels are at most kPanelMaxWidth wide");
  static_assert(kMC % ER2 == 0 && kMC % ER1 == 0, "row blocks must hold whole tiles");

  const Gemm& g;
  const PackedB& pb;
  float* scratch;
  int64_t whole, twos, ones;  // panels NR, 2L and L wide
  int64_t k0 = 0, kc = 0, mc = 0;
  bool first = false, last = false;

  PackedCall(const Gemm& gm, const PackedB& b, float* s) : g(gm), pb(b), scratch(s) {
    whole = g.N / NR;
    const int64_t rest = g.N - whole * NR;
    twos = rest > L ? (rest - L + 2 * L - 1) / (2 * L) : 0;
    ones = rest - twos * 2 * L > 0 ? 1 : 0;
  }
  int64_t panels() const { return whole + twos + ones; }

  // Panel p: first column, columns, width, and offset (in floats per row of the K block) in scratch.
  EMBER_ALWAYS_INLINE void panel(int64_t p, int64_t& n0, int64_t& n, int64_t& width, int64_t& at) const {
    if (p < whole) {
      n0 = p * NR, width = NR, n = NR, at = n0;
    } else if (p < whole + twos) {
      n0 = whole * NR + (p - whole) * 2 * L, width = 2 * L, at = n0;
      n = g.N - n0 < 2 * L ? g.N - n0 : 2 * L;
    } else {
      n0 = whole * NR + twos * 2 * L, width = L, at = n0, n = g.N - n0;
    }
  }

  void block(int64_t k) {
    k0 = k, kc = g.K - k0 < kKC ? g.K - k0 : kKC;
    first = k0 == 0, last = k0 + kc == g.K;
    mc = g.M * kc <= kPackedAFloats ? g.M : kMC;
  }

  void fill(int64_t p) const {
    int64_t n0, n, width, at;
    panel(p, n0, n, width, at);
    pb.fill(pb.ctx, k0, kc, n0, n, width, scratch + kc * at);
  }

  // Rows [r0, r1) of C for this K block, over every panel, in row blocks of mc.
  void rows_of(int64_t r0, int64_t r1) const {
    for (int64_t mb = r0; mb < r1; mb += mc) {
      const int64_t me = r1 - mb < mc ? r1 : mb + mc;
      for (int64_t p = 0; p < panels(); ++p) {
        int64_t n0, n, width, at;
        panel(p, n0, n, width, at);
        const float* b = scratch + kc * at;
        if (p < whole) {  // (not width == NR: with two-vector tiles, an edge panel is NR wide too, but partial)
          for (int64_t m0 = mb; m0 < me; m0 += MR) {
            rows<V, MR, NV, false>(me - m0 < MR ? me - m0 : MR, g, b, NR, m0, n0, k0, kc, NR, first, last);
          }
        } else if (p < whole + twos) {
          for (int64_t m0 = mb; m0 < me; m0 += ER2) {
            rows<V, ER2, 2, true>(me - m0 < ER2 ? me - m0 : ER2, g, b, 2 * L, m0, n0, k0, kc, n, first, last);
          }
        } else {
          for (int64_t m0 = mb; m0 < me; m0 += ER1) {
            rows<V, ER1, 1, true>(me - m0 < ER1 ? me - m0 : ER1, g, b, L, m0, n0, k0, kc, n, first, last);
          }
        }
      }
    }
  }
};

template <class V, int MR, int NV>
EMBER_ALWAYS_INLINE void sgemm_packed_any(const Gemm& g, const PackedB& pb, float* scratch, ThreadPool* pool) {
  PackedCall<V, MR, NV> call(g, pb, scratch);
  const int threads = pool != nullptr ? pool->threads() : 1;
  for (int64_t k0 = 0; k0 < g.K; k0 += kKC) {
    call.block(k0);
    if (threads <= 1) {
      for (int64_t p = 0; p < call.panels(); ++p) call.fill(p);
      call.rows_of(0, g.M);
      continue;
    }
    parallel_for(pool, call.panels(), 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) call.fill(p);
    });
    // A contiguous share of rows per thread, in whole row blocks of 8.
    const int64_t share = ((g.M + threads - 1) / threads + 7) / 8 * 8;
    parallel_for(pool, g.M, share, [&](int64_t b, int64_t e) { call.rows_of(b, e); });
  }
}

// Pack: whether this instruction set's tiles copy B's panels (a KC x NR buffer on the stack; off where the stack
// is small or the tile narrow).
template <class V, int MR, int NV, bool Pack = false>
EMBER_ALWAYS_INLINE void sgemm_any(const Gemm& g) {
  if (g.M <= kFewRows) return sgemm_few_rows<V>(g);
  sgemm_blocked<V, MR, NV, Pack>(g);
}

// An empty sum: C is the biases alone.
inline void bias_only(const Gemm& g) {
  for (int64_t m = 0; m < g.M; ++m) {
    for (int64_t n = 0; n < g.N; ++n) {
      float x = (g.row_bias ? g.row_bias[m] : 0.0f) + (g.col_bias ? g.col_bias[n] : 0.0f);
      x = x < g.lo ? g.lo : x;
      g.c[m * g.ldc + n] = x > g.hi ? g.hi : x;
    }
  }
}

}  // namespace

#if EMBER_SIMD_X86_DISPATCH
// gemm_avx2.cc: 4 x 24 tiles of AVX2+FMA. Only for CPUs where cpu_has_avx2_fma().
void sgemm_avx2(const Gemm& g);
void sgemm_packed_avx2(const Gemm& g, const PackedB& b, float* scratch, ThreadPool* pool);
// gemm_avx512.cc: 8 x 48 tiles of AVX-512F. Only for CPUs where cpu_has_avx512f().
void sgemm_avx512(const Gemm& g);
void sgemm_packed_avx512(const Gemm& g, const PackedB& b, float* scratch, ThreadPool* pool);
#endif

}  // namespace optimized
}  // namespace ember
