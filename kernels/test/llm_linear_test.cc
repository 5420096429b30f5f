// kernels/optimized's ember_llm::linear, linear_int8 and linear_8da4w against portable's (which tests/kernels checks
// against the PyTorch reference), called directly. Its point is the other targets: built for aarch64 and run under
// qemu it checks the NEON kernels, which no Python test reaches (tests/kernels runs on the host only).
//
// Both builds compute each 8da4w group's integer sum exactly, so they differ only in the order float partial sums
// are added: tolerance 1e-5 relative to the largest output, which one wrong nibble or token exceeds many times over
// (weights in -8 .. 7 with scales of 1/8 to 1, activations up to 4). On the blocked layout every build takes the
// portable kernel's float steps in its order, so on x86-64, whose portable build has no FMA to fuse them into, the
// results must be the same bits on every instruction set this CPU has (AVX-512 VNNI, AVX-VNNI, AVX2, none). gcc
// fuses multiply-adds into FMAs where the baseline has them (aarch64), and not always the same ones in both builds:
// there, within the tolerance above.
#include <math.h>
#include <stdint.h>

#include <vector>

#include <gtest/gtest.h>

#include "kernels/optimized/kernels.h"
#include "compute/simd.h"
#include "kernels/portable/kernels.h"
#include "kernels/test/owned_tensor.h"

namespace ember {
namespace {

using testing::Owned;
using testing::run;

uint32_t g_seed = 20261125;
uint32_t next_u32() {
  g_seed = g_seed * 1664525u + 1013904223u;
  return g_seed >> 8;
}
float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next_u32()) / 16777216.0f; }

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  float scale = 0.0f;
  for (float v : want) scale = fmaxf(scale, fabsf(v));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-5f * (scale + 1.0f)) << what << " at " << i;
  }
}

struct Shape {
  int32_t M, K, N;
};

// int8 weights: decode (1 token), a 4-token tile with a remainder, K not a multiple of 8 (the scalar tail).
TEST(LlmLinear, Int8MatchesPortable) {
  for (const Shape s : {Shape{1, 256, 40}, Shape{7, 128, 24}, Shape{3, 100, 9}}) {
    for (bool with_bias : {true, false}) {
      std::vector<float> xv(s.M * s.K), sv(s.N), bv(s.N);
      std::vector<int8_t> wv(s.N * s.K);
      for (float& v : xv) v = uniform(-4.0f, 4.0f);
      for (int8_t& v : wv) v = static_cast<int8_t>(static_cast<int>(next_u32() % 256) - 128);
      for (float& v : sv) v = uniform(0.001f, 0.02f);
      for (float& v : bv) v = uniform(-1.0f, 1.0f);
      Owned<float> x(ScalarType::Float, {s.M, s.K}, xv), scales(ScalarType::Float, {s.N}, sv),
          bias(ScalarType::Float, {s.N}, bv), want(ScalarType::Float, {s.M, s.N}), got(ScalarType::Float, {s.M, s.N});
      Owned<int8_t> w(ScalarType::Char, {s.N, s.K}, wv);
      const Tensor* b = with_bias ? &bias.t : nullptr;
      ASSERT_EQ(run([&](KernelContext& c) { portable::linear_int8_out(c, x.t, w.t, scales.t, b, want.t); }), Error::Ok);
      // AVX-512F's kernel, AVX2's, and portable's behind the optimized entry point (x86; elsewhere the same thrice).
      for (optimized::X86Isa isa :
           {optimized::X86Isa::kAvx512, optimized::X86Isa::kAvx2, optimized::X86Isa::kBaseline}) {
        optimized::limit_x86_isa(isa);
        const Error e = run([&](KernelContext& c) { optimized::linear_int8_out(c, x.t, w.t, scales.t, b, got.t); });
        optimized::limit_x86_isa(optimized::X86Isa::kAvx512);
        ASSERT_EQ(e, Error::Ok);
        expect_close(got.data, want.data, "linear_int8");
      }
    }
  }
}

// [N, K] rows -> the blocked layout [N / 16, K, 16] (llm_ops.pack_blocked).
template <typename T>
std::vector<T> dense_blocked(const std::vector<T>& w, int32_t N, int32_t K) {
  std::vector<T> out(w.size());
  for (int32_t n = 0; n < N; ++n)
    for (int32_t k = 0; k < K; ++k) out[(n / 16) * K * 16 + k * 16 + n % 16] = w[n * K + k];
  return out;
}

