#include "runtime/executor/method.h"

#include <new>
#include <string.h>

#include "exir/schema/program_generated.h"
#include "runtime/core/log.h"
#include "runtime/executor/program.h"

namespace ember {

namespace {

namespace fb = ember_pte;
using fb::InstructionArguments;
using fb::KernelTypes;

constexpr size_t align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

// Mirrors, allocation by allocation, what Method::load takes from the method allocator (see bookkeeping_bytes).
struct Counter {
  size_t bytes = 0;
  template <typename T>
  void list(size_t n) {
    bytes = align_up(bytes, alignof(T)) + n * sizeof(T);
  }
};

const char* op_name(const fb::ExecutionPlan* plan, uint32_t op_index, const char** overload) {
  const auto* op = plan->operators()->Get(op_index);
  *overload = op->overload() ? op->overload()->c_str() : "";
  return op->name() ? op->name()->c_str() : "?";
}

size_t tensor_dim(const fb::Tensor* t) { return t->sizes() ? t->sizes()->size() : 0; }

// Whether the value's tag fits a kernel signature letter (see KernelEntry::arg_types).
bool tag_fits(char code, Tag tag) {
  switch (code) {
    case 'T': return tag == Tag::Tensor;
    case 't': return tag == Tag::Tensor || tag == Tag::None;
    case 's': return tag == Tag::Int || tag == Tag::Double || tag == Tag::Bool;
    case 'r': return tag == Tag::Int || tag == Tag::Double || tag == Tag::Bool || tag == Tag::None;
    case 'i': return tag == Tag::Int;
    case 'n': return tag == Tag::Int || tag == Tag::None;
    case 'd': return tag == Tag::Double;
    case 'f': return tag == Tag::Double || tag == Tag::None;
    case 'b': return tag == Tag::Bool;
    case 'c': return tag == Tag::Bool || tag == Tag::None;
    case 'I': return tag == Tag::IntList;
    case 'J': return tag == Tag::IntList || tag == Tag::None;
    case 'D': return tag == Tag::DoubleList;
    case 'B': return tag == Tag::BoolList;
    case 'L': return tag == Tag::TensorList;
    case 'P': return tag == Tag::OptionalTensorList;
    case 'S': return tag == Tag::String;
    case 'x': return true;
  }
  return false;
}

}  // namespace

Result<size_t> Method::bookkeeping_bytes(const fb::ExecutionPlan* plan) {
  EMBER_CHECK_OR_RETURN_ERROR(plan->values() != nullptr, InvalidProgram, "method has no value table");
  Counter c;
  const auto* values = plan->values();
  c.list<EValue>(values->size());
  for (flatbuffers::uoffset_t i = 0; i < values->size(); ++i) {
    const auto* v = values->Get(i);
    switch (v->val_type()) {
      case KernelTypes::Tensor: {
        const size_t dim = tensor_dim(v->val_as_Tensor());
        c.list<TensorImpl>(1);
        c.list<int32_t>(dim);
        c.list<uint8_t>(dim);
        c.list<int32_t>(dim);
        break;
      }
      case KernelTypes::IntList:
        c.list<int64_t>(v->val_as_IntList()->items()->size());
        c.list<EValue*>(v->val_as_IntList()->items()->size());
        break;
      case KernelTypes::DoubleList: c.list<double>(v->val_as_DoubleList()->items()->size()); break;
      case KernelTypes::BoolList: c.list<bool>(v->val_as_BoolList()->items()->size()); break;
      case KernelTypes::TensorList: c.list<Tensor>(v->val_as_TensorList()->items()->size()); break;
      case KernelTypes::OptionalTensorList:
        c.list<const Tensor*>(v->val_as_OptionalTensorList()->items()->size());
        break;
      default: break;
    }
  }
  const auto* chain = plan->chains() && plan->chains()->size() ? plan->chains()->Get(0) : nullptr;
  const size_t n = chain && chain->instructions() ? chain->instructions()->size() : 0;
  c.list<Instruction>(n);
  for (size_t i = 0; i < n; ++i) {
    const auto* ins = chain->instructions()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (ins->instr_args_type() == InstructionArguments::KernelCall) {
      const auto* args = ins->instr_args_as_KernelCall()->args();
      c.list<EValue*>(args ? args->size() : 0);
    }
  }
  return c.bytes;
}

Result<Method> Method::load(const Program* program, const fb::ExecutionPlan* plan, MemoryManager* memory) {
  const char* method = plan->name() ? plan->name()->c_str() : "?";
  EMBER_CHECK_OR_RETURN_ERROR(memory != nullptr && memory->method_allocator != nullptr, InvalidArgument,
                              "method '%s' needs a MemoryManager with a method allocator", method);
  MemoryAllocator* alloc = memory->method_allocator;
  EMBER_CHECK_OR_RETURN_ERROR(plan->values() != nullptr, InvalidProgram, "method '%s' has no value table", method);
  const auto* values = plan->values();
  const size_t num_values = values->size();

  // Planned pools: the caller must provide at least what the program planned.
  const auto* pools = plan->non_const_buffer_sizes();
  const size_t num_pools = pools && pools->size() > 1 ? pools->size() - 1 : 0;
  if (num_pools > 0) {
    EMBER_CHECK_OR_RETURN_ERROR(memory->planned_memory != nullptr &&
                                    memory->planned_memory->num_buffers() >= num_pools,
                                InvalidArgument, "method '%s' plans %zu memory pools but %zu were provided", method,
                                num_pools, memory->planned_memory ? memory->planned_memory->num_buffers() : 0);
    for (size_t p = 1; p <= num_pools; ++p) {
      const uint64_t want = static_cast<uint64_t>(pools->Get(static_cast<flatbuffers::uoffset_t>(p)));
      EMBER_TRY_ASSIGN(base, memory->planned_memory->get_offset_address(static_cast<uint32_t>(p), 0, want));
      (void)base;
    }
  }

  Method m;
  m.program_ = program;
  m.plan_ = plan;
  m.memory_ = memory;
  m.num_values_ = num_values;
  m.values_ = alloc->allocate_list<EValue>(num_values);
  EMBER_CHECK_OR_RETURN_ERROR(m.values_ != nullptr || num_values == 0, MemoryAllocationFailed,
                              "method '%s': no room for %zu values (%zu bytes free in the method allocator)", method,
                              num_values, alloc->free_bytes());
  for (size_t i = 0; i < num_values; ++i) new (&m.values_[i]) EValue();

  // Pass 1: scalars and tensors; list storage is allocated here (so allocations follow value order, as
  // bookkeeping_bytes counts them) and list contents are filled in pass 2, once every tensor exists.
  for (size_t i = 0; i < num_values; ++i) {
    const auto* v = values->Get(static_cast<flatbuffers::uoffset_t>(i));
    EMBER_CHECK_OR_RETURN_ERROR(v != nullptr, InvalidProgram, "method '%s': value %zu is missing", method, i);
    switch (v->val_type()) {
      case KernelTypes::NONE:
      case KernelTypes::Null: break;
      case KernelTypes::Int: m.values_[i] = EValue(static_cast<int64_t>(v->val_as_Int()->int_val())); break;
      case KernelTypes::Double: m.values_[i] = EValue(v->val_as_Double()->double_val()); break;
      case KernelTypes::Bool: m.values_[i] = EValue(v->val_as_Bool()->bool_val()); break;
      case KernelTypes::String: {
        const auto* s = v->val_as_String()->string_val();
        m.values_[i] = EValue(StringView{s ? s->c_str() : "", s ? s->size() : 0});
        break;
      }
      case KernelTypes::Tensor: {
        const fb::Tensor* t = v->val_as_Tensor();
        const size_t dim = tensor_dim(t);
        const int type = static_cast<int>(t->scalar_type());
        EMBER_CHECK_OR_RETURN_ERROR(is_valid_scalar_type(type) && element_size(static_cast<ScalarType>(type)) > 0,
                                    InvalidProgram, "method '%s': value %zu is a tensor of unsupported scalar type %d",
                                    method, i, type);
        EMBER_CHECK_OR_RETURN_ERROR(dim <= static_cast<size_t>(kMaxTensorDim), NotSupported,
                                    "method '%s': value %zu has %zu dimensions (at most %d)", method, i, dim,
                                    kMaxTensorDim);
        const size_t order_len = t->dim_order() ? t->dim_order()->size() : 0;
        EMBER_CHECK_OR_RETURN_ERROR(order_len == dim, InvalidProgram,
                                    "method '%s': value %zu has %zu sizes but %zu dim order entries", method, i, dim,
                                    order_len);
        EMBER_CHECK_OR_RETURN_ERROR(t->storage_offset() == 0, NotSupported,
                                    "method '%s': value %zu has storage offset %d; only 0 is supported", method, i,
                                    static_cast<int>(t->storage_offset()));
        TensorImpl* impl = alloc->allocate_instance<TensorImpl>();
        int32_t* sizes = alloc->allocate_list<int32_t>(dim);
        uint8_t* order = alloc->allocate_list<uint8_t>(dim);
        int32_t* strides = alloc->allocate_list<int32_t>(dim);
        EMBER_CHECK_OR_RETURN_ERROR(impl && sizes && order && strides, MemoryAllocationFailed,
                                    "method '%s': no room to describe tensor %zu (%zu bytes free in the method "
                                    "allocator)", method, i, alloc->free_bytes());
        for (size_t d = 0; d < dim; ++d) {
          sizes[d] = t->sizes()->Get(static_cast<flatbuffers::uoffset_t>(d));
          order[d] = t->dim_order()->Get(static_cast<flatbuffers::uoffset_t>(d));
        }
        const ShapeDynamism dyn = static_cast<ShapeDynamism>(static_cast<uint8_t>(t->shape_dynamism()));
        Result<TensorImpl> made = TensorImpl::make(static_cast<ScalarType>(type), static_cast<int32_t>(dim), sizes,
                                                   order, strides, nullptr, dyn);
        if (!made.ok()) {
          EMBER_LOG(ERROR, "method '%s': value %zu is not a valid tensor", method, i);
          return made.error() == Error::InvalidArgument ? Error::InvalidProgram : made.error();
        }
        new (impl) TensorImpl(made.get());
        const size_t nbytes = impl->nbytes();
        if (t->allocation_info() != nullptr) {
          const auto* ai = t->allocation_info();
          const uint64_t offset = static_cast<uint64_t>(ai->memory_offset_high()) << 32 | ai->memory_offset_low();
          EMBER_CHECK_OR_RETURN_ERROR(memory->planned_memory != nullptr, InvalidArgument,
                                      "method '%s': value %zu is planned in memory id %u but no planned memory was "
                                      "provided", method, i, static_cast<unsigned>(ai->memory_id()));
          Result<void*> p = memory->planned_memory->get_offset_address(ai->memory_id(), offset, nbytes);
          if (!p.ok()) {
            EMBER_LOG(ERROR, "method '%s': value %zu (%zu bytes at memory id %u offset %llu) does not fit its pool",
                      method, i, nbytes, static_cast<unsigned>(ai->memory_id()), static_cast<unsigned long long>(offset));
            return Error::InvalidProgram;
          }
          impl->set_data(p.get());
          if (t->data_buffer_idx() > 0) {
            const uint32_t list = t->extra_tensor_info()
                                      ? static_cast<uint32_t>(t->extra_tensor_info()->mutable_data_segments_idx())
                                      : 0u;
            EMBER_TRY(program->load_initial_value(list, t->data_buffer_idx(), nbytes, p.get()));
          }
        } else if (t->data_buffer_idx() > 0) {
          EMBER_TRY_ASSIGN(data, program->constant_data(t->data_buffer_idx(), nbytes));
          impl->set_data(const_cast<void*>(data));
        }
        m.values_[i] = EValue(Tensor(impl));
        break;
      }
      case KernelTypes::IntList: {
        const auto* items = v->val_as_IntList()->items();
        const size_t n = items ? items->size() : 0;
        int64_t* out = alloc->allocate_list<int64_t>(n);
        EValue** boxed = alloc->allocate_list<EValue*>(n);
        EMBER_CHECK_OR_RETURN_ERROR((out != nullptr && boxed != nullptr) || n == 0, MemoryAllocationFailed,
                                    "method '%s': no room for int list %zu", method, i);
        for (size_t k = 0; k < n; ++k) {
          const int64_t idx = items->Get(static_cast<flatbuffers::uoffset_t>(k));
          EMBER_CHECK_OR_RETURN_ERROR(idx >= 0 && static_cast<size_t>(idx) < num_values &&
                                          values->Get(static_cast<flatbuffers::uoffset_t>(idx))->val_type() ==
                                              KernelTypes::Int,
                                      InvalidProgram, "method '%s': int list %zu item %zu refers to value %lld, which "
                                      "is not an Int", method, i, k, static_cast<long long>(idx));
          out[k] = values->Get(static_cast<flatbuffers::uoffset_t>(idx))->val_as_Int()->int_val();
          boxed[k] = &m.values_[idx];
        }
        m.values_[i] = EValue(BoxedIntList{boxed, out, n});
        break;
      }
      case KernelTypes::DoubleList: {
        const auto* items = v->val_as_DoubleList()->items();
        const size_t n = items ? items->size() : 0;
        double* out = alloc->allocate_list<double>(n);
        EMBER_CHECK_OR_RETURN_ERROR(out != nullptr || n == 0, MemoryAllocationFailed,
                                    "method '%s': no room for double list %zu", method, i);
        for (size_t k = 0; k < n; ++k) out[k] = items->Get(static_cast<flatbuffers::uoffset_t>(k));
        m.values_[i] = EValue(ArrayRef<double>(out, n));
        break;
      }
      case KernelTypes::BoolList: {
        const auto* items = v->val_as_BoolList()->items();
        const size_t n = items ? items->size() : 0;
        bool* out = alloc->allocate_list<bool>(n);
        EMBER_CHECK_OR_RETURN_ERROR(out != nullptr || n == 0, MemoryAllocationFailed,
                                    "method '%s': no room for bool list %zu", method, i);
        for (size_t k = 0; k < n; ++k) out[k] = items->Get(static_cast<flatbuffers::uoffset_t>(k)) != 0;
        m.values_[i] = EValue(ArrayRef<bool>(out, n));
        break;
      }
      case KernelTypes::TensorList: {
        const size_t n = v->val_as_TensorList()->items() ? v->val_as_TensorList()->items()->size() : 0;
        Tensor* out = alloc->allocate_list<Tensor>(n);
        EMBER_CHECK_OR_RETURN_ERROR(out != nullptr || n == 0, MemoryAllocationFailed,
                                    "method '%s': no room for tensor list %zu", method, i);
        m.values_[i] = EValue(TensorList(out, n));
        break;
      }
      case KernelTypes::OptionalTensorList: {
        const auto* items = v->val_as_OptionalTensorList()->items();
        const size_t n = items ? items->size() : 0;
        const Tensor** out = alloc->allocate_list<const Tensor*>(n);
        EMBER_CHECK_OR_RETURN_ERROR(out != nullptr || n == 0, MemoryAllocationFailed,
                                    "method '%s': no room for optional tensor list %zu", method, i);
        m.values_[i] = EValue(OptionalTensorList(out, n));
        break;
      }
      default:
        EMBER_LOG(ERROR, "method '%s': value %zu has unknown kind %d", method, i, static_cast<int>(v->val_type()));
        return Error::InvalidProgram;
    }
  }

  // Pass 2: tensor list contents.
  for (size_t i = 0; i < num_values; ++i) {
    const auto* v = values->Get(static_cast<flatbuffers::uoffset_t>(i));
    const flatbuffers::Vector<int32_t>* items = nullptr;
    const bool optional = v->val_type() == KernelTypes::OptionalTensorList;
    if (v->val_type() == KernelTypes::TensorList) items = v->val_as_TensorList()->items();
    if (optional) items = v->val_as_OptionalTensorList()->items();
    if (items == nullptr) continue;
    for (flatbuffers::uoffset_t k = 0; k < items->size(); ++k) {
      const int32_t idx = items->Get(k);
      if (optional && idx == -1) {
        const_cast<const Tensor**>(m.values_[i].as_optional_tensor_list().data())[k] = nullptr;
        continue;
      }
      EMBER_CHECK_OR_RETURN_ERROR(idx >= 0 && static_cast<size_t>(idx) < num_values &&
                                      m.values_[idx].is_tensor(),
                                  InvalidProgram, "method '%s': tensor list %zu item %u refers to value %d, which is "
                                  "not a tensor", method, i, static_cast<unsigned>(k), static_cast<int>(idx));
      if (optional) {
        const_cast<const Tensor**>(m.values_[i].as_optional_tensor_list().data())[k] = &m.values_[idx].as_tensor();
      } else {
        const_cast<Tensor*>(m.values_[i].as_tensor_list().data())[k] = m.values_[idx].as_tensor();
      }
    }
  }

  // Inputs and outputs must be tensors.
  for (int pass = 0; pass < 2; ++pass) {
    const auto* io = pass == 0 ? plan->inputs() : plan->outputs();
    const size_t n = io ? io->size() : 0;
    for (size_t k = 0; k < n; ++k) {
      const int32_t idx = io->Get(static_cast<flatbuffers::uoffset_t>(k));
      EMBER_CHECK_OR_RETURN_ERROR(idx >= 0 && static_cast<size_t>(idx) < num_values && m.values_[idx].is_tensor(),
                                  NotSupported, "method '%s': %s %zu is value %d, which is not a tensor", method,
                                  pass == 0 ? "input" : "output", k, static_cast<int>(idx));
    }
  }

  // Instructions: resolve every kernel and check every argument once, here, so execute() need not.
  EMBER_CHECK_OR_RETURN_ERROR(plan->chains() != nullptr && plan->chains()->size() == 1, NotSupported,
                              "method '%s' has %u chains; Ember runs single-chain methods", method,
                              static_cast<unsigned>(plan->chains() ? plan->chains()->size() : 0u));
  const auto* instrs = plan->chains()->Get(0)->instructions();
  const size_t n = instrs ? instrs->size() : 0;
  const size_t num_ops = plan->operators() ? plan->operators()->size() : 0;
  m.num_instructions_ = n;
  m.instructions_ = alloc->allocate_list<Instruction>(n);
  EMBER_CHECK_OR_RETURN_ERROR(m.instructions_ != nullptr || n == 0, MemoryAllocationFailed,
                              "method '%s': no room for %zu instructions (%zu bytes free in the method allocator)",
                              method, n, alloc->free_bytes());
  size_t missing = 0;
  for (size_t pc = 0; pc < n; ++pc) {
    const auto* ins = instrs->Get(static_cast<flatbuffers::uoffset_t>(pc));
    Instruction& out = m.instructions_[pc];
    out = Instruction{nullptr, nullptr, 0, static_cast<uint8_t>(ins->instr_args_type()), 0, 0};
    switch (ins->instr_args_type()) {
      case InstructionArguments::KernelCall: {
        const auto* call = ins->instr_args_as_KernelCall();
        EMBER_CHECK_OR_RETURN_ERROR(call->op_index() >= 0 && static_cast<size_t>(call->op_index()) < num_ops,
                                    InvalidProgram, "method '%s' instruction %zu: operator index %d out of range (%zu "
                                    "operators)", method, pc, static_cast<int>(call->op_index()), num_ops);
        const char* overload;
        const char* name = op_name(plan, static_cast<uint32_t>(call->op_index()), &overload);
        const auto* args = call->args();
        const size_t nargs = args ? args->size() : 0;
        EValue** arg_ptrs = alloc->allocate_list<EValue*>(nargs);
        EMBER_CHECK_OR_RETURN_ERROR(arg_ptrs != nullptr || nargs == 0, MemoryAllocationFailed,
                                    "method '%s' instruction %zu: no room for %zu arguments", method, pc, nargs);
        for (size_t k = 0; k < nargs; ++k) {
          const int32_t idx = args->Get(static_cast<flatbuffers::uoffset_t>(k));
          EMBER_CHECK_OR_RETURN_ERROR(idx >= 0 && static_cast<size_t>(idx) < num_values, InvalidProgram,
                                      "method '%s' instruction %zu (%s.%s): argument %zu is value %d, out of range "
                                      "(%zu values)", method, pc, name, overload, k, static_cast<int>(idx), num_values);
          arg_ptrs[k] = &m.values_[idx];
        }
        const KernelEntry* entry = find_kernel(name, overload);
        if (entry == nullptr) {
          EMBER_LOG(ERROR, "method '%s' instruction %zu: operator %s%s%s is not in this build (%zu kernels "
                    "registered)", method, pc, name, overload[0] ? "." : "", overload, registered_kernels().size());
          ++missing;
          continue;
        }
        const size_t expected = strlen(entry->arg_types);
        EMBER_CHECK_OR_RETURN_ERROR(nargs == expected, InvalidProgram,
                                    "method '%s' instruction %zu (%s): %zu arguments, the kernel takes %zu", method,
                                    pc, entry->name, nargs, expected);
        bool checked_dtype = false;
        for (size_t k = 0; k < nargs; ++k) {
          const Tag tag = arg_ptrs[k]->tag();
          EMBER_CHECK_OR_RETURN_ERROR(tag_fits(entry->arg_types[k], tag), InvalidProgram,
                                      "method '%s' instruction %zu (%s): argument %zu is a %s, the kernel expects "
                                      "'%c'", method, pc, entry->name, k, tag_name(tag), entry->arg_types[k]);
          // The first tensor argument picks the kernel's compute type: it must be one this build compiled.
          if (!checked_dtype && tag == Tag::Tensor && entry->arg_types[k] == 'T') {
            const ScalarType st = arg_ptrs[k]->as_tensor().scalar_type();
            EMBER_CHECK_OR_RETURN_ERROR((entry->dtype_mask >> static_cast<int>(st)) & 1u, OperatorMissing,
                                        "method '%s' instruction %zu (%s): dtype %s is not compiled into this build "
                                        "(selected dtypes mask 0x%08x)", method, pc, entry->name,
                                        scalar_type_name(st), static_cast<unsigned>(entry->dtype_mask));
            checked_dtype = true;
          }
        }
        out.fn = entry->fn;
        out.args = arg_ptrs;
        out.num_args = static_cast<uint32_t>(nargs);
        out.a = static_cast<uint32_t>(call->op_index());
        break;
      }
      case InstructionArguments::MoveCall: {
        const auto* mv = ins->instr_args_as_MoveCall();
        EMBER_CHECK_OR_RETURN_ERROR(mv->move_from() >= 0 && static_cast<size_t>(mv->move_from()) < num_values &&
                                        mv->move_to() >= 0 && static_cast<size_t>(mv->move_to()) < num_values,
                                    InvalidProgram, "method '%s' instruction %zu: move %d -> %d out of range", method,
                                    pc, static_cast<int>(mv->move_from()), static_cast<int>(mv->move_to()));
        out.a = static_cast<uint32_t>(mv->move_from());
        out.b = static_cast<uint32_t>(mv->move_to());
        break;
      }
      case InstructionArguments::JumpFalseCall: {
        const auto* jf = ins->instr_args_as_JumpFalseCall();
        const int32_t cond = jf->cond_value_index();
        const int32_t dest = jf->destination_instruction();
        EMBER_CHECK_OR_RETURN_ERROR(cond >= 0 && static_cast<size_t>(cond) < num_values &&
                                        m.values_[cond].is_bool(),
                                    InvalidProgram, "method '%s' instruction %zu: jump condition %d is not a Bool value",
                                    method, pc, static_cast<int>(cond));
        // Forward jumps only: every program then ends, which a microcontroller without a watchdog relies on.
        EMBER_CHECK_OR_RETURN_ERROR(dest > static_cast<int32_t>(pc) && static_cast<size_t>(dest) <= n, NotSupported,
                                    "method '%s' instruction %zu: jump to %d; only forward jumps are supported", method,
                                    pc, static_cast<int>(dest));
        out.a = static_cast<uint32_t>(cond);
        out.b = static_cast<uint32_t>(dest);
        break;
      }
      case InstructionArguments::FreeCall: {
        const int32_t idx = ins->instr_args_as_FreeCall()->value_index();
        EMBER_CHECK_OR_RETURN_ERROR(idx >= 0 && static_cast<size_t>(idx) < num_values && m.values_[idx].is_tensor(),
                                    InvalidProgram, "method '%s' instruction %zu: free of value %d, not a tensor",
                                    method, pc, static_cast<int>(idx));
        out.a = static_cast<uint32_t>(idx);
        break;
      }
      case InstructionArguments::DelegateCall:
        EMBER_LOG(ERROR, "method '%s' instruction %zu: delegate calls need a backend, and this build has none", method,
                  pc);
        return Error::NotSupported;
      default:
        EMBER_LOG(ERROR, "method '%s' instruction %zu: unknown instruction kind %d", method, pc,
                  static_cast<int>(ins->instr_args_type()));
        return Error::InvalidProgram;
    }
  }
  if (missing > 0) {
    EMBER_LOG(ERROR, "method '%s': %zu instruction(s) use operators this build does not have (see above)", method,
              missing);
    return Error::OperatorMissing;
  }
  return m;
}

const char* Method::name() const { return plan_->name() ? plan_->name()->c_str() : "?"; }
size_t Method::num_inputs() const { return plan_->inputs() ? plan_->inputs()->size() : 0; }
size_t Method::num_outputs() const { return plan_->outputs() ? plan_->outputs()->size() : 0; }

Result<Tensor> Method::input(size_t index) const {
  EMBER_CHECK_OR_RETURN_ERROR(index < num_inputs(), InvalidArgument, "method '%s' has %zu inputs; asked for %zu",
                              name(), num_inputs(), index);
  return values_[plan_->inputs()->Get(static_cast<flatbuffers::uoffset_t>(index))].as_tensor();
}

Result<Tensor> Method::output(size_t index) const {
  EMBER_CHECK_OR_RETURN_ERROR(index < num_outputs(), InvalidArgument, "method '%s' has %zu outputs; asked for %zu",
                              name(), num_outputs(), index);
  return values_[plan_->outputs()->Get(static_cast<flatbuffers::uoffset_t>(index))].as_tensor();
}

Error Method::set_input(size_t index, ScalarType type, ArrayRef<int32_t> sizes, const void* data, size_t nbytes) {
  EMBER_TRY_ASSIGN(t, input(index));
  EMBER_CHECK_OR_RETURN_ERROR(t.scalar_type() == type, InvalidArgument,
                              "method '%s' input %zu is %s; got %s", name(), index, scalar_type_name(t.scalar_type()),
                              scalar_type_name(type));
  bool same = sizes.size() == static_cast<size_t>(t.dim());
  for (size_t d = 0; same && d < sizes.size(); ++d) same = sizes[d] == t.sizes()[d];
  if (!same) {
    char want[96], got[96];
    size_t w = 0, g = 0;
    for (size_t d = 0; d < static_cast<size_t>(t.dim()) && w < sizeof(want) - 16; ++d)
      w += static_cast<size_t>(snprintf(want + w, sizeof(want) - w, d ? ", %d" : "%d", static_cast<int>(t.sizes()[d])));
    for (size_t d = 0; d < sizes.size() && g < sizeof(got) - 16; ++d)
      g += static_cast<size_t>(snprintf(got + g, sizeof(got) - g, d ? ", %d" : "%d", static_cast<int>(sizes[d])));
    want[w] = got[g] = '\0';
    EMBER_LOG(ERROR, "method '%s' input %zu has shape [%s]; got [%s]", name(), index, want, got);
    return Error::InvalidArgument;
  }
  EMBER_CHECK_OR_RETURN_ERROR(nbytes == t.nbytes(), InvalidArgument,
                              "method '%s' input %zu takes %zu bytes; got %zu", name(), index, t.nbytes(), nbytes);
  EMBER_CHECK_OR_RETURN_ERROR(t.mutable_data_ptr() != nullptr, NotSupported,
                              "method '%s' input %zu is not memory-planned; this runtime needs planned inputs", name(),
                              index);
  memcpy(t.mutable_data_ptr(), data, nbytes);
  return Error::Ok;
}

Error Method::execute() {
  size_t pc = 0;
  while (pc < num_instructions_) {
    const Instruction& ins = instructions_[pc];
    switch (static_cast<InstructionArguments>(ins.kind)) {
      case InstructionArguments::KernelCall: {
        KernelContext ctx(memory_->temp_allocator);
        ins.fn(ctx, ins.args);
        if (ctx.failure() != Error::Ok) {
          const char* overload;
          const char* op = op_name(plan_, ins.a, &overload);
          EMBER_LOG(ERROR, "method '%s' instruction %zu (%s%s%s) failed: %s", name(), pc, op, overload[0] ? "." : "",
                    overload, error_name(ctx.failure()));
          return ctx.failure();
        }
        if (memory_->temp_allocator != nullptr) memory_->temp_allocator->reset();
        ++pc;
        break;
      }
      case InstructionArguments::MoveCall:
        values_[ins.b] = values_[ins.a];
        ++pc;
        break;
      case InstructionArguments::JumpFalseCall:
        pc = values_[ins.a].as_bool() ? pc + 1 : ins.b;
        break;
      case InstructionArguments::FreeCall:
        values_[ins.a].as_mutable_tensor().impl()->set_data(nullptr);
        ++pc;
        break;
      default:
        return Error::InvalidProgram;  // unreachable: load() accepted only the kinds above
    }
  }
  return Error::Ok;
}

}  // namespace ember
