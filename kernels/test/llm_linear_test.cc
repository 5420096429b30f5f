// kernels/optimized's ember_llm::linear_int8 and linear_8da4w against portable's (which tests/kernels checks
// against the PyTorch reference), called directly. Its point is the other targets: built for aarch64 and run under
// qemu it checks the NEON kernels, which no Python test reaches (tests/kernels runs on the host only).
//
// Both builds compute each 8da4w group's integer sum exactly, so they differ only in the order float partial sums
// are added: tolerance 1e-5 relative to the largest output, which one wrong nibble or token exceeds many times over
// (weights in -8 .. 7 with scales of 1/8 to 1, activations up to 4).
#include <math.h>
#include <stdint.h>

#include <vector>

#include <gtest/gtest.h>

#include "kernels/optimized/kernels.h"
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
      ASSERT_EQ(run([&](KernelContext& c) { portable::linear_int8_out(c, x.t, w.t, scales.t, b, want.t); }),
                Error::Ok);
      ASSERT_EQ(run([&](KernelContext& c) { optimized::linear_int8_out(c, x.t, w.t, scales.t, b, got.t); }),
                Error::Ok);
      expect_close(got.data, want.data, "linear_int8");
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
      std::vector<uint8_t> scratch(portable::linear_8da4w_scratch_bytes(s.M, s.K));
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

}  // namespace
}  // namespace ember
