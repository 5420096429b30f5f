// The tiled GEMM against a double-precision reference: every edge of the tiling (rows not a multiple of MR,
// columns not a multiple of NR, K across several blocks, K = 0), strides wider than the matrices, the epilogue.
#include "compute/gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <vector>

#include "compute/simd.h"
#include "runtime/threads/posix_thread_pool.h"

namespace ember {
namespace optimized {
namespace {

struct Case {
  int64_t M, N, K;
};

float next(uint32_t& s) {
  s = s * 1664525u + 1013904223u;
  return static_cast<float>(s >> 8) / static_cast<float>(1u << 24) - 0.5f;
}

// B for sgemm_packed: filled from the plain matrix, so both entry points are checked against one reference.
// Asserts each fill's arguments stay inside the matrix and its panel.
struct MatrixB {
  const float* b;
  int64_t K, N, ldb;
};

void fill_from_matrix(const void* ctx, int64_t k0, int64_t kc, int64_t n0, int64_t n, int64_t width, float* dst) {
  const MatrixB& m = *static_cast<const MatrixB*>(ctx);
  EXPECT_TRUE(k0 >= 0 && kc > 0 && k0 + kc <= m.K && kc <= kPackedKBlock);
  EXPECT_TRUE(n0 >= 0 && n > 0 && n0 + n <= m.N && n <= width && width <= kPanelMaxWidth);
  for (int64_t k = 0; k < kc; ++k) {
    for (int64_t j = 0; j < width; ++j) dst[k * width + j] = j < n ? m.b[(k0 + k) * m.ldb + n0 + j] : 0.0f;
  }
}

std::vector<float>* g_packed_scratch;
void (*g_packed_fn)(const Gemm&, const PackedB&, float*, ThreadPool*);

// sgemm's signature over sgemm_packed (N <= kPackedMaxN only), with a scratch exactly as large as it asks for.
void via_packed(const Gemm& g) {
  MatrixB m{g.b, g.K, g.N, g.ldb};
  PackedB pb{&fill_from_matrix, &m};
  g_packed_scratch->assign(static_cast<size_t>(sgemm_packed_scratch_floats(g.K, g.N)), NAN);
  g_packed_fn(g, pb, g_packed_scratch->data(), nullptr);
}

void check(void (*fn)(const Gemm&), Case c, bool biases, float alpha, float lo, float hi) {
  uint32_t seed = static_cast<uint32_t>(c.M * 7919 + c.N * 104729 + c.K);
  const int64_t lda = c.K + 3, ldb = c.N + 5, ldc = c.N + 2;  // strides wider than rows, as in tiles of a conv
  std::vector<float> a(c.M * lda), b((c.K ? c.K : 1) * ldb), rb(c.M), cb(c.N);
  std::vector<float> out(c.M * ldc, 1234.0f);
  for (auto* v : {&a, &b, &rb, &cb})
    for (float& x : *v) x = next(seed);
  Gemm g;
  g.M = c.M, g.N = c.N, g.K = c.K, g.a = a.data(), g.lda = lda, g.b = b.data(), g.ldb = ldb;
  g.c = out.data(), g.ldc = ldc, g.alpha = alpha, g.lo = lo, g.hi = hi;
  if (biases) g.row_bias = rb.data(), g.col_bias = cb.data();
  fn(g);
  for (int64_t m = 0; m < c.M; ++m) {
    for (int64_t n = 0; n < c.N; ++n) {
      double s = 0;
      for (int64_t k = 0; k < c.K; ++k) s += static_cast<double>(a[m * lda + k]) * b[k * ldb + n];
      s = alpha * s + (biases ? rb[m] + cb[n] : 0.0);
      s = std::fmin(std::fmax(s, lo), hi);
      // float accumulation of K products of values in [-0.5, 0.5): error grows like sqrt(K) ulps of the sum.
      ASSERT_NEAR(out[m * ldc + n], s, 1e-5 * (1 + std::sqrt(static_cast<double>(c.K))))
          << "M=" << c.M << " N=" << c.N << " K=" << c.K << " at (" << m << ", " << n << ")";
    }
    // Padding between rows of C is never written.
    for (int64_t n = c.N; n < ldc && m + 1 < c.M; ++n) ASSERT_EQ(out[m * ldc + n], 1234.0f);
  }
}

// {11, 44, 30} and {29, 20, 40} end in an edge of a whole two-vector tile and a partial one-vector tile (AVX2).
// With AVX2, K >= 128 and M x min(K, 256) up to 64 K run as one row block over packed copies of B's panels;
// beyond that AVX2 takes the baseline's row blocks: {300, 250, 300} is wider than a block of B in L2 with enough
// rows to run in column chunks, {260, 30, 260} fits it (its first K block packed, its 4-row last one not). Without AVX2, {70, 250, 300} and {67, 1000, 64} run in column chunks
// (the first in its first K block only); {9, 1000, 64} is as wide with too few rows.
const Case kCases[] = {{1, 10, 256},
                       {1, 256, 784},
                       {6, 16, 256},
                       {7, 17, 300},
                       {13, 9, 5},
                       {96, 48, 16},
                       {100, 37, 600},
                       {1, 1, 1},
                       {5, 3, 0},
                       {97, 33, 513},
                       {2, 1, 70},
                       {12, 8, 8},
                       {70, 250, 300},
                       {67, 1000, 64},
                       {9, 1000, 64},
                       {11, 44, 30},
                       {29, 20, 40},
                       {300, 250, 300},
                       {260, 30, 260},
                       // Up to 4 rows: K = 13 and 6 run 8 rows of B at a time, then 4, then 1; N = 40 and
                       // 23 leave partial 16- and 8-float vectors (AVX-512 and AVX2).
                       {3, 40, 13},
                       {4, 23, 6}};

TEST(Gemm, MatchesReference) {
  for (const Case& c : kCases) check(&sgemm, c, false, 1.0f, -INFINITY, INFINITY);
}

// The AVX2 tiles where this CPU would take AVX-512's.
TEST(Gemm, Avx2PathMatchesReference) {
  limit_x86_isa(X86Isa::kAvx2);
  for (const Case& c : kCases) check(&sgemm, c, false, 1.0f, -INFINITY, INFINITY);
  limit_x86_isa(X86Isa::kAvx512);
}

TEST(Gemm, BaselinePathMatchesReference) {
  for (const Case& c : kCases) check(&sgemm_baseline, c, false, 1.0f, -INFINITY, INFINITY);
}

TEST(Gemm, EpilogueScalesAddsBiasesAndClamps) {
  for (const Case& c : kCases) {
    check(&sgemm, c, true, 0.5f, 0.0f, 6.0f);
    check(&sgemm_baseline, c, true, -2.0f, -0.25f, 0.25f);
  }
}

// Every case the packed entry point takes (N <= 192, K > 0), on every instruction set (AVX-512's 48-wide panels,
// AVX2's 24-wide ones where this CPU would take AVX-512's, the baseline), with and without the epilogue: the
// scratch is sized by sgemm_packed_scratch_floats and starts as NaN, so a panel read past what was filled shows up
// in C.
TEST(Gemm, PackedBMatchesReference) {
  std::vector<float> scratch;
  g_packed_scratch = &scratch;
  const Case more[] = {{64, 192, 576}, {512, 49, 600}, {33, 191, 27}, {7, 25, 1}, {128, 100, 1152}};
  for (int path = 0; path < 3; ++path) {
    g_packed_fn = path == 2 ? &sgemm_packed_baseline : &sgemm_packed;
    limit_x86_isa(path == 1 ? X86Isa::kAvx2 : X86Isa::kAvx512);
    for (const Case& c : kCases) {
      if (c.N > kPackedMaxN || c.K == 0) continue;
      check(&via_packed, c, false, 1.0f, -INFINITY, INFINITY);
      check(&via_packed, c, true, 0.5f, 0.0f, 6.0f);
    }
    for (const Case& c : more) check(&via_packed, c, true, 1.0f, -INFINITY, INFINITY);
  }
  limit_x86_isa(X86Isa::kAvx512);
}

// Split across threads, every entry point gives sgemm's result bit for bit: the same sums in the same order, only on
// other threads. Shapes reach the column split, the row split (C narrower than the column quantum), and no split.
TEST(Gemm, ThreadsGiveTheSameBits) {
  const Case shapes[] = {{64, 3136, 576}, {512, 49, 600}, {300, 250, 300}, {50, 30, 40},
                         {4, 1000, 256},  {1, 4096, 64},  {97, 33, 513},   {7, 17, 300}};
  for (int threads : {2, 3}) {
    auto pool = PosixThreadPool::create(threads);
    ASSERT_TRUE(pool.ok());
    for (const Case& c : shapes) {
      uint32_t seed = static_cast<uint32_t>(c.M * 31 + c.N * 17 + c.K);
      std::vector<float> a(c.M * c.K), b(c.K * c.N), rb(c.M), cb(c.N);
      for (auto* v : {&a, &b, &rb, &cb})
        for (float& x : *v) x = next(seed);
      Gemm g;
      g.M = c.M, g.N = c.N, g.K = c.K, g.a = a.data(), g.lda = c.K, g.b = b.data(), g.ldb = c.N, g.ldc = c.N;
      g.row_bias = rb.data(), g.col_bias = cb.data(), g.lo = -0.5f, g.hi = 4.0f;
      std::vector<float> one(c.M * c.N), many(c.M * c.N, NAN);
      g.c = one.data();
      sgemm(g);
      g.c = many.data();
      sgemm(g, pool.get());
      ASSERT_EQ(0, memcmp(one.data(), many.data(), one.size() * sizeof(float)))
          << threads << " threads, M=" << c.M << " N=" << c.N << " K=" << c.K;
      if (c.N <= kPackedMaxN) {
        MatrixB m{b.data(), c.K, c.N, c.N};
        PackedB pb{&fill_from_matrix, &m};
        std::vector<float> scratch(static_cast<size_t>(sgemm_packed_scratch_floats(c.K, c.N)));
        std::fill(many.begin(), many.end(), NAN);
        sgemm_packed(g, pb, scratch.data(), pool.get());
        ASSERT_EQ(0, memcmp(one.data(), many.data(), one.size() * sizeof(float)))
            << "packed, " << threads << " threads, M=" << c.M << " N=" << c.N << " K=" << c.K;
      }
    }
    PosixThreadPool::destroy(pool.get());
  }
}

}  // namespace
}  // namespace optimized
}  // namespace ember
