#include "runtime/executor/method.h"

#include <new>
#include <string.h>

#include "runtime/core/log.h"
#include "runtime/executor/plan_access.h"
#include "runtime/executor/program.h"
#include "runtime/executor/delegate_support.h"
#include "runtime/executor/feature_support.h"
#include "runtime/executor/instruction_loop.h"
#include "runtime/executor/prepare_support.h"
#include "schema/argument_codes.h"

namespace ember {

namespace fb = ember_pte;
using fb::InstructionArguments;
using fb::KernelTypes;
using pte::at;
using pte::count;

const char* instruction_op_name(const fb::ExecutionPlan* plan, uint32_t op_index, const char** overload) {
#ifdef EMBER_DELEGATES
  // A delegate call runs as a kernel instruction with no operator (delegate_support.cc logs its backend).
  if (op_index == UINT32_MAX) return *overload = "", "delegate";
#endif
  const auto* op = at(plan->operators(), op_index);
  *overload = pte::str(op->overload());
  return op->name()->c_str();
}

namespace {

// One message for every feature a program needs and this build compiled out (feature_support.h).
Error feature_missing(const char* method, const char* what, size_t index, const char* feature) {
  EMBER_LOG(ERROR,
            "method '%s' %s %zu needs the runtime feature '%s', which this build compiled out (its selection's "
            "features: python -m selective_build.select on this program)",
            method, what, index, feature);
  return Error::NotSupported;
}

size_t add_saturating(size_t a, size_t b) { return a <= SIZE_MAX - b ? a + b : SIZE_MAX; }

// A kernel's memory (runtime/kernel/kernel_args.h) for one instruction, through the prepare support the kernel
// table links in (null when no kernel in it has a prepare step: then no kernel has memory either).
PlannedMemory kernel_memory(const fb::ExecutionPlan* plan, const fb::KernelCall* call) {
  const PrepareSupport* support = prepare_support();
  return support != nullptr ? support->memory(plan, call) : PlannedMemory{0, 0};
}

// How many of each element load() places in the method allocator: one array per element type, so the
// bookkeeping is a handful of allocations whatever the program's size. Kernel state and scratch are what the
// kernels' memory functions ask for, over the program's own arguments (so MethodMeta can ask before load).
struct MethodLayout {
  size_t values = 0;
  size_t tensors = 0;
  size_t dims = 0;  // sizes, dim order and strides of every tensor, back to back
  size_t ints = 0;  // int list items (each also boxed: a pointer to its Int value)
  size_t doubles = 0;
  size_t bools = 0;
  size_t tensor_items = 0;
  size_t optional_items = 0;
  size_t operators = 0;
  size_t instructions = 0;
  size_t args = 0;
  size_t kernel_state = 0;  // bytes, the sum over instructions
  size_t scratch = 0;       // bytes, the most any one instruction needs (calls run one at a time)

