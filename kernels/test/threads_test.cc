// kernels/optimized's passes split over a thread pool, called directly: each gives the single-threaded bits, and
// a kernel that gives each thread its own scratch slice (depthwise convolution, attention) stays inside the scratch
// it is handed, whether that holds a slice per thread, fewer, or none. The sanitizer stage of `./ember test` runs
// this under ASan and UBSan (--config=fuzz), where a slice written past its end or two threads on one slice
// would show; tests/runtime/test_threads.py and tests/llm/test_llm_threads.py check the same through the runtime.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/optimized/kernels.h"
#include "kernels/portable/kernels.h"
#include "kernels/test/owned_tensor.h"
#include "runtime/threads/posix_thread_pool.h"

namespace ember {
namespace {

using testing::Owned;

testing::Lcg g_rng{7};
std::vector<float> random_floats(size_t n, float lo = -2.0f, float hi = 2.0f) { return g_rng.floats(n, lo, hi); }

// A pool of three threads for the whole test binary (two workers and the caller).
ThreadPool* pool() {
  static PosixThreadPool* p = [] {
    Result<PosixThreadPool*> r = PosixThreadPool::create(3);
    EXPECT_TRUE(r.ok());
    return r.ok() ? r.get() : nullptr;
  }();
  return p;
}

// Runs `call` on `threads` (null: the calling thread) with `scratch_bytes` of 16-byte-aligned scratch; returns the
// kernel's error.
Error run(const std::function<void(KernelContext&)>& call, ThreadPool* threads, size_t scratch_bytes) {
  std::vector<uint64_t> storage(scratch_bytes / 8 + 2);
  uint8_t* base = reinterpret_cast<uint8_t*>(storage.data());
  base += (16 - reinterpret_cast<uintptr_t>(base) % 16) % 16;
  KernelContext ctx(nullptr, Span<uint8_t>(base, scratch_bytes), threads);
  call(ctx);
  return ctx.failure();
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Depthwise {
  int32_t C, H, W, K;
  int64_t stride, pad, dilation;
};

// Every depthwise path: 3x3 at unit stride, 5x5 and 3x3 at stride 2 (the column-parity copy), 3x3 dilated; with
// scratch for three slices (each thread its own), about one slice (fewer parts than threads) and none (the
// bounds-checked path on every thread).
TEST(Threads, DepthwiseConvolutionGivesTheSingleThreadedBits) {
  for (const Depthwise d : {Depthwise{24, 37, 41, 3, 1, 1, 1}, Depthwise{16, 30, 33, 5, 2, 2, 1},
                            Depthwise{16, 29, 31, 3, 2, 1, 1}, Depthwise{8, 25, 27, 3, 1, 2, 2}}) {
    const int32_t OH = static_cast<int32_t>((d.H + 2 * d.pad - d.dilation * (d.K - 1) - 1) / d.stride + 1);
    const int32_t OW = static_cast<int32_t>((d.W + 2 * d.pad - d.dilation * (d.K - 1) - 1) / d.stride + 1);
    Owned<float> x(ScalarType::Float, {2, d.C, d.H, d.W}, random_floats(2 * d.C * d.H * d.W)),
        w(ScalarType::Float, {d.C, 1, d.K, d.K}, random_floats(d.C * d.K * d.K)),
        b(ScalarType::Float, {d.C}, random_floats(d.C));
    const int64_t stride[2] = {d.stride, d.stride}, pad[2] = {d.pad, d.pad}, dil[2] = {d.dilation, d.dilation};
    const int64_t zero[2] = {0, 0};
    auto conv = [&](Owned<float>& out) {
      return [&](KernelContext& c) {
        optimized::convolution_out(c, x.t, w.t, &b.t, ArrayRef<int64_t>(stride, 2), ArrayRef<int64_t>(pad, 2),
                                   ArrayRef<int64_t>(dil, 2), false, ArrayRef<int64_t>(zero, 2), d.C, out.t);
      };
    };
    // A bordered plane and its sweep rows, generously: no path needs more per slice.
    const size_t slice = static_cast<size_t>((d.H + 2 * d.pad + 4) * (d.W + 2 * d.pad + 4) * 3 + 64) * 4;
    // One thread with scratch (the vector sweeps), and without (the bounds-checked taps: another order of sums).
    Owned<float> want(ScalarType::Float, {2, d.C, OH, OW}), want_plain(ScalarType::Float, {2, d.C, OH, OW});
    ASSERT_EQ(run(conv(want), nullptr, slice), Error::Ok) << testing::last_log();
    ASSERT_EQ(run(conv(want_plain), nullptr, 0), Error::Ok) << testing::last_log();
    for (size_t scratch : {3 * slice, slice + slice / 2, size_t{0}}) {
      Owned<float> got(ScalarType::Float, {2, d.C, OH, OW});
      ASSERT_EQ(run(conv(got), pool(), scratch), Error::Ok) << testing::last_log();
      EXPECT_TRUE(same_bits(got.data, scratch ? want.data : want_plain.data))
          << "K " << d.K << " stride " << d.stride << " scratch " << scratch;
    }
  }
}

// Element-wise and row-wise passes large enough to split (compute/parallel.h), with a length that
// is no multiple of a vector, so the last tile has the tail.
TEST(Threads, ElementwiseAndRowPassesGiveTheSingleThreadedBits) {
  const int32_t rows = 4099, len = 77;
  Owned<float> a(ScalarType::Float, {rows, len}, random_floats(rows * len)),
      bias(ScalarType::Float, {len}, random_floats(len));
  auto both = [&](const std::function<void(KernelContext&, Owned<float>&)>& f, const char* what) {
    Owned<float> want(ScalarType::Float, {rows, len}), got(ScalarType::Float, {rows, len});
    ASSERT_EQ(run([&](KernelContext& c) { f(c, want); }, nullptr, 0), Error::Ok) << what;
    ASSERT_EQ(run([&](KernelContext& c) { f(c, got); }, pool(), 0), Error::Ok) << what;
    EXPECT_TRUE(same_bits(got.data, want.data)) << what;
  };
  both([&](KernelContext& c, Owned<float>& o) { optimized::add_out(c, a.t, a.t, Scalar(0.5), o.t); }, "add");
  both([&](KernelContext& c, Owned<float>& o) { optimized::mul_out(c, a.t, bias.t, o.t); }, "mul by a row");
  both([&](KernelContext& c, Owned<float>& o) { optimized::gelu_out(c, a.t, StringView{"none", 4}, o.t); }, "gelu");
  both([&](KernelContext& c, Owned<float>& o) { optimized::silu_out(c, a.t, o.t); }, "silu");
  both([&](KernelContext& c, Owned<float>& o) { optimized::hardtanh_out(c, a.t, Scalar(-1.0), Scalar(1.0), o.t); },
       "hardtanh");
  both([&](KernelContext& c, Owned<float>& o) { optimized::softmax_out(c, a.t, 1, false, o.t); }, "softmax");
  both(
      [&](KernelContext& c, Owned<float>& o) {
        Owned<float> mean(ScalarType::Float, {rows, 1}), rstd(ScalarType::Float, {rows, 1});
        const int64_t shape[1] = {len};
        optimized::native_layer_norm_out(c, a.t, ArrayRef<int64_t>(shape, 1), &bias.t, nullptr, 1e-5, o.t, mean.t,
                                         rstd.t);
      },
      "layer_norm");
}

TEST(Threads, LlmLinearsGiveTheSingleThreadedBits) {
  const int32_t M = 5, K = 256, N = 1000, G = K / 32;
  Owned<float> x(ScalarType::Float, {M, K}, random_floats(M * K)),
      s8(ScalarType::Float, {N}, random_floats(N, 0.01f, 0.02f)),
      s4(ScalarType::Float, {N, G}, random_floats(N * G, 0.1f, 1.0f)), bias(ScalarType::Float, {N}, random_floats(N));
  std::vector<int8_t> w8(N * K);
  std::vector<uint8_t> w4(N * K / 2);
  for (size_t i = 0; i < w8.size(); ++i) w8[i] = static_cast<int8_t>(static_cast<int>(g_rng.uniform(0, 255)) - 128);
  for (size_t i = 0; i < w4.size(); ++i) w4[i] = static_cast<uint8_t>(g_rng.uniform(0, 255));
  Owned<int8_t> wi8(ScalarType::Char, {N, K}, w8);
  Owned<uint8_t> wi4(ScalarType::Byte, {N, K / 2}, w4);
  // The same bytes as a blocked weight (N = 1000 is 62.5 blocks, so 992 channels of them): any bytes are valid.
  Owned<uint8_t> wb4(ScalarType::Byte, {62, K / 8, 64}, std::vector<uint8_t>(w4.begin(), w4.begin() + 992 * K / 2));
  Owned<float> sb4(ScalarType::Float, {62, G, 16}, random_floats(992 * G, 0.1f, 1.0f));
  const size_t scratch = portable::linear_8da4w_scratch_bytes(M, K, true);  // either layout
  for (int scheme = 0; scheme < 3; ++scheme) {
    const int32_t n = scheme == 2 ? 992 : N;
    Owned<float> want(ScalarType::Float, {M, n}), got(ScalarType::Float, {M, n});
    auto call = [&](Owned<float>& o) {
      return [&](KernelContext& c) {
        if (scheme == 0) return optimized::linear_int8_out(c, x.t, wi8.t, s8.t, &bias.t, o.t);
        if (scheme == 1) return optimized::linear_8da4w_out(c, x.t, wi4.t, s4.t, 32, &bias.t, o.t);
        optimized::linear_8da4w_out(c, x.t, wb4.t, sb4.t, 32, nullptr, o.t);
      };
    };
    ASSERT_EQ(run(call(want), nullptr, scratch), Error::Ok) << testing::last_log();
    ASSERT_EQ(run(call(got), pool(), scratch), Error::Ok) << testing::last_log();
    EXPECT_TRUE(same_bits(got.data, want.data)) << (scheme == 0 ? "int8" : scheme == 1 ? "8da4w" : "8da4w blocked");
  }
}

// Attention over a KV cache: prefill of 16 tokens at position 40 over 8 heads, each part of the rows on its own
// score row; with rows for three threads, for two (fewer parts), and for exactly one.
TEST(Threads, AttentionGivesTheSingleThreadedBits) {
  const int32_t T = 16, H = 8, KV = 4, D = 32, S = 96;
  Owned<float> q(ScalarType::Float, {1, T, H, D}, random_floats(T * H * D)),
      k(ScalarType::Float, {1, S, KV, D}, random_floats(S * KV * D)),
      v(ScalarType::Float, {1, S, KV, D}, random_floats(S * KV * D));
  Owned<int64_t> pos(ScalarType::Long, {1}, {40});
  const size_t row = (static_cast<size_t>(S + D) * 4 + 15) / 16 * 16;
  auto attend = [&](Owned<float>& o) {
    return [&](KernelContext& c) { optimized::sdpa_with_cache_out(c, q.t, k.t, v.t, pos.t, 1.0 / sqrt(D), o.t); };
  };
  Owned<float> want(ScalarType::Float, {1, T, H, D});
  ASSERT_EQ(run(attend(want), nullptr, row), Error::Ok) << testing::last_log();
  for (size_t scratch : {3 * row, 2 * row, row}) {
    Owned<float> got(ScalarType::Float, {1, T, H, D});
    ASSERT_EQ(run(attend(got), pool(), scratch), Error::Ok) << testing::last_log();
    EXPECT_TRUE(same_bits(got.data, want.data)) << scratch << " bytes of scratch";
  }
}

// Prefill past a tile of query tokens (40 tokens: one whole tile of 32 and a partial one, per head): (head, tile)
// units split between the threads, each with the keys transposed and its scores in a slice of its own.
TEST(Threads, PrefillTilesGiveTheSingleThreadedBits) {
  const int32_t T = 40, H = 6, KV = 2, D = 16, S = 64;
  Owned<float> q(ScalarType::Float, {1, T, H, D}, random_floats(T * H * D)),
      k(ScalarType::Float, {1, S, KV, D}, random_floats(S * KV * D)),
      v(ScalarType::Float, {1, S, KV, D}, random_floats(S * KV * D));
  Owned<int64_t> pos(ScalarType::Long, {1}, {5});
  const size_t slice = (static_cast<size_t>(D * S + 32 * S) * 4 + 15) / 16 * 16;
  auto attend = [&](Owned<float>& o) {
    return [&](KernelContext& c) { optimized::sdpa_with_cache_out(c, q.t, k.t, v.t, pos.t, 1.0 / sqrt(D), o.t); };
  };
  Owned<float> want(ScalarType::Float, {1, T, H, D});
  ASSERT_EQ(run(attend(want), nullptr, slice), Error::Ok) << testing::last_log();
  for (size_t scratch : {3 * slice, 2 * slice, slice}) {
    Owned<float> got(ScalarType::Float, {1, T, H, D});
    ASSERT_EQ(run(attend(got), pool(), scratch), Error::Ok) << testing::last_log();
    EXPECT_TRUE(same_bits(got.data, want.data)) << scratch << " bytes of scratch";
  }
}

}  // namespace
}  // namespace ember
