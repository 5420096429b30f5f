// Scalar results follow Python's rules on ints and floats: int op int stays int (floor division rounds toward
// negative infinity), anything with a float is a float, true division is always a float.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/prim_ops/kernels.h"

namespace ember {
namespace prim {
namespace {

bool both_int(const Scalar& a, const Scalar& b) { return !a.is_floating() && !b.is_floating(); }

// IntOp: bool(int64_t, int64_t, int64_t*), false when the result does not fit int64. Python's ints do not
// overflow; a symbolic size that leaves int64 is garbage, so that is an error rather than a wrapped number.
template <typename IntOp, typename FloatOp>
void arith(KernelContext& ctx, const char* name, const Scalar& a, const Scalar& b, EValue& result, IntOp int_op,
           FloatOp float_op) {
  if (both_int(a, b)) {
    int64_t r = 0;
    const int64_t x = a.to<int64_t>(), y = b.to<int64_t>();
    EMBER_KERNEL_CHECK(ctx, int_op(x, y, &r), InvalidArgument, "%s: %lld and %lld give a result beyond int64", name,
                       static_cast<long long>(x), static_cast<long long>(y));
    result = EValue(r);
  } else {
    result = EValue(float_op(a.to_double(), b.to_double()));
  }
}

template <typename Cmp>
void compare(const Scalar& a, const Scalar& b, EValue& result, Cmp cmp) {
  result = EValue(both_int(a, b) ? cmp(a.to<int64_t>(), b.to<int64_t>()) : cmp(a.to_double(), b.to_double()));
}

}  // namespace

void sym_size_int(KernelContext& ctx, const Tensor& self, int64_t dim, EValue& result) {
  const int64_t d = dim < 0 ? dim + self.dim() : dim;
  EMBER_KERNEL_CHECK(ctx, d >= 0 && d < self.dim(), InvalidArgument, "sym_size.int: dim %lld of a %d-d tensor",
                     static_cast<long long>(dim), static_cast<int>(self.dim()));
  result = EValue(static_cast<int64_t>(self.size(static_cast<int32_t>(d))));
}

void sym_numel(KernelContext&, const Tensor& self, EValue& result) { result = EValue(self.numel()); }

void add_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result) {
  arith(
      ctx, "executorch_prim::add.Scalar", a, b, result,
      [](int64_t x, int64_t y, int64_t* r) { return !__builtin_add_overflow(x, y, r); },
      [](double x, double y) { return x + y; });
}

void sub_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result) {
  arith(
      ctx, "executorch_prim::sub.Scalar", a, b, result,
      [](int64_t x, int64_t y, int64_t* r) { return !__builtin_sub_overflow(x, y, r); },
      [](double x, double y) { return x - y; });
}

void mul_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result) {
  arith(
      ctx, "executorch_prim::mul.Scalar", a, b, result,
      [](int64_t x, int64_t y, int64_t* r) { return !__builtin_mul_overflow(x, y, r); },
      [](double x, double y) { return x * y; });
}

