// eq, ne, lt, le, gt, ge against a tensor or a scalar: compared in the operands' promoted dtype (as PyTorch
// does, so an int32 tensor against 2.5 compares in float), the Bool result stored in out's dtype.
#include "ember/selected_dtypes.h"
#include "kernels/portable/kernels.h"
#include "kernels/portable/util/elementwise_util.h"

namespace ember {
namespace portable {
namespace {

struct Eq {
  template <typename C>
  bool operator()(C a, C b) const {
    return a == b;
  }
};
struct Ne {
  template <typename C>
  bool operator()(C a, C b) const {
    return a != b;
  }
};
struct Lt {
  template <typename C>
  bool operator()(C a, C b) const {
    return a < b;
  }
};
struct Le {
  template <typename C>
  bool operator()(C a, C b) const {
    return a <= b;
  }
};
struct Gt {
  template <typename C>
  bool operator()(C a, C b) const {
    return a > b;
  }
};
struct Ge {
  template <typename C>
  bool operator()(C a, C b) const {
    return a >= b;
  }
};

template <uint32_t Mask, typename Op, typename B>
void compare(KernelContext& ctx, const char* name, const Tensor& a, const B& b, Tensor& out) {
  elementwise_binary<Mask, kRealAndBoolTypes, Result::kPredicate>(ctx, name, a, b, out, Op{});
}

}  // namespace

#define EMBER_COMPARISON(op, Op)                                                                      \
  void op##_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& other, Tensor& out) {    \
    compare<selected_dtypes::op##_tensor_out_portable, Op>(ctx, #op ".Tensor_out", self, other, out); \
  }                                                                                                   \
  void op##_scalar_out(KernelContext& ctx, const Tensor& self, const Scalar& other, Tensor& out) {    \
    compare<selected_dtypes::op##_scalar_out_portable, Op>(ctx, #op ".Scalar_out", self, other, out); \
  }
EMBER_COMPARISON(eq, Eq)
EMBER_COMPARISON(ne, Ne)
EMBER_COMPARISON(lt, Lt)
EMBER_COMPARISON(le, Le)
EMBER_COMPARISON(gt, Gt)
EMBER_COMPARISON(ge, Ge)
#undef EMBER_COMPARISON

}  // namespace portable
}  // namespace ember
