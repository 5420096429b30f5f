// kernels/optimized's depthwise convolution, SiLU and sigmoid on every x86 instruction set it has a version for
// (AVX-512F, AVX2, baseline; limit_x86_isa picks), against a double-precision reference: plane widths on both sides of
// one 16-float vector and of the flat sweep's 32, unit and double stride, 3x3 and 5x5, with and without scratch.
// On this suite's CPU that is every variant; elsewhere the same variant thrice. Fused convolution + SiLU gives the
// bits of the convolution followed by silu.out on each instruction set (a fused program matches an unfused one).
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/optimized/kernels.h"
#include "compute/simd.h"
#include "kernels/portable/kernels.h"
#include "kernels/test/owned_tensor.h"

namespace ember {
namespace {

using optimized::X86Isa;
using testing::Owned;

testing::Lcg g_rng{11};
std::vector<float> random_floats(size_t n, float lo = -2.0f, float hi = 2.0f) { return g_rng.floats(n, lo, hi); }

const X86Isa kIsas[] = {X86Isa::kAvx512, X86Isa::kAvx2, X86Isa::kBaseline};

std::string isa_name(X86Isa isa) {
  return isa == X86Isa::kAvx512 ? "AVX-512" : isa == X86Isa::kAvx2 ? "AVX2" : "baseline";
}

// Runs `call` with every instruction set up to `isa` allowed, and scratch_bytes of 16-byte-aligned scratch.
template <typename Call>
Error run_on(X86Isa isa, size_t scratch_bytes, Call call) {
  std::vector<uint64_t> storage(scratch_bytes / 8 + 2);
  uint8_t* base = reinterpret_cast<uint8_t*>(storage.data());
  base += (16 - reinterpret_cast<uintptr_t>(base) % 16) % 16;
  optimized::limit_x86_isa(isa);
  const Error e = testing::run(call, Span<uint8_t>(base, scratch_bytes));
  optimized::limit_x86_isa(X86Isa::kAvx512);
  return e;
}

double silu_ref(double x) { return x / (1.0 + exp(-x)); }

struct Dw {
  int32_t C, H, W, K;
  int64_t stride, pad;
};

TEST(ConvIsa, DepthwiseMatchesTheReferenceOnEveryInstructionSet) {
  // 7x7 and 14x14 planes (the flat sweep at unit stride, rows under one 16-float vector), 17 and 33 wide (a vector
  // and one more; past the flat sweep), 40 wide at stride 2 (the column-parity copy, rows of whole vectors), and 3x3
  // at unit stride (its own bordered sweep).
  for (const Dw d : {Dw{5, 7, 7, 5, 1, 2}, Dw{4, 14, 14, 5, 1, 2}, Dw{3, 14, 14, 3, 2, 1}, Dw{3, 28, 28, 5, 2, 2},
                     Dw{3, 17, 17, 5, 1, 2}, Dw{2, 9, 33, 3, 1, 1}, Dw{2, 12, 40, 5, 2, 2}, Dw{3, 7, 7, 3, 1, 1},
                     Dw{2, 11, 29, 3, 1, 0}}) {
    const int32_t OH = static_cast<int32_t>((d.H + 2 * d.pad - d.K) / d.stride + 1);
    const int32_t OW = static_cast<int32_t>((d.W + 2 * d.pad - d.K) / d.stride + 1);
    Owned<float> x(ScalarType::Float, {1, d.C, d.H, d.W}, random_floats(d.C * d.H * d.W)),
        w(ScalarType::Float, {d.C, 1, d.K, d.K}, random_floats(d.C * d.K * d.K)),
        b(ScalarType::Float, {d.C}, random_floats(d.C));
    std::vector<double> want(static_cast<size_t>(d.C) * OH * OW);
    for (int32_t c = 0; c < d.C; ++c) {
      for (int32_t oh = 0; oh < OH; ++oh) {
        for (int32_t ow = 0; ow < OW; ++ow) {
          double acc = b.data[c];
          for (int32_t kh = 0; kh < d.K; ++kh) {
            for (int32_t kw = 0; kw < d.K; ++kw) {
              const int64_t ih = oh * d.stride - d.pad + kh, iw = ow * d.stride - d.pad + kw;
              if (ih < 0 || ih >= d.H || iw < 0 || iw >= d.W) continue;
              acc += static_cast<double>(x.data[(c * d.H + ih) * d.W + iw]) * w.data[(c * d.K + kh) * d.K + kw];
            }
          }
          want[(static_cast<size_t>(c) * OH + oh) * OW + ow] = acc;
        }
      }
    }
    const int64_t stride[2] = {d.stride, d.stride}, pad[2] = {d.pad, d.pad}, dil[2] = {1, 1}, zero[2] = {0, 0};
    const ArrayRef<int64_t> st(stride, 2), pd(pad, 2), dl(dil, 2), op(zero, 2);
    // What the method would plan (convolution_memory) is one slice per thread; a generous slice serves here.
    const size_t slice = static_cast<size_t>((d.H + 2 * d.pad + 4) * (d.W + 2 * d.pad + 4) * 3 + 64) * 4;
    for (X86Isa isa : kIsas) {
      for (size_t scratch : {slice, size_t{0}}) {
        const std::string where = isa_name(isa) + (scratch ? "" : ", no scratch") + ", C " + std::to_string(d.C) +
                                  " H " + std::to_string(d.H) + " W " + std::to_string(d.W) + " K " +
                                  std::to_string(d.K) + " stride " + std::to_string(d.stride);
        Owned<float> got(ScalarType::Float, {1, d.C, OH, OW}), fused(ScalarType::Float, {1, d.C, OH, OW}),
            then_silu(ScalarType::Float, {1, d.C, OH, OW});
        ASSERT_EQ(run_on(isa, scratch,
                         [&](KernelContext& c) {
                           optimized::convolution_out(c, x.t, w.t, &b.t, st, pd, dl, false, op, d.C, got.t);
                         }),
                  Error::Ok)
            << where << ": " << testing::last_log();
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_NEAR(got.data[i], want[i], 1e-5 * (1.0 + fabs(want[i]))) << where << ", element " << i;
        }
        ASSERT_EQ(run_on(isa, scratch,
                         [&](KernelContext& c) {
                           optimized::convolution_silu_out(c, x.t, w.t, &b.t, st, pd, dl, false, op, d.C, fused.t);
                         }),
                  Error::Ok)
            << where << ": " << testing::last_log();
        ASSERT_EQ(run_on(isa, 0, [&](KernelContext& c) { optimized::silu_out(c, got.t, then_silu.t); }), Error::Ok)
            << where;
        EXPECT_EQ(memcmp(fused.data.data(), then_silu.data.data(), fused.data.size() * sizeof(float)), 0)
            << where << ": convolution_silu differs from convolution then silu";
      }
    }
  }
}

TEST(ConvIsa, SiluAndSigmoidMatchTheReferenceOnEveryInstructionSet) {
  // Lengths around one and two 16-float vectors, so each variant's tail runs; values past exp's range on both sides.
  for (int32_t n : {1, 7, 15, 16, 17, 33, 100}) {
    std::vector<float> v = random_floats(static_cast<size_t>(n), -20.0f, 20.0f);
    v[0] = -100.0f;
    if (n > 1) v[1] = 95.0f;
    Owned<float> x(ScalarType::Float, {n}, v);
    for (X86Isa isa : kIsas) {
      Owned<float> silu(ScalarType::Float, {n}), sig(ScalarType::Float, {n});
      ASSERT_EQ(run_on(isa, 0, [&](KernelContext& c) { optimized::silu_out(c, x.t, silu.t); }), Error::Ok);
      ASSERT_EQ(run_on(isa, 0, [&](KernelContext& c) { optimized::sigmoid_out(c, x.t, sig.t); }), Error::Ok);
      for (int32_t i = 0; i < n; ++i) {
        const double s = silu_ref(v[i]), g = 1.0 / (1.0 + exp(-static_cast<double>(v[i])));
        EXPECT_NEAR(silu.data[i], s, 2e-6 * (1.0 + fabs(s))) << isa_name(isa) << " silu(" << v[i] << ")";
        EXPECT_NEAR(sig.data[i], g, 2e-7 + 2e-6 * g) << isa_name(isa) << " sigmoid(" << v[i] << ")";
      }
    }
  }
}

// Int8 max pooling (quantized programs keep their pools on int8 values): the optimized windows give portable's values
// and indices exactly on each instruction set, ties (frequent in int8) resolved to the first tap as ATen does, at
// strides 1, 2 and 3, with padding and dilation, on planes narrower and wider than a vector.
TEST(ConvIsa, Int8MaxPoolMatchesPortableOnEveryInstructionSet) {
  struct Pool {
    int32_t C, H, W, K, stride, pad, dilation;
    bool ceil;
  };
  for (const Pool p :
       {Pool{3, 11, 11, 3, 2, 1, 1, false}, Pool{2, 9, 37, 3, 1, 1, 1, false}, Pool{2, 20, 21, 2, 2, 0, 1, true},
        Pool{1, 13, 30, 3, 3, 1, 2, false}, Pool{4, 5, 5, 5, 1, 2, 1, false}}) {
    std::vector<int8_t> values(static_cast<size_t>(p.C) * p.H * p.W);
    // A narrow range: many windows hold their maximum more than once.
    for (int8_t& v : values) v = static_cast<int8_t>(static_cast<int>(g_rng.uniform(-6.0f, 6.0f)));
    Owned<int8_t> x(ScalarType::Char, {1, p.C, p.H, p.W}, values);
    const int64_t k[2] = {p.K, p.K}, st[2] = {p.stride, p.stride}, pd[2] = {p.pad, p.pad},
                  dl[2] = {p.dilation, p.dilation};
    const auto out_size = [&](int32_t n) {
      const int32_t span = n + 2 * p.pad - p.dilation * (p.K - 1) - 1;
      int32_t o = (p.ceil ? span + p.stride - 1 : span) / p.stride + 1;
      if (p.ceil && (o - 1) * p.stride >= n + p.pad) --o;
      return o;
    };
    const int32_t OH = out_size(p.H), OW = out_size(p.W);
    Owned<int8_t> want(ScalarType::Char, {1, p.C, OH, OW}), got(ScalarType::Char, {1, p.C, OH, OW});
    Owned<int64_t> want_i(ScalarType::Long, {1, p.C, OH, OW}), got_i(ScalarType::Long, {1, p.C, OH, OW});
    ASSERT_EQ(run_on(X86Isa::kAvx512, 0,
                     [&](KernelContext& c) {
                       portable::max_pool2d_with_indices_out(c, x.t, ArrayRef<int64_t>(k, 2), ArrayRef<int64_t>(st, 2),
                                                             ArrayRef<int64_t>(pd, 2), ArrayRef<int64_t>(dl, 2), p.ceil,
                                                             want.t, want_i.t);
                     }),
              Error::Ok)
        << testing::last_log();
    for (X86Isa isa : kIsas) {
      ASSERT_EQ(run_on(isa, 0,
                       [&](KernelContext& c) {
                         optimized::max_pool2d_with_indices_out(c, x.t, ArrayRef<int64_t>(k, 2),
                                                                ArrayRef<int64_t>(st, 2), ArrayRef<int64_t>(pd, 2),
                                                                ArrayRef<int64_t>(dl, 2), p.ceil, got.t, got_i.t);
                       }),
                Error::Ok)
          << testing::last_log();
      EXPECT_EQ(got.data, want.data) << isa_name(isa) << " pool " << p.K << " stride " << p.stride << " W " << p.W;
      EXPECT_EQ(got_i.data, want_i.data) << isa_name(isa) << " pool " << p.K << " stride " << p.stride << " W " << p.W;
    }
  }
}

}  // namespace
}  // namespace ember
