// The one elementwise loop the binary, comparison, bitwise and ternary families share: PyTorch's type promotion
// (which dtype an op computes in), broadcasting of up to three inputs into `out`, and readers that load any input
// dtype into the compute type. An op is a small functor; a kernel is a dispatch over the computing dtype T and
// one call to `elementwise_run<OutT>`, so each kernel compiles one loop per selected dtype, not per dtype mix.
#pragma once

#include <stdint.h>

#include <type_traits>
#include <utility>

#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

// PyTorch's result_type over operands: dimensioned tensors decide, then 0-dim tensors, then Python scalars (int
// as Long, float as the default Float, bool as Bool); a 0-dim tensor or scalar only counts when it is of a
// higher category (bool < integer < floating) than what already decides. `ok()` is false for a dtype with no
// promotion rule here (complex, quantized, the wide unsigned types).
class ResultType {
 public:
  ResultType& add(const Tensor& t);
  ResultType& add(const Scalar& s);
  bool ok() const { return ok_; }
  ScalarType get() const;

 private:
  void merge(ScalarType* slot, bool* has, ScalarType t);
  ScalarType dim_ = ScalarType::Bool, zero_ = ScalarType::Bool, wrapped_ = ScalarType::Bool;
  bool has_dim_ = false, has_zero_ = false, has_wrapped_ = false, ok_ = true;
};

// c10's promote_types for Bool, the signed and unsigned 8-64 bit integers and the four floating types; false when
// either is outside them.
bool promote_types(ScalarType a, ScalarType b, ScalarType* out);

// PyTorch's canCast: no floating result into an integer or Bool out, no integer result into a Bool out.
bool can_cast(ScalarType from, ScalarType to);

// The dtype of a Python number taking part in promotion.
ScalarType scalar_dtype(const Scalar& s);

// How each input of an elementwise op maps output element i to its own element.
struct ElementwiseShape {
  // kStrided: an input in another dim order than a contiguous out (a permuted view), read through its strides.
  enum Mode : uint8_t { kSame, kOne, kBroadcast, kStrided };
  int dim = 0;
  int32_t sizes[kMaxTensorDim];
  Mode mode[3];
};

// Shape checks of an elementwise op over `n` inputs (a null input is skipped): they broadcast, `out` fits the
// result, and the dim orders allow a walk in memory order. Inputs of out's sizes and dim order are read in
// place (so channels-last tensors work when they all share it); one-element inputs in any order; any other
// broadcast needs every tensor contiguous. Fails `ctx` naming `op` and returns false otherwise.
bool elementwise_shape(KernelContext& ctx, const char* op, const Tensor* const* in, int n, Tensor& out,
                       ElementwiseShape* shape);

// load_as, out of line and instantiated once per compute type (the inlined switch in every kernel's loops cost
// more compile time than the loops themselves).
template <typename C>
C load_converted(const void* data, ScalarType type, int64_t i);

// Element i of an input (or a scalar) as compute_t<T>: a T input is read directly, other dtypes convert, and a
// value that PyTorch would first cast to T (Half, BFloat16) is rounded to T once.
template <typename T>
class Reader {
 public:
  using C = compute_t<T>;

  Reader(const Tensor& t, const ElementwiseShape& s, int k)
      : mode_(s.mode[k]),
        type_(t.scalar_type()),
        typed_(t.scalar_type() == ScalarTypeOf<T>::value),
        data_(t.const_data_ptr()),
        index_(s.mode[k] == ElementwiseShape::kStrided
                   ? BroadcastIndexer(t.sizes(), t.strides(), s.sizes, s.dim)
                   : BroadcastIndexer(t.sizes(), s.sizes, s.mode[k] == ElementwiseShape::kBroadcast ? s.dim : 0)) {
    if (mode_ == ElementwiseShape::kOne) set_one(load(0));
  }
  explicit Reader(const Scalar& v) : mode_(ElementwiseShape::kOne), index_({}, nullptr, 0) { set_one(v.to<C>()); }

  // For the loop without per-element dispatch: element i is direct()[i & direct_mask()] when direct() is not
  // null (an input of out's shape, dim order and T dtype; or one value, at index 0 for every i).
  const T* direct() const {
    if (mode_ == ElementwiseShape::kOne) return &one_;
    return mode_ == ElementwiseShape::kSame && typed_ ? static_cast<const T*>(data_) : nullptr;
  }
  int64_t direct_mask() const { return mode_ == ElementwiseShape::kOne ? 0 : -1; }

  C operator()(int64_t i) const {
    switch (mode_) {
      case ElementwiseShape::kOne: return value_;
      case ElementwiseShape::kSame: return load(i);
      default: return load(index_(i));
    }
  }

 private:
  void set_one(C v) {
    one_ = static_cast<T>(v);
    value_ = static_cast<C>(one_);
  }

  C load(int64_t k) const {
    if (typed_) return static_cast<C>(static_cast<const T*>(data_)[k]);
    return static_cast<C>(static_cast<T>(load_converted<C>(data_, type_, k)));
  }

  ElementwiseShape::Mode mode_;
  ScalarType type_ = ScalarType::Bool;
  bool typed_ = false;
  const void* data_ = nullptr;
  C value_{};
  T one_{};
  BroadcastIndexer index_;
};

