#include "backends/xnnpack/runtime/graph_plan.h"

#include <new>
#include <string.h>

#include "backends/xnnpack/runtime/node_kinds.h"
#include "backends/xnnpack/runtime/node_shapes.h"
#include "runtime/core/log.h"
#include "schema/xnnpack_graph_generated.h"

namespace ember {
namespace xnnpack {

namespace fb = ember_xnn;
using ull = unsigned long long;

namespace {

// A blob's graph is small next to its weights (ExecuTorch's ResNet18: 1.1 KB of values, 60-odd nodes); these
// bounds only keep the counting arithmetic far from overflow.
constexpr uint32_t kMaxValues = 1u << 24;
constexpr uint64_t kMaxElements = (1ull << 31) - 1;

// Every allocation is a whole number of 16-byte units at 16-byte alignment, so what the plan takes does not depend
// on the order of allocations or where the allocator starts: init_bytes counts exactly what init takes.
template <typename T>
T* take(MemoryAllocator* a, size_t n) {
  if (n != 0 && n > (SIZE_MAX - 15) / sizeof(T)) return nullptr;
  return static_cast<T*>(a->allocate((n * sizeof(T) + 15) / 16 * 16, 16));
}

template <typename T>
size_t count(const flatbuffers::Vector<T>* v) {
  return v == nullptr ? 0 : v->size();
}

// Element bytes of the datatypes the 2022 library has; 0 for the rest.
uint32_t element_bytes(uint32_t datatype) {
  switch (static_cast<fb::Datatype>(datatype)) {
    case fb::Datatype::fp32:
    case fb::Datatype::qint32:
    case fb::Datatype::qcint32: return 4;
    case fb::Datatype::fp16: return 2;
    case fb::Datatype::qint8:
    case fb::Datatype::quint8:
    case fb::Datatype::qcint8: return 1;
    default: return 0;
  }
}

const char* datatype_name(uint32_t datatype) {
  return datatype <= static_cast<uint32_t>(fb::Datatype::MAX)
             ? fb::EnumNameDatatype(static_cast<fb::Datatype>(datatype))
             : "out of range";
}

// Where constant `index` lives, checked against the blob; `nbytes` is what the value reading it needs.
Error check_constant(const GraphPlan& p, uint32_t index, size_t nbytes, const char* what, uint32_t id) {
  const fb::Graph* g = p.graph;
  if (count(g->constant_buffer()) > 0) {  // XN00's inline buffers
    EMBER_CHECK_OR_RETURN_ERROR(index < count(g->constant_buffer()), InvalidProgram,
                                "XnnpackBackend: value %u's %s is constant buffer %u of %zu", id, what, index,
                                count(g->constant_buffer()));
    const fb::Buffer* b = g->constant_buffer()->Get(index);
    const size_t have = b != nullptr ? count(b->storage()) : 0;
    EMBER_CHECK_OR_RETURN_ERROR(have >= nbytes, InvalidProgram,
                                "XnnpackBackend: value %u's %s needs %zu bytes; constant buffer %u holds %zu", id, what,
                                nbytes, index, have);
    return Error::Ok;
  }
  EMBER_CHECK_OR_RETURN_ERROR(index < count(g->constant_data()), InvalidProgram,
                              "XnnpackBackend: value %u's %s is constant %u, but the graph lists %zu constants", id,
                              what, index, count(g->constant_data()));
  const fb::ConstantDataOffset* c = g->constant_data()->Get(index);
  EMBER_CHECK_OR_RETURN_ERROR(c != nullptr && c->size() >= nbytes, InvalidProgram,
                              "XnnpackBackend: value %u's %s needs %zu bytes; constant %u is %llu", id, what, nbytes,
                              index, c != nullptr ? static_cast<ull>(c->size()) : 0ull);
  if (c->named_key() != nullptr && c->named_key()->size() > 0) return Error::Ok;  // checked when bound
  EMBER_CHECK_OR_RETURN_ERROR(p.parts.has_header, InvalidProgram,
                              "XnnpackBackend: value %u's %s is constant %u at offset %llu, but the blob has no XH00 "
                              "header, so no constant data",
                              id, what, index, static_cast<ull>(c->offset()));
  EMBER_CHECK_OR_RETURN_ERROR(c->offset() <= p.parts.constant_data_size &&
                                  c->size() <= p.parts.constant_data_size - c->offset(),
                              InvalidProgram,
                              "XnnpackBackend: value %u's %s is constant %u at [%llu, +%llu), outside the %llu bytes "
                              "of constant data (at blob byte %llu)",
                              id, what, index, static_cast<ull>(c->offset()), static_cast<ull>(c->size()),
                              static_cast<ull>(p.parts.constant_data_size),
                              static_cast<ull>(p.parts.constant_data_offset));
  return Error::Ok;
}

// Quantization parameters the 2022 library can define: per tensor (qint8, quint8, qint32) or per channel (qcint8,
// qcint32). Dynamic, per-token and blockwise ones came later.
Error check_quantization(const GraphPlan& p, uint32_t id, const ValuePlan& v) {
  const fb::QuantizedTensorValue* q = v.quantized;
  const fb::Datatype dt = static_cast<fb::Datatype>(v.datatype);
  switch (q->quant_params_type()) {
    case fb::QuantParams::PerTensorQuant:
      EMBER_CHECK_OR_RETURN_ERROR(q->quant_params() != nullptr &&
                                      (dt == fb::Datatype::qint8 || dt == fb::Datatype::quint8 ||
                                       dt == fb::Datatype::qint32),
                                  InvalidProgram,
                                  "XnnpackBackend: value %u is quantized per tensor with datatype %s; expected qint8, "
                                  "quint8 or qint32",
                                  id, datatype_name(v.datatype));
      return Error::Ok;
    case fb::QuantParams::PerChannelQuant: {
      const fb::PerChannelQuant* pc = q->quant_params_as_PerChannelQuant();
      EMBER_CHECK_OR_RETURN_ERROR(pc != nullptr && (dt == fb::Datatype::qcint8 || dt == fb::Datatype::qcint32),
                                  InvalidProgram,
                                  "XnnpackBackend: value %u is quantized per channel with datatype %s; expected qcint8 "
                                  "or qcint32",
                                  id, datatype_name(v.datatype));
      EMBER_CHECK_OR_RETURN_ERROR(pc->channel_dim() >= 0 && static_cast<uint32_t>(pc->channel_dim()) < v.num_dims,
                                  InvalidProgram, "XnnpackBackend: value %u: channel dim %d of a %u-dim tensor", id,
                                  pc->channel_dim(), v.num_dims);
      const uint32_t channels = v.dims[pc->channel_dim()];
      if (pc->scale_buffer_idx() != 0) {
        EMBER_CHECK_OR_RETURN_ERROR(pc->num_scales() == channels, InvalidProgram,
                                    "XnnpackBackend: value %u has %u scales for %u channels", id, pc->num_scales(),
                                    channels);
        return check_constant(p, pc->scale_buffer_idx(), sizeof(float) * channels, "scales", id);
      }
      EMBER_CHECK_OR_RETURN_ERROR(count(pc->scale()) == channels, InvalidProgram,
                                  "XnnpackBackend: value %u has %zu scales for %u channels", id, count(pc->scale()),
                                  channels);
      return Error::Ok;
    }
    default:
      EMBER_LOG(ERROR,
                "XnnpackBackend: value %u is quantized %s (datatype %s), which needs an XNNPACK newer than "
                "this build's 2022 snapshot (it has per-tensor and per-channel quantization only)",
                id, fb::EnumNameQuantParams(q->quant_params_type()), datatype_name(v.datatype));
      return Error::NotSupported;
  }
}

Error plan_values(GraphPlan& p, MemoryAllocator* a) {
  const auto* values = p.graph->values();
  const size_t n = count(values);
  EMBER_CHECK_OR_RETURN_ERROR(n > 0 && n < kMaxValues, InvalidProgram,
                              "XnnpackBackend: the graph has %zu values (expected 1 to %u)", n, kMaxValues - 1);
  p.num_values = static_cast<uint32_t>(n);
  p.values = take<ValuePlan>(a, n);
  p.scratch = take<uint32_t>(a, n);
  EMBER_CHECK_OR_RETURN_ERROR(p.values != nullptr && p.scratch != nullptr, MemoryAllocationFailed,
                              "XnnpackBackend: no room for the plan of %zu values (%zu bytes free)", n,
                              a->free_bytes());
  for (size_t i = 0; i < n; ++i) {
    ValuePlan* v = new (&p.values[i]) ValuePlan();
    v->producer = kNoId;
    v->stage = kNoId;
    v->arg = -1;
  }
  for (size_t i = 0; i < n; ++i) {
    const fb::Value* value = values->Get(static_cast<flatbuffers::uoffset_t>(i));
    const fb::QuantizedTensorValue* q = value != nullptr ? value->value_as_QuantizedTensorValue() : nullptr;
    const fb::TensorValue* t = value == nullptr ? nullptr
                               : q != nullptr   ? q->tensor_value()
                                                : value->value_as_TensorValue();
    EMBER_CHECK_OR_RETURN_ERROR(t != nullptr, InvalidProgram, "XnnpackBackend: value %zu has no tensor", i);
    const uint32_t id = t->id_out();
    EMBER_CHECK_OR_RETURN_ERROR(id < n, InvalidProgram,
                                "XnnpackBackend: value %zu has id %u, out of range (%zu values)", i, id, n);
    ValuePlan& v = p.values[id];
    EMBER_CHECK_OR_RETURN_ERROR(v.tensor == nullptr, InvalidProgram,
                                "XnnpackBackend: values %zu and another both have id %u", i, id);
    v.tensor = t;
    v.quantized = q;
    v.num_dims = static_cast<uint32_t>(count(t->dims()));
    EMBER_CHECK_OR_RETURN_ERROR(v.num_dims == t->num_dims() && v.num_dims <= kMaxDims, InvalidProgram,
                                "XnnpackBackend: value %u has %u dims listed and num_dims %u (at most %u)", id,
                                v.num_dims, t->num_dims(), kMaxDims);
    uint64_t elements = 1;
    for (uint32_t d = 0; d < v.num_dims; ++d) {
      v.dims[d] = t->dims()->Get(d);
      elements *= v.dims[d];
      EMBER_CHECK_OR_RETURN_ERROR(elements <= kMaxElements, InvalidProgram,
                                  "XnnpackBackend: value %u has more than %llu elements", id,
                                  static_cast<ull>(kMaxElements));
    }
    v.datatype = static_cast<uint32_t>(t->datatype());
    const uint32_t esize = element_bytes(v.datatype);
    if (esize == 0) {
      EMBER_LOG(ERROR, "XnnpackBackend: value %u has datatype %s (%u), which this build's XNNPACK (2022) lacks", id,
                datatype_name(v.datatype), v.datatype);
      return Error::NotSupported;
    }
    EMBER_CHECK_OR_RETURN_ERROR(t->dq_datatype() == fb::Datatype::invalid, NotSupported,
                                "XnnpackBackend: value %u is quantized at run time (to %s), which needs an XNNPACK "
                                "newer than this build's 2022 snapshot",
                                id, datatype_name(static_cast<uint32_t>(t->dq_datatype())));
    const bool quantized_type = v.datatype != static_cast<uint32_t>(fb::Datatype::fp32) &&
                                v.datatype != static_cast<uint32_t>(fb::Datatype::fp16);
    EMBER_CHECK_OR_RETURN_ERROR(quantized_type == (q != nullptr), InvalidProgram,
                                "XnnpackBackend: value %u has datatype %s %s quantization parameters", id,
                                datatype_name(v.datatype), q != nullptr ? "but" : "and no");
    v.nbytes = static_cast<size_t>(elements) * esize;
    if (q != nullptr) EMBER_TRY(check_quantization(p, id, v));
    v.constant = t->constant_buffer_idx() != 0;
    if (v.constant) EMBER_TRY(check_constant(p, t->constant_buffer_idx(), v.nbytes, "data", id));
  }
  return Error::Ok;
}

Error plan_args(GraphPlan& p, MemoryAllocator* a) {
  const auto* ins = p.graph->input_ids();
  const auto* outs = p.graph->output_ids();
  p.num_inputs = static_cast<uint32_t>(count(ins));
  p.num_outputs = static_cast<uint32_t>(count(outs));
  EMBER_CHECK_OR_RETURN_ERROR(p.num_outputs > 0, InvalidProgram, "XnnpackBackend: the graph has no outputs");
  const uint32_t total = p.num_inputs + p.num_outputs;
  uint32_t* args = take<uint32_t>(a, total);
  EMBER_CHECK_OR_RETURN_ERROR(args != nullptr, MemoryAllocationFailed, "XnnpackBackend: no room for %u argument ids",
                              total);
  for (uint32_t k = 0; k < total; ++k) args[k] = kNoId;
  for (uint32_t k = 0; k < total; ++k) {
    const bool input = k < p.num_inputs;
    const uint32_t at = input ? k : k - p.num_inputs;
    const uint32_t id = input ? ins->Get(k) : outs->Get(at);
    const char* what = input ? "input" : "output";
    EMBER_CHECK_OR_RETURN_ERROR(id < p.num_values, InvalidProgram,
                                "XnnpackBackend: %s %u is value %u, out of range (%u values)", what, at, id,
                                p.num_values);
    ValuePlan& v = p.values[id];
    EMBER_CHECK_OR_RETURN_ERROR(!v.constant && v.arg < 0, InvalidProgram,
                                "XnnpackBackend: %s %u is value %u, which is %s", what, at, id,
                                v.constant ? "a constant" : "already another argument");
    EMBER_CHECK_OR_RETURN_ERROR(v.quantized == nullptr ||
                                    v.quantized->quant_params_type() == fb::QuantParams::PerTensorQuant,
                                InvalidProgram, "XnnpackBackend: %s %u (value %u) is quantized per channel", what, at,
                                id);
    // The delegate call's arguments are in external-id order (ExecuTorch numbers the graph's inputs, then its
    // outputs, in the order of the lowered module's signature); input_ids lists them in the order the graph
    // defines them, which can differ (Swin's first blob defines its image before an earlier scalar argument).
    const uint32_t ext = v.tensor->external_id();
    const uint32_t lo = input ? 0 : p.num_inputs, hi = input ? p.num_inputs : total;
    EMBER_CHECK_OR_RETURN_ERROR(ext >= lo && ext < hi && args[ext] == kNoId, InvalidProgram,
                                "XnnpackBackend: %s %u (value %u) has external id %u; expected one of %u to %u, each "
                                "once (its position among the delegate's arguments)",
                                what, at, id, ext, lo, hi - 1);
    v.arg = static_cast<int32_t>(ext);
    args[ext] = id;
  }
  p.arg_values = args;
  return Error::Ok;
}

// Reads of values no node has written yet, writes of constants or inputs, two writers: refused by node.
Error plan_nodes(GraphPlan& p) {
  const auto* nodes = p.graph->nodes();
  p.num_nodes = static_cast<uint32_t>(count(nodes));
  EMBER_CHECK_OR_RETURN_ERROR(p.num_nodes > 0 && p.num_nodes < kMaxValues, InvalidProgram,
                              "XnnpackBackend: the graph has %u nodes (expected 1 to %u)", p.num_nodes, kMaxValues - 1);
  for (uint32_t i = 0; i < p.num_nodes; ++i) {
    const fb::Node* node = nodes->Get(i);
    const uint8_t kind = node != nullptr ? static_cast<uint8_t>(node->node_type()) : 0;
    const char* name = node_kind_name(kind);
    if (route_of(kind) == NodeRoute::Refused) {
      EMBER_LOG(ERROR,
                "XnnpackBackend: node %u (%s) needs an XNNPACK newer than this build's (Debian's 2022-02-16 "
                "snapshot has no such operator); export without delegating it (README: XNNPACK backend)",
                i, name);
      return Error::NotSupported;
    }
    uint32_t ids[8];
    size_t nin = 0, nout = 0;
    uint32_t optional = 0;
    EMBER_CHECK_OR_RETURN_ERROR(node_values(node, ids, &nin, &nout, &optional), InvalidProgram,
                                "XnnpackBackend: node %u (%s) has no parameters", i, name);
    for (size_t k = 0; k < nin; ++k) {
      if (ids[k] == kNoId && (optional >> k & 1u)) continue;
      EMBER_CHECK_OR_RETURN_ERROR(ids[k] < p.num_values, InvalidProgram,
                                  "XnnpackBackend: node %u (%s) input %zu is value %u, out of range (%u values)", i,
                                  name, k, ids[k], p.num_values);
      const ValuePlan& v = p.values[ids[k]];
      EMBER_CHECK_OR_RETURN_ERROR(v.constant || (v.arg >= 0 && static_cast<uint32_t>(v.arg) < p.num_inputs) ||
                                      v.producer != kNoId,
                                  InvalidProgram,
                                  "XnnpackBackend: node %u (%s) reads value %u before any node writes it", i, name,
                                  ids[k]);
    }
    for (size_t k = nin; k < nin + nout; ++k) {
      EMBER_CHECK_OR_RETURN_ERROR(ids[k] < p.num_values, InvalidProgram,
                                  "XnnpackBackend: node %u (%s) output %zu is value %u, out of range (%u values)", i,
                                  name, k - nin, ids[k], p.num_values);
      ValuePlan& v = p.values[ids[k]];
      EMBER_CHECK_OR_RETURN_ERROR(!v.constant && !(v.arg >= 0 && static_cast<uint32_t>(v.arg) < p.num_inputs) &&
                                      v.producer == kNoId,
                                  InvalidProgram, "XnnpackBackend: node %u (%s) writes value %u, which is %s", i, name,
                                  ids[k],
                                  v.constant            ? "a constant"
                                  : v.producer != kNoId ? "written by an earlier node"
                                                        : "a delegate input");
      v.producer = i;
    }
    EMBER_TRY(check_node_shapes(p, i, node));
  }
  for (uint32_t k = 0; k < p.num_outputs; ++k) {
    const uint32_t id = p.arg_values[p.num_inputs + k];
    EMBER_CHECK_OR_RETURN_ERROR(p.values[id].producer != kNoId, InvalidProgram,
                                "XnnpackBackend: output %u (value %u) is written by no node", k, id);
  }
  return Error::Ok;
}

bool node_on_cpu(const GraphPlan& p, const fb::Node* node) {
  const NodeRoute route = route_of(static_cast<uint8_t>(node->node_type()));
  return route == NodeRoute::Cpu || (route == NodeRoute::Transpose && !transpose_is_reshape(p, node));
}

// Consecutive subgraph nodes share a stage; each CPU node (a transpose, cpu_nodes.h's kinds) is one. Then the
// buffers between stages, and each subgraph's external values.
Error plan_stages(GraphPlan& p, MemoryAllocator* a, MemoryAllocator* buffers) {
  const auto* nodes = p.graph->nodes();
  uint32_t n = 0;
  for (uint32_t i = 0; i < p.num_nodes; ++i) {
    const bool cpu = node_on_cpu(p, nodes->Get(i));
    if (i == 0 || cpu || node_on_cpu(p, nodes->Get(i - 1))) ++n;
  }
  p.num_stages = n;
  p.stages = take<StagePlan>(a, n);
  EMBER_CHECK_OR_RETURN_ERROR(p.stages != nullptr, MemoryAllocationFailed,
                              "XnnpackBackend: no room for %u stages (%zu bytes free)", n, a->free_bytes());
  for (uint32_t k = 0; k < n; ++k) new (&p.stages[k]) StagePlan();
  uint32_t s = 0;
  for (uint32_t i = 0; i < p.num_nodes; ++i) {
    const bool cpu = node_on_cpu(p, nodes->Get(i));
    if (i > 0 && (cpu || node_on_cpu(p, nodes->Get(i - 1)))) ++s;
    StagePlan& st = p.stages[s];
    if (st.end_node == 0) {
      st.on_cpu = cpu;
      st.first_node = i;
    }
    st.end_node = i + 1;
  }
  uint32_t ids[8];
  size_t nin = 0, nout = 0;
  uint32_t optional = 0;
  // Producers' stages, then who reads across a boundary.
  for (s = 0; s < n; ++s) {
    for (uint32_t i = p.stages[s].first_node; i < p.stages[s].end_node; ++i) {
      node_values(nodes->Get(i), ids, &nin, &nout, &optional);
      for (size_t k = nin; k < nin + nout; ++k) p.values[ids[k]].stage = s;
    }
  }
  // scratch: whether any node reads the value.
  for (uint32_t id = 0; id < p.num_values; ++id) p.scratch[id] = 0;
  for (s = 0; s < n; ++s) {
    for (uint32_t i = p.stages[s].first_node; i < p.stages[s].end_node; ++i) {
      node_values(nodes->Get(i), ids, &nin, &nout, &optional);
      for (size_t k = 0; k < nin; ++k) {
        if (ids[k] == kNoId) continue;
        ValuePlan& v = p.values[ids[k]];
        p.scratch[ids[k]] = 1;
        if (v.producer != kNoId && v.stage != s) v.crosses = true;
      }
    }
  }
  // A value a node writes that nothing reads and no argument is (an unused second output, or a dead node) gets a
  // buffer too: the 2022 library allocates no memory for an internal value without readers and asserts on the null
  // pointer when it sets the node up (xnnpack_blob_fuzz found it).
  for (uint32_t id = 0; id < p.num_values; ++id) {
    ValuePlan& v = p.values[id];
    if (v.producer != kNoId && v.arg < 0 && p.scratch[id] == 0) v.crosses = true;
  }
  for (uint32_t id = 0; id < p.num_values; ++id) {
    ValuePlan& v = p.values[id];
    if (v.constant || v.arg >= 0 || v.producer == kNoId) continue;
    if (!v.crosses && !p.stages[v.stage].on_cpu) continue;
    v.buffer = take<uint8_t>(buffers, v.nbytes + kExtraBytes);
    EMBER_CHECK_OR_RETURN_ERROR(v.buffer != nullptr, MemoryAllocationFailed,
                                "XnnpackBackend: no room for value %u's %zu-byte buffer between stages (%zu bytes "
                                "free)",
                                id, v.nbytes + kExtraBytes, buffers->free_bytes());
  }
  // External values per subgraph: arguments and buffers it touches, each once (scratch marks the stage that saw it).
  for (uint32_t id = 0; id < p.num_values; ++id) p.scratch[id] = kNoId;
  for (s = 0; s < n; ++s) {
    StagePlan& st = p.stages[s];
    if (st.on_cpu) continue;
    for (int pass = 0; pass < 2; ++pass) {
      uint32_t m = 0;
      for (uint32_t i = st.first_node; i < st.end_node; ++i) {
        node_values(nodes->Get(i), ids, &nin, &nout, &optional);
        for (size_t k = 0; k < nin + nout; ++k) {
          if (ids[k] == kNoId) continue;
          const ValuePlan& v = p.values[ids[k]];
          if (v.arg < 0 && v.buffer == nullptr) continue;
          const uint32_t mark = 2 * s + static_cast<uint32_t>(pass);
          if (p.scratch[ids[k]] == mark) continue;
          p.scratch[ids[k]] = mark;
          if (pass == 1) st.externals[m] = ids[k];
          ++m;
        }
      }
      if (pass == 0) {
        st.num_externals = m;
        st.externals = take<uint32_t>(a, m);
        st.slots = take<ExternalSlot>(a, m);
        EMBER_CHECK_OR_RETURN_ERROR(m == 0 || (st.externals != nullptr && st.slots != nullptr), MemoryAllocationFailed,
                                    "XnnpackBackend: no room for stage %u's %u external values", s, m);
      }
    }
  }
  return Error::Ok;
}

}  // namespace

ScalarType scalar_type_of(uint32_t datatype) {
  switch (static_cast<fb::Datatype>(datatype)) {
    case fb::Datatype::fp16: return ScalarType::Half;
    case fb::Datatype::qint8: return ScalarType::Char;
    case fb::Datatype::quint8: return ScalarType::Byte;
    case fb::Datatype::qint32: return ScalarType::Int;
    default: return ScalarType::Float;
  }
}

bool node_values(const fb::Node* node, uint32_t* ids, size_t* num_inputs, size_t* num_outputs, uint32_t* optional) {
  *num_inputs = 0;
  *num_outputs = 1;
  *optional = 0;
  if (node == nullptr || node->node() == nullptr) return false;
  using K = fb::NodeUnion;
  const void* table = node->node();
  switch (node->node_type()) {
    case K::Add:
    case K::Div:
    case K::Minimum:
    case K::Maximum:
    case K::Multiply:
    case K::Subtract:
    case K::PReLU:
    case K::BatchMatrixMultiply: {
      const auto* t = static_cast<const fb::Node2x1*>(table);
      ids[0] = t->input1_id();
      ids[1] = t->input2_id();
      ids[2] = t->output_id();
      *num_inputs = 2;
      return true;
    }
    case K::Softmax:
    case K::Sigmoid:
    case K::Clamp:
    case K::Floor:
    case K::Convert:
    case K::GlobalAvgPooling2d:
    case K::SquareRoot:
    case K::Ceiling:
    case K::Hardswish:
    case K::Negate:
    case K::Square:
    case K::Abs:
    case K::Copy:
    case K::Gelu:
    case K::Tanh:
    case K::Exp:
    case K::Log:
    case K::Sin:
    case K::Cos:
    case K::ReciprocalSquareRoot: {
      const auto* t = static_cast<const fb::Node1x1*>(table);
      ids[0] = t->input_id();
      ids[1] = t->output_id();
      *num_inputs = 1;
      return true;
    }
    case K::FullyConnected: {
      const auto* t = static_cast<const fb::FullyConnected*>(table);
      ids[0] = t->input1_id();
      ids[1] = t->filter_id();
      ids[2] = t->bias_id();
      ids[3] = t->output_id();
      *num_inputs = 3;
      *optional = 1u << 2;
      return true;
    }
    case K::Conv2d:
    case K::DepthwiseConv2d:
    case K::ConvTranspose2d: {
      const auto* t = static_cast<const fb::ConvNode*>(table);
      ids[0] = t->input1_id();
      ids[1] = t->filter_id();
      ids[2] = t->bias_id();
      ids[3] = t->output_id();
      *num_inputs = 3;
      *optional = 1u << 2;
      return true;
    }
    case K::AvgPooling2d:
    case K::MaxPooling2d: {
      const auto* t = static_cast<const fb::Pooling2dNode*>(table);
      ids[0] = t->input_id();
      ids[1] = t->output_id();
      *num_inputs = 1;
      return true;
    }
    case K::StaticTranspose: {
      const auto* t = static_cast<const fb::StaticTranspose*>(table);
      ids[0] = t->input_id();
      ids[1] = t->output_id();
      *num_inputs = 1;
      return true;
    }
    case K::StaticResizeBilinear2D: {
      const auto* t = static_cast<const fb::StaticResizeBilinear2D*>(table);
      ids[0] = t->input_id();
      ids[1] = t->output_id();
      *num_inputs = 1;
      return true;
    }
    case K::StaticConstantPad: {
      const auto* t = static_cast<const fb::StaticConstantPad*>(table);
      ids[0] = t->input_id();
      ids[1] = t->output_id();
      *num_inputs = 1;
      return true;
    }
    case K::StaticSlice: {
      const auto* t = static_cast<const fb::StaticSlice*>(table);
      ids[0] = t->input_id();
      ids[1] = t->output_id();
      *num_inputs = 1;
      return true;
    }
    case K::StaticReshape: {
      const auto* t = static_cast<const fb::StaticReshape*>(table);
      ids[0] = t->input_id();
      ids[1] = t->output_id();
      *num_inputs = 1;
      return true;
    }
    case K::ELU: {
      const auto* t = static_cast<const fb::ELU*>(table);
      ids[0] = t->input_id();
      ids[1] = t->output_id();
      *num_inputs = 1;
      return true;
    }
    case K::LeakyReLU: {
      const auto* t = static_cast<const fb::LeakyReLU*>(table);
      ids[0] = t->input_id();
      ids[1] = t->output_id();
      *num_inputs = 1;
      return true;
    }
    case K::Concatenate2:
    case K::Concatenate3:
    case K::Concatenate4:
    case K::Concatenate5: {
      const auto* t = static_cast<const fb::ConcatNode*>(table);
      const uint32_t in[5] = {t->input1_id(), t->input2_id(), t->input3_id(), t->input4_id(), t->input5_id()};
      const size_t n = concat_inputs(static_cast<uint8_t>(node->node_type()));
      for (size_t k = 0; k < n; ++k) ids[k] = in[k];
      ids[n] = t->output_id();
      *num_inputs = n;
      return true;
    }
    case K::ArgMaxPooling2d: {
      const auto* t = static_cast<const fb::ArgMaxPooling2d*>(table);
      ids[0] = t->input_id();
      ids[1] = t->output_value_id();
      ids[2] = t->output_index_id();
      *num_inputs = 1;
      *num_outputs = 2;
      return true;
    }
    default: return false;
  }
}

bool transpose_is_reshape(const GraphPlan& p, const fb::Node* node) {
  const fb::StaticTranspose* t = node->node_as_StaticTranspose();
  if (t == nullptr || t->input_id() >= p.num_values || t->perm() == nullptr) return false;
  const ValuePlan& in = p.values[t->input_id()];
  if (t->perm()->size() != in.num_dims) return false;
  // The non-1 dims keep their order: the bytes are the same, only the shape changes.
  int64_t last = -1;
  for (uint32_t i = 0; i < in.num_dims; ++i) {
    const uint32_t d = t->perm()->Get(i);
    if (d >= in.num_dims) return false;
    if (in.dims[d] == 1) continue;
    if (static_cast<int64_t>(d) < last) return false;
    last = d;
  }
  return true;
}

Result<const fb::Graph*> read_graph(const BlobParts& parts) {
  // The identifier was checked by split_blob (XN00 or XN01: one schema reads both), so none is passed here.
  flatbuffers::Verifier verifier(parts.flatbuffer, parts.flatbuffer_size);
  EMBER_CHECK_OR_RETURN_ERROR(verifier.VerifyBuffer<fb::Graph>(nullptr), InvalidProgram,
                              "XnnpackBackend: the %s graph at blob bytes [%zu, +%zu) is not a valid flatbuffer: "
                              "truncated, an offset points outside it, or its tables nest or number past the "
                              "verifier's limits",
                              parts.identifier, parts.flatbuffer_offset, parts.flatbuffer_size);
  return flatbuffers::GetRoot<fb::Graph>(parts.flatbuffer);
}

size_t plan_tables_bound(const fb::Graph* g) {
  auto units = [](size_t bytes) { return (bytes + 15) / 16 * 16; };
  const size_t values = count(g->values()), nodes = count(g->nodes());
  // Per stage at most 8 external values per node (node_values' limit), each an id and a slot.
  return units(sizeof(GraphPlan)) + units(values * sizeof(ValuePlan)) + units(values * sizeof(uint32_t)) +
         units((count(g->input_ids()) + count(g->output_ids())) * sizeof(uint32_t)) + units(nodes * sizeof(StagePlan)) +
         nodes * (units(8 * sizeof(uint32_t)) + units(8 * sizeof(ExternalSlot))) +
         units(count(g->constant_data()) * sizeof(FreeableBuffer));
}

Result<GraphPlan*> plan_graph(const void* blob, size_t nbytes, MemoryAllocator* a, MemoryAllocator* buffers) {
  EMBER_TRY_ASSIGN(parts, split_blob(blob, nbytes));
  EMBER_TRY_ASSIGN(graph, read_graph(parts));
  GraphPlan* p = take<GraphPlan>(a, 1);
  EMBER_CHECK_OR_RETURN_ERROR(p != nullptr, MemoryAllocationFailed,
                              "XnnpackBackend: no room for its state (%zu bytes free)", a->free_bytes());
  new (p) GraphPlan();
  p->graph = graph;
  p->parts = parts;
  EMBER_TRY(plan_values(*p, a));
  EMBER_TRY(plan_args(*p, a));
  EMBER_TRY(plan_nodes(*p));
  EMBER_TRY(plan_stages(*p, a, buffers));
  p->num_constants = count(p->graph->constant_data());
  p->named = take<FreeableBuffer>(a, p->num_constants);
  EMBER_CHECK_OR_RETURN_ERROR(p->num_constants == 0 || p->named != nullptr, MemoryAllocationFailed,
                              "XnnpackBackend: no room for %zu constant records", p->num_constants);
  for (size_t i = 0; i < p->num_constants; ++i) new (&p->named[i]) FreeableBuffer();
  return p;
}

namespace {

// Constant `index`'s bytes (checked by check_constant at plan time), loading named data on first use.
Result<const void*> constant_bytes(GraphPlan* p, uint32_t index, size_t nbytes, const NamedDataMap* named_data,
                                   uint32_t id) {
  const fb::Graph* g = p->graph;
  if (count(g->constant_buffer()) > 0) {
    return static_cast<const void*>(g->constant_buffer()->Get(index)->storage()->data());
  }
  const fb::ConstantDataOffset* c = g->constant_data()->Get(index);
  if (c->named_key() == nullptr || c->named_key()->size() == 0) {
    return static_cast<const void*>(p->parts.constant_data + c->offset());
  }
  const char* key = c->named_key()->c_str();
  FreeableBuffer& held = p->named[index];
  if (held.data() == nullptr) {
    EMBER_CHECK_OR_RETURN_ERROR(named_data != nullptr && named_data->load != nullptr, NotFound,
                                "XnnpackBackend: value %u's constant is named data '%s', but the program has no named "
                                "data",
                                id, key);
    EMBER_TRY_ASSIGN(loaded, named_data->load(named_data->context, key));
    held = static_cast<FreeableBuffer&&>(loaded);
  }
  EMBER_CHECK_OR_RETURN_ERROR(held.data() != nullptr && held.size() >= nbytes, InvalidProgram,
                              "XnnpackBackend: value %u needs %zu bytes of named data '%s', which holds %zu", id,
                              nbytes, key, held.size());
  return held.data();
}

}  // namespace

Error bind_constants(GraphPlan* p, const NamedDataMap* named_data) {
  for (uint32_t id = 0; id < p->num_values; ++id) {
    ValuePlan& v = p->values[id];
    if (v.constant) {
      EMBER_TRY_ASSIGN(data, constant_bytes(p, v.tensor->constant_buffer_idx(), v.nbytes, named_data, id));
      v.data = data;
    }
    const fb::PerChannelQuant* pc = v.quantized != nullptr ? v.quantized->quant_params_as_PerChannelQuant() : nullptr;
    if (pc != nullptr) {
      if (pc->scale_buffer_idx() != 0) {
        EMBER_TRY_ASSIGN(scales,
                         constant_bytes(p, pc->scale_buffer_idx(), sizeof(float) * pc->num_scales(), named_data, id));
        v.scales = static_cast<const float*>(scales);
      } else {
        v.scales = pc->scale()->data();
      }
    }
  }
  return Error::Ok;
}

}  // namespace xnnpack
}  // namespace ember
