#include "backends/xnnpack/runtime/node_shapes.h"

#include <math.h>
#include <stdio.h>

#include "backends/xnnpack/runtime/graph_plan.h"
#include "backends/xnnpack/runtime/node_kinds.h"
#include "runtime/core/log.h"
#include "schema/xnnpack_graph_generated.h"

namespace ember {
namespace xnnpack {

namespace fb = ember_xnn;
using K = fb::NodeUnion;

namespace {

// XNNPACK's flag values (xnnpack.h, the same in 2022 and now).
constexpr uint32_t kTransposeWeights = 0x1;  // fully connected: filter is [input channels, output channels]
constexpr uint32_t kLegacyMode = 0x4;        // resize: TensorFlow's legacy coordinates
constexpr uint32_t kAlignCorners = 0x8;      // resize

// One node's context for messages.
struct At {
  uint32_t index;
  const char* kind;
};

// "[1, 224, 224, 3]" into a caller buffer, for messages.
const char* dims_text(const ValuePlan& v, char* buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (uint32_t d = 0; d < v.num_dims && used + 12 < size; ++d) {
    used += static_cast<size_t>(snprintf(buf + used, size - used, d == 0 ? "%u" : ", %u", v.dims[d]));
  }
  return buf;
}

Error mismatch(At at, uint32_t id, const ValuePlan& v, const char* expected) {
  char have[96];
  EMBER_LOG(ERROR, "XnnpackBackend: node %u (%s): value %u is [%s]; expected %s", at.index, at.kind, id,
            dims_text(v, have, sizeof(have)), expected);
  return Error::InvalidProgram;
}

Error expect_dims(At at, uint32_t id, const ValuePlan& v, const uint32_t* dims, uint32_t n) {
  bool ok = v.num_dims == n;
  for (uint32_t d = 0; ok && d < n; ++d) ok = v.dims[d] == dims[d];
  if (ok) return Error::Ok;
  char want[96] = "[";
  size_t used = 1;
  for (uint32_t d = 0; d < n && used + 14 < sizeof(want); ++d) {
    used += static_cast<size_t>(snprintf(want + used, sizeof(want) - used, d == 0 ? "%u" : ", %u", dims[d]));
  }
  snprintf(want + used, sizeof(want) - used, "]");
  return mismatch(at, id, v, want);
}

Error expect_flags(At at, uint32_t flags, uint32_t known) {
  EMBER_CHECK_OR_RETURN_ERROR((flags & ~known) == 0, NotSupported,
                              "XnnpackBackend: node %u (%s) has flags 0x%x; this reader knows 0x%x", at.index, at.kind,
                              flags, known);
  return Error::Ok;
}

uint64_t width(const ValuePlan& v) {
  const uint64_t n = numel(v);
  return n == 0 ? 0 : v.nbytes / n;
}

// Same-width elements in and out: every operator here but Convert computes in its input's type.
Error expect_same_width(At at, const GraphPlan& p, uint32_t in, uint32_t out) {
  const ValuePlan& a = p.values[in];
  const ValuePlan& b = p.values[out];
  EMBER_CHECK_OR_RETURN_ERROR(width(a) == width(b) || width(a) == 0 || width(b) == 0, InvalidProgram,
                              "XnnpackBackend: node %u (%s) reads value %u (datatype %u) and writes value %u (datatype "
                              "%u) of another element width",
                              at.index, at.kind, in, a.datatype, out, b.datatype);
  return Error::Ok;
}

Error expect_constant(At at, const GraphPlan& p, uint32_t id, const char* what) {
  EMBER_CHECK_OR_RETURN_ERROR(id != kNoId && p.values[id].constant, NotSupported,
                              "XnnpackBackend: node %u (%s): its %s (value %u) is not a constant; this XNNPACK (2022) "
                              "packs %ss at load only",
                              at.index, at.kind, what, id, what);
  return Error::Ok;
}

// Output extent of a window sliding over `in` padded by `pad`: 0 when the window does not fit.
uint32_t window_out(uint32_t in, uint32_t pad, uint32_t kernel, uint32_t stride, uint32_t dilation) {
  const uint64_t padded = static_cast<uint64_t>(in) + pad;
  const uint64_t effective = static_cast<uint64_t>(dilation) * (kernel - 1) + 1;
  if (stride == 0 || kernel == 0 || dilation == 0 || padded < effective) return 0;
  return static_cast<uint32_t>((padded - effective) / stride + 1);
}

Error check_window(At at, const ValuePlan& in, uint32_t in_id, uint32_t pads_h, uint32_t pads_w, uint32_t kh,
                   uint32_t kw, uint32_t sh, uint32_t sw, uint32_t dh, uint32_t dw, uint32_t* oh, uint32_t* ow) {
  if (in.num_dims != 4) return mismatch(at, in_id, in, "an NHWC tensor (4 dims)");
  *oh = window_out(in.dims[1], pads_h, kh, sh, dh);
  *ow = window_out(in.dims[2], pads_w, kw, sw, dw);
  EMBER_CHECK_OR_RETURN_ERROR(*oh > 0 && *ow > 0, InvalidProgram,
                              "XnnpackBackend: node %u (%s): a %ux%u window (stride %ux%u, dilation %ux%u) does not "
                              "fit the %ux%u input (padded by %u, %u)",
                              at.index, at.kind, kh, kw, sh, sw, dh, dw, in.dims[1], in.dims[2], pads_h, pads_w);
  return Error::Ok;
}

Error check_conv(At at, const GraphPlan& p, const fb::ConvNode* c, K kind) {
  const ValuePlan& in = p.values[c->input1_id()];
  const ValuePlan& filter = p.values[c->filter_id()];
  EMBER_TRY(expect_flags(at, c->flags(), 0));
  EMBER_TRY(expect_constant(at, p, c->filter_id(), "filter"));
  if (c->bias_id() != kNoId) EMBER_TRY(expect_constant(at, p, c->bias_id(), "bias"));
  const uint32_t kh = c->kernel_height(), kw = c->kernel_width();
  uint64_t in_channels = 0, out_channels = 0;
  uint32_t filter_dims[4];
  if (kind == K::DepthwiseConv2d) {
    // ExecuTorch's depthwise: groups = input channels, group_output_channels = the depth multiplier.
    in_channels = c->groups();
    out_channels = static_cast<uint64_t>(c->groups()) * c->group_output_channels();
    filter_dims[0] = 1;
    filter_dims[1] = kh;
    filter_dims[2] = kw;
    filter_dims[3] = static_cast<uint32_t>(out_channels);
  } else {
    in_channels = static_cast<uint64_t>(c->groups()) * c->group_input_channels();
    out_channels = static_cast<uint64_t>(c->groups()) * c->group_output_channels();
    filter_dims[0] = static_cast<uint32_t>(out_channels);
    filter_dims[1] = kh;
    filter_dims[2] = kw;
    filter_dims[3] = c->group_input_channels();
  }
  EMBER_CHECK_OR_RETURN_ERROR(in_channels > 0 && out_channels > 0 && out_channels < (1u << 30), InvalidProgram,
                              "XnnpackBackend: node %u (%s): %u groups of %u input and %u output channels", at.index,
                              at.kind, c->groups(), c->group_input_channels(), c->group_output_channels());
  if (in.num_dims != 4 || in.dims[3] != in_channels) {
    char want[64];
    snprintf(want, sizeof(want), "NHWC with %llu channels", static_cast<unsigned long long>(in_channels));
    return mismatch(at, c->input1_id(), in, want);
  }
  EMBER_TRY(expect_dims(at, c->filter_id(), filter, filter_dims, 4));
  if (c->bias_id() != kNoId && numel(p.values[c->bias_id()]) != out_channels) {
    return mismatch(at, c->bias_id(), p.values[c->bias_id()], "one element per output channel");
  }
  uint32_t oh = 0, ow = 0;
  if (kind == K::ConvTranspose2d) {
    // Deconvolution: the window's inverse, with the output adjustment (output_padding) added back.
    const uint64_t eh = static_cast<uint64_t>(c->dilation_height()) * (kh - 1) + 1;
    const uint64_t ew = static_cast<uint64_t>(c->dilation_width()) * (kw - 1) + 1;
    // (Unsigned wrap for an empty input is caught by the dims check below.)
    const uint64_t full_h =
        static_cast<uint64_t>(c->subsampling_height()) * (in.dims[1] - 1) + c->adjustment_height() + eh;
    const uint64_t full_w =
        static_cast<uint64_t>(c->subsampling_width()) * (in.dims[2] - 1) + c->adjustment_width() + ew;
    const uint64_t pad_h = static_cast<uint64_t>(c->padding_top()) + c->padding_bottom();
    const uint64_t pad_w = static_cast<uint64_t>(c->padding_left()) + c->padding_right();
    EMBER_CHECK_OR_RETURN_ERROR(kh > 0 && kw > 0 && c->subsampling_height() > 0 && c->subsampling_width() > 0 &&
                                    c->dilation_height() > 0 && c->dilation_width() > 0 && in.dims[1] > 0 &&
                                    in.dims[2] > 0 && full_h > pad_h && full_w > pad_w && full_h - pad_h < (1u << 30) &&
                                    full_w - pad_w < (1u << 30),
                                InvalidProgram, "XnnpackBackend: node %u (%s): its geometry leaves no output", at.index,
                                at.kind);
    oh = static_cast<uint32_t>(full_h - pad_h);
    ow = static_cast<uint32_t>(full_w - pad_w);
  } else {
    EMBER_TRY(check_window(at, in, c->input1_id(), c->padding_top() + c->padding_bottom(),
                           c->padding_left() + c->padding_right(), kh, kw, c->subsampling_height(),
                           c->subsampling_width(), c->dilation_height(), c->dilation_width(), &oh, &ow));
  }
  const uint32_t out_dims[4] = {in.dims[0], oh, ow, static_cast<uint32_t>(out_channels)};
  return expect_dims(at, c->output_id(), p.values[c->output_id()], out_dims, 4);
}

Error check_pooling(At at, const GraphPlan& p, const fb::Pooling2dNode* t, bool max) {
  const ValuePlan& in = p.values[t->input_id()];
  EMBER_TRY(expect_flags(at, t->flags(), kFlagKeepDims));
  // The 2022 average pooling has no dilation parameter.
  EMBER_CHECK_OR_RETURN_ERROR(max || (t->dilation_height() <= 1 && t->dilation_width() <= 1), NotSupported,
                              "XnnpackBackend: node %u (%s): dilation %ux%u; this XNNPACK's average pooling has none",
                              at.index, at.kind, t->dilation_height(), t->dilation_width());
  const uint32_t dh = max ? t->dilation_height() : 1, dw = max ? t->dilation_width() : 1;
  uint32_t oh = 0, ow = 0;
  EMBER_TRY(check_window(at, in, t->input_id(), t->padding_top() + t->padding_bottom(),
                         t->padding_left() + t->padding_right(), t->pooling_height(), t->pooling_width(),
                         t->stride_height(), t->stride_width(), dh, dw, &oh, &ow));
  const uint32_t out_dims[4] = {in.dims[0], oh, ow, in.dims[3]};
  return expect_dims(at, t->output_id(), p.values[t->output_id()], out_dims, 4);
}

Error check_binary(At at, const GraphPlan& p, const fb::Node2x1* t) {
  const ValuePlan& a = p.values[t->input1_id()];
  const ValuePlan& b = p.values[t->input2_id()];
  EMBER_TRY(expect_flags(at, t->flags(), 0));
  EMBER_TRY(expect_same_width(at, p, t->input1_id(), t->output_id()));
  // NumPy broadcasting, aligned at the last dim.
  const uint32_t n = a.num_dims > b.num_dims ? a.num_dims : b.num_dims;
  uint32_t dims[kMaxDims];
  for (uint32_t d = 0; d < n; ++d) {
    const uint32_t da = d + a.num_dims >= n ? a.dims[d + a.num_dims - n] : 1;
    const uint32_t db = d + b.num_dims >= n ? b.dims[d + b.num_dims - n] : 1;
    EMBER_CHECK_OR_RETURN_ERROR(da == db || da == 1 || db == 1, InvalidProgram,
                                "XnnpackBackend: node %u (%s): values %u and %u do not broadcast (dim %u: %u vs %u)",
                                at.index, at.kind, t->input1_id(), t->input2_id(), d, da, db);
    dims[d] = da == 1 ? db : da;
  }
  return expect_dims(at, t->output_id(), p.values[t->output_id()], dims, n);
}

Error check_unary(At at, const GraphPlan& p, uint32_t in, uint32_t out, uint32_t flags, bool same_width) {
  EMBER_TRY(expect_flags(at, flags, 0));
  if (same_width) EMBER_TRY(expect_same_width(at, p, in, out));
  return expect_dims(at, out, p.values[out], p.values[in].dims, p.values[in].num_dims);
}

Error check_fully_connected(At at, const GraphPlan& p, const fb::FullyConnected* t) {
  const ValuePlan& in = p.values[t->input1_id()];
  const ValuePlan& filter = p.values[t->filter_id()];
  EMBER_TRY(expect_flags(at, t->flags(), kTransposeWeights));
  EMBER_TRY(expect_constant(at, p, t->filter_id(), "filter"));
  if (t->bias_id() != kNoId) EMBER_TRY(expect_constant(at, p, t->bias_id(), "bias"));
  // The 2022 library's fully connected takes int8 weights with one scale (its convolutions take one per channel);
  // ExecuTorch's XNNPACKQuantizer gives linears one per output channel. XNNPACK's own refusal says only "invalid
  // parameter".
  EMBER_CHECK_OR_RETURN_ERROR(filter.datatype != static_cast<uint32_t>(fb::Datatype::qcint8), NotSupported,
                              "XnnpackBackend: node %u (%s): its filter (value %u) is int8 with a scale per channel "
                              "(qcint8), which this XNNPACK (2022) takes for convolutions only",
                              at.index, at.kind, t->filter_id());
  if (filter.num_dims != 2 || filter.dims[0] == 0 || filter.dims[1] == 0) {
    return mismatch(at, t->filter_id(), filter, "a 2-dim filter");
  }
  const bool transposed = (t->flags() & kTransposeWeights) != 0;
  const uint32_t in_channels = transposed ? filter.dims[0] : filter.dims[1];
  const uint32_t out_channels = transposed ? filter.dims[1] : filter.dims[0];
  if (in.num_dims == 0 || in.dims[in.num_dims - 1] != in_channels) {
    char want[64];
    snprintf(want, sizeof(want), "%u elements in its last dim", in_channels);
    return mismatch(at, t->input1_id(), in, want);
  }
  if (t->bias_id() != kNoId && numel(p.values[t->bias_id()]) != out_channels) {
    return mismatch(at, t->bias_id(), p.values[t->bias_id()], "one element per output channel");
  }
  uint32_t dims[kMaxDims];
  for (uint32_t d = 0; d + 1 < in.num_dims; ++d) dims[d] = in.dims[d];
  dims[in.num_dims - 1] = out_channels;
  return expect_dims(at, t->output_id(), p.values[t->output_id()], dims, in.num_dims);
}

Error check_transpose(At at, const GraphPlan& p, const fb::StaticTranspose* t) {
  const ValuePlan& in = p.values[t->input_id()];
  EMBER_TRY(expect_flags(at, t->flags(), 0));
  EMBER_TRY(expect_same_width(at, p, t->input_id(), t->output_id()));
  const uint32_t n = t->perm() != nullptr ? t->perm()->size() : 0;
  EMBER_CHECK_OR_RETURN_ERROR(n == in.num_dims && n == t->num_dims(), InvalidProgram,
                              "XnnpackBackend: node %u (%s): a %u-entry permutation (num_dims %u) of a %u-dim value",
                              at.index, at.kind, n, t->num_dims(), in.num_dims);
  uint32_t dims[kMaxDims];
  uint32_t seen = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t d = t->perm()->Get(i);
    EMBER_CHECK_OR_RETURN_ERROR(d < n && !(seen >> d & 1u), InvalidProgram,
                                "XnnpackBackend: node %u (%s): perm[%u] = %u is not a permutation of %u dims", at.index,
                                at.kind, i, d, n);
    seen |= 1u << d;
    dims[i] = in.dims[d];
  }
  return expect_dims(at, t->output_id(), p.values[t->output_id()], dims, n);
}

// cpu_nodes.h's arithmetic is fp32 only.
Error expect_fp32(At at, const GraphPlan& p, const uint32_t* ids, size_t n) {
  for (size_t k = 0; k < n; ++k) {
    EMBER_CHECK_OR_RETURN_ERROR(p.values[ids[k]].datatype == static_cast<uint32_t>(fb::Datatype::fp32), NotSupported,
                                "XnnpackBackend: node %u (%s): value %u has datatype %u; Ember runs this node on the "
                                "CPU for fp32 only",
                                at.index, at.kind, ids[k], p.values[ids[k]].datatype);
  }
  return Error::Ok;
}

// [..., M, K] x [..., K, N] -> [..., M, N], the leading (batch) dims equal. XNN_FLAG_TRANSPOSE_B is refused: ExecuTorch
// writes attention's K^T as a transpose node before the product.
Error check_batch_matmul(At at, const GraphPlan& p, const fb::Node2x1* t) {
  const uint32_t ids[3] = {t->input1_id(), t->input2_id(), t->output_id()};
  EMBER_TRY(expect_flags(at, t->flags(), 0));
  EMBER_TRY(expect_fp32(at, p, ids, 3));
  const ValuePlan& a = p.values[ids[0]];
  const ValuePlan& b = p.values[ids[1]];
  if (a.num_dims < 2) return mismatch(at, ids[0], a, "a matrix or a batch of them (2 dims or more)");
  char want[64];
  snprintf(want, sizeof(want), "%u dims, [..., %u, N] with input 1's batch dims", a.num_dims, a.dims[a.num_dims - 1]);
  bool ok = b.num_dims == a.num_dims && b.dims[b.num_dims - 2] == a.dims[a.num_dims - 1];
  for (uint32_t d = 0; ok && d + 2 < a.num_dims; ++d) ok = a.dims[d] == b.dims[d];
  if (!ok) return mismatch(at, ids[1], b, want);
  uint32_t dims[kMaxDims];
  for (uint32_t d = 0; d < a.num_dims; ++d) dims[d] = a.dims[d];
  dims[a.num_dims - 1] = b.dims[b.num_dims - 1];
  return expect_dims(at, ids[2], p.values[ids[2]], dims, a.num_dims);
}

// Inputs of one datatype and rank, equal but along `axis`; the output their sum along it.
Error check_concat(At at, const GraphPlan& p, const fb::ConcatNode* t, uint32_t count) {
  const uint32_t in[5] = {t->input1_id(), t->input2_id(), t->input3_id(), t->input4_id(), t->input5_id()};
  EMBER_TRY(expect_flags(at, t->flags(), 0));
  const ValuePlan& first = p.values[in[0]];
  EMBER_CHECK_OR_RETURN_ERROR(t->axis() < first.num_dims, InvalidProgram,
                              "XnnpackBackend: node %u (%s): axis %u of a %u-dim value", at.index, at.kind, t->axis(),
                              first.num_dims);
  uint32_t dims[kMaxDims];
  for (uint32_t d = 0; d < first.num_dims; ++d) dims[d] = first.dims[d];
  for (uint32_t k = 1; k < count; ++k) {
    const ValuePlan& v = p.values[in[k]];
    EMBER_CHECK_OR_RETURN_ERROR(v.datatype == first.datatype, InvalidProgram,
                                "XnnpackBackend: node %u (%s): input %u (value %u) has datatype %u, input 0 %u",
                                at.index, at.kind, k, in[k], v.datatype, first.datatype);
    bool ok = v.num_dims == first.num_dims;
    for (uint32_t d = 0; ok && d < first.num_dims; ++d) ok = d == t->axis() || v.dims[d] == first.dims[d];
    if (!ok) {
      char want[80];
      snprintf(want, sizeof(want), "input 0's %u dims except along axis %u", first.num_dims, t->axis());
      return mismatch(at, in[k], v, want);
    }
    const uint64_t sum = static_cast<uint64_t>(dims[t->axis()]) + v.dims[t->axis()];
    EMBER_CHECK_OR_RETURN_ERROR(sum < (1u << 30), InvalidProgram,
                                "XnnpackBackend: node %u (%s): %llu elements along axis %u", at.index, at.kind,
                                static_cast<unsigned long long>(sum), t->axis());
    dims[t->axis()] = static_cast<uint32_t>(sum);
  }
  EMBER_TRY(expect_same_width(at, p, in[0], t->output_id()));
  EMBER_CHECK_OR_RETURN_ERROR(p.values[t->output_id()].datatype == first.datatype, InvalidProgram,
                              "XnnpackBackend: node %u (%s): output (value %u) has datatype %u, its inputs %u",
                              at.index, at.kind, t->output_id(), p.values[t->output_id()].datatype, first.datatype);
  return expect_dims(at, t->output_id(), p.values[t->output_id()], dims, first.num_dims);
}

// offsets[d] + sizes[d] within input dim d, the output `sizes`; a copy, so any datatype, the same in and out (and,
// quantized, the same scale and zero point: the bytes are not requantized).
Error check_slice(At at, const GraphPlan& p, const fb::StaticSlice* t) {
  const ValuePlan& in = p.values[t->input_id()];
  const ValuePlan& out = p.values[t->output_id()];
  EMBER_TRY(expect_flags(at, t->flags(), 0));
  const auto* offsets = t->offsets();
  const auto* sizes = t->sizes();
  const uint32_t n_off = offsets != nullptr ? offsets->size() : 0, n_size = sizes != nullptr ? sizes->size() : 0;
  EMBER_CHECK_OR_RETURN_ERROR(n_off == in.num_dims && n_size == in.num_dims && t->num_dims() == in.num_dims,
                              InvalidProgram,
                              "XnnpackBackend: node %u (%s): offsets for %u dims and sizes for %u (num_dims %u) of a "
                              "%u-dim value",
                              at.index, at.kind, n_off, n_size, t->num_dims(), in.num_dims);
  uint32_t dims[kMaxDims];
  for (uint32_t d = 0; d < in.num_dims; ++d) {
    const uint64_t end = static_cast<uint64_t>(offsets->Get(d)) + sizes->Get(d);
    EMBER_CHECK_OR_RETURN_ERROR(end <= in.dims[d], InvalidProgram,
                                "XnnpackBackend: node %u (%s): dim %u: offset %u + size %u is past value %u's %u",
                                at.index, at.kind, d, offsets->Get(d), sizes->Get(d), t->input_id(), in.dims[d]);
    dims[d] = sizes->Get(d);
  }
  EMBER_CHECK_OR_RETURN_ERROR(out.datatype == in.datatype, InvalidProgram,
                              "XnnpackBackend: node %u (%s): output (value %u) has datatype %u, its input %u", at.index,
                              at.kind, t->output_id(), out.datatype, in.datatype);
  if (in.quantized != nullptr || out.quantized != nullptr) {
    const fb::PerTensorQuant* a = in.quantized ? in.quantized->quant_params_as_PerTensorQuant() : nullptr;
    const fb::PerTensorQuant* b = out.quantized ? out.quantized->quant_params_as_PerTensorQuant() : nullptr;
    EMBER_CHECK_OR_RETURN_ERROR(a != nullptr && b != nullptr && a->scale() == b->scale() &&
                                    a->zero_point() == b->zero_point(),
                                NotSupported,
                                "XnnpackBackend: node %u (%s): values %u and %u are not quantized alike (per tensor, "
                                "one scale and zero point); Ember's CPU slice copies bytes",
                                at.index, at.kind, t->input_id(), t->output_id());
  }
  return expect_dims(at, t->output_id(), out, dims, in.num_dims);
}

// ExecuTorch fuses clamps into convolutions, linears and element-wise arithmetic only; Ember's CPU nodes do not
// apply one, so a node routed there that carries one is refused rather than run unclamped.
Error expect_no_clamp(At at, const fb::Node* node) {
  const fb::OutputMinMax* mm = node->output_min_max();
  EMBER_CHECK_OR_RETURN_ERROR(mm == nullptr || (isinf(mm->output_min()) && mm->output_min() < 0 &&
                                                isinf(mm->output_max()) && mm->output_max() > 0),
                              NotSupported,
                              "XnnpackBackend: node %u (%s) carries a fused clamp [%g, %g]; Ember runs this node on "
                              "the CPU without one",
                              at.index, at.kind, mm != nullptr ? static_cast<double>(mm->output_min()) : 0.0,
                              mm != nullptr ? static_cast<double>(mm->output_max()) : 0.0);
  return Error::Ok;
}

Error check_reshape(At at, const GraphPlan& p, uint32_t in, uint32_t out, const flatbuffers::Vector<uint32_t>* shape,
                    uint32_t flags) {
  EMBER_TRY(expect_flags(at, flags, 0));
  EMBER_TRY(expect_same_width(at, p, in, out));
  const ValuePlan& o = p.values[out];
  if (shape != nullptr) {
    uint32_t dims[kMaxDims];
    EMBER_CHECK_OR_RETURN_ERROR(shape->size() <= kMaxDims, InvalidProgram,
                                "XnnpackBackend: node %u (%s): a %u-dim new shape", at.index, at.kind, shape->size());
    // One 0 in the new shape stands for the dimension the element count leaves (ExecuTorch writes it for a view
    // with a -1, as BERT's head split); the output value says what it is, and the count check below holds it to it.
    uint32_t inferred = 0;
    for (uint32_t d = 0; d < shape->size(); ++d) {
      dims[d] = shape->Get(d);
      if (dims[d] == 0 && d < o.num_dims) dims[d] = o.dims[d], ++inferred;
    }
    EMBER_CHECK_OR_RETURN_ERROR(inferred <= 1, InvalidProgram,
                                "XnnpackBackend: node %u (%s): %u dims of the new shape are 0 (inferred); at most one "
                                "may be",
                                at.index, at.kind, inferred);
    EMBER_TRY(expect_dims(at, out, o, dims, shape->size()));
  }
  EMBER_CHECK_OR_RETURN_ERROR(numel(o) == numel(p.values[in]), InvalidProgram,
                              "XnnpackBackend: node %u (%s): value %u has %llu elements, value %u has %llu", at.index,
                              at.kind, in, static_cast<unsigned long long>(numel(p.values[in])), out,
                              static_cast<unsigned long long>(numel(o)));
  return Error::Ok;
}

}  // namespace

Error check_node_shapes(const GraphPlan& p, uint32_t index, const fb::Node* node) {
  const K kind = node->node_type();
  const At at{index, node_kind_name(static_cast<uint8_t>(kind))};
  const NodeRoute route = route_of(static_cast<uint8_t>(kind));
  if (route == NodeRoute::Cpu || (route == NodeRoute::Transpose && !transpose_is_reshape(p, node))) {
    EMBER_TRY(expect_no_clamp(at, node));
  }
  switch (kind) {
    case K::Add:
    case K::Div:
    case K::Minimum:
    case K::Maximum:
    case K::Multiply:
    case K::Subtract: return check_binary(at, p, static_cast<const fb::Node2x1*>(node->node()));
    case K::PReLU: {
      const auto* t = node->node_as_PReLU();
      const ValuePlan& in = p.values[t->input1_id()];
      EMBER_TRY(expect_constant(at, p, t->input2_id(), "slope"));
      if (in.num_dims == 0 || numel(p.values[t->input2_id()]) != in.dims[in.num_dims - 1]) {
        return mismatch(at, t->input2_id(), p.values[t->input2_id()], "one slope per channel (the last dim)");
      }
      return check_unary(at, p, t->input1_id(), t->output_id(), t->flags(), true);
    }
    case K::Softmax:
    case K::Sigmoid:
    case K::Clamp:
    case K::Floor:
    case K::SquareRoot:
    case K::Ceiling:
    case K::Hardswish:
    case K::Negate:
    case K::Square:
    case K::Abs: {
      const auto* t = static_cast<const fb::Node1x1*>(node->node());
      return check_unary(at, p, t->input_id(), t->output_id(), t->flags(), true);
    }
    case K::Gelu:
    case K::Tanh:
    case K::Exp:
    case K::Log:
    case K::Sin:
    case K::Cos:
    case K::ReciprocalSquareRoot: {
      const auto* t = static_cast<const fb::Node1x1*>(node->node());
      const uint32_t ids[2] = {t->input_id(), t->output_id()};
      EMBER_TRY(expect_fp32(at, p, ids, 2));
      return check_unary(at, p, t->input_id(), t->output_id(), t->flags(), true);
    }
    case K::BatchMatrixMultiply: return check_batch_matmul(at, p, node->node_as_BatchMatrixMultiply());
    case K::Concatenate2:
    case K::Concatenate3:
    case K::Concatenate4:
    case K::Concatenate5:
      return check_concat(at, p, static_cast<const fb::ConcatNode*>(node->node()),
                          concat_inputs(static_cast<uint8_t>(kind)));
    case K::Convert: {
      const auto* t = node->node_as_Convert();
      return check_unary(at, p, t->input_id(), t->output_id(), t->flags(), false);
    }
    case K::ELU: {
      const auto* t = node->node_as_ELU();
      return check_unary(at, p, t->input_id(), t->output_id(), t->flags(), true);
    }
    case K::LeakyReLU: {
      const auto* t = node->node_as_LeakyReLU();
      return check_unary(at, p, t->input_id(), t->output_id(), t->flags(), true);
    }
    case K::FullyConnected: return check_fully_connected(at, p, node->node_as_FullyConnected());
    case K::Conv2d:
    case K::DepthwiseConv2d:
    case K::ConvTranspose2d: return check_conv(at, p, static_cast<const fb::ConvNode*>(node->node()), kind);
    case K::AvgPooling2d:
    case K::MaxPooling2d:
      return check_pooling(at, p, static_cast<const fb::Pooling2dNode*>(node->node()), kind == K::MaxPooling2d);
    case K::GlobalAvgPooling2d: {
      const auto* t = node->node_as_GlobalAvgPooling2d();
      const ValuePlan& in = p.values[t->input_id()];
      EMBER_TRY(expect_flags(at, t->flags(), kFlagKeepDims));
      EMBER_TRY(expect_same_width(at, p, t->input_id(), t->output_id()));
      if (in.num_dims != 4) return mismatch(at, t->input_id(), in, "an NHWC tensor (4 dims)");
      const uint32_t kept[4] = {in.dims[0], 1, 1, in.dims[3]};
      const ValuePlan& out = p.values[t->output_id()];
      // [N, 1, 1, C] (ExecuTorch's, with XNN_FLAG_KEEP_DIMS) or [N, C]: the same bytes.
      const uint32_t flat[2] = {in.dims[0], in.dims[3]};
      return out.num_dims == 2 ? expect_dims(at, t->output_id(), out, flat, 2)
                               : expect_dims(at, t->output_id(), out, kept, 4);
    }
    case K::StaticTranspose: return check_transpose(at, p, node->node_as_StaticTranspose());
    case K::StaticSlice: return check_slice(at, p, node->node_as_StaticSlice());
    case K::StaticReshape: {
      const auto* t = node->node_as_StaticReshape();
      EMBER_CHECK_OR_RETURN_ERROR(t->new_shape() != nullptr && t->new_shape()->size() == t->num_dims(), InvalidProgram,
                                  "XnnpackBackend: node %u (%s): num_dims %u, %u dims listed", at.index, at.kind,
                                  t->num_dims(), t->new_shape() ? t->new_shape()->size() : 0u);
      return check_reshape(at, p, t->input_id(), t->output_id(), t->new_shape(), t->flags());
    }
    case K::Copy: {
      const auto* t = node->node_as_Copy();
      return check_reshape(at, p, t->input_id(), t->output_id(), nullptr, t->flags());
    }
    case K::StaticConstantPad: {
      const auto* t = node->node_as_StaticConstantPad();
      const ValuePlan& in = p.values[t->input_id()];
      EMBER_TRY(expect_flags(at, t->flags(), 0));
      EMBER_TRY(expect_same_width(at, p, t->input_id(), t->output_id()));
      const auto* pre = t->pre_paddings();
      const auto* post = t->post_paddings();
      EMBER_CHECK_OR_RETURN_ERROR(pre != nullptr && post != nullptr && pre->size() == in.num_dims &&
                                      post->size() == in.num_dims,
                                  InvalidProgram,
                                  "XnnpackBackend: node %u (%s): paddings for %u and %u dims of a %u-dim value",
                                  at.index, at.kind, pre ? pre->size() : 0u, post ? post->size() : 0u, in.num_dims);
      uint32_t dims[kMaxDims];
      for (uint32_t d = 0; d < in.num_dims; ++d) {
        const uint64_t e = static_cast<uint64_t>(in.dims[d]) + pre->Get(d) + post->Get(d);
        EMBER_CHECK_OR_RETURN_ERROR(e < (1u << 30), InvalidProgram,
                                    "XnnpackBackend: node %u (%s): dim %u padded to %llu", at.index, at.kind, d,
                                    static_cast<unsigned long long>(e));
        dims[d] = static_cast<uint32_t>(e);
      }
      return expect_dims(at, t->output_id(), p.values[t->output_id()], dims, in.num_dims);
    }
    case K::StaticResizeBilinear2D: {
      const auto* t = node->node_as_StaticResizeBilinear2D();
      const ValuePlan& in = p.values[t->input_id()];
      EMBER_TRY(expect_flags(at, t->flags(), kAlignCorners | kLegacyMode));
      EMBER_TRY(expect_same_width(at, p, t->input_id(), t->output_id()));
      if (in.num_dims != 4) return mismatch(at, t->input_id(), in, "an NHWC tensor (4 dims)");
      EMBER_CHECK_OR_RETURN_ERROR(t->new_height() > 0 && t->new_width() > 0, InvalidProgram,
                                  "XnnpackBackend: node %u (%s): resizes to %ux%u", at.index, at.kind, t->new_height(),
                                  t->new_width());
      const uint32_t dims[4] = {in.dims[0], t->new_height(), t->new_width(), in.dims[3]};
      return expect_dims(at, t->output_id(), p.values[t->output_id()], dims, 4);
    }
    case K::ArgMaxPooling2d: {
      const auto* t = node->node_as_ArgMaxPooling2d();
      const ValuePlan& in = p.values[t->input_id()];
      EMBER_TRY(expect_flags(at, t->flags(), 0));
      uint32_t oh = 0, ow = 0;
      // The window steps by its own size.
      EMBER_TRY(check_window(at, in, t->input_id(), t->padding_top() + t->padding_bottom(),
                             t->padding_left() + t->padding_right(), t->pooling_height(), t->pooling_width(),
                             t->pooling_height(), t->pooling_width(), 1, 1, &oh, &ow));
      const uint32_t dims[4] = {in.dims[0], oh, ow, in.dims[3]};
      EMBER_TRY(expect_dims(at, t->output_value_id(), p.values[t->output_value_id()], dims, 4));
      EMBER_TRY(expect_dims(at, t->output_index_id(), p.values[t->output_index_id()], dims, 4));
      // XNNPACK writes 32-bit indices.
      EMBER_CHECK_OR_RETURN_ERROR(width(p.values[t->output_index_id()]) == 4, InvalidProgram,
                                  "XnnpackBackend: node %u (%s): index value %u is not 32-bit", at.index, at.kind,
                                  t->output_index_id());
      return Error::Ok;
    }
    default: EMBER_LOG(ERROR, "XnnpackBackend: node %u (%s) is not routed", index, at.kind); return Error::NotSupported;
  }
}

}  // namespace xnnpack
}  // namespace ember
