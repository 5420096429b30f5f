#include "kernels/portable/util/copy_util.h"

#include <string.h>

#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

int64_t StridedView::numel() const {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= sizes[d];
  return n;
}

void StridedView::drop(int d) {
  for (int i = d; i + 1 < rank; ++i) sizes[i] = sizes[i + 1], strides[i] = strides[i + 1];
  --rank;
}

void StridedView::insert(int d, int64_t size, int64_t stride) {
  for (int i = rank; i > d; --i) sizes[i] = sizes[i - 1], strides[i] = strides[i - 1];
  sizes[d] = size, strides[d] = stride;
  ++rank;
}

StridedView view_of(const Tensor& t) {
  StridedView v;
  v.rank = t.dim();
  for (int d = 0; d < v.rank; ++d) v.sizes[d] = t.size(d), v.strides[d] = t.strides()[static_cast<size_t>(d)];
  return v;
}

namespace {

template <class T>
void copy_row(uint8_t* dst, int64_t ds, const uint8_t* src, int64_t ss, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    T v;  // through a local: no alignment assumed, and dst may alias src
    memcpy(&v, src + i * ss * static_cast<int64_t>(sizeof(T)), sizeof(T));
    memcpy(dst + i * ds * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
  }
}

int64_t load_int(const void* p, ScalarType t) {
  switch (t) {
    case ScalarType::UInt16: {
      uint16_t v;
      memcpy(&v, p, 2);
      return v;
    }
    case ScalarType::UInt32: {
      uint32_t v;
      memcpy(&v, p, 4);
      return v;
    }
    case ScalarType::UInt64: {
      uint64_t v;
      memcpy(&v, p, 8);
      return static_cast<int64_t>(v);
    }
    default: return load_as<int64_t>(p, t, 0);
  }
}

template <class T, class V>
void store(void* dst, V v) {
  const T x = static_cast<T>(v);
  memcpy(dst, &x, sizeof(T));
}

template <class V>
void store_as(void* dst, ScalarType t, V v) {
  switch (t) {
    case ScalarType::Float: return store<float>(dst, static_cast<float>(v));
    case ScalarType::Double: return store<double>(dst, static_cast<double>(v));
    case ScalarType::Half: return store<Half>(dst, static_cast<float>(v));
    case ScalarType::BFloat16: return store<BFloat16>(dst, static_cast<float>(v));
    case ScalarType::Bool: return store<bool>(dst, v != V(0));
    case ScalarType::Long: return store<int64_t>(dst, convert<int64_t>(v));
    case ScalarType::Int: return store<int32_t>(dst, convert<int32_t>(convert<int64_t>(v)));
    case ScalarType::Short: return store<int16_t>(dst, convert<int16_t>(convert<int64_t>(v)));
    case ScalarType::Char: return store<int8_t>(dst, convert<int8_t>(convert<int64_t>(v)));
    case ScalarType::Byte: return store<uint8_t>(dst, convert<uint8_t>(convert<int64_t>(v)));
    case ScalarType::UInt16: return store<uint16_t>(dst, convert<uint16_t>(convert<int64_t>(v)));
    case ScalarType::UInt32: return store<uint32_t>(dst, convert<uint32_t>(convert<int64_t>(v)));
    case ScalarType::UInt64: return store<uint64_t>(dst, convert<uint64_t>(convert<int64_t>(v)));
    default: memset(dst, 0, element_size(t)); return;
  }
}

}  // namespace

void convert_element(void* dst, ScalarType dst_type, const void* src, ScalarType src_type) {
  if (dst_type == src_type) {
    memmove(dst, src, element_size(dst_type));
  } else if (is_floating(src_type)) {
    store_as(dst, dst_type, load_as<double>(src, src_type, 0));
  } else {
    store_as(dst, dst_type, load_int(src, src_type));
  }
}

bool element_nonzero(const void* p, ScalarType type) {
  uint64_t bits = 0;
  const size_t n = element_size(type);
  memcpy(&bits, p, n < 8 ? n : 8);  // little-endian targets: the value's low bytes
  if (is_floating(type)) bits &= ~(uint64_t{1} << (8 * n - 1));
  return bits != 0;
}

