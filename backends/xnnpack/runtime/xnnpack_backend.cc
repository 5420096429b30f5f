#include "backends/xnnpack/runtime/xnnpack_backend.h"

#include <stdlib.h>

#include <xnnpack.h>

#include "backends/xnnpack/runtime/cpu_nodes.h"
#include "backends/xnnpack/runtime/graph_plan.h"
#include "backends/xnnpack/runtime/node_kinds.h"
#include "backends/xnnpack/runtime/subgraph_build.h"
#include "backends/xnnpack/runtime/thread_pools.h"
#include "backends/xnnpack/runtime/transpose.h"
#include "runtime/core/log.h"
#include "schema/xnnpack_graph_generated.h"

namespace ember {
namespace xnnpack {

namespace {

namespace fb = ember_xnn;

bool is_available() { return initialize_xnnpack(); }

Result<void*> init(BackendInitContext& ctx, const FreeableBuffer& processed, ArrayRef<CompileSpec>) {
  EMBER_CHECK_OR_RETURN_ERROR(initialize_xnnpack(), NotSupported, "XnnpackBackend: xnn_initialize failed on this CPU");
  EMBER_TRY_ASSIGN(plan, plan_graph(processed.data(), processed.size(), ctx.allocator, ctx.allocator));
  Error err = bind_constants(plan, ctx.named_data);
  if (err == Error::Ok && ctx.threads > 1) {
    plan->threadpool = acquire_threadpool(ctx.threads);
    if (plan->threadpool == nullptr) {
      EMBER_LOG(ERROR, "XnnpackBackend: method '%s' delegate %u: no pthreadpool of %d threads", ctx.method,
                static_cast<unsigned>(ctx.delegate_index), ctx.threads);
      err = Error::DelegateMemoryAllocationFailed;
    }
  }
  for (uint32_t s = 0; s < plan->num_stages && err == Error::Ok; ++s) {
    if (!plan->stages[s].on_cpu) err = build_stage(plan, s);
  }
  if (err != Error::Ok) {
    release_plan(plan);
    return err;
  }
  return static_cast<void*>(plan);
}

// Init's count, over a scratch copy of the plan's tables (freed here) and a counter for the buffers between stages
// (never touched). XNNPACK's own memory (packed weights, each runtime's workspace) is its heap, not counted.
Result<size_t> init_bytes(const void* processed, size_t nbytes, ArrayRef<CompileSpec>) {
  EMBER_TRY_ASSIGN(parts, split_blob(processed, nbytes));
  EMBER_TRY_ASSIGN(graph, read_graph(parts));
  const size_t bound = plan_tables_bound(graph) + 16;
  void* scratch = malloc(bound);
  EMBER_CHECK_OR_RETURN_ERROR(scratch != nullptr, MemoryAllocationFailed,
                              "XnnpackBackend: no %zu bytes to size the delegate's plan", bound);
  MemoryAllocator tables(scratch, bound);
  MemoryAllocator buffers(reinterpret_cast<void*>(uintptr_t{16}), SIZE_MAX - 16);
  Result<GraphPlan*> plan = plan_graph(processed, nbytes, &tables, &buffers);
  const size_t used = tables.used_bytes() + buffers.used_bytes();
  free(scratch);
  if (!plan.ok()) return plan.error();
  return used;
}

// The address of value `id` for this call: the caller's tensor, a buffer between stages, or a constant.
void* address_of(const GraphPlan& p, uint32_t id, EValue** args) {
  const ValuePlan& v = p.values[id];
  if (v.arg >= 0) return args[v.arg]->as_tensor().mutable_data_ptr();
  if (v.buffer != nullptr) return v.buffer;
  return const_cast<void*>(v.data);
}

Error check_args(const GraphPlan& p, EValue** args, size_t num_args) {
  EMBER_CHECK_OR_RETURN_ERROR(num_args == p.num_inputs + p.num_outputs, InvalidProgram,
                              "XnnpackBackend: the call passes %zu values; the graph takes %u inputs and %u outputs",
                              num_args, p.num_inputs, p.num_outputs);
  for (size_t k = 0; k < num_args; ++k) {
    EMBER_CHECK_OR_RETURN_ERROR(args[k]->is_tensor(), InvalidProgram, "XnnpackBackend: argument %zu is a %s", k,
                                tag_name(args[k]->tag()));
    const Tensor& t = args[k]->as_tensor();
    const ValuePlan& v = p.values[p.arg_values[k]];
    // Shapes are static in this version: each argument has exactly the bytes the graph was built for.
    EMBER_CHECK_OR_RETURN_ERROR(t.scalar_type() == scalar_type_of(v.datatype) && t.nbytes() == v.nbytes,
                                InvalidArgument,
                                "XnnpackBackend: argument %zu is %s with %zu bytes; the graph's value %u is %s with "
                                "%zu",
                                k, scalar_type_name(t.scalar_type()), t.nbytes(), p.arg_values[k],
                                scalar_type_name(scalar_type_of(v.datatype)), v.nbytes);
  }
  return Error::Ok;
}

Error run_transpose(const GraphPlan& p, const fb::StaticTranspose* t, EValue** args) {
  const ValuePlan& in = p.values[t->input_id()];
  uint32_t perm[kMaxDims];
  for (uint32_t d = 0; d < in.num_dims; ++d) perm[d] = t->perm()->Get(d);
  const uint64_t n = numel(in);
  if (n == 0) return Error::Ok;
  transpose(address_of(p, t->input_id(), args), address_of(p, t->output_id(), args), in.dims, perm, in.num_dims,
            in.nbytes / n);
  return Error::Ok;
}

void run_batch_matmul(const GraphPlan& p, const fb::Node2x1* t, EValue** args) {
  const ValuePlan& a = p.values[t->input1_id()];
  const ValuePlan& b = p.values[t->input2_id()];
  const uint32_t m = a.dims[a.num_dims - 2], k = a.dims[a.num_dims - 1], n = b.dims[b.num_dims - 1];
  const uint64_t batch = dims_product(a, 0, a.num_dims - 2);
  batch_matmul(static_cast<const float*>(address_of(p, t->input1_id(), args)),
               static_cast<const float*>(address_of(p, t->input2_id(), args)),
               static_cast<float*>(address_of(p, t->output_id(), args)), batch, m, k, n);
}

void run_concat(const GraphPlan& p, const fb::ConcatNode* t, uint32_t count, EValue** args) {
  const uint32_t ids[5] = {t->input1_id(), t->input2_id(), t->input3_id(), t->input4_id(), t->input5_id()};
  const ValuePlan& out = p.values[t->output_id()];
  const uint64_t outer = dims_product(out, 0, t->axis());
  const void* inputs[5];
  uint64_t row_bytes[5];
  for (uint32_t i = 0; i < count; ++i) {
    inputs[i] = address_of(p, ids[i], args);
    // Each input's bytes over its rows (its dims from the axis on); nothing when the output is empty.
    row_bytes[i] = outer == 0 ? 0 : p.values[ids[i]].nbytes / outer;
  }
  concatenate(inputs, row_bytes, count, outer, address_of(p, t->output_id(), args));
}

void run_slice(const GraphPlan& p, const fb::StaticSlice* t, EValue** args) {
  const ValuePlan& in = p.values[t->input_id()];
  const ValuePlan& out = p.values[t->output_id()];
  uint32_t offsets[kMaxDims];
  for (uint32_t d = 0; d < in.num_dims; ++d) offsets[d] = t->offsets()->Get(d);
  const uint64_t n = numel(out);
  if (n == 0) return;
  slice(address_of(p, t->input_id(), args), address_of(p, t->output_id(), args), in.dims, offsets, out.dims,
        in.num_dims, out.nbytes / n);
}

// The element-wise function a Node1x1 kind routed to the CPU computes.
bool unary_function_of(fb::NodeUnion kind, UnaryFunction* f) {
  using K = fb::NodeUnion;
  switch (kind) {
    case K::Gelu: *f = UnaryFunction::Gelu; return true;
    case K::Tanh: *f = UnaryFunction::Tanh; return true;
    case K::Exp: *f = UnaryFunction::Exp; return true;
    case K::Log: *f = UnaryFunction::Log; return true;
    case K::Sin: *f = UnaryFunction::Sin; return true;
    case K::Cos: *f = UnaryFunction::Cos; return true;
    case K::ReciprocalSquareRoot: *f = UnaryFunction::ReciprocalSquareRoot; return true;
    default: return false;
  }
}

// A stage of one node run here: a transpose, or one of cpu_nodes.h's kinds (the plan routed nothing else here).
Error run_on_cpu(const GraphPlan& p, const StagePlan& st, EValue** args) {
  const fb::Node* node = p.graph->nodes()->Get(st.first_node);
  using K = fb::NodeUnion;
  UnaryFunction f;
  if (unary_function_of(node->node_type(), &f)) {
    const auto* t = static_cast<const fb::Node1x1*>(node->node());
    unary(f, static_cast<const float*>(address_of(p, t->input_id(), args)),
          static_cast<float*>(address_of(p, t->output_id(), args)), numel(p.values[t->input_id()]));
    return Error::Ok;
  }
  switch (node->node_type()) {
    case K::StaticTranspose: return run_transpose(p, node->node_as_StaticTranspose(), args);
    case K::StaticSlice: run_slice(p, node->node_as_StaticSlice(), args); return Error::Ok;
    case K::BatchMatrixMultiply: run_batch_matmul(p, node->node_as_BatchMatrixMultiply(), args); return Error::Ok;
    case K::Concatenate2:
    case K::Concatenate3:
    case K::Concatenate4:
    case K::Concatenate5:
      run_concat(p, static_cast<const fb::ConcatNode*>(node->node()),
                 concat_inputs(static_cast<uint8_t>(node->node_type())), args);
      return Error::Ok;
    default:
      EMBER_LOG(ERROR, "XnnpackBackend: node %u (%s) is not one the CPU runs", st.first_node,
                node_kind_name(static_cast<uint8_t>(node->node_type())));
      return Error::Internal;
  }
}

Error run_subgraph(const GraphPlan& p, StagePlan& st, uint32_t s, EValue** args) {
  // Setting a runtime up again re-derives its operators' indirection buffers (XNNPACK allocates there), so only a
  // call whose tensors moved pays for it: a runner or a Python loop passing the same buffers sets up once.
  bool moved = !st.slots_set;
  for (uint32_t k = 0; k < st.num_externals; ++k) {
    void* a = address_of(p, st.externals[k], args);
    moved |= st.slots[k].data != a;
    st.slots[k] = ExternalSlot{k, a};
  }
  xnn_runtime_t runtime = static_cast<xnn_runtime_t>(st.runtime);
  if (moved) {
    const xnn_status status =
        xnn_setup_runtime(runtime, st.num_externals, reinterpret_cast<const xnn_external_value*>(st.slots));
    EMBER_CHECK_OR_RETURN_ERROR(status == xnn_status_success, DelegateInvalidHandle,
                                "XnnpackBackend: stage %u: xnn_setup_runtime failed (status %d)", s,
                                static_cast<int>(status));
    st.slots_set = true;
  }
  const xnn_status status = xnn_invoke_runtime(runtime);
  EMBER_CHECK_OR_RETURN_ERROR(status == xnn_status_success, DelegateInvalidHandle,
                              "XnnpackBackend: stage %u (nodes %u to %u): xnn_invoke_runtime failed (status %d)", s,
                              st.first_node, st.end_node - 1, static_cast<int>(status));
  return Error::Ok;
}

Error execute(void* handle, EValue** args, size_t num_args) {
  GraphPlan* p = static_cast<GraphPlan*>(handle);
  EMBER_TRY(check_args(*p, args, num_args));
  for (uint32_t s = 0; s < p->num_stages; ++s) {
    StagePlan& st = p->stages[s];
    EMBER_TRY(st.on_cpu ? run_on_cpu(*p, st, args) : run_subgraph(*p, st, s, args));
  }
  return Error::Ok;
}

void destroy(void* handle) { release_plan(static_cast<GraphPlan*>(handle)); }

}  // namespace

// keeps_processed: the plan reads the blob's flatbuffer and its inline constants for the method's life.
const Backend kBackend = {"XnnpackBackend", &is_available, &init, &execute, &destroy, &init_bytes, true};

}  // namespace xnnpack
}  // namespace ember
