#include "backends/xnnpack/runtime/subgraph_build.h"

#include <math.h>
#include <stddef.h>

#include <xnnpack.h>

#include "backends/xnnpack/runtime/node_kinds.h"
#include "backends/xnnpack/runtime/node_shapes.h"
#include "backends/xnnpack/runtime/thread_pools.h"
#include "runtime/core/log.h"
#include "schema/xnnpack_graph_generated.h"

namespace ember {
namespace xnnpack {

namespace fb = ember_xnn;
using K = fb::NodeUnion;

static_assert(sizeof(ExternalSlot) == sizeof(xnn_external_value) &&
                  offsetof(ExternalSlot, id) == offsetof(xnn_external_value, id) &&
                  offsetof(ExternalSlot, data) == offsetof(xnn_external_value, data),
              "ExternalSlot must be laid out as xnn_external_value");
static_assert(kNoId == XNN_INVALID_VALUE_ID, "the absent-value id is XNNPACK's");
static_assert(kMaxDims == XNN_MAX_TENSOR_DIMS, "the plan's dims limit is this XNNPACK's");
static_assert(static_cast<int>(fb::Datatype::qcint32) == xnn_datatype_qcint32 &&
                  static_cast<int>(fb::Datatype::fp32) == xnn_datatype_fp32,
              "the blob's datatype numbers are XNNPACK's");

namespace {

const char* status_name(xnn_status s) {
  switch (s) {
    case xnn_status_success: return "success";
    case xnn_status_uninitialized: return "uninitialized";
    case xnn_status_invalid_parameter: return "invalid parameter";
    case xnn_status_invalid_state: return "invalid state";
    case xnn_status_unsupported_parameter: return "unsupported parameter";
    case xnn_status_unsupported_hardware: return "unsupported hardware";
    case xnn_status_out_of_memory: return "out of memory";
    default: return "unknown status";
  }
}

// The value's XNNPACK id in the subgraph being built (scratch), defining it on first use.
Error define_value(GraphPlan* p, uint32_t stage, xnn_subgraph_t sg, uint32_t id) {
  if (id == kNoId || p->scratch[id] != kNoId) return Error::Ok;
  const ValuePlan& v = p->values[id];
  const StagePlan& st = p->stages[stage];
  uint32_t external = XNN_INVALID_VALUE_ID;
  uint32_t flags = 0;
  for (uint32_t k = 0; k < st.num_externals; ++k) {
    if (st.externals[k] != id) continue;
    external = k;
    // Written here: an output of this stage (other nodes of the stage may still read it); else an input.
    flags = v.producer != kNoId && v.stage == stage ? XNN_VALUE_FLAG_EXTERNAL_OUTPUT : XNN_VALUE_FLAG_EXTERNAL_INPUT;
  }
  size_t dims[XNN_MAX_TENSOR_DIMS];
  for (uint32_t d = 0; d < v.num_dims; ++d) dims[d] = v.dims[d];
  const xnn_datatype dt = static_cast<xnn_datatype>(v.datatype);
  const void* data = v.constant ? v.data : nullptr;
  uint32_t xnn_id = XNN_INVALID_VALUE_ID;
  xnn_status s;
  if (v.quantized == nullptr) {
    s = xnn_define_tensor_value(sg, dt, v.num_dims, dims, data, external, flags, &xnn_id);
  } else if (const fb::PerTensorQuant* pt = v.quantized->quant_params_as_PerTensorQuant()) {
    s = xnn_define_quantized_tensor_value(sg, dt, pt->zero_point(), pt->scale(), v.num_dims, dims, data, external,
                                          flags, &xnn_id);
  } else {
    const fb::PerChannelQuant* pc = v.quantized->quant_params_as_PerChannelQuant();
    s = xnn_define_channelwise_quantized_tensor_value(sg, dt, v.scales, v.num_dims,
                                                      static_cast<size_t>(pc->channel_dim()), dims, data, external,
                                                      flags, &xnn_id);
  }
  EMBER_CHECK_OR_RETURN_ERROR(s == xnn_status_success, DelegateInvalidCompatibility,
                              "XnnpackBackend: XNNPACK refused value %u (%u dims, datatype %u%s): %s", id, v.num_dims,
                              v.datatype, v.constant ? ", constant" : "", status_name(s));
  p->scratch[id] = xnn_id;
  return Error::Ok;
}

struct Bounds {
  float lo;
  float hi;
  bool clamped;  // the node carries a finite clamp
};

Bounds bounds_of(const fb::Node* node) {
  const fb::OutputMinMax* mm = node->output_min_max();
  if (mm == nullptr) return Bounds{-INFINITY, INFINITY, false};
  return Bounds{mm->output_min(), mm->output_max(), !(isinf(mm->output_min()) && isinf(mm->output_max()))};
}

xnn_status define_reshape_to(GraphPlan* p, xnn_subgraph_t sg, uint32_t in, uint32_t out) {
  const ValuePlan& o = p->values[out];
  size_t dims[XNN_MAX_TENSOR_DIMS];
  for (uint32_t d = 0; d < o.num_dims; ++d) dims[d] = o.dims[d];
  return xnn_define_static_reshape(sg, o.num_dims, dims, p->scratch[in], p->scratch[out], 0);
}

xnn_status define_node(GraphPlan* p, xnn_subgraph_t sg, const fb::Node* node, const Bounds& b) {
  const uint32_t* x = p->scratch;  // value id -> this subgraph's id
  auto X = [x](uint32_t id) { return id == kNoId ? XNN_INVALID_VALUE_ID : x[id]; };
  switch (node->node_type()) {
    case K::Add: {
      const auto* t = node->node_as_Add();
      return xnn_define_add2(sg, b.lo, b.hi, X(t->input1_id()), X(t->input2_id()), X(t->output_id()), t->flags());
    }
    case K::Subtract: {
      const auto* t = node->node_as_Subtract();
      return xnn_define_subtract(sg, b.lo, b.hi, X(t->input1_id()), X(t->input2_id()), X(t->output_id()), t->flags());
    }
    case K::Multiply: {
      const auto* t = node->node_as_Multiply();
      return xnn_define_multiply2(sg, b.lo, b.hi, X(t->input1_id()), X(t->input2_id()), X(t->output_id()), t->flags());
    }
    case K::Div: {
      const auto* t = node->node_as_Div();
      return xnn_define_divide(sg, b.lo, b.hi, X(t->input1_id()), X(t->input2_id()), X(t->output_id()), t->flags());
    }
    case K::Maximum: {
      const auto* t = node->node_as_Maximum();
      return xnn_define_maximum2(sg, X(t->input1_id()), X(t->input2_id()), X(t->output_id()), t->flags());
    }
    case K::Minimum: {
      const auto* t = node->node_as_Minimum();
      return xnn_define_minimum2(sg, X(t->input1_id()), X(t->input2_id()), X(t->output_id()), t->flags());
    }
    case K::PReLU: {
      const auto* t = node->node_as_PReLU();
      return xnn_define_prelu(sg, X(t->input1_id()), X(t->input2_id()), X(t->output_id()), t->flags());
    }
    case K::FullyConnected: {
      const auto* t = node->node_as_FullyConnected();
      return xnn_define_fully_connected(sg, b.lo, b.hi, X(t->input1_id()), X(t->filter_id()), X(t->bias_id()),
                                        X(t->output_id()), t->flags());
    }
    case K::Conv2d: {
      const auto* c = node->node_as_Conv2d();
      return xnn_define_convolution_2d(sg, c->padding_top(), c->padding_right(), c->padding_bottom(), c->padding_left(),
                                       c->kernel_height(), c->kernel_width(), c->subsampling_height(),
                                       c->subsampling_width(), c->dilation_height(), c->dilation_width(), c->groups(),
                                       c->group_input_channels(), c->group_output_channels(), b.lo, b.hi,
                                       X(c->input1_id()), X(c->filter_id()), X(c->bias_id()), X(c->output_id()),
                                       c->flags());
    }
    case K::DepthwiseConv2d: {
      // ExecuTorch writes the depth multiplier as group_output_channels and the input channels as groups.
      const auto* c = node->node_as_DepthwiseConv2d();
      return xnn_define_depthwise_convolution_2d(sg, c->padding_top(), c->padding_right(), c->padding_bottom(),
                                                 c->padding_left(), c->kernel_height(), c->kernel_width(),
                                                 c->subsampling_height(), c->subsampling_width(), c->dilation_height(),
                                                 c->dilation_width(), c->group_output_channels(), c->groups(), b.lo,
                                                 b.hi, X(c->input1_id()), X(c->filter_id()), X(c->bias_id()),
                                                 X(c->output_id()), c->flags());
    }
    case K::ConvTranspose2d: {
      const auto* c = node->node_as_ConvTranspose2d();
      return xnn_define_deconvolution_2d(sg, c->padding_top(), c->padding_right(), c->padding_bottom(),
                                         c->padding_left(), c->adjustment_height(), c->adjustment_width(),
                                         c->kernel_height(), c->kernel_width(), c->subsampling_height(),
                                         c->subsampling_width(), c->dilation_height(), c->dilation_width(), c->groups(),
                                         c->group_input_channels(), c->group_output_channels(), b.lo, b.hi,
                                         X(c->input1_id()), X(c->filter_id()), X(c->bias_id()), X(c->output_id()),
                                         c->flags());
    }
    case K::AvgPooling2d: {
      const auto* t = node->node_as_AvgPooling2d();
      return xnn_define_average_pooling_2d(sg, t->padding_top(), t->padding_right(), t->padding_bottom(),
                                           t->padding_left(), t->pooling_height(), t->pooling_width(),
                                           t->stride_height(), t->stride_width(), b.lo, b.hi, X(t->input_id()),
                                           X(t->output_id()), t->flags() & ~kFlagKeepDims);
    }
    case K::MaxPooling2d: {
      const auto* t = node->node_as_MaxPooling2d();
      return xnn_define_max_pooling_2d(sg, t->padding_top(), t->padding_right(), t->padding_bottom(), t->padding_left(),
                                       t->pooling_height(), t->pooling_width(), t->stride_height(), t->stride_width(),
                                       t->dilation_height(), t->dilation_width(), b.lo, b.hi, X(t->input_id()),
                                       X(t->output_id()), t->flags() & ~kFlagKeepDims);
    }
    case K::ArgMaxPooling2d: {
      const auto* t = node->node_as_ArgMaxPooling2d();
      return xnn_define_argmax_pooling_2d(sg, t->padding_top(), t->padding_right(), t->padding_bottom(),
                                          t->padding_left(), t->pooling_height(), t->pooling_width(), X(t->input_id()),
                                          X(t->output_value_id()), X(t->output_index_id()), t->flags());
    }
    case K::GlobalAvgPooling2d: {
      const auto* t = node->node_as_GlobalAvgPooling2d();
      return xnn_define_global_average_pooling_2d(sg, b.lo, b.hi, X(t->input_id()), X(t->output_id()),
                                                  t->flags() & ~kFlagKeepDims);
    }
    case K::Clamp: {
      const auto* t = node->node_as_Clamp();
      return xnn_define_clamp(sg, b.lo, b.hi, X(t->input_id()), X(t->output_id()), t->flags());
    }
    case K::Softmax: {
      const auto* t = node->node_as_Softmax();
      return xnn_define_softmax(sg, X(t->input_id()), X(t->output_id()), t->flags());
    }
    case K::Sigmoid: {
      const auto* t = node->node_as_Sigmoid();
      return xnn_define_sigmoid(sg, X(t->input_id()), X(t->output_id()), t->flags());
    }
    case K::Hardswish: {
      const auto* t = node->node_as_Hardswish();
      return xnn_define_hardswish(sg, X(t->input_id()), X(t->output_id()), t->flags());
    }
    case K::Floor: {
      const auto* t = node->node_as_Floor();
      return xnn_define_floor(sg, X(t->input_id()), X(t->output_id()), t->flags());
    }
    case K::Ceiling: {
      const auto* t = node->node_as_Ceiling();
      return xnn_define_ceiling(sg, X(t->input_id()), X(t->output_id()), t->flags());
    }
    case K::SquareRoot: {
      const auto* t = node->node_as_SquareRoot();
      return xnn_define_square_root(sg, X(t->input_id()), X(t->output_id()), t->flags());
    }
    case K::Square: {
      const auto* t = node->node_as_Square();
      return xnn_define_square(sg, X(t->input_id()), X(t->output_id()), t->flags());
    }
    case K::Negate: {
      const auto* t = node->node_as_Negate();
      return xnn_define_negate(sg, X(t->input_id()), X(t->output_id()), t->flags());
    }
    case K::Abs: {
      const auto* t = node->node_as_Abs();
      return xnn_define_abs(sg, X(t->input_id()), X(t->output_id()), t->flags());
    }
    case K::Convert: {
      const auto* t = node->node_as_Convert();
      return xnn_define_convert(sg, X(t->input_id()), X(t->output_id()), t->flags());
    }
    case K::ELU: {
      const auto* t = node->node_as_ELU();
      return xnn_define_elu(sg, t->alpha(), X(t->input_id()), X(t->output_id()), t->flags());
    }
    case K::LeakyReLU: {
      const auto* t = node->node_as_LeakyReLU();
      return xnn_define_leaky_relu(sg, t->negative_slope(), X(t->input_id()), X(t->output_id()), t->flags());
    }
    case K::StaticReshape: {
      const auto* t = node->node_as_StaticReshape();
      return define_reshape_to(p, sg, t->input_id(), t->output_id());
    }
    case K::Copy: {
      const auto* t = node->node_as_Copy();
      return define_reshape_to(p, sg, t->input_id(), t->output_id());
    }
    case K::StaticTranspose: {  // only moves size-1 dims (graph_plan.cc put it in a subgraph)
      const auto* t = node->node_as_StaticTranspose();
      return define_reshape_to(p, sg, t->input_id(), t->output_id());
    }
    case K::StaticConstantPad: {
      const auto* t = node->node_as_StaticConstantPad();
      size_t pre[XNN_MAX_TENSOR_DIMS], post[XNN_MAX_TENSOR_DIMS];
      for (uint32_t d = 0; d < t->pre_paddings()->size(); ++d) {
        pre[d] = t->pre_paddings()->Get(d);
        post[d] = t->post_paddings()->Get(d);
      }
      return xnn_define_static_constant_pad(sg, pre, post, t->padding_value(), X(t->input_id()), X(t->output_id()),
                                            t->flags());
    }
    case K::StaticResizeBilinear2D: {
      const auto* t = node->node_as_StaticResizeBilinear2D();
      return xnn_define_static_resize_bilinear_2d(sg, t->new_height(), t->new_width(), X(t->input_id()),
                                                  X(t->output_id()), t->flags());
    }
    default: return xnn_status_unsupported_parameter;
  }
}

// Kinds whose 2022 define call takes an output range.
bool takes_bounds(K kind) {
  switch (kind) {
    case K::Add:
    case K::Subtract:
    case K::Multiply:
    case K::Div:
    case K::FullyConnected:
    case K::Conv2d:
    case K::DepthwiseConv2d:
    case K::ConvTranspose2d:
    case K::AvgPooling2d:
    case K::MaxPooling2d:
    case K::GlobalAvgPooling2d:
    case K::Clamp: return true;
    default: return false;
  }
}

}  // namespace

bool initialize_xnnpack() { return xnn_initialize(/*allocator=*/nullptr) == xnn_status_success; }

Error build_stage(GraphPlan* p, uint32_t s) {
  StagePlan& st = p->stages[s];
  xnn_subgraph_t sg = nullptr;
  xnn_status status = xnn_create_subgraph(st.num_externals, /*flags=*/0, &sg);
  EMBER_CHECK_OR_RETURN_ERROR(status == xnn_status_success, DelegateMemoryAllocationFailed,
                              "XnnpackBackend: stage %u: xnn_create_subgraph failed: %s", s, status_name(status));
  for (uint32_t id = 0; id < p->num_values; ++id) p->scratch[id] = kNoId;
  const auto* nodes = p->graph->nodes();
  Error err = Error::Ok;
  for (uint32_t i = st.first_node; i < st.end_node && err == Error::Ok; ++i) {
    const fb::Node* node = nodes->Get(i);
    const char* kind = node_kind_name(static_cast<uint8_t>(node->node_type()));
    uint32_t ids[8];
    size_t nin = 0, nout = 0;
    uint32_t optional = 0;
    node_values(node, ids, &nin, &nout, &optional);
    for (size_t k = 0; k < nin + nout && err == Error::Ok; ++k) err = define_value(p, s, sg, ids[k]);
    if (err != Error::Ok) {
      EMBER_LOG(ERROR, "XnnpackBackend: node %u (%s): its value above was refused", i, kind);
      break;
    }
    const Bounds b = bounds_of(node);
    if (b.clamped && !takes_bounds(node->node_type())) {
      EMBER_LOG(ERROR,
                "XnnpackBackend: node %u (%s) carries a fused clamp [%g, %g], which this XNNPACK's %s has no "
                "parameter for",
                i, kind, static_cast<double>(b.lo), static_cast<double>(b.hi), kind);
      err = Error::NotSupported;
      break;
    }
    status = define_node(p, sg, node, b);
    if (status != xnn_status_success) {
      EMBER_LOG(ERROR, "XnnpackBackend: XNNPACK refused node %u (%s): %s", i, kind, status_name(status));
      err = Error::DelegateInvalidCompatibility;
    }
  }
  if (err == Error::Ok) {
    xnn_runtime_t runtime = nullptr;
    // XNNPACK splits its operators over a pthreadpool (thread_pools.h: its own, one per thread count; Ember's pool
    // is not one); null runs them on the calling thread. Its workers sleep when a runtime ends: by default they
    // spin-wait for the next command, and between stages and delegate calls the next work is Ember's, whose own
    // pool's worker then competes with them for the CPUs (ExecuTorch's ViT-Tiny on two threads: 25.2 ms a run
    // spinning, 20.1 ms yielding).
    status = xnn_create_runtime_v2(sg, static_cast<pthreadpool_t>(p->threadpool), XNN_FLAG_YIELD_WORKERS, &runtime);
    if (status != xnn_status_success) {
      EMBER_LOG(ERROR, "XnnpackBackend: stage %u (nodes %u to %u): xnn_create_runtime_v2 failed: %s", s, st.first_node,
                st.end_node - 1, status_name(status));
      err = Error::DelegateInvalidCompatibility;
    } else {
      st.runtime = runtime;
    }
  }
  xnn_delete_subgraph(sg);
  return err;
}

void release_plan(GraphPlan* p) {
  for (uint32_t s = 0; s < p->num_stages; ++s) {
    if (p->stages[s].runtime != nullptr) xnn_delete_runtime(static_cast<xnn_runtime_t>(p->stages[s].runtime));
    p->stages[s].runtime = nullptr;
  }
  for (size_t i = 0; i < p->num_constants; ++i) p->named[i].free();
  release_threadpool(p->threadpool);
  p->threadpool = nullptr;
}

}  // namespace xnnpack
}  // namespace ember