// Every ISA's result for `call` (AVX-512F, AVX2 and the portable fallback on x86; elsewhere the same thrice)
// against `want`.
template <typename Call>
void expect_every_isa(Call call, Owned<float>& got, const std::vector<float>& want, const char* what) {
  for (optimized::X86Isa isa : {optimized::X86Isa::kAvx512, optimized::X86Isa::kAvx2, optimized::X86Isa::kBaseline}) {
    optimized::limit_x86_isa(isa);
    const Error e = run(call);
    optimized::limit_x86_isa(optimized::X86Isa::kAvx512);
    ASSERT_EQ(e, Error::Ok);
    expect_close(got.data, want, what);
  }
}

// ember_llm::linear and linear_int8 on the blocked layout, and ember_llm::linear on rows: decode (one block at a
// time, four chains), tiles of 8, 4 and 1 tokens over block pairs and a single block, K off every vector width.
TEST(LlmLinear, DenseLayoutsMatchPortable) {
  for (const Shape s : {Shape{1, 256, 48}, Shape{13, 100, 48}, Shape{5, 37, 80}}) {
    std::vector<float> xv(s.M * s.K), fv(s.N * s.K), sv(s.N), bv(s.N);
    std::vector<int8_t> qv(s.N * s.K);
    for (float& v : xv) v = uniform(-4.0f, 4.0f);
    for (float& v : fv) v = uniform(-0.5f, 0.5f);
    for (int8_t& v : qv) v = static_cast<int8_t>(static_cast<int>(next_u32() % 256) - 128);
    for (float& v : sv) v = uniform(0.001f, 0.02f);
    for (float& v : bv) v = uniform(-1.0f, 1.0f);
    Owned<float> x(ScalarType::Float, {s.M, s.K}, xv), scales(ScalarType::Float, {s.N}, sv),
        bias(ScalarType::Float, {s.N}, bv), want(ScalarType::Float, {s.M, s.N}), got(ScalarType::Float, {s.M, s.N});
    Owned<float> rows(ScalarType::Float, {s.N, s.K}, fv),
        blocked(ScalarType::Float, {s.N / 16, s.K, 16}, dense_blocked(fv, s.N, s.K));
    Owned<int8_t> qrows(ScalarType::Char, {s.N, s.K}, qv),
        qblocked(ScalarType::Char, {s.N / 16, s.K, 16}, dense_blocked(qv, s.N, s.K));
    for (bool with_bias : {true, false}) {
      const Tensor* b = with_bias ? &bias.t : nullptr;
      ASSERT_EQ(run([&](KernelContext& c) { portable::linear_out(c, x.t, rows.t, b, want.t); }), Error::Ok);
      expect_every_isa([&](KernelContext& c) { optimized::linear_out(c, x.t, rows.t, b, got.t); }, got, want.data,
                       "linear, rows");
      expect_every_isa([&](KernelContext& c) { optimized::linear_out(c, x.t, blocked.t, b, got.t); }, got, want.data,
                       "linear, blocked");
      ASSERT_EQ(run([&](KernelContext& c) { portable::linear_int8_out(c, x.t, qrows.t, scales.t, b, want.t); }),
                Error::Ok);
      expect_every_isa([&](KernelContext& c) { optimized::linear_int8_out(c, x.t, qblocked.t, scales.t, b, got.t); },
                       got, want.data, "linear_int8, blocked");
    }
  }
}

// 8da4w: every group size from one 32-channel block to 256, tiles of 4, 3, 2 and 1 tokens.
TEST(LlmLinear, Int4MatchesPortable) {
  for (const Shape s : {Shape{1, 256, 40}, Shape{7, 256, 24}, Shape{6, 512, 17}, Shape{2, 64, 3}}) {
    for (int64_t group : {32, 64, 128, 256}) {
      if (s.K % group) continue;
      const int32_t G = static_cast<int32_t>(s.K / group);
      std::vector<float> xv(s.M * s.K), sv(s.N * G), bv(s.N);
      std::vector<uint8_t> wv(s.N * s.K / 2);
      for (float& v : xv) v = uniform(-4.0f, 4.0f);
      for (uint8_t& v : wv) v = static_cast<uint8_t>(next_u32() % 256);
      for (float& v : sv) v = uniform(0.125f, 1.0f);
      for (float& v : bv) v = uniform(-1.0f, 1.0f);
      Owned<float> x(ScalarType::Float, {s.M, s.K}, xv), scales(ScalarType::Float, {s.N, G}, sv),
          bias(ScalarType::Float, {s.N}, bv), want(ScalarType::Float, {s.M, s.N}), got(ScalarType::Float, {s.M, s.N});
      Owned<uint8_t> w(ScalarType::Byte, {s.N, s.K / 2}, wv);
      std::vector<uint8_t> scratch(portable::linear_8da4w_scratch_bytes(s.M, s.K, false));
      Span<uint8_t> sp(scratch.data(), scratch.size());
      for (bool with_bias : {true, false}) {
        const Tensor* b = with_bias ? &bias.t : nullptr;
        ASSERT_EQ(run([&](KernelContext& c) { portable::linear_8da4w_out(c, x.t, w.t, scales.t, group, b, want.t); },
                      sp),
                  Error::Ok);
        ASSERT_EQ(run([&](KernelContext& c) { optimized::linear_8da4w_out(c, x.t, w.t, scales.t, group, b, got.t); },
                      sp),
                  Error::Ok);
        expect_close(got.data, want.data, "linear_8da4w");
      }
    }
  }
}