  static MethodLayout of(const fb::ExecutionPlan* plan) {
    MethodLayout l;
    l.values = count(plan->values());
    for (size_t i = 0; i < l.values; ++i) {
      const fb::EValue* v = at(plan->values(), i);
      switch (v->val_type()) {
        case KernelTypes::Tensor: ++l.tensors, l.dims += pte::tensor_dim(v->val_as_Tensor()); break;
        case KernelTypes::IntList: l.ints += count(v->val_as_IntList()->items()); break;
        case KernelTypes::DoubleList: l.doubles += count(v->val_as_DoubleList()->items()); break;
        case KernelTypes::BoolList: l.bools += count(v->val_as_BoolList()->items()); break;
        case KernelTypes::TensorList: l.tensor_items += count(v->val_as_TensorList()->items()); break;
        case KernelTypes::OptionalTensorList: l.optional_items += count(v->val_as_OptionalTensorList()->items()); break;
        default: break;
      }
    }
    l.operators = count(plan->operators());
    const auto* instrs = pte::instructions(plan);
    l.instructions = count(instrs);
    for (size_t pc = 0; pc < l.instructions; ++pc) {
      const fb::Instruction* ins = at(instrs, pc);
      if (ins->instr_args_type() == InstructionArguments::KernelCall) {
        const fb::KernelCall* call = ins->instr_args_as_KernelCall();
        l.args += count(call->args());
        const PlannedMemory m = kernel_memory(plan, call);
        l.kernel_state = add_saturating(l.kernel_state, m.state);
        l.scratch = m.scratch > l.scratch ? m.scratch : l.scratch;
      }
    }
    return l;
  }
};

// Where those arrays landed.
struct MethodStorage {
  EValue* values;
  TensorImpl* tensors;
  int32_t* sizes;
  uint8_t* dim_order;
  int32_t* strides;
  int64_t* ints;
  EValue** boxed;
  double* doubles;
  bool* bools;
  Tensor* tensor_items;
  const Tensor** optional_items;
  const KernelEntry** kernels;  // per operator; null where this build lacks it
  Method::Instruction* instructions;
  EValue** args;
  uint8_t* kernel_state;
};

// The only place load() takes memory from the method allocator: one array per element type, by falling
// alignment (8, 4, 1 on 64-bit hosts), so padding goes only between the groups. It writes nothing through the
// pointers it gets, so bookkeeping_bytes runs it over a counting allocator. A loop over a table, because
// fourteen typed allocations unrolled cost twice the code (about 1 KB). The names are held in the table, not
// pointed at: pointers would cost a relocation each in a position-independent runner.
struct ArrayType {
  uint16_t size, align;
  char what[28];
};
constexpr ArrayType kArrays[] = {
    {1, 16, "bytes of kernel state"},
    {sizeof(EValue), alignof(EValue), "values"},
    {sizeof(TensorImpl), alignof(TensorImpl), "tensor descriptions"},
    {sizeof(int64_t), alignof(int64_t), "int list items"},
    {sizeof(EValue*), alignof(EValue*), "boxed int list items"},
    {sizeof(double), alignof(double), "double list items"},
    {sizeof(Tensor), alignof(Tensor), "tensor list items"},
    {sizeof(const Tensor*), alignof(const Tensor*), "optional tensor list items"},
    {sizeof(const KernelEntry*), alignof(const KernelEntry*), "kernel entries"},
    {sizeof(Method::Instruction), alignof(Method::Instruction), "instructions"},
    {sizeof(EValue*), alignof(EValue*), "kernel arguments"},
    {sizeof(int32_t), alignof(int32_t), "tensor sizes"},
    {sizeof(int32_t), alignof(int32_t), "tensor strides"},
    {sizeof(uint8_t), alignof(uint8_t), "tensor dim orders"},
    {sizeof(bool), alignof(bool), "bool list items"},
};

Error allocate(const MethodLayout& l, MemoryAllocator* alloc, const char* method, MethodStorage* s) {
  constexpr size_t kNum = sizeof(kArrays) / sizeof(kArrays[0]);
  const size_t counts[kNum] = {l.kernel_state, l.values,       l.tensors,        l.ints,      l.ints,
                               l.doubles,      l.tensor_items, l.optional_items, l.operators, l.instructions,
                               l.args,         l.dims,         l.dims,           l.dims,      l.bools};
  void* p[kNum];
  for (size_t i = 0; i < kNum; ++i) {
    const ArrayType& a = kArrays[i];
    p[i] = counts[i] <= SIZE_MAX / a.size ? alloc->allocate(counts[i] * a.size, a.align) : nullptr;
    EMBER_CHECK_OR_RETURN_ERROR(p[i] != nullptr, MemoryAllocationFailed,
                                "method '%s': no room for %zu %s (%zu bytes free in the method allocator)", method,
                                counts[i], a.what, alloc->free_bytes());
  }
  s->kernel_state = static_cast<uint8_t*>(p[0]);
  s->values = static_cast<EValue*>(p[1]);
  s->tensors = static_cast<TensorImpl*>(p[2]);
  s->ints = static_cast<int64_t*>(p[3]);
  s->boxed = static_cast<EValue**>(p[4]);
  s->doubles = static_cast<double*>(p[5]);
  s->tensor_items = static_cast<Tensor*>(p[6]);
  s->optional_items = static_cast<const Tensor**>(p[7]);
  s->kernels = static_cast<const KernelEntry**>(p[8]);
  s->instructions = static_cast<Method::Instruction*>(p[9]);
  s->args = static_cast<EValue**>(p[10]);
  s->sizes = static_cast<int32_t*>(p[11]);
  s->strides = static_cast<int32_t*>(p[12]);
  s->dim_order = static_cast<uint8_t*>(p[13]);
  s->bools = static_cast<bool*>(p[14]);
  return Error::Ok;
}

}  // namespace

// Method::load in phases over storage allocated up front: pools, tensors, values, kernels, chain. The program's
// structure was verified when it loaded (program_verifier.h); the phases check what depends on this build and
// on the caller's memory: pool sizes, tensor layouts, kernels and their argument kinds and dtypes.
class MethodLoader {
 public:
  // One whole constructor per branch (d_'s type differs): clang-format lays out each branch on its own and
  // misreads a member-initializer list split between them.
#ifdef EMBER_DELEGATES
  MethodLoader(const Program* program, const fb::ExecutionPlan* plan, MemoryManager* memory, const ExternalData* data)
      : d_{program, plan, memory, plan->name()->c_str(), nullptr, nullptr}, external_(data) {}
#else
  MethodLoader(const Program* program, const fb::ExecutionPlan* plan, MemoryManager* memory, const ExternalData* data)
      : d_{program, plan, memory, plan->name()->c_str()}, external_(data) {}
#endif

  Result<Method> load() {
    EMBER_CHECK_OR_RETURN_ERROR(d_.memory != nullptr && d_.memory->method_allocator != nullptr, InvalidArgument,
                                "method '%s' needs a MemoryManager with a method allocator", d_.method);
    EMBER_CHECK_OR_RETURN_ERROR(count(d_.plan->chains()) == 1, NotSupported,
                                "method '%s' has %zu chains; Ember runs single-chain methods", d_.method,
                                count(d_.plan->chains()));
    EMBER_TRY(check_pools());
    const MethodLayout layout = MethodLayout::of(d_.plan);
    EMBER_TRY(allocate(layout, d_.memory->method_allocator, d_.method, &s_));
#ifdef EMBER_DELEGATES
    d_.values = s_.values;
#endif
    EMBER_TRY(allocate_scratch(scratch_for(layout)));
    for (size_t i = 0; i < layout.values; ++i) new (&s_.values[i]) EValue();
    EMBER_TRY(load_tensors());
    EMBER_TRY(load_values());
    EMBER_TRY(check_outputs());
    resolve_kernels(layout.operators);
#ifdef EMBER_DELEGATES
    const Error chained = load_chain(layout.instructions);
    if (chained != Error::Ok) {
      // Backends initialized before the failure let go of what they hold.
      if (d_.state != nullptr) d_.state->destroy(d_.state);
      return chained;
    }
#else
    EMBER_TRY(load_chain(layout.instructions));
#endif
    Method m;
    m.program_ = d_.program;
    m.plan_ = d_.plan;
    m.memory_ = d_.memory;
    m.values_ = s_.values;
    m.tensors_ = s_.tensors;
    m.num_values_ = layout.values;
    m.instructions_ = s_.instructions;
    m.num_instructions_ = layout.instructions;
    m.loops_ = loops_;
    m.flow_ = flow_;
    m.scratch_ = scratch_;
#ifdef EMBER_DELEGATES
    m.delegates_ = d_.state;
#endif
    return m;
  }

