// kernels/optimized's ember_llm::sdpa_with_int8_cache against portable's (which tests/kernels checks against the
// PyTorch reference), called directly on every instruction set this CPU has (AVX-512F, AVX2+FMA, the 4-lane
// baseline): tests/kernels reaches only the widest. Built for aarch64 and run under qemu it checks the NEON build.
//
// Both sum in float32 in different orders (vector lanes, two dot-product chains): tolerance 2e-5 of the largest
// output, which a wrong row, head or scale exceeds by orders of magnitude.
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

using testing::Owned;
using testing::run;

struct Shape {
  int32_t T, H, KV, D, S, p;
};

TEST(LlmKvCache, Int8AttentionMatchesPortableOnEveryIsa) {
  testing::Lcg rng{20261128u};
  // Decode late in the cache, a prompt with grouped heads, head_dim off every vector width, the cache full.
  for (const Shape s :
       {Shape{1, 4, 2, 64, 40, 33}, Shape{7, 6, 2, 32, 16, 0}, Shape{3, 3, 1, 20, 12, 4}, Shape{2, 2, 2, 7, 9, 7}}) {
    std::vector<int8_t> kv(s.S * s.KV * s.D), vv(kv.size());
    for (int8_t& x : kv) x = static_cast<int8_t>(rng.uniform(-127.0f, 127.0f));
    for (int8_t& x : vv) x = static_cast<int8_t>(rng.uniform(-127.0f, 127.0f));
    Owned<float> q(ScalarType::Float, {1, s.T, s.H, s.D}, rng.floats(s.T * s.H * s.D)),
        ks(ScalarType::Float, {1, s.S, s.KV}, rng.floats(s.S * s.KV, 0.001f, 0.05f)),
        vs(ScalarType::Float, {1, s.S, s.KV}, rng.floats(s.S * s.KV, 0.001f, 0.05f)),
        want(ScalarType::Float, {1, s.T, s.H, s.D}), got(ScalarType::Float, {1, s.T, s.H, s.D});
    Owned<int8_t> k(ScalarType::Char, {1, s.S, s.KV, s.D}, kv), v(ScalarType::Char, {1, s.S, s.KV, s.D}, vv);
    Owned<int64_t> pos(ScalarType::Long, {1}, {s.p});
    std::vector<uint8_t> scratch((s.S + s.D) * sizeof(float) + 64);
    Span<uint8_t> sp(scratch.data(), scratch.size());
    const double scale = 1.0 / sqrt(static_cast<double>(s.D));
    ASSERT_EQ(run(
                  [&](KernelContext& c) {
                    portable::sdpa_with_int8_cache_out(c, q.t, k.t, ks.t, v.t, vs.t, pos.t, scale, want.t);
                  },
                  sp),
              Error::Ok);
    float top = 0.0f;
    for (float x : want.data) top = fmaxf(top, fabsf(x));
    for (optimized::X86Isa isa : {optimized::X86Isa::kAvx512, optimized::X86Isa::kAvx2, optimized::X86Isa::kBaseline}) {
      optimized::limit_x86_isa(isa);
      const Error e = run(
          [&](KernelContext& c) {
            optimized::sdpa_with_int8_cache_out(c, q.t, k.t, ks.t, v.t, vs.t, pos.t, scale, got.t);
          },
          sp);
      optimized::limit_x86_isa(optimized::X86Isa::kAvx512);
      ASSERT_EQ(e, Error::Ok);
      for (size_t i = 0; i < got.data.size(); ++i) {
        ASSERT_NEAR(got.data[i], want.data[i], 2e-5f * top) << "isa " << static_cast<int>(isa) << " at " << i;
      }
    }
  }
}

// Without the planned scratch both refuse by name instead of writing past it.
TEST(LlmKvCache, MissingScratchIsRefused) {
  Owned<float> q(ScalarType::Float, {1, 1, 2, 8}, std::vector<float>(16, 0.5f)),
      ks(ScalarType::Float, {1, 4, 1}, std::vector<float>(4, 0.01f)), out(ScalarType::Float, {1, 1, 2, 8});
  Owned<int8_t> k(ScalarType::Char, {1, 4, 1, 8}, std::vector<int8_t>(32, 3));
  Owned<int64_t> pos(ScalarType::Long, {1}, {1});
  EXPECT_EQ(run([&](KernelContext& c) {
              optimized::sdpa_with_int8_cache_out(c, q.t, k.t, ks.t, k.t, ks.t, pos.t, 0.3, out.t);
            }),
            Error::MemoryAllocationFailed);
  EXPECT_TRUE(testing::logged("ember_llm::sdpa_with_int8_cache.out: 0 bytes of scratch, needs 48"));
}

}  // namespace
}  // namespace ember