// int4 values (-8 .. 7, [N][K]) in linear_8da4w's two layouts (schema/operators.yaml).
std::vector<uint8_t> pack_rows(const std::vector<int>& w, int32_t N, int32_t K) {
  std::vector<uint8_t> p(static_cast<size_t>(N) * K / 2);
  for (int32_t n = 0; n < N; ++n) {
    for (int32_t b = 0; b < K / 32; ++b) {
      for (int i = 0; i < 16; ++i) {
        const int lo = w[n * K + 32 * b + i] + 8, hi = w[n * K + 32 * b + 16 + i] + 8;
        p[n * K / 2 + 16 * b + i] = static_cast<uint8_t>(lo | hi << 4);
      }
    }
  }
  return p;
}
std::vector<uint8_t> pack_blocked(const std::vector<int>& w, int32_t N, int32_t K) {
  std::vector<uint8_t> p(static_cast<size_t>(N) * K / 2);
  for (int32_t n = 0; n < N; ++n) {
    for (int32_t j = 0; j < K / 8; ++j) {
      for (int i = 0; i < 4; ++i) {
        const int lo = w[n * K + 8 * j + i] + 8, hi = w[n * K + 8 * j + 4 + i] + 8;
        p[(static_cast<size_t>(n / 16) * (K / 8) + j) * 64 + (n % 16) * 4 + i] = static_cast<uint8_t>(lo | hi << 4);
      }
    }
  }
  return p;
}