 private:
  // The scratch of a method loaded for MemoryManager::threads: the layout's for one thread; for more, what the
  // prepare support adds up (kernels that want memory per thread have memory functions, so they have one).
  size_t scratch_for(const MethodLayout& layout) const {
    const PrepareSupport* support = prepare_support();
    if (d_.memory->threads <= 1 || support == nullptr) return layout.scratch;
    return support->threaded_scratch(d_.plan, d_.memory->threads);
  }

  // One block for every kernel's scratch, taken once from the temp allocator: calls run one at a time, so the
  // largest need is the method's (MethodMeta::scratch_bytes, for the threads the caller loads it for).
  Error allocate_scratch(size_t bytes) {
    if (bytes == 0) return Error::Ok;
    MemoryAllocator* temp = d_.memory->temp_allocator;
    EMBER_CHECK_OR_RETURN_ERROR(temp != nullptr, InvalidArgument,
                                "method '%s' needs %zu bytes of kernel scratch but has no temp allocator", d_.method,
                                bytes);
    void* p = temp->allocate(bytes, 16);
    EMBER_CHECK_OR_RETURN_ERROR(p != nullptr, MemoryAllocationFailed,
                                "method '%s' needs %zu bytes of kernel scratch; the temp allocator has %zu free",
                                d_.method, bytes, temp->free_bytes());
    scratch_ = Span<uint8_t>(static_cast<uint8_t*>(p), bytes);
    return Error::Ok;
  }

  // The caller must provide at least the bytes the program planned for each pool.
  Error check_pools() {
    const size_t pools = pte::num_pools(d_.plan);
    if (pools == 0) return Error::Ok;
    HierarchicalAllocator* planned = d_.memory->planned_memory;
    EMBER_CHECK_OR_RETURN_ERROR(planned != nullptr && planned->num_buffers() >= pools, InvalidArgument,
                                "method '%s' plans %zu memory pools but %zu were provided", d_.method, pools,
                                planned ? planned->num_buffers() : 0);
    for (size_t p = 1; p <= pools; ++p) {
      const uint64_t want = static_cast<uint64_t>(at(d_.plan->non_const_buffer_sizes(), p));
      EMBER_TRY_ASSIGN(base, planned->get_offset_address(static_cast<uint32_t>(p), 0, want));
      (void)base;
    }
    return Error::Ok;
  }

  // Tensor descriptions and where their bytes live: a planned pool (with an initial value loaded for mutable
  // buffers), the constant segment, or nowhere yet (an unplanned input the caller binds).
  Error load_tensors() {
    const auto* values = d_.plan->values();
    size_t next = 0, dims = 0;
    for (size_t i = 0; i < values->size(); ++i) {
      const fb::EValue* v = at(values, i);
      if (v->val_type() != KernelTypes::Tensor) continue;
      const fb::Tensor* t = v->val_as_Tensor();
      const size_t dim = pte::tensor_dim(t);
      int32_t* sizes = s_.sizes + dims;
      uint8_t* order = s_.dim_order + dims;
      int32_t* strides = s_.strides + dims;
      dims += dim;
      for (size_t d = 0; d < dim; ++d) {
        sizes[d] = at(t->sizes(), d);
        order[d] = at(t->dim_order(), d);
      }
      const ShapeDynamism dyn = static_cast<ShapeDynamism>(static_cast<uint8_t>(t->shape_dynamism()));
      if (dyn != ShapeDynamism::Static && feature_support()->dynamic_shapes == nullptr) {
        return feature_missing(d_.method, "value", i, "dynamic_shapes");
      }
      Result<TensorImpl> made = TensorImpl::make(static_cast<ScalarType>(t->scalar_type()), static_cast<int32_t>(dim),
                                                 sizes, order, strides, nullptr, dyn);
      if (!made.ok()) {
        EMBER_LOG(ERROR, "method '%s': value %zu is not a valid tensor", d_.method, i);
        return made.error() == Error::InvalidArgument ? Error::InvalidProgram : made.error();
      }
      TensorImpl* impl = new (&s_.tensors[next++]) TensorImpl(made.get());
      const size_t nbytes = impl->nbytes();
      if (pte::is_external(t)) {
        const ExternalDataSupport* ext = feature_support()->external_data;
        if (ext == nullptr) return feature_missing(d_.method, "value", i, "external_data");
        EMBER_TRY_ASSIGN(data, ext->resolve(d_.method, i, t, *impl, external_));
        // Kernels only read constants, so the file's read-only pages are used in place.
        impl->set_data(const_cast<void*>(data));
      } else if (const auto* a = t->allocation_info()) {
        EMBER_TRY_ASSIGN(p,
                         d_.memory->planned_memory->get_offset_address(a->memory_id(), pte::planned_offset(a), nbytes));
        impl->set_data(p);
        if (t->data_buffer_idx() > 0) {
          const uint64_t list = t->extra_tensor_info() ? t->extra_tensor_info()->mutable_data_segments_idx() : 0;
          EMBER_TRY(d_.program->load_initial_value(static_cast<uint32_t>(list), t->data_buffer_idx(), nbytes, p));
        }
      } else if (t->data_buffer_idx() > 0) {
        EMBER_TRY_ASSIGN(data, d_.program->constant_data(t->data_buffer_idx(), nbytes));
        impl->set_data(const_cast<void*>(data));
      } else {
        // Neither planned nor constant: a kernel would read a null pointer, and set_input has nowhere to copy
        // (program_fuzz found the null read). Every tensor of a runnable program has bytes, or none at all.
        EMBER_CHECK_OR_RETURN_ERROR(nbytes == 0, NotSupported,
                                    "method '%s': value %zu is a %zu-byte tensor with "
                                    "no storage (neither planned nor constant)",
                                    d_.method, i, nbytes);
      }
      s_.values[i] = EValue(Tensor(impl));
    }
    return Error::Ok;
  }

