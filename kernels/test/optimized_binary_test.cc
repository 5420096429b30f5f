// kernels/optimized's add/sub/mul/div against portable's on every broadcast kind: equal shapes, scalars, rows,
// columns and the general runs (an operand broadcast in a middle dim, as RoPE's cos [T, 1, D] against q
// [1, T, H, D]), on one thread and on a pool, into a bounded-dynamic out that must be resized. The same float
// operation on the same operands: the results must be identical bits.
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
using F32 = Owned<float>;

ThreadPool* pool() {
  static PosixThreadPool* p = [] {
    Result<PosixThreadPool*> r = PosixThreadPool::create(3);
    EXPECT_TRUE(r.ok());
    return r.ok() ? r.get() : nullptr;
  }();
  return p;
}

Error run_on(ThreadPool* threads, const std::function<void(KernelContext&)>& call) {
  KernelContext ctx(nullptr, Span<uint8_t>(), threads);
  call(ctx);
  return ctx.failure();
}

struct Case {
  std::vector<int32_t> a, b, out;
};

int64_t count(const std::vector<int32_t>& s) {
  int64_t n = 1;
  for (int32_t v : s) n *= v;
  return n;
}

using Kernel = std::function<void(KernelContext&, const Tensor&, const Tensor&, Tensor&)>;

struct Family {
  const char* name;
  Kernel optimized, portable;
};

std::vector<Family> families() {
  // alpha 1: with another alpha the vector loop may fuse a + alpha * b into one rounding (FMA), portable not.
  const Scalar alpha(1.0);
  return {
      {"add",
       [=](KernelContext& c, const Tensor& a, const Tensor& b, Tensor& o) { optimized::add_out(c, a, b, alpha, o); },
       [=](KernelContext& c, const Tensor& a, const Tensor& b, Tensor& o) { portable::add_out(c, a, b, alpha, o); }},
      {"sub",
       [=](KernelContext& c, const Tensor& a, const Tensor& b, Tensor& o) { optimized::sub_out(c, a, b, alpha, o); },
       [=](KernelContext& c, const Tensor& a, const Tensor& b, Tensor& o) { portable::sub_out(c, a, b, alpha, o); }},
      {"mul", [](KernelContext& c, const Tensor& a, const Tensor& b, Tensor& o) { optimized::mul_out(c, a, b, o); },
       [](KernelContext& c, const Tensor& a, const Tensor& b, Tensor& o) { portable::mul_out(c, a, b, o); }},
      {"div", [](KernelContext& c, const Tensor& a, const Tensor& b, Tensor& o) { optimized::div_out(c, a, b, o); },
       [](KernelContext& c, const Tensor& a, const Tensor& b, Tensor& o) { portable::div_out(c, a, b, o); }},
  };
}

const std::vector<Case> kCases = {
    {{3, 17}, {3, 17}, {3, 17}},                    // same
    {{4, 9}, {1}, {4, 9}},                          // scalar b
    {{1, 1}, {5, 7}, {5, 7}},                       // scalar a
    {{6, 33}, {33}, {6, 33}},                       // row b
    {{2, 5, 1}, {2, 5, 19}, {2, 5, 19}},            // column a
    {{1, 64, 9, 64}, {64, 1, 64}, {1, 64, 9, 64}},  // RoPE: cos broadcast over the heads
    {{1, 5, 3, 64}, {5, 1, 64}, {1, 5, 3, 64}},
    {{7, 1, 13}, {1, 4, 13}, {7, 4, 13}},  // both operands broadcast
    {{7, 1}, {1, 11}, {7, 11}},            // outer product: a stays along each run
    {{2, 3, 1, 5}, {3, 4, 1}, {2, 3, 4, 5}},
    {{3, 1, 2, 1, 6}, {1, 5, 2, 4, 6}, {3, 5, 2, 4, 6}},
};

// Divisors away from zero so div's results are ordinary numbers.
std::vector<float> values(int64_t n, uint32_t seed) {
  testing::Lcg rng{seed};
  std::vector<float> v = rng.floats(static_cast<size_t>(n), 0.25f, 2.0f);
  for (size_t i = 0; i < v.size(); i += 3) v[i] = -v[i];
  return v;
}

TEST(OptimizedBinary, EveryBroadcastGivesPortablesBits) {
  for (const Family& f : families()) {
    for (const Case& c : kCases) {
      for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), pool()}) {
        F32 a(ScalarType::Float, c.a, values(count(c.a), 11)), b(ScalarType::Float, c.b, values(count(c.b), 23));
        F32 want(ScalarType::Float, c.out);
        // Bounded-dynamic, holding a smaller shape first: the kernel must resize it to the broadcast shape.
        std::vector<int32_t> small(c.out.size(), 1);
        F32 got(ScalarType::Float, small, {}, {}, static_cast<size_t>(count(c.out)));
        ASSERT_EQ(run_on(nullptr, [&](KernelContext& k) { f.portable(k, a.t, b.t, want.t); }), Error::Ok);
        ASSERT_EQ(run_on(threads, [&](KernelContext& k) { f.optimized(k, a.t, b.t, got.t); }), Error::Ok) << f.name;
        ASSERT_EQ(got.t.numel(), want.t.numel()) << f.name;
        for (size_t d = 0; d < c.out.size(); ++d) EXPECT_EQ(got.t.size(static_cast<int32_t>(d)), c.out[d]);
        EXPECT_EQ(memcmp(got.data.data(), want.data.data(), static_cast<size_t>(want.t.numel()) * sizeof(float)), 0)
            << f.name << " a rank " << c.a.size() << " b rank " << c.b.size() << (threads ? " on the pool" : "");
      }
    }
  }
}

TEST(OptimizedBinary, ShapesThatDoNotBroadcastAreRefused) {
  F32 a(ScalarType::Float, {2, 3}), b(ScalarType::Float, {4}), out(ScalarType::Float, {2, 3});
  EXPECT_EQ(run_on(nullptr, [&](KernelContext& k) { optimized::mul_out(k, a.t, b.t, out.t); }), Error::InvalidArgument);
  F32 wrong(ScalarType::Float, {3, 2}), row(ScalarType::Float, {1, 3});
  EXPECT_EQ(run_on(nullptr, [&](KernelContext& k) { optimized::add_out(k, a.t, row.t, 1.0, wrong.t); }),
            Error::InvalidArgument);
}

}  // namespace
}  // namespace ember