void floordiv_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result) {
  EMBER_KERNEL_CHECK(ctx, b.to_double() != 0.0, InvalidArgument, "floordiv.Scalar: division by zero");
  arith(
      ctx, "executorch_prim::floordiv.Scalar", a, b, result,
      [](int64_t x, int64_t y, int64_t* r) {
        if (x == INT64_MIN && y == -1) return false;  // 2^63; the CPU would trap on it
        const int64_t q = x / y;
        *r = (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
        return true;
      },
      [](double x, double y) { return floor(x / y); });
}

void truediv_scalar(KernelContext& ctx, const Scalar& a, const Scalar& b, EValue& result) {
  EMBER_KERNEL_CHECK(ctx, b.to_double() != 0.0, InvalidArgument, "truediv.Scalar: division by zero");
  result = EValue(a.to_double() / b.to_double());
}

void mod_scalar(KernelContext& ctx, int64_t a, int64_t b, EValue& result) {
  EMBER_KERNEL_CHECK(ctx, b != 0, InvalidArgument, "mod.Scalar: modulo by zero");
  const int64_t r = b == -1 ? 0 : a % b;  // INT64_MIN % -1 traps on x86; every x % -1 is 0
  result = EValue((r != 0 && ((r < 0) != (b < 0))) ? r + b : r);  // Python's sign rule
}

void neg_scalar(KernelContext& ctx, const Scalar& a, EValue& result) {
  EMBER_KERNEL_CHECK(ctx, a.is_floating() || a.to<int64_t>() != INT64_MIN, InvalidArgument,
                     "executorch_prim::neg.Scalar: -(-2^63) is beyond int64");
  result = a.is_floating() ? EValue(-a.to_double()) : EValue(-a.to<int64_t>());
}

void eq_scalar(KernelContext&, const Scalar& a, const Scalar& b, EValue& result) {
  compare(a, b, result, [](auto x, auto y) { return x == y; });
}
void gt_scalar(KernelContext&, const Scalar& a, const Scalar& b, EValue& result) {
  compare(a, b, result, [](auto x, auto y) { return x > y; });
}
void lt_scalar(KernelContext&, const Scalar& a, const Scalar& b, EValue& result) {
  compare(a, b, result, [](auto x, auto y) { return x < y; });
}
void ge_scalar(KernelContext&, const Scalar& a, const Scalar& b, EValue& result) {
  compare(a, b, result, [](auto x, auto y) { return x >= y; });
}
void le_scalar(KernelContext&, const Scalar& a, const Scalar& b, EValue& result) {
  compare(a, b, result, [](auto x, auto y) { return x <= y; });
}

void et_copy_index(KernelContext& ctx, Tensor& self, const Tensor& src, int64_t index) {
  const char* name = "executorch_prim::et_copy_index.tensor";
  EMBER_KERNEL_CHECK(ctx, self.dim() == src.dim() + 1 && self.scalar_type() == src.scalar_type(), InvalidArgument,
                     "%s: self (%d-d %s) must have one more dimension than src (%d-d %s) and its dtype", name,
                     static_cast<int>(self.dim()), scalar_type_name(self.scalar_type()), static_cast<int>(src.dim()),
                     scalar_type_name(src.scalar_type()));
  EMBER_KERNEL_CHECK(ctx, self.is_contiguous() && src.is_contiguous(), NotSupported, "%s: tensors must be contiguous",
                     name);
  EMBER_KERNEL_CHECK(ctx, index >= 0 && index < INT32_MAX, InvalidArgument, "%s: index %lld", name,
                     static_cast<long long>(index));
  int32_t sizes[kMaxTensorDim];
  sizes[0] = static_cast<int32_t>(index + 1);
  for (int32_t d = 0; d < src.dim(); ++d) sizes[d + 1] = src.size(d);
  if (self.impl()->shape_dynamism() == ShapeDynamism::Static) {
    // A static self was planned with every row: it keeps its shape, and the row must exist.
    bool fits = index < self.size(0);
    for (int32_t d = 0; fits && d < src.dim(); ++d) fits = self.size(d + 1) == src.size(d);
    EMBER_KERNEL_CHECK(ctx, fits, InvalidArgument, "%s: row %lld of src's shape does not fit self", name,
                       static_cast<long long>(index));
  } else {
    // Growing dim 0 keeps the rows already written where they are (contiguous, dim 0 outermost).
    EMBER_KERNEL_CHECK(ctx, self.impl()->resize(ArrayRef<int32_t>(sizes, static_cast<size_t>(self.dim()))) == Error::Ok,
                       InvalidArgument, "%s: %lld rows of src's shape exceed self's planned capacity", name,
                       static_cast<long long>(index + 1));
  }
  const size_t row = src.nbytes();
  memmove(static_cast<uint8_t*>(self.mutable_data_ptr()) + static_cast<size_t>(index) * row, src.const_data_ptr(), row);
}

}  // namespace prim
}  // namespace ember