  // Scalars, strings and lists; tensor lists point at the tensors load_tensors made.
  Error load_values() {
    const auto* values = d_.plan->values();
    size_t ints = 0, doubles = 0, bools = 0, tensor_items = 0, optional_items = 0;
    for (size_t i = 0; i < values->size(); ++i) {
      const fb::EValue* v = at(values, i);
      EValue& out = s_.values[i];
      switch (v->val_type()) {
        case KernelTypes::Int: out = EValue(static_cast<int64_t>(v->val_as_Int()->int_val())); break;
        case KernelTypes::Double: out = EValue(v->val_as_Double()->double_val()); break;
        case KernelTypes::Bool: out = EValue(v->val_as_Bool()->bool_val()); break;
        case KernelTypes::String: {
          const auto* str = v->val_as_String()->string_val();
          out = EValue(StringView{pte::str(str), count(str)});
          break;
        }
        case KernelTypes::IntList: {
          const auto* items = v->val_as_IntList()->items();
          const size_t n = count(items);
          int64_t* unboxed = s_.ints + ints;
          EValue** boxed = s_.boxed + ints;
          ints += n;
          for (size_t k = 0; k < n; ++k) {
            const size_t idx = static_cast<size_t>(at(items, k));
            unboxed[k] = at(values, idx)->val_as_Int()->int_val();
            boxed[k] = &s_.values[idx];
          }
          out = EValue(BoxedIntList{boxed, unboxed, n});
          break;
        }
        case KernelTypes::DoubleList: {
          const auto* items = v->val_as_DoubleList()->items();
          double* list = s_.doubles + doubles;
          doubles += count(items);
          for (size_t k = 0; k < count(items); ++k) list[k] = at(items, k);
          out = EValue(ArrayRef<double>(list, count(items)));
          break;
        }
        case KernelTypes::BoolList: {
          const auto* items = v->val_as_BoolList()->items();
          bool* list = s_.bools + bools;
          bools += count(items);
          for (size_t k = 0; k < count(items); ++k) list[k] = at(items, k) != 0;
          out = EValue(ArrayRef<bool>(list, count(items)));
          break;
        }
        case KernelTypes::TensorList: {
          const auto* items = v->val_as_TensorList()->items();
          Tensor* list = s_.tensor_items + tensor_items;
          tensor_items += count(items);
          for (size_t k = 0; k < count(items); ++k) list[k] = s_.values[at(items, k)].as_tensor();
          out = EValue(TensorList(list, count(items)));
          break;
        }
        case KernelTypes::OptionalTensorList: {
          const auto* items = v->val_as_OptionalTensorList()->items();
          const Tensor** list = s_.optional_items + optional_items;
          optional_items += count(items);
          for (size_t k = 0; k < count(items); ++k) {
            const int32_t idx = at(items, k);
            list[k] = idx == -1 ? nullptr : &s_.values[idx].as_tensor();
          }
          out = EValue(OptionalTensorList(list, count(items)));
          break;
        }
        default: break;  // None, Null, and tensors (load_tensors)
      }
    }
    return Error::Ok;
  }

  // A method returning an Int, Double or Bool needs a build that has scalar outputs (the verifier already checked
  // each output's kind).
  Error check_outputs() {
    if (feature_support()->scalar_outputs) return Error::Ok;
    for (size_t k = 0; k < count(d_.plan->outputs()); ++k) {
      if (!s_.values[at(d_.plan->outputs(), k)].is_tensor())
        return feature_missing(d_.method, "output", k, "scalar_outputs");
    }
    return Error::Ok;
  }

  // Each operator looked up once; a missing one is reported by every instruction that calls it (load_chain).
  void resolve_kernels(size_t num_ops) {
    for (size_t k = 0; k < num_ops; ++k) {
      const fb::Operator* op = at(d_.plan->operators(), k);
      s_.kernels[k] = find_kernel(op->name()->c_str(), pte::str(op->overload()));
    }
  }

