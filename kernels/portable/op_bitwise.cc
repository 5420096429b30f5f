// bitwise_and/or/xor, bitwise_left_shift/right_shift (integers and Bool; shifts integers only) and
// logical_and/or/xor (any dtype, by truthiness: NaN is true), over the shared elementwise loop.
#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/elementwise_util.h"

namespace ember {
namespace portable {
namespace {

constexpr uint32_t kBits = kIntegralTypes | dtype_bit(ScalarType::Bool);

struct And {
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a & b);
  }
};
struct Or {
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a | b);
  }
};
struct Xor {
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a ^ b);
  }
};
// Shift amounts outside [0, width) are defined as PyTorch's CPU kernels define them: a left shift gives 0, a right
// shift fills with the sign bit (0 for unsigned types); C++ leaves both undefined.
struct LeftShift {
  template <typename C>
  C operator()(C a, C b) const {
    using U = std::make_unsigned_t<C>;
    constexpr int kWidth = static_cast<int>(sizeof(C) * 8);
    if (static_cast<std::make_signed_t<C>>(b) < 0 || static_cast<int64_t>(b) >= kWidth) return 0;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) << b));
  }
};
struct RightShift {
  template <typename C>
  C operator()(C a, C b) const {
    constexpr int kMax = static_cast<int>(sizeof(C) * 8) - (std::is_signed<C>::value ? 1 : 0);
    if (static_cast<std::make_signed_t<C>>(b) < 0 || static_cast<int64_t>(b) >= kMax) {
      if constexpr (std::is_signed<C>::value) return a < 0 ? C(-1) : C(0);
      return 0;
    }
    return static_cast<C>(a >> b);
  }
};
struct LogicalAnd {
  template <typename C>
  bool operator()(C a, C b) const {
    return a != C(0) && b != C(0);
  }
};
struct LogicalOr {
  template <typename C>
  bool operator()(C a, C b) const {
    return a != C(0) || b != C(0);
  }
};
struct LogicalXor {
  template <typename C>
  bool operator()(C a, C b) const {
    return (a != C(0)) != (b != C(0));
  }
};

}  // namespace

#define EMBER_BITWISE(op, Op)                                                                                        \
  void op##_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {                   \
    elementwise_binary<selected_dtypes::op##_tensor_out_portable, kBits, Result::kPromoted>(ctx, #op ".Tensor_out",  \
                                                                                            self, other, out, Op{}); \
  }                                                                                                                  \
  void op##_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out) {                   \
    elementwise_binary<selected_dtypes::op##_scalar_out_portable, kBits, Result::kPromoted>(ctx, #op ".Scalar_out",  \
                                                                                            self, other, out, Op{}); \
  }
EMBER_BITWISE(bitwise_and, And)
EMBER_BITWISE(bitwise_or, Or)
EMBER_BITWISE(bitwise_xor, Xor)
#undef EMBER_BITWISE

#define EMBER_SHIFT(op, Op)                                                                                  \
  void op##_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {           \
    elementwise_binary<selected_dtypes::op##_tensor_out_portable, kIntegralTypes, Result::kPromoted>(        \
        ctx, #op ".Tensor_out", self, other, out, Op{});                                                     \
  }                                                                                                          \
  void op##_tensor_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out) {    \
    elementwise_binary<selected_dtypes::op##_tensor_scalar_out_portable, kIntegralTypes, Result::kPromoted>( \
        ctx, #op ".Tensor_Scalar_out", self, other, out, Op{});                                              \
  }
EMBER_SHIFT(bitwise_left_shift, LeftShift)
EMBER_SHIFT(bitwise_right_shift, RightShift)
#undef EMBER_SHIFT

#define EMBER_LOGICAL(op, Op)                                                                                       \
  void op##_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {                         \
    elementwise_binary<selected_dtypes::op##_out_portable, kRealAndBoolTypes, Result::kPredicate>(ctx, #op ".out",  \
                                                                                                  self, other, out, \
                                                                                                  Op{});            \
  }
EMBER_LOGICAL(logical_and, LogicalAnd)
EMBER_LOGICAL(logical_or, LogicalOr)
EMBER_LOGICAL(logical_xor, LogicalXor)
#undef EMBER_LOGICAL

}  // namespace portable
}  // namespace ember