// The blocked layout: the same bits as the row layout through portable, and as portable through kernels/optimized
// with each instruction set; decode, tiles of 4, 3 and 2, every group size, and extreme values (q at -128 and 127
// against weights -8 and 7, the largest int16 pair sums AVX2's VPMADDUBSW makes).
TEST(LlmLinear, Int4BlockedGivesTheRowLayoutsBits) {
  // (70 tokens: two chunks of the optimized kernels' quantized tokens, the second a partial one.)
  for (const Shape s : {Shape{1, 256, 48}, Shape{7, 256, 32}, Shape{6, 512, 16}, Shape{2, 64, 16}, Shape{3, 128, 64},
                        Shape{70, 64, 32}}) {
    for (int64_t group : {32, 64, 128, 256}) {
      if (s.K % group) continue;
      for (int pattern = 0; pattern < 3; ++pattern) {
        const bool extreme = pattern == 1;
        const int32_t G = static_cast<int32_t>(s.K / group);
        std::vector<float> xv(s.M * s.K), sv(s.N * G), bsv(s.N * G), bv(s.N);
        std::vector<int> wv(s.N * s.K);
        for (float& v : xv) v = extreme ? (next_u32() % 2 ? 4.0f : -4.0f) : uniform(-4.0f, 4.0f);
        if (pattern == 2) {
          // Ties: each token spans -127.5 .. 127.5, so its scale is 1 and every x / s is a half, rounded to even
          // (and z = 0); a NaN in the first token quantizes to -128 as portable's clamp sends it.
          for (int32_t i = 0; i < s.M * s.K; ++i) xv[i] = static_cast<float>(i % 64) - 31.5f;
          for (int32_t t = 0; t < s.M; ++t) xv[t * s.K] = 127.5f, xv[t * s.K + 1] = -127.5f;
          xv[2] = NAN;
        }
        for (int& v : wv) v = extreme ? (next_u32() % 2 ? 7 : -8) : static_cast<int>(next_u32() % 16) - 8;
        for (float& v : sv) v = uniform(0.125f, 1.0f);
        for (float& v : bv) v = uniform(-1.0f, 1.0f);
        for (int32_t n = 0; n < s.N; ++n) {
          for (int32_t g = 0; g < G; ++g) bsv[(n / 16 * G + g) * 16 + n % 16] = sv[n * G + g];
        }
        Owned<float> x(ScalarType::Float, {s.M, s.K}, xv), scales(ScalarType::Float, {s.N, G}, sv),
            bscales(ScalarType::Float, {s.N / 16, G, 16}, bsv), bias(ScalarType::Float, {s.N}, bv),
            want(ScalarType::Float, {s.M, s.N}), got(ScalarType::Float, {s.M, s.N});
        Owned<uint8_t> rows(ScalarType::Byte, {s.N, s.K / 2}, pack_rows(wv, s.N, s.K)),
            blocked(ScalarType::Byte, {s.N / 16, s.K / 8, 64}, pack_blocked(wv, s.N, s.K));
        std::vector<uint8_t> scratch(portable::linear_8da4w_scratch_bytes(s.M, s.K, true));  // either layout
        Span<uint8_t> sp(scratch.data(), scratch.size());
        for (bool with_bias : {true, false}) {
          const Tensor* b = with_bias ? &bias.t : nullptr;
          auto portable_call = [&](Owned<uint8_t>& w, Owned<float>& sc, Owned<float>& o) {
            return run([&](KernelContext& c) { portable::linear_8da4w_out(c, x.t, w.t, sc.t, group, b, o.t); }, sp);
          };
          ASSERT_EQ(portable_call(rows, scales, want), Error::Ok);
          ASSERT_EQ(portable_call(blocked, bscales, got), Error::Ok);
          ASSERT_EQ(got.data, want.data) << "portable, group " << group;
          for (optimized::X86Isa isa : {optimized::X86Isa::kAvx512, optimized::X86Isa::kAvxVnni,
                                        optimized::X86Isa::kAvx2, optimized::X86Isa::kBaseline}) {
            optimized::limit_x86_isa(isa);
            std::fill(got.data.begin(), got.data.end(), 0.0f);
            const Error e = run(
                [&](KernelContext& c) { optimized::linear_8da4w_out(c, x.t, blocked.t, bscales.t, group, b, got.t); },
                sp);
            optimized::limit_x86_isa(optimized::X86Isa::kAvx512);
            ASSERT_EQ(e, Error::Ok);
#if defined(__x86_64__)
            ASSERT_EQ(got.data, want.data) << "optimized, instruction sets up to " << static_cast<int>(isa)
                                           << ", group " << group << ", M " << s.M << ", N " << s.N;
#else
            expect_close(got.data, want.data, "linear_8da4w blocked");
#endif
          }
        }
      }
    }
  }
}

// A blocked weight whose shape does not match is refused with the shapes named.
TEST(LlmLinear, Int4BlockedShapesAreChecked) {
  Owned<float> x(ScalarType::Float, {1, 64}, std::vector<float>(64, 1.0f)), out(ScalarType::Float, {1, 16}),
      scales(ScalarType::Float, {1, 2, 16}, std::vector<float>(32, 1.0f)),
      wrong_scales(ScalarType::Float, {1, 16, 2}, std::vector<float>(32, 1.0f));
  Owned<uint8_t> w(ScalarType::Byte, {1, 8, 64}, std::vector<uint8_t>(512, 0x88)),
      wrong_w(ScalarType::Byte, {1, 16, 32}, std::vector<uint8_t>(512, 0x88));
  std::vector<uint8_t> scratch(portable::linear_8da4w_scratch_bytes(1, 64, true));
  Span<uint8_t> sp(scratch.data(), scratch.size());
  EXPECT_EQ(run([&](KernelContext& c) { optimized::linear_8da4w_out(c, x.t, w.t, scales.t, 32, nullptr, out.t); }, sp),
            Error::Ok);
  EXPECT_EQ(run([&](KernelContext& c) { optimized::linear_8da4w_out(c, x.t, wrong_w.t, scales.t, 32, nullptr, out.t); },
                sp),
            Error::InvalidArgument);
  EXPECT_NE(testing::last_log().find("blocked weight must be uint8 [N / 16, 8, 64]"), std::string::npos)
      << testing::last_log();
  EXPECT_EQ(run([&](KernelContext& c) { optimized::linear_8da4w_out(c, x.t, w.t, wrong_scales.t, 32, nullptr, out.t); },
                sp),
            Error::InvalidArgument);
  EXPECT_NE(testing::last_log().find("blocked scales must be float32 [1, 2, 16]"), std::string::npos)
      << testing::last_log();
}

}  // namespace
}  // namespace ember