  // Every instruction resolved, and every kernel argument checked against the kernel's signature once, here, so
  // execute() need not.
  Error load_chain(size_t n) {
    const auto* instrs = pte::instructions(d_.plan);
    size_t args_used = 0, missing = 0, state_used = 0;
    const bool values_fixed = !has_moves(instrs, n);
    for (size_t pc = 0; pc < n; ++pc) {
      const fb::Instruction* ins = at(instrs, pc);
      Method::Instruction& out = s_.instructions[pc];
      out.kind = static_cast<uint8_t>(ins->instr_args_type());
      switch (ins->instr_args_type()) {
        case InstructionArguments::KernelCall: {
          const auto* call = ins->instr_args_as_KernelCall();
          const size_t nargs = count(call->args());
          EValue** args = s_.args + args_used;
          args_used += nargs;
          for (size_t k = 0; k < nargs; ++k) args[k] = &s_.values[at(call->args(), k)];
          const uint32_t op = static_cast<uint32_t>(call->op_index());
          const KernelEntry* entry = s_.kernels[op];
          if (entry == nullptr) {
            const char* overload;
            const char* name = instruction_op_name(d_.plan, op, &overload);
            EMBER_LOG(ERROR,
                      "method '%s' instruction %zu: operator %s%s%s is not in this build (%zu kernels "
                      "registered)",
                      d_.method, pc, name, overload[0] ? "." : "", overload, registered_kernels().size());
            ++missing;
            continue;
          }
          EMBER_TRY(check_kernel_args(pc, entry, args, nargs));
          // The same sizes MethodLayout counted, asked again rather than stored: the layout keeps no per-instruction
          // arrays, and the kernel's memory function is a little arithmetic.
          const PlannedMemory m = kernel_memory(d_.plan, call);
          void* state = m.state > 0 ? s_.kernel_state + state_used : nullptr;
          state_used += m.state;
          if (entry->prepare != nullptr) {
            const Error e = prepare_support()->prepare(d_.plan, call, entry, args, nargs, values_fixed, state);
            if (e != Error::Ok) {
              EMBER_LOG(ERROR, "method '%s' instruction %zu (%s): prepare failed", d_.method, pc, entry->name);
              return e;
            }
          }
          out.kernel = Method::Instruction::Kernel{entry->fn, args, state, static_cast<uint32_t>(nargs), op};
          break;
        }
        case InstructionArguments::MoveCall: {
          const auto* mv = ins->instr_args_as_MoveCall();
          out.move =
              Method::Instruction::Move{static_cast<uint32_t>(mv->move_from()), static_cast<uint32_t>(mv->move_to())};
          break;
        }
        case InstructionArguments::JumpFalseCall:
          flow_ = feature_support()->control_flow;
          if (flow_ == nullptr) return feature_missing(d_.method, "instruction", pc, "control_flow");
          EMBER_TRY(flow_->load_jump(d_.method, pc, ins->instr_args_as_JumpFalseCall(), s_.values, &out, &loops_));
          break;
        case InstructionArguments::FreeCall:
          out.free = Method::Instruction::Free{static_cast<uint32_t>(ins->instr_args_as_FreeCall()->value_index())};
          break;
        case InstructionArguments::DelegateCall: {
#ifdef EMBER_DELEGATES
          // A build without backends refuses it here, by name (delegate_support.h).
          EMBER_TRY(delegate_support()->load_call(d_, pc, ins->instr_args_as_DelegateCall(), &out));
          break;
#else
          // The message predates delegation; kept as it was, so a runner without delegates is unchanged.
          EMBER_LOG(ERROR, "method '%s' instruction %zu: delegate calls need a backend, and this build has none",
                    d_.method, pc);
          return Error::NotSupported;
#endif
        }
        default: return Error::InvalidProgram;  // unreachable: the verifier refused other kinds
      }
    }
    EMBER_CHECK_OR_RETURN_ERROR(missing == 0, OperatorMissing,
                                "method '%s': %zu instruction(s) use operators this build does not have (see above)",
                                d_.method, missing);
    return Error::Ok;
  }

  // Whether any instruction replaces a value (a MoveCall, which control flow emits): then a tensor argument may not
  // be the one a kernel's prepare step saw.
  template <typename Instructions>
  static bool has_moves(const Instructions* instrs, size_t n) {
    for (size_t pc = 0; pc < n; ++pc) {
      if (at(instrs, pc)->instr_args_type() == InstructionArguments::MoveCall) return true;
    }
    return false;
  }

