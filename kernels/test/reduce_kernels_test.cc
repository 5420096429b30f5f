// Reduction, selection and normalisation kernels on the paths an exported program does not reach: var.out (export
// emits var.correction), _native_batch_norm_legit.out with running stats (export refuses the functional training
// op), topk without scratch memory, and max/min/argmax over an empty dim (eager refuses that at export; the
// kernels must give a named error, not read past the input).
#include <math.h>
#include <stdint.h>

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/portable/kernels.h"
#include "kernels/test/owned_tensor.h"
#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace {

using testing::logged;
using testing::Owned;
using testing::run;

using F32 = Owned<float>;
using I64 = Owned<int64_t>;

TEST(VarOut, UnbiasedAndBiased) {
  F32 x(ScalarType::Float, {2, 4}, {1, 2, 3, 4, 2, 2, 2, 10});
  F32 out(ScalarType::Float, {2});
  const int64_t dim[1] = {1};
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::var_out(c, x.t, Optional<ArrayRef<int64_t>>(ArrayRef<int64_t>(dim, 1)), true, false, out.t);
            }),
            Error::Ok);
  EXPECT_FLOAT_EQ(out.data[0], 5.0f / 3.0f);
  EXPECT_FLOAT_EQ(out.data[1], 48.0f / 3.0f);
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::var_out(c, x.t, Optional<ArrayRef<int64_t>>(ArrayRef<int64_t>(dim, 1)), false, false, out.t);
            }),
            Error::Ok);
  EXPECT_FLOAT_EQ(out.data[0], 5.0f / 4.0f);
  EXPECT_FLOAT_EQ(out.data[1], 12.0f);
  // No dim: every element, one of them (keepdim keeps both dims as 1).
  F32 all(ScalarType::Float, {1, 1});
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::var_out(c, x.t, Optional<ArrayRef<int64_t>>(), false, true, all.t);
            }),
            Error::Ok);
  EXPECT_NEAR(all.data[0], 57.5f / 8.0f, 1e-5f);
}

TEST(BatchNormLegit, TrainingUpdatesRunningStats) {
  // N=2, C=2, spatial 2: channel 0 holds {1, 3, 5, 7}, channel 1 holds {2, 2, 2, 2}.
  F32 x(ScalarType::Float, {2, 2, 2}, {1, 3, 2, 2, 5, 7, 2, 2});
  F32 w(ScalarType::Float, {2}, {2, 1}), b(ScalarType::Float, {2}, {0.5f, -1});
  F32 rm(ScalarType::Float, {2}, {1, 0}), rv(ScalarType::Float, {2}, {1, 4});
  F32 out(ScalarType::Float, {2, 2, 2}), mean(ScalarType::Float, {2}), invstd(ScalarType::Float, {2});
  const double eps = 1e-5, momentum = 0.1;
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::native_batch_norm_legit_out(c, x.t, &w.t, &b.t, rm.t, rv.t, true, momentum, eps, out.t, mean.t,
                                                    invstd.t);
            }),
            Error::Ok);
  const float inv0 = static_cast<float>(1.0 / sqrt(5.0 + eps)), inv1 = static_cast<float>(1.0 / sqrt(eps));
  EXPECT_FLOAT_EQ(mean.data[0], 4.0f);
  EXPECT_FLOAT_EQ(mean.data[1], 2.0f);
  EXPECT_FLOAT_EQ(invstd.data[0], inv0);
  EXPECT_FLOAT_EQ(invstd.data[1], inv1);
  EXPECT_FLOAT_EQ(out.data[0], (1 - 4) * inv0 * 2 + 0.5f);
  EXPECT_FLOAT_EQ(out.data[5], (7 - 4) * inv0 * 2 + 0.5f);
  EXPECT_FLOAT_EQ(out.data[2], -1.0f);
  // Running stats: mean moved by momentum; variance moved towards the unbiased batch variance (20/3).
  EXPECT_FLOAT_EQ(rm.data[0], 0.9f * 1 + 0.1f * 4);
  EXPECT_FLOAT_EQ(rm.data[1], 0.1f * 2);
  EXPECT_FLOAT_EQ(rv.data[0], 0.9f * 1 + 0.1f * 20.0f / 3.0f);
  EXPECT_FLOAT_EQ(rv.data[1], 0.9f * 4);

  // Inference: the running stats normalise, save outputs are empty and the stats stay.
  F32 empty0(ScalarType::Float, {0}), empty1(ScalarType::Float, {0});
  const std::vector<float> rm_before = rm.data, rv_before = rv.data;
  ASSERT_EQ(run([&](KernelContext& c) {
              portable::native_batch_norm_legit_out(c, x.t, nullptr, nullptr, rm.t, rv.t, false, momentum, eps, out.t,
                                                    empty0.t, empty1.t);
            }),
            Error::Ok);
  EXPECT_EQ(empty0.t.numel(), 0);
  EXPECT_EQ(empty1.t.numel(), 0);
  EXPECT_EQ(rm.data, rm_before);
  EXPECT_EQ(rv.data, rv_before);
  EXPECT_FLOAT_EQ(out.data[0], static_cast<float>((1 - rm.data[0]) / sqrt(rv.data[0] + eps)));
}