// Stores v into element i of a tensor of dtype `type` (PyTorch's cast of a result into a differently typed out).
// Out of line and instantiated once per value type, like load_converted.
template <typename V>
void store_as(void* data, ScalarType type, int64_t i, V v);

// Whether `out` can receive the results of an elementwise loop (store_as knows its dtype).
bool elementwise_out_type(ScalarType t);

// compute_t of the element type of a `const T*`.
template <typename P>
using compute_of_pointer_t = compute_t<std::remove_cv_t<std::remove_pointer_t<P>>>;

// out[i] = op(readers(i)...) over out's elements. OutT is the type op's result has when it is stored without a
// conversion (the computing dtype T, or bool for predicates); any other out dtype goes through store_as.
template <typename OutT, typename Op, typename... R>
void elementwise_run(Tensor& out, Op& op, const R&... readers) {
  const int64_t n = out.numel();
  if (out.scalar_type() == ScalarTypeOf<OutT>::value) {
    OutT* o = out.mutable_data_ptr<OutT>();
    if (((readers.direct() != nullptr) && ...)) {
      // Same shapes, dim orders and dtypes throughout, or single values (the common cases): array loads.
      [&](auto... pm) {
        for (int64_t i = 0; i < n; ++i) {
          o[i] =
              static_cast<OutT>(op(static_cast<compute_of_pointer_t<decltype(pm.first)>>(pm.first[i & pm.second])...));
        }
      }(std::make_pair(readers.direct(), readers.direct_mask())...);
      return;
    }
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<OutT>(op(readers(i)...));
  } else {
    void* o = out.mutable_data_ptr();
    const ScalarType st = out.scalar_type();
    for (int64_t i = 0; i < n; ++i) store_as(o, st, i, op(readers(i)...));
  }
}

// Dtype checks every elementwise kernel makes after its shape checks: the operands promote (`rt`), the result
// dtype `result` (the promoted one, or what the op makes of it) casts into out as PyTorch allows, and out is a
// dtype the loop stores. Fails `ctx` naming `op` and returns false otherwise.
bool elementwise_types(KernelContext& ctx, const char* op, const ResultType& rt, ScalarType result, const Tensor& out);

template <typename T>
Reader<T> make_reader(const Tensor& t, const ElementwiseShape& s, int k) {
  return Reader<T>(t, s, k);
}
template <typename T>
Reader<T> make_reader(const Scalar& v, const ElementwiseShape&, int) {
  return Reader<T>(v);
}

// out = op(a, b) for a and b each a tensor or a scalar, computing in `compute` (dispatched over Mask). kPredicate:
// op returns bool (comparisons, logical ops), else compute_t<T>.
template <uint32_t Mask, bool kPredicate, typename Op, typename A, typename B>
void binary_loop(KernelContext& ctx, const char* name, ScalarType compute, const A& a, const B& b,
                 const ElementwiseShape& s, Tensor& out, Op& op) {
  EMBER_DISPATCH(ctx, name, Mask, compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using OutT = std::conditional_t<kPredicate, bool, T>;
    elementwise_run<OutT>(out, op, make_reader<T>(a, s, 0), make_reader<T>(b, s, 1));
  });
}

// What a binary op computes: in the promoted dtype; in a floating one where integers promote (true division,
// atan2); or a predicate of the promoted dtype (comparisons, logical ops: op returns bool, the result is Bool).
enum class Result { kPromoted, kFloating, kPredicate };

// The dtype checks of elementwise_binary (non-template, so each kernel does not carry a copy): sets `compute` to
// the dtype the op computes in, and fails `ctx` unless it is one of `types` (PyTorch's "not implemented for"),
// the result casts into out, and `alpha` (if any) is not a float for integer inputs.
bool binary_types(KernelContext& ctx, const char* name, const ResultType& rt, Result kind, uint32_t types,
                  const Scalar* alpha, const Tensor& out, ScalarType* compute);

// out = op(a, b), a and b each a Tensor or a Scalar: shape checks, dtype checks, then the loop in the computing
// dtype (dispatched over Mask & Types). Returns whether the loop ran (ops that refuse values, such as an integer
// division by zero, record that in `op` and the caller fails afterwards).
template <uint32_t Mask, uint32_t Types, Result kKind, typename Op, typename A, typename B>
bool elementwise_binary(KernelContext& ctx, const char* name, const A& a, const B& b, Tensor& out, Op&& op,
                        const Scalar* alpha = nullptr) {
  ElementwiseShape s;
  const Tensor* in[2] = {nullptr, nullptr};
  if constexpr (std::is_same<A, Tensor>::value) in[0] = &a;
  if constexpr (std::is_same<B, Tensor>::value) in[1] = &b;
  if (!elementwise_shape(ctx, name, in, 2, out, &s)) return false;
  ResultType rt;
  rt.add(a).add(b);
  ScalarType compute;
  if (!binary_types(ctx, name, rt, kKind, Types, alpha, out, &compute)) return false;
  binary_loop<Mask & Types, kKind == Result::kPredicate>(ctx, name, compute, a, b, s, out, op);
  return ctx.failure() == Error::Ok;
}

}  // namespace portable
}  // namespace ember