  Error check_kernel_args(size_t pc, const KernelEntry* entry, EValue** args, size_t nargs) {
    const size_t expected = strlen(entry->arg_types);
    EMBER_CHECK_OR_RETURN_ERROR(nargs == expected, InvalidProgram,
                                "method '%s' instruction %zu (%s): %zu arguments, the kernel takes %zu", d_.method, pc,
                                entry->name, nargs, expected);
    bool checked_dtype = false;
    for (size_t k = 0; k < nargs; ++k) {
      const Tag tag = args[k]->tag();
      EMBER_CHECK_OR_RETURN_ERROR(argument_code_accepts(entry->arg_types[k], tag), InvalidProgram,
                                  "method '%s' instruction %zu (%s): argument %zu is a %s, the kernel expects '%c'",
                                  d_.method, pc, entry->name, k, tag_name(tag), entry->arg_types[k]);
      // The first tensor argument picks the kernel's compute type: it must be one this build compiled.
      if (!checked_dtype && tag == Tag::Tensor && entry->arg_types[k] == 'T') {
        const ScalarType st = args[k]->as_tensor().scalar_type();
        EMBER_CHECK_OR_RETURN_ERROR((entry->dtype_mask >> static_cast<int>(st)) & 1u, OperatorMissing,
                                    "method '%s' instruction %zu (%s): dtype %s is not compiled into this build "
                                    "(selected dtypes mask 0x%08x)",
                                    d_.method, pc, entry->name, scalar_type_name(st),
                                    static_cast<unsigned>(entry->dtype_mask));
        checked_dtype = true;
      }
    }
    return Error::Ok;
  }

  // What this loader reads and fills, laid out as the delegate support takes it, so a delegate call costs the
  // executor one pointer to pass (runtime/executor/delegate_support.h).
#ifdef EMBER_DELEGATES
  DelegateLoad d_;
#else
  struct {
    const Program* program;
    const fb::ExecutionPlan* plan;
    MemoryManager* memory;
    const char* method;
  } d_;
#endif
  const ExternalData* external_;  // where external constants are (.ptd files); null when the caller gave none
  bool loops_ = false;  // a backward jump seen: the method may loop
  const ControlFlowSupport* flow_ = nullptr;  // a jump seen: the method runs the loop that takes them
  MethodStorage s_{};
  Span<uint8_t> scratch_;
};

#ifdef EMBER_DELEGATES
Method::~Method() {
  if (delegates_ != nullptr) delegates_->destroy(delegates_);
}

Method::Method(Method&& other) {
  memcpy(static_cast<void*>(this), &other, sizeof(Method));
  other.delegates_ = nullptr;
}
#endif

Result<Method> Method::load(const Program* program, const fb::ExecutionPlan* plan, MemoryManager* memory,
                            const ExternalData* data) {
  return MethodLoader(program, plan, memory, data).load();
}

Result<size_t> Method::bookkeeping_bytes(const fb::ExecutionPlan* plan, size_t* scratch) {
  // A stand-in base address of 16 pads every request exactly as a 16-byte-aligned buffer does; allocate()
  // never writes through what it gets, so no memory is needed.
  MemoryAllocator counter(reinterpret_cast<void*>(uintptr_t{16}), SIZE_MAX - 16);
  MethodStorage unused;
  const MethodLayout layout = MethodLayout::of(plan);
  *scratch = layout.scratch;
  EMBER_TRY(allocate(layout, &counter, plan->name()->c_str(), &unused));
  return counter.used_bytes();
}

size_t Method::scratch_bytes(const fb::ExecutionPlan* plan, int threads) {
  const PrepareSupport* support = prepare_support();
  if (threads <= 1 || support == nullptr) return MethodLayout::of(plan).scratch;
  return support->threaded_scratch(plan, threads);
}

const char* Method::name() const { return plan_->name()->c_str(); }
size_t Method::num_inputs() const { return count(plan_->inputs()); }
size_t Method::num_outputs() const { return count(plan_->outputs()); }

Result<Tensor> Method::input(size_t index) const {
  EMBER_CHECK_OR_RETURN_ERROR(index < num_inputs(), InvalidArgument, "method '%s' has %zu inputs; asked for %zu",
                              name(), num_inputs(), index);
  return values_[at(plan_->inputs(), index)].as_tensor();
}

Result<EValue> Method::output_value(size_t index) const {
  EMBER_CHECK_OR_RETURN_ERROR(index < num_outputs(), InvalidArgument, "method '%s' has %zu outputs; asked for %zu",
                              name(), num_outputs(), index);
  return values_[at(plan_->outputs(), index)];
}

Result<Tensor> Method::output(size_t index) const {
  EMBER_TRY_ASSIGN(value, output_value(index));
  EMBER_CHECK_OR_RETURN_ERROR(value.is_tensor(), InvalidType, "method '%s': output %zu is %s, not a tensor", name(),
                              index, tag_name(value.tag()));
  return value.as_tensor();
}

// "[d0, d1, ...]" into buf, for messages; cut short rather than overflow.
const char* shape_text(char* buf, size_t cap, ArrayRef<int32_t> sizes) {
  size_t w = 0;
  buf[w++] = '[';
  for (size_t d = 0; d < sizes.size() && w + 16 < cap; ++d)
    w += static_cast<size_t>(snprintf(buf + w, cap - w, d ? ", %d" : "%d", static_cast<int>(sizes[d])));
  buf[w++] = ']';
  buf[w] = '\0';
  return buf;
}

Error Method::resize_input(size_t index, ArrayRef<int32_t> sizes) {
  EMBER_TRY_ASSIGN(t, input(index));
  // The sizes the program was planned at: a static input's shape, a bounded input's upper bounds (the .pte
  // keeps them; the tensor's own sizes change with every input). Checked before anything changes.
  // (A 0-d tensor may have no sizes vector at all: tensor_sizes reads that as empty; bundled_program_fuzz found it.)
  const ArrayRef<int32_t> planned =
      pte::tensor_sizes(pte::at(plan_->values(), static_cast<size_t>(at(plan_->inputs(), index)))->val_as_Tensor());
  // A bounded input loaded only in a build with dynamic shapes (load refuses it otherwise).
  if (t.impl()->shape_dynamism() != ShapeDynamism::Static) {
    return feature_support()->dynamic_shapes->resize_input(*this, index, t, planned, sizes);
  }
  // Every dimension must match, not just the element count: the kernels were chosen and planned for this shape.
  char want[96], got[96];
  if (sizes.size() != planned.size()) {
    EMBER_LOG(ERROR, "method '%s' input %zu has shape %s; got %s: rank %zu, the program's is %zu", name(), index,
              shape_text(want, sizeof(want), planned), shape_text(got, sizeof(got), sizes), sizes.size(),
              planned.size());
    return Error::InvalidArgument;
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != planned[d]) {
      EMBER_LOG(ERROR, "method '%s' input %zu has shape %s; got %s: dimension %zu is %d, fixed at %d (a static input)",
                name(), index, shape_text(want, sizeof(want), planned), shape_text(got, sizeof(got), sizes), d,
                static_cast<int>(sizes[d]), static_cast<int>(planned[d]));
      return Error::InvalidArgument;
    }
  }
  return Error::Ok;
}

