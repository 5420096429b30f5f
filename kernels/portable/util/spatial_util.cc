#include "kernels/portable/util/spatial_util.h"

#include "kernels/portable/util/kernel_util.h"

namespace ember {
namespace portable {

Nchw nchw_of(const Tensor& t) {
  const int off = t.dim() == 4 ? 1 : 0;
  Nchw v;
  v.N = off ? t.size(0) : 1;
  v.C = t.size(off);
  v.H = t.size(off + 1);
  v.W = t.size(off + 2);
  v.sc = t.strides()[static_cast<size_t>(off)];
  v.sh = t.strides()[static_cast<size_t>(off + 1)];
  v.sw = t.strides()[static_cast<size_t>(off + 2)];
  v.sn = off ? t.strides()[0] : v.C * v.H * v.W;
  return v;
}

bool same_spatial_dim_order(const Tensor& a, const Tensor& b) {
  if (!a.dim_order().equals(b.dim_order())) return false;
  if (a.is_contiguous()) return true;
  const ArrayRef<uint8_t> o = a.dim_order();
  return a.dim() == 4 && o[0] == 0 && o[1] == 2 && o[2] == 3 && o[3] == 1;
}

namespace {

int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t out = (ceil_mode ? span + s - 1 : span) / s + 1;
  // ATen: with ceil_mode the last window must start inside the input or left padding.
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

}  // namespace

bool pool_geometry(const Tensor& in, ArrayRef<int64_t> k, ArrayRef<int64_t> s, ArrayRef<int64_t> p, ArrayRef<int64_t> d,
                   bool ceil_mode, PoolGeometry* g) {
  if ((in.dim() != 3 && in.dim() != 4) || k.size() < 1) return false;
  auto pick = [](ArrayRef<int64_t> v, size_t i, int64_t dflt) {
    return v.size() == 0 ? dflt : v.size() == 1 ? v[0] : v[i];
  };
  const int off = in.dim() == 4 ? 1 : 0;
  g->batch = off ? in.size(0) : 1;
  g->C = in.size(off);
  g->H = in.size(off + 1);
  g->W = in.size(off + 2);
  g->KH = pick(k, 0, 1);
  g->KW = pick(k, 1, 1);
  g->SH = pick(s, 0, g->KH);
  g->SW = pick(s, 1, g->KW);
  g->PH = pick(p, 0, 0);
  g->PW = pick(p, 1, 0);
  g->DH = pick(d, 0, 1);
  g->DW = pick(d, 1, 1);
  // Arguments beyond int32 are refused as PyTorch refuses them; within it the size arithmetic below fits int64.
  for (int64_t v : {g->KH, g->KW, g->SH, g->SW, g->PH, g->PW, g->DH, g->DW}) {
    if (v > INT32_MAX) return false;
  }
  if (g->KH <= 0 || g->KW <= 0 || g->SH <= 0 || g->SW <= 0 || g->DH <= 0 || g->DW <= 0 || g->PH < 0 || g->PW < 0 ||
      2 * g->PH > g->KH || 2 * g->PW > g->KW)
    return false;
  g->OH = pooled_size(g->H, g->KH, g->SH, g->PH, g->DH, ceil_mode);
  g->OW = pooled_size(g->W, g->KW, g->SW, g->PW, g->DW, ceil_mode);
  return g->OH > 0 && g->OW > 0;
}

bool fit_pooled(Tensor& t, const Tensor& in, const PoolGeometry& g) {
  const int64_t s4[4] = {g.batch, g.C, g.OH, g.OW};
  const int64_t s3[3] = {g.C, g.OH, g.OW};
  return in.dim() == 4 ? fit_output(t, s4, 4) : fit_output(t, s3, 3);
}

}  // namespace portable
}  // namespace ember