TEST(BatchNormLegit, NoStatsNeedsTrainingAndStatsMatchChannels) {
  F32 x(ScalarType::Float, {2, 3}), out(ScalarType::Float, {2, 3}), m(ScalarType::Float, {3}),
      s(ScalarType::Float, {3});
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::native_batch_norm_legit_no_stats_out(c, x.t, nullptr, nullptr, false, 0.1, 1e-5, out.t, m.t,
                                                             s.t);
            }),
            Error::InvalidArgument);
  EXPECT_NE(testing::last_log().find("_native_batch_norm_legit.no_stats_out"), std::string::npos);
  F32 rm(ScalarType::Float, {2}), rv(ScalarType::Float, {2});
  EXPECT_EQ(run([&](KernelContext& c) {
              portable::native_batch_norm_legit_out(c, x.t, nullptr, nullptr, rm.t, rv.t, true, 0.1, 1e-5, out.t, m.t,
                                                    s.t);
            }),
            Error::InvalidArgument);
}

TEST(Topk, WithoutScratchMatchesScratch) {
  const float nan = NAN;
  F32 x(ScalarType::Float, {2, 6}, {3, nan, -1, 8, 8, 0, 5, 4, 3, 2, 1, 0});
  for (bool largest : {true, false}) {
    F32 v1(ScalarType::Float, {2, 4}), v2(ScalarType::Float, {2, 4});
    I64 i1(ScalarType::Long, {2, 4}), i2(ScalarType::Long, {2, 4});
    alignas(16) uint8_t buf[6 * sizeof(int64_t)];  // what topk_memory asks for: the dim's length in int64s
    ASSERT_EQ(run([&](KernelContext& c) { portable::topk_values_out(c, x.t, 4, 1, largest, true, v1.t, i1.t); },
                  Span<uint8_t>(buf, sizeof(buf))),
              Error::Ok);
    ASSERT_EQ(run([&](KernelContext& c) { portable::topk_values_out(c, x.t, 4, -1, largest, true, v2.t, i2.t); }),
              Error::Ok);
    EXPECT_EQ(i1.data, i2.data);
    if (largest) {
      // NaN first, then 8 and 8 in index order.
      EXPECT_EQ(i1.data, (std::vector<int64_t>{1, 3, 4, 0, 0, 1, 2, 3}));
    } else {
      EXPECT_EQ(i1.data, (std::vector<int64_t>{2, 5, 0, 3, 5, 4, 3, 2}));
    }
    for (size_t k = 0; k < v1.data.size(); ++k) {
      EXPECT_TRUE(v1.data[k] == v2.data[k] || (isnan(v1.data[k]) && isnan(v2.data[k])));
    }
  }
  F32 v(ScalarType::Float, {2, 7});
  I64 i(ScalarType::Long, {2, 7});
  EXPECT_EQ(run([&](KernelContext& c) { portable::topk_values_out(c, x.t, 7, 1, true, true, v.t, i.t); }),
            Error::InvalidArgument);
  EXPECT_NE(testing::last_log().find("topk.values: k 7"), std::string::npos);
}

TEST(Extremes, EmptyReducedDimIsANamedError) {
  F32 x(ScalarType::Float, {0, 3});
  F32 vals(ScalarType::Float, {3});
  I64 idx(ScalarType::Long, {3});
  EXPECT_EQ(run([&](KernelContext& c) { portable::max_dim_max_out(c, x.t, 0, false, vals.t, idx.t); }),
            Error::InvalidArgument);
  EXPECT_NE(testing::last_log().find("max.dim_max"), std::string::npos);
  F32 scalar(ScalarType::Float, {});
  EXPECT_EQ(run([&](KernelContext& c) { portable::min_unary_out(c, x.t, scalar.t); }), Error::InvalidArgument);
  I64 arg(ScalarType::Long, {});
  EXPECT_EQ(run([&](KernelContext& c) { portable::argmax_out(c, x.t, Optional<int64_t>(), false, arg.t); }),
            Error::InvalidArgument);
  EXPECT_NE(testing::last_log().find("argmax.out"), std::string::npos);
  // Reducing the non-empty dim of an empty tensor is fine: an empty result.
  F32 none(ScalarType::Float, {0});
  I64 none_idx(ScalarType::Long, {0});
  EXPECT_EQ(run([&](KernelContext& c) { portable::max_dim_max_out(c, x.t, 1, false, none.t, none_idx.t); }), Error::Ok);
}

}  // namespace
}  // namespace ember