Error Method::set_input(size_t index, ScalarType type, ArrayRef<int32_t> sizes, const void* data, size_t nbytes) {
  EMBER_TRY_ASSIGN(t, input(index));
  EMBER_CHECK_OR_RETURN_ERROR(t.scalar_type() == type, InvalidArgument, "method '%s' input %zu is %s; got %s", name(),
                              index, scalar_type_name(t.scalar_type()), scalar_type_name(type));
  EMBER_TRY(resize_input(index, sizes));
  EMBER_CHECK_OR_RETURN_ERROR(nbytes == t.nbytes(), InvalidArgument, "method '%s' input %zu takes %zu bytes; got %zu",
                              name(), index, t.nbytes(), nbytes);
  EMBER_CHECK_OR_RETURN_ERROR(t.mutable_data_ptr() != nullptr, NotSupported,
                              "method '%s' input %zu is not memory-planned; this runtime needs planned inputs", name(),
                              index);
  memcpy(t.mutable_data_ptr(), data, nbytes);
  return Error::Ok;
}

namespace {

// Calls `visit(tensor, allocation)` for each Tensor value of `plan` planned in pool `memory_id`, with its
// description among `tensors` (load made one per Tensor value, in value order).
template <typename Visit>
void for_each_in_pool(const fb::ExecutionPlan* plan, TensorImpl* tensors, uint32_t memory_id, Visit visit) {
  const auto* values = plan->values();
  size_t next = 0;
  for (size_t i = 0; i < count(values); ++i) {
    const fb::EValue* v = at(values, i);
    if (v->val_type() != KernelTypes::Tensor) continue;
    TensorImpl& impl = tensors[next++];
    const fb::Tensor* t = v->val_as_Tensor();
    const auto* a = t->allocation_info();
    if (a != nullptr && a->memory_id() == memory_id) visit(impl, t, a);
  }
}

}  // namespace

Error Method::bind_pool(uint32_t memory_id, Span<uint8_t> buffer) {
  const size_t pools = pte::num_pools(plan_);
  EMBER_CHECK_OR_RETURN_ERROR(memory_id >= 1 && memory_id <= pools, InvalidArgument,
                              "method '%s' plans %zu memory pools; there is no pool %u", name(), pools,
                              static_cast<unsigned>(memory_id));
  const uint64_t want = static_cast<uint64_t>(at(plan_->non_const_buffer_sizes(), memory_id));
  EMBER_CHECK_OR_RETURN_ERROR(buffer.size() >= want, InvalidArgument,
                              "method '%s' pool %u is planned at %llu bytes; the buffer given has %zu", name(),
                              static_cast<unsigned>(memory_id), static_cast<unsigned long long>(want), buffer.size());
  EMBER_CHECK_OR_RETURN_ERROR(reinterpret_cast<uintptr_t>(buffer.data()) % 16 == 0, InvalidArgument,
                              "method '%s' pool %u: the buffer given is not 16-byte aligned", name(),
                              static_cast<unsigned>(memory_id));
#ifdef EMBER_DELEGATES
  EMBER_CHECK_OR_RETURN_ERROR(delegates_ == nullptr, NotSupported,
                              "method '%s' calls delegates, which may keep pointers into pool %u; it cannot be rebound",
                              name(), static_cast<unsigned>(memory_id));
#endif
  // Where the pool is now: each of its tensors sits at its planned offset from the same base.
  const uint8_t* base = nullptr;
  for_each_in_pool(plan_, tensors_, memory_id,
                   [&](TensorImpl& impl, const fb::Tensor*, const fb::AllocationDetails* a) {
                     if (base == nullptr) base = static_cast<const uint8_t*>(impl.data()) - pte::planned_offset(a);
                   });
  if (base == nullptr) return Error::Ok;  // nothing lives in the pool
  // A kernel's prepared state may record its tensors' addresses (runtime/kernel/kernel_args.h); then the pool stays.
  for (size_t pc = 0; pc < num_instructions_; ++pc) {
    const Instruction& ins = instructions_[pc];
    if (static_cast<InstructionArguments>(ins.kind) != InstructionArguments::KernelCall ||
        ins.kernel.state == nullptr) {
      continue;
    }
    for (uint32_t k = 0; k < ins.kernel.num_args; ++k) {
      const EValue& arg = *ins.kernel.args[k];
      if (!arg.is_tensor()) continue;
      const uint8_t* data = static_cast<const uint8_t*>(arg.as_tensor().const_data_ptr());
      const bool inside = data >= base && data < base + want;
      const char* overload = "";
      EMBER_CHECK_OR_RETURN_ERROR(!inside, NotSupported,
                                  "method '%s': instruction %zu (%s) keeps prepared state over a tensor of pool %u, "
                                  "so the pool cannot be rebound",
                                  name(), pc, instruction_op_name(plan_, ins.kernel.op_index, &overload),
                                  static_cast<unsigned>(memory_id));
    }
  }
  for_each_in_pool(plan_, tensors_, memory_id,
                   [&](TensorImpl& impl, const fb::Tensor*, const fb::AllocationDetails* a) {
                     impl.set_data(buffer.data() + pte::planned_offset(a));
                   });
  return Error::Ok;
}

