#include "kernels/portable/util/elementwise_util.h"

namespace ember {
namespace portable {
namespace {

// 0 bool, 1 integer, 2 floating; -1 for dtypes promotion does not cover.
int category(ScalarType t) {
  if (t == ScalarType::Bool) return 0;
  switch (t) {
    case ScalarType::Byte:
    case ScalarType::Char:
    case ScalarType::Short:
    case ScalarType::Int:
    case ScalarType::Long: return 1;
    case ScalarType::Half:
    case ScalarType::BFloat16:
    case ScalarType::Float:
    case ScalarType::Double: return 2;
    default: return -1;
  }
}

// Rank within a category: the wider type wins a promotion.
int width(ScalarType t) {
  switch (t) {
    case ScalarType::Byte:
    case ScalarType::Char: return 1;
    case ScalarType::Short:
    case ScalarType::Half:
    case ScalarType::BFloat16: return 2;
    case ScalarType::Int:
    case ScalarType::Float: return 4;
    default: return 8;
  }
}

// c10's combine_categories: `higher` (the operands that decide) against `lower` (0-dim tensors or scalars).
ScalarType combine(ScalarType higher, ScalarType lower) {
  if (is_floating(higher)) return higher;
  if (higher == ScalarType::Bool || is_floating(lower)) {
    ScalarType r = higher;
    promote_types(higher, lower, &r);
    return r;
  }
  return higher;
}

}  // namespace

bool promote_types(ScalarType a, ScalarType b, ScalarType* out) {
  const int ca = category(a), cb = category(b);
  if (ca < 0 || cb < 0) return false;
  if (a == b) {
    *out = a;
  } else if (ca != cb) {
    *out = ca > cb ? a : b;
  } else if (ca == 2) {
    // Half with BFloat16 has no common 16-bit type.
    const bool pair16 = width(a) == 2 && width(b) == 2;
    *out = pair16 ? ScalarType::Float : (width(a) > width(b) ? a : b);
  } else if (a == ScalarType::Byte || b == ScalarType::Byte) {
    // uint8 with a signed type needs the next signed type that holds both.
    const ScalarType s = a == ScalarType::Byte ? b : a;
    *out = s == ScalarType::Char ? ScalarType::Short : s;
  } else {
    *out = width(a) > width(b) ? a : b;
  }
  return true;
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != ScalarType::Bool && to == ScalarType::Bool) return false;
  return true;
}

ScalarType scalar_dtype(const Scalar& s) {
  return s.is_floating() ? ScalarType::Float : s.is_boolean() ? ScalarType::Bool : ScalarType::Long;
}

void ResultType::merge(ScalarType* slot, bool* has, ScalarType t) {
  if (category(t) < 0) {
    ok_ = false;
    return;
  }
  if (!*has) {
    *slot = t;
    *has = true;
  } else {
    promote_types(*slot, t, slot);
  }
}

ResultType& ResultType::add(const Tensor& t) {
  if (t.dim() == 0) {
    merge(&zero_, &has_zero_, t.scalar_type());
  } else {
    merge(&dim_, &has_dim_, t.scalar_type());
  }
  return *this;
}

ResultType& ResultType::add(const Scalar& s) {
  merge(&wrapped_, &has_wrapped_, scalar_dtype(s));
  return *this;
}

ScalarType ResultType::get() const {
  ScalarType low = wrapped_;
  bool has_low = has_wrapped_;
  if (has_zero_) {
    low = has_low ? combine(zero_, low) : zero_;
    has_low = true;
  }
  if (has_dim_) return has_low ? combine(dim_, low) : dim_;
  return low;
}

bool elementwise_out_type(ScalarType t) { return category(t) >= 0; }

template <typename C>
C load_converted(const void* data, ScalarType type, int64_t i) {
  return load_as<C>(data, type, i);
}
template <typename V>
void store_as(void* data, ScalarType type, int64_t i, V v) {
  switch (type) {
    case ScalarType::Float: static_cast<float*>(data)[i] = static_cast<float>(v); break;
    case ScalarType::Double: static_cast<double*>(data)[i] = static_cast<double>(v); break;
    case ScalarType::Half: static_cast<Half*>(data)[i] = Half(static_cast<float>(v)); break;
    case ScalarType::BFloat16: static_cast<BFloat16*>(data)[i] = BFloat16(static_cast<float>(v)); break;
    case ScalarType::Long: static_cast<int64_t*>(data)[i] = convert<int64_t>(v); break;
    case ScalarType::Int: static_cast<int32_t*>(data)[i] = convert<int32_t>(v); break;
    case ScalarType::Short: static_cast<int16_t*>(data)[i] = convert<int16_t>(v); break;
    case ScalarType::Char: static_cast<int8_t*>(data)[i] = convert<int8_t>(v); break;
    case ScalarType::Byte: static_cast<uint8_t*>(data)[i] = convert<uint8_t>(v); break;
    case ScalarType::Bool: static_cast<bool*>(data)[i] = static_cast<bool>(v); break;
    default: break;  // elementwise_types() refused other dtypes before the loop
  }
}
template void store_as<bool>(void*, ScalarType, int64_t, bool);
template void store_as<float>(void*, ScalarType, int64_t, float);
template void store_as<double>(void*, ScalarType, int64_t, double);
template void store_as<uint8_t>(void*, ScalarType, int64_t, uint8_t);
template void store_as<int8_t>(void*, ScalarType, int64_t, int8_t);
template void store_as<int16_t>(void*, ScalarType, int64_t, int16_t);
template void store_as<int32_t>(void*, ScalarType, int64_t, int32_t);
template void store_as<int64_t>(void*, ScalarType, int64_t, int64_t);

template bool load_converted<bool>(const void*, ScalarType, int64_t);
template float load_converted<float>(const void*, ScalarType, int64_t);
template double load_converted<double>(const void*, ScalarType, int64_t);
template uint8_t load_converted<uint8_t>(const void*, ScalarType, int64_t);
template int8_t load_converted<int8_t>(const void*, ScalarType, int64_t);
template int16_t load_converted<int16_t>(const void*, ScalarType, int64_t);
template int32_t load_converted<int32_t>(const void*, ScalarType, int64_t);
template int64_t load_converted<int64_t>(const void*, ScalarType, int64_t);

bool elementwise_types(KernelContext& ctx, const char* op, const ResultType& rt, ScalarType result, const Tensor& out) {
  if (!rt.ok()) {
    EMBER_LOG(ERROR, "%s: an input dtype has no type promotion here (complex, quantized or wide unsigned)", op);
  } else if (!elementwise_out_type(out.scalar_type())) {
    EMBER_LOG(ERROR, "%s: out dtype %s is not supported", op, scalar_type_name(out.scalar_type()));
  } else if (!can_cast(result, out.scalar_type())) {
    EMBER_LOG(ERROR, "%s: result type %s can't be cast to the desired output type %s", op, scalar_type_name(result),
              scalar_type_name(out.scalar_type()));
  } else {
    return true;
  }
  ctx.fail(Error::InvalidArgument);
  return false;
}

bool binary_types(KernelContext& ctx, const char* name, const ResultType& rt, Result kind, uint32_t types,
                  const Scalar* alpha, const Tensor& out, ScalarType* compute) {
  const ScalarType promoted = rt.ok() ? rt.get() : ScalarType::Float;
  // True division and atan2 of integers compute in the default float type.
  *compute = kind == Result::kFloating && !is_floating(promoted) ? ScalarType::Float : promoted;
  const ScalarType result = kind == Result::kPredicate ? ScalarType::Bool : *compute;
  if (!elementwise_types(ctx, name, rt, result, out)) return false;
  if (!(dtype_bit(*compute) & types)) {
    EMBER_LOG(ERROR, "%s: not implemented for %s", name, scalar_type_name(*compute));
  } else if (alpha != nullptr && alpha->is_floating() && !is_floating(*compute)) {
    EMBER_LOG(ERROR, "%s: alpha %g is a float but the inputs are %s; integer inputs need an integer alpha", name,
              alpha->to_double(), scalar_type_name(*compute));
  } else {
    return true;
  }
  ctx.fail(Error::InvalidArgument);
  return false;
}

bool elementwise_shape(KernelContext& ctx, const char* op, const Tensor* const* in, int n, Tensor& out,
                       ElementwiseShape* s) {
  int32_t sizes[kMaxTensorDim];
  int dim = 0;
  bool first = true;
  for (int k = 0; k < n; ++k) {
    if (in[k] == nullptr) continue;
    if (first) {
      dim = static_cast<int>(in[k]->dim());
      if (dim > kMaxTensorDim) dim = -1;
      for (int d = 0; d < dim; ++d) sizes[d] = in[k]->sizes()[static_cast<size_t>(d)];
      first = false;
    } else if (dim >= 0) {
      int32_t next[kMaxTensorDim];
      dim = broadcast_shape(ArrayRef<int32_t>(sizes, static_cast<size_t>(dim)), in[k]->sizes(), next);
      for (int d = 0; d < dim; ++d) sizes[d] = next[d];
    }
    if (dim < 0) {
      EMBER_LOG(ERROR, "%s: input %d (rank %d) does not broadcast with the inputs before it", op, k,
                static_cast<int>(in[k]->dim()));
      ctx.fail(Error::InvalidArgument);
      return false;
    }
  }
  if (!fit_output(out, sizes, static_cast<size_t>(dim))) {
    EMBER_LOG(ERROR, "%s: out has rank %d, the broadcast result rank %d or other sizes", op,
              static_cast<int>(out.dim()), dim);
    ctx.fail(Error::InvalidArgument);
    return false;
  }
  s->dim = dim;
  for (int d = 0; d < dim; ++d) s->sizes[d] = sizes[d];
  for (int k = 0; k < n; ++k) {
    s->mode[k] = ElementwiseShape::kSame;
    if (in[k] == nullptr) continue;
    const Tensor& t = *in[k];
    if (t.numel() == 1) {
      s->mode[k] = ElementwiseShape::kOne;
    } else if (t.sizes().equals(out.sizes()) && t.dim_order().equals(out.dim_order())) {
      s->mode[k] = ElementwiseShape::kSame;
    } else if (t.is_contiguous() && out.is_contiguous()) {
      s->mode[k] = ElementwiseShape::kBroadcast;
    } else if (out.is_contiguous()) {
      // A view in another dim order (exir turns permutes into views): read through its strides, broadcast or not.
      s->mode[k] = ElementwiseShape::kStrided;
    } else {
      EMBER_LOG(ERROR,
                "%s: input %d is broadcast or has another dim order than a non-contiguous out; this needs "
                "a contiguous out",
                op, k);
      ctx.fail(Error::NotSupported);
      return false;
    }
  }
  return true;
}

}  // namespace portable
}  // namespace ember