void strided_copy(void* dst, const StridedView& dv, ScalarType dst_type, const void* src, const StridedView& sv,
                  ScalarType src_type) {
  // Size-1 dims dropped, and dims that are contiguous with the next in both views merged, so a slice or a
  // permute of heads is a few long rows.
  int64_t sz[kMaxViewDim], ds[kMaxViewDim], ss[kMaxViewDim];
  int r = 0;
  for (int d = 0; d < dv.rank; ++d) {
    if (dv.sizes[d] == 0) return;
    if (dv.sizes[d] == 1) continue;
    if (r > 0 && ds[r - 1] == dv.strides[d] * dv.sizes[d] && ss[r - 1] == sv.strides[d] * dv.sizes[d]) {
      sz[r - 1] *= dv.sizes[d];
      ds[r - 1] = dv.strides[d];
      ss[r - 1] = sv.strides[d];
    } else {
      sz[r] = dv.sizes[d], ds[r] = dv.strides[d], ss[r] = sv.strides[d], ++r;
    }
  }
  if (r == 0) sz[0] = 1, ds[0] = 1, ss[0] = 1, r = 1;
  const bool same = dst_type == src_type;
  const int64_t de = static_cast<int64_t>(element_size(dst_type)), se = static_cast<int64_t>(element_size(src_type));
  uint8_t* o = static_cast<uint8_t*>(dst);
  const uint8_t* in = static_cast<const uint8_t*>(src);
  const int64_t n = sz[r - 1], dst_step = ds[r - 1], src_step = ss[r - 1];
  int64_t rows = 1;
  for (int d = 0; d < r - 1; ++d) rows *= sz[d];
  int64_t coord[kMaxViewDim] = {0};
  int64_t doff = dv.offset, soff = sv.offset;
  for (int64_t row = 0; row < rows; ++row) {
    uint8_t* a = o + doff * de;
    const uint8_t* b = in + soff * se;
    if (!same) {
      for (int64_t i = 0; i < n; ++i) convert_element(a + i * dst_step * de, dst_type, b + i * src_step * se, src_type);
    } else if (dst_step == 1 && src_step == 1) {
      memmove(a, b, static_cast<size_t>(n * de));
    } else if (de == 4) {
      copy_row<uint32_t>(a, dst_step, b, src_step, n);
    } else if (de == 2) {
      copy_row<uint16_t>(a, dst_step, b, src_step, n);
    } else if (de == 8) {
      copy_row<uint64_t>(a, dst_step, b, src_step, n);
    } else if (de == 1) {
      copy_row<uint8_t>(a, dst_step, b, src_step, n);
    } else {
      for (int64_t i = 0; i < n; ++i) memmove(a + i * dst_step * de, b + i * src_step * se, static_cast<size_t>(de));
    }
    for (int d = r - 2; d >= 0; --d) {
      doff += ds[d], soff += ss[d];
      if (++coord[d] < sz[d]) break;
      doff -= ds[d] * sz[d], soff -= ss[d] * sz[d];
      coord[d] = 0;
    }
  }
}

int64_t offset_of(int64_t i, ArrayRef<int32_t> sizes, ArrayRef<int32_t> strides) {
  int64_t off = 0;
  for (size_t d = sizes.size(); d-- > 0;) {
    const int64_t s = sizes[d];
    off += (i % s) * strides[d];
    i /= s;
  }
  return off;
}

Walk::Walk(ArrayRef<int32_t> s) : rank(static_cast<int>(s.size())) {
  for (int d = 0; d < rank; ++d) sizes[d] = s[static_cast<size_t>(d)], coord[d] = 0;
}

Walk::Walk(const int64_t* s, int r) : rank(r) {
  for (int d = 0; d < rank; ++d) sizes[d] = s[d], coord[d] = 0;
}

int Walk::add(const int64_t* st, int64_t start) {
  for (int d = 0; d < rank; ++d) strides[operands][d] = st[d];
  off[operands] = start;
  return operands++;
}

int Walk::add(ArrayRef<int32_t> st, int64_t start) {
  int64_t s[kMaxViewDim];
  for (int d = 0; d < rank; ++d) s[d] = st[static_cast<size_t>(d)];
  return add(s, start);
}

void Walk::next() {
  for (int d = rank - 1; d >= 0; --d) {
    for (int k = 0; k < operands; ++k) off[k] += strides[k][d];
    if (++coord[d] < sizes[d]) return;
    for (int k = 0; k < operands; ++k) off[k] -= strides[k][d] * sizes[d];
    coord[d] = 0;
  }
}

bool broadcast_strides(const Tensor& in, ArrayRef<int32_t> out, int64_t* st) {
  const int n = static_cast<int>(out.size()), k = in.dim();
  if (k > n) return false;
  for (int d = 0; d < n; ++d) {
    const int j = d - (n - k);
    if (j < 0) {
      st[d] = 0;
      continue;
    }
    const int32_t s = in.size(j);
    if (s != out[static_cast<size_t>(d)] && s != 1) return false;
    st[d] = s == 1 ? 0 : in.strides()[static_cast<size_t>(j)];
  }
  return true;
}

}  // namespace portable
}  // namespace ember