size_t Method::pool_buffers(uint32_t memory_id, PoolBuffer* out, size_t cap) const {
  size_t n = 0;
  for_each_in_pool(plan_, tensors_, memory_id,
                   [&](TensorImpl& impl, const fb::Tensor* t, const fb::AllocationDetails* a) {
                     if (t->data_buffer_idx() == 0)
                       return;  // an activation, or a view of a buffer (an in-place write's output)
                     if (n < cap) out[n] = PoolBuffer{pte::planned_offset(a), &impl};
                     ++n;
                   });
  return n;
}

Error Method::load_initial_values(uint32_t memory_id) {
  Error e = Error::Ok;
  for_each_in_pool(plan_, tensors_, memory_id,
                   [&](TensorImpl& impl, const fb::Tensor* t, const fb::AllocationDetails*) {
                     if (e != Error::Ok || t->data_buffer_idx() == 0) return;
                     const uint64_t list =
                         t->extra_tensor_info() ? t->extra_tensor_info()->mutable_data_segments_idx() : 0;
                     e = program_->load_initial_value(static_cast<uint32_t>(list), t->data_buffer_idx(), impl.nbytes(),
                                                      impl.mutable_data());
                   });
  return e;
}

Error Method::EMBER_EXECUTE_LOOP() {
  // A method with jumps runs the loop that takes them (control_flow.cc), which only builds with control flow link.
  return flow_ != nullptr ? flow_->run(*this) : run<false>();
}

#if EMBER_EVENT_TRACER
// The traced execute(): a run event around the instruction loop, which reports each instruction itself (the hooks
// in execute_trace.h). Two PAL tick reads per instruction.
Error Method::execute() {
  EventTracer* tracer = tracer_;
  if (tracer == nullptr) return execute_steps();
  trace_memory(tracer);
  const uint64_t start = ember_pal_ticks_ns();
  const Error e = execute_steps();
  tracer->run(start, ember_pal_ticks_ns());
  return e;
}

void Method::set_event_tracer(EventTracer* tracer) {
  tracer_ = tracer;
  if (tracer == nullptr) return;
  size_t scratch = 0;
  const Result<size_t> bytes = bookkeeping_bytes(plan_, &scratch);  // load succeeded with these very counts
  traced_bookkeeping_ = bytes.ok() ? *bytes : 0;
}

// Load took all of it; the run reports it before its first tick, so it costs the run's timing nothing.
void Method::trace_memory(EventTracer* tracer) const {
  tracer->allocation(kMethodAllocator, traced_bookkeeping_);
  if (scratch_.size() != 0) tracer->allocation(kTempAllocator, scratch_.size());
  const size_t pools = pte::num_pools(plan_);
  for (size_t p = 1; p <= pools; ++p) {
    tracer->allocation(kPlannedPool0 + static_cast<uint32_t>(p),
                       static_cast<uint64_t>(at(plan_->non_const_buffer_sizes(), p)));
  }
}

void Method::trace_instruction(size_t pc, uint64_t start) {
  const Instruction& ins = instructions_[pc];
  // A delegate call runs as a kernel call with no operator (delegate_support.cc): traced as the delegate call it is
  // (ETDump's DELEGATE_CALL), not as an unnamed operator.
  const bool call = static_cast<InstructionArguments>(ins.kind) == InstructionArguments::KernelCall;
  const bool kernel = call && ins.kernel.op_index != kNoOperator;
  tracer_->instruction(call && !kernel ? TraceKind::kDelegate : static_cast<TraceKind>(ins.kind), 0,
                       static_cast<uint32_t>(pc), kernel ? ins.kernel.op_index : kNoOperator, start,
                       ember_pal_ticks_ns());
  // The return value is the call's last argument (exir/emit/emitter.py puts it there), as in ExecuTorch.
  if (kernel && ins.kernel.num_args != 0) {
    tracer_->output(0, static_cast<uint32_t>(pc), ins.kernel.op_index, *ins.kernel.args[ins.kernel.num_args - 1]);
  }
}

const char* Method::operator_name(uint32_t op_index, const char** overload) const {
  *overload = "";
  if (op_index >= count(plan_->operators())) return nullptr;
  return instruction_op_name(plan_, op_index, overload);
}

size_t Method::num_operators() const { return count(plan_->operators()); }
#endif

}  // namespace ember
