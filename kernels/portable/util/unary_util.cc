#include "kernels/portable/util/unary_util.h"

#include <type_traits>

namespace ember {
namespace portable {
namespace {

template <typename C, typename S>
void convert_block(const void* data, int64_t start, int64_t n, C* buf) {
  const S* s = static_cast<const S*>(data) + start;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same<S, Half>::value || std::is_same<S, BFloat16>::value) {
      buf[i] = convert<C>(static_cast<float>(s[i]));
    } else {
      buf[i] = convert<C>(s[i]);
    }
  }
}

}  // namespace

template <typename C>
void load_block(const Tensor& t, int64_t start, int64_t n, C* buf) {
  const void* d = t.const_data_ptr();
  switch (t.scalar_type()) {
    case ScalarType::Float: return convert_block<C, float>(d, start, n, buf);
    case ScalarType::Double: return convert_block<C, double>(d, start, n, buf);
    case ScalarType::Half: return convert_block<C, Half>(d, start, n, buf);
    case ScalarType::BFloat16: return convert_block<C, BFloat16>(d, start, n, buf);
    case ScalarType::Long: return convert_block<C, int64_t>(d, start, n, buf);
    case ScalarType::Int: return convert_block<C, int32_t>(d, start, n, buf);
    case ScalarType::Short: return convert_block<C, int16_t>(d, start, n, buf);
    case ScalarType::Char: return convert_block<C, int8_t>(d, start, n, buf);
    case ScalarType::Byte: return convert_block<C, uint8_t>(d, start, n, buf);
    case ScalarType::Bool: return convert_block<C, Bool8>(d, start, n, buf);
    default:  // unreachable: unary_checks refused every other dtype
      for (int64_t i = 0; i < n; ++i) buf[i] = C();
  }
}

template void load_block<float>(const Tensor&, int64_t, int64_t, float*);
template void load_block<double>(const Tensor&, int64_t, int64_t, double*);
template void load_block<bool>(const Tensor&, int64_t, int64_t, bool*);

bool unary_checks(KernelContext& ctx, const char* name, const Tensor& in, uint32_t in_types, bool same_dtype,
                  Tensor& out) {
  const ScalarType it = in.scalar_type(), ot = out.scalar_type();
  if (!((in_types >> static_cast<int>(it)) & 1u)) {
    EMBER_LOG(ERROR, "%s: self's dtype %s is not supported", name, scalar_type_name(it));
  } else if (same_dtype && it != ot) {
    EMBER_LOG(ERROR, "%s: self is %s but out is %s; they must match", name, scalar_type_name(it), scalar_type_name(ot));
  } else if (!fit_output(out, in.sizes())) {
    EMBER_LOG(ERROR, "%s: out (rank %d) cannot take self's shape (rank %d)", name, static_cast<int>(out.dim()),
              static_cast<int>(in.dim()));
  } else if (!in.dim_order().equals(out.dim_order())) {
    EMBER_LOG(ERROR, "%s: self and out have different dim orders (one contiguous, one not)", name);
    ctx.fail(Error::NotSupported);
    return false;
  } else {
    return true;
  }
  ctx.fail(Error::InvalidArgument);
  return false;
}

}  // namespace portable
}  // namespace ember
