// kernels/optimized's ember_llm::sdpa_with_cache (Float) against portable's (which tests/kernels checks against the
// PyTorch reference), called directly on every instruction set this CPU has: decode rows (four keys' dot products
// per reduction, value sums in registers) and prefill tiles (scores and output as matrix products). Built for
// aarch64 and run under qemu it checks the NEON paths, which no Python test reaches.
//
// Tolerance: 1e-5 relative to the largest output (plus 1e-5): the builds add the same products in other orders.
#include <math.h>
#include <stdint.h>

#include <vector>

#include <gtest/gtest.h>

#include "compute/simd.h"
#include "kernels/optimized/kernels.h"
#include "kernels/portable/kernels.h"
#include "kernels/test/owned_tensor.h"

namespace ember {
namespace {

using testing::Lcg;
using testing::Owned;
using testing::run;

struct Case {
  int32_t T, H, KV, D, S;
  int64_t pos;
};

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const Case& c) {
  float scale = 0.0f;
  for (float v : want) scale = fmaxf(scale, fabsf(v));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-5f * (scale + 1.0f))
        << "T " << c.T << " H " << c.H << " KV " << c.KV << " D " << c.D << " pos " << c.pos << " at " << i;
  }
}

// Decode at several positions (key counts that are and are not multiples of four), short prefills on the row path,
// and prefills of whole and partial tiles; head_dim a multiple of the vectors, of neither, and below one vector.
TEST(LlmAttention, MatchesPortable) {
  Lcg rng{20261128};
  const Case cases[] = {
      {1, 9, 3, 64, 128, 0}, {1, 9, 3, 64, 128, 6},  {1, 9, 3, 64, 128, 97}, {1, 4, 4, 13, 20, 18},
      {1, 2, 1, 3, 9, 4},    {5, 8, 2, 24, 40, 30},  {31, 4, 2, 16, 64, 0},  {32, 4, 2, 16, 64, 0},
      {40, 6, 2, 16, 64, 3}, {33, 4, 4, 13, 50, 10}, {64, 9, 3, 64, 128, 0},
  };
  for (const Case& c : cases) {
    Owned<float> q(ScalarType::Float, {1, c.T, c.H, c.D}, rng.floats(static_cast<size_t>(c.T * c.H * c.D))),
        k(ScalarType::Float, {1, c.S, c.KV, c.D}, rng.floats(static_cast<size_t>(c.S * c.KV * c.D))),
        v(ScalarType::Float, {1, c.S, c.KV, c.D}, rng.floats(static_cast<size_t>(c.S * c.KV * c.D)));
    Owned<int64_t> pos(ScalarType::Long, {1}, {c.pos});
    Owned<float> want(ScalarType::Float, {1, c.T, c.H, c.D}), got(ScalarType::Float, {1, c.T, c.H, c.D});
    // Enough scratch for either path: the keys transposed plus a tile's scores, and the portable row.
    std::vector<uint64_t> storage(static_cast<size_t>((c.D + 33) * c.S + c.D) / 2 + 4);
    const Span<uint8_t> scratch(reinterpret_cast<uint8_t*>(storage.data()), storage.size() * 8);
    const double scale = 1.0 / sqrt(static_cast<double>(c.D));
    ASSERT_EQ(run([&](KernelContext& ctx) { portable::sdpa_with_cache_out(ctx, q.t, k.t, v.t, pos.t, scale, want.t); },
                  scratch),
              Error::Ok)
        << testing::last_log();
    for (optimized::X86Isa isa : {optimized::X86Isa::kAvx512, optimized::X86Isa::kAvx2, optimized::X86Isa::kBaseline}) {
      optimized::limit_x86_isa(isa);
      const Error e =
          run([&](KernelContext& ctx) { optimized::sdpa_with_cache_out(ctx, q.t, k.t, v.t, pos.t, scale, got.t); },
              scratch);
      optimized::limit_x86_isa(optimized::X86Isa::kAvx512);
      ASSERT_EQ(e, Error::Ok) << testing::last_log();
      expect_close(got.data, want.data, c);
    }
  }
}

// A prefill handed less scratch than its tile needs is refused by name with the byte counts, not overrun.
TEST(LlmAttention, PrefillWithoutItsScratchIsRefused) {
  Lcg rng{7};
  const int32_t T = 40, H = 4, KV = 2, D = 16, S = 64;
  Owned<float> q(ScalarType::Float, {1, T, H, D}, rng.floats(T * H * D)),
      k(ScalarType::Float, {1, S, KV, D}, rng.floats(S * KV * D)),
      v(ScalarType::Float, {1, S, KV, D}, rng.floats(S * KV * D)), out(ScalarType::Float, {1, T, H, D});
  Owned<int64_t> pos(ScalarType::Long, {1}, {0});
  std::vector<uint64_t> storage((S + D) / 2 + 2);  // the decode row's worth only
  const Span<uint8_t> scratch(reinterpret_cast<uint8_t*>(storage.data()), storage.size() * 8);
  EXPECT_EQ(run([&](KernelContext& ctx) { optimized::sdpa_with_cache_out(ctx, q.t, k.t, v.t, pos.t, 0.25, out.t); },
                scratch),
            Error::MemoryAllocationFailed);
  EXPECT_TRUE(testing::logged("sdpa_with_cache")) << testing::last_log();
  EXPECT_TRUE(testing::logged("prefill of 40 tokens")) << testing::last_log();
}

}  // namespace
}  // namespace ember
