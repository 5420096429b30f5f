#include "runtime/executor/program_verifier.h"

#include <string.h>

#include "runtime/core/log.h"
#include "runtime/core/result.h"
#include "runtime/core/tensor.h"
#include "runtime/executor/plan_access.h"

namespace ember {

namespace {

namespace fb = ember_pte;
using fb::InstructionArguments;
using fb::KernelTypes;
using pte::at;
using pte::count;

using ull = unsigned long long;

// flatbuffers' verifier (2.0.8) checks a vector's length word for 4-byte alignment, not its elements for their own:
// a crafted file can put a [long] at a 4-byte boundary, and Get() then loads a misaligned int64 (undefined
// behaviour; a fault on cores without unaligned access). The builder aligns them, except an empty one (flatc puts
// `items: []` at a 4-byte boundary; a 0-d view's size list is one), which has no element to load.
template <typename V>
bool elements_aligned(const V* vector) {
  return vector == nullptr || vector->size() == 0 ||
         reinterpret_cast<uintptr_t>(vector->Data()) % alignof(int64_t) == 0;
}

// One message for all five vectors of 8-byte values, so the check costs a few bytes each.
Error misaligned(const char* where, const char* what, size_t index) {
  EMBER_LOG(ERROR, "%s: %s %zu: 8-byte values not 8-byte aligned in the file", where, what, index);
  return Error::InvalidProgram;
}

// The name of a kind (program.fbs's KernelTypes, at most MAX), for messages. One string walked to the name, not
// flatbuffers' EnumNamesKernelTypes: its table of pointers costs a relocation per kind in a position-independent
// runner, more bytes than the names themselves.
const char* kind_name(KernelTypes type) {
  static constexpr char kNames[] =
      "NONE\0Null\0Int\0Bool\0Double\0Tensor\0String\0IntList\0DoubleList\0BoolList\0TensorList\0OptionalTensorList";
  static_assert(KernelTypes::MAX == KernelTypes::OptionalTensorList, "a kind was added: name it above");
  const char* p = kNames;
  for (int k = static_cast<int>(type); k > 0; --k) p += strlen(p) + 1;
  return p;
}

// What a program holds that the plans point into.
struct ProgramExtents {
  const fb::Program* program;
  uint64_t segment_data_size;
  size_t num_segments;
  // Bytes of the constant segment; entries = its offset table's length (entry 0 is unused, as in ExecuTorch).
  uint64_t constant_bytes;
  size_t constant_entries;
};

class PlanVerifier {
 public:
  PlanVerifier(const ProgramExtents& program, const fb::ExecutionPlan* plan, size_t plan_index)
      : program_(program), plan_(plan), plan_index_(plan_index) {}

  Error run() {
    EMBER_CHECK_OR_RETURN_ERROR(plan_->name() != nullptr, InvalidProgram, "method %zu has no name", plan_index_);
    method_ = plan_->name()->c_str();
    EMBER_CHECK_OR_RETURN_ERROR(plan_->values() != nullptr, InvalidProgram, "method '%s' has no value table", method_);
    num_values_ = plan_->values()->size();
    EMBER_TRY(check_pools());
    for (size_t i = 0; i < num_values_; ++i) EMBER_TRY(check_value(i));
    EMBER_TRY(check_io(plan_->inputs(), "input", false));
    EMBER_TRY(check_io(plan_->outputs(), "output", true));
    for (size_t k = 0; k < count(plan_->operators()); ++k) {
      EMBER_CHECK_OR_RETURN_ERROR(at(plan_->operators(), k)->name() != nullptr, InvalidProgram,
                                  "method '%s': operator %zu has no name", method_, k);
    }
    EMBER_CHECK_OR_RETURN_ERROR(plan_->chains() != nullptr, InvalidProgram, "method '%s' has no chain table", method_);
    for (size_t c = 0; c < plan_->chains()->size(); ++c) EMBER_TRY(check_chain(c));
    return Error::Ok;
  }

 private:
  const fb::EValue* value(size_t i) const { return at(plan_->values(), i); }

  // `index` names a value whose type is `want` (NONE: any type).
  bool names(int64_t index, KernelTypes want) const {
    if (index < 0 || static_cast<uint64_t>(index) >= num_values_) return false;
    return want == KernelTypes::NONE || value(static_cast<size_t>(index))->val_type() == want;
  }

  Error check_pools() {
    const auto* sizes = plan_->non_const_buffer_sizes();
    if (!elements_aligned(sizes)) return misaligned(method_, "planned pool sizes", 0);
    for (size_t p = 1; p < count(sizes); ++p) {
      const int64_t bytes = at(sizes, p);
      EMBER_CHECK_OR_RETURN_ERROR(bytes >= 0, InvalidProgram, "method '%s': planned pool %zu has size %lld", method_, p,
                                  static_cast<long long>(bytes));
      EMBER_CHECK_OR_RETURN_ERROR(static_cast<uint64_t>(bytes) <= SIZE_MAX, NotSupported,
                                  "method '%s': planned pool %zu is %llu bytes, more than this target can address",
                                  method_, p, static_cast<ull>(bytes));
    }
    return Error::Ok;
  }

  Error check_value(size_t i) {
    const fb::EValue* v = value(i);
    const KernelTypes type = v->val_type();
    if (type == KernelTypes::NONE || type == KernelTypes::Null) return Error::Ok;
    EMBER_CHECK_OR_RETURN_ERROR(type <= KernelTypes::MAX, InvalidProgram, "method '%s': value %zu has unknown kind %d",
                                method_, i, static_cast<int>(type));
    EMBER_CHECK_OR_RETURN_ERROR(v->val() != nullptr, InvalidProgram,
                                "method '%s': value %zu is tagged %s but holds no %s table", method_, i,
                                kind_name(type), kind_name(type));
    switch (type) {
      case KernelTypes::Tensor: return check_tensor(i, v->val_as_Tensor());
      // Both hold one vector of 8-byte values (int64 value indices, or doubles copied out at load) in the same
      // field; one alignment check serves both (tools/fuzz.sh long found a misaligned [double] at cf3e79c).
      case KernelTypes::IntList:
      case KernelTypes::DoubleList: {
        static_assert(static_cast<int>(fb::IntList::VT_ITEMS) == static_cast<int>(fb::DoubleList::VT_ITEMS),
                      "IntList and DoubleList share a layout");
        const auto* items =
            static_cast<const flatbuffers::Table*>(v->val())->GetPointer<const flatbuffers::Vector<int64_t>*>(
                fb::IntList::VT_ITEMS);
        if (!elements_aligned(items)) return misaligned(method_, "list (value)", i);
        if (type == KernelTypes::DoubleList) return Error::Ok;
        for (size_t k = 0; k < count(items); ++k) {
          EMBER_CHECK_OR_RETURN_ERROR(names(at(items, k), KernelTypes::Int), InvalidProgram,
                                      "method '%s': int list %zu item %zu refers to value %lld, which is not an Int",
                                      method_, i, k, static_cast<long long>(at(items, k)));
        }
        return Error::Ok;
      }
      case KernelTypes::TensorList:
      case KernelTypes::OptionalTensorList: {
        const bool optional = type == KernelTypes::OptionalTensorList;
        const auto* items = optional ? v->val_as_OptionalTensorList()->items() : v->val_as_TensorList()->items();
        for (size_t k = 0; k < count(items); ++k) {
          const int32_t idx = at(items, k);
          if (optional && idx == -1) continue;  // None
          EMBER_CHECK_OR_RETURN_ERROR(names(idx, KernelTypes::Tensor), InvalidProgram,
                                      "method '%s': tensor list %zu item %zu refers to value %d, which is not a "
                                      "tensor",
                                      method_, i, k, static_cast<int>(idx));
        }
        return Error::Ok;
      }
      default: return Error::Ok;  // scalars, strings and bool lists: nothing to point at
    }
  }

  Error check_tensor(size_t i, const fb::Tensor* t) {
    const int type = static_cast<int>(t->scalar_type());
    EMBER_CHECK_OR_RETURN_ERROR(is_valid_scalar_type(type) && element_size(static_cast<ScalarType>(type)) > 0,
                                InvalidProgram, "method '%s': value %zu is a tensor of unsupported scalar type %d",
                                method_, i, type);
    const size_t dim = pte::tensor_dim(t);
    EMBER_CHECK_OR_RETURN_ERROR(dim <= static_cast<size_t>(kMaxTensorDim), NotSupported,
                                "method '%s': value %zu has %zu dimensions (at most %d)", method_, i, dim,
                                kMaxTensorDim);
    EMBER_CHECK_OR_RETURN_ERROR(count(t->dim_order()) == dim, InvalidProgram,
                                "method '%s': value %zu has %zu sizes but %zu dim order entries", method_, i, dim,
                                count(t->dim_order()));
    EMBER_CHECK_OR_RETURN_ERROR(t->storage_offset() == 0, NotSupported,
                                "method '%s': value %zu has storage offset %d; only 0 is supported", method_, i,
                                static_cast<int>(t->storage_offset()));
    Result<size_t> nbytes = checked_nbytes(static_cast<ScalarType>(type), pte::tensor_sizes(t));
    if (!nbytes.ok()) {
      EMBER_LOG(ERROR, "method '%s': value %zu has a negative size or more bytes than this target can address", method_,
                i);
      return Error::InvalidProgram;
    }
    // An external constant's bytes are in a data file, checked when a method loads (external_data.cc); its
    // data_buffer_idx is the exporter's own numbering, not an index into this program's constants.
    if (pte::is_external(t)) return Error::Ok;
    if (t->allocation_info() != nullptr) {
      const auto* a = t->allocation_info();
      const size_t pools = pte::num_pools(plan_);
      EMBER_CHECK_OR_RETURN_ERROR(a->memory_id() >= 1 && a->memory_id() <= pools, InvalidProgram,
                                  "method '%s': value %zu is planned in memory id %u; the method plans pools 1..%zu",
                                  method_, i, static_cast<unsigned>(a->memory_id()), pools);
      const uint64_t pool = static_cast<uint64_t>(at(plan_->non_const_buffer_sizes(), a->memory_id()));
      const uint64_t offset = pte::planned_offset(a);
      EMBER_CHECK_OR_RETURN_ERROR(offset <= pool && nbytes.get() <= pool - offset, InvalidProgram,
                                  "method '%s': value %zu (%zu bytes at offset %llu) does not fit memory id %u's "
                                  "%llu planned bytes",
                                  method_, i, nbytes.get(), static_cast<ull>(offset),
                                  static_cast<unsigned>(a->memory_id()), static_cast<ull>(pool));
      // Kernels read elements in place (pools are 16-byte aligned), so an element must start at a multiple of its
      // size: a float at an odd offset is undefined behaviour in C++ and a fault on cores without unaligned access.
      EMBER_CHECK_OR_RETURN_ERROR(offset % element_size(static_cast<ScalarType>(type)) == 0, InvalidProgram,
                                  "method '%s': value %zu is planned at offset %llu of memory id %u, not a multiple "
                                  "of its %zu-byte elements",
                                  method_, i, static_cast<ull>(offset), static_cast<unsigned>(a->memory_id()),
                                  element_size(static_cast<ScalarType>(type)));
      if (t->data_buffer_idx() > 0) EMBER_TRY(check_initial_value(i, t, nbytes.get()));
    } else if (t->data_buffer_idx() > 0) {
      const uint32_t idx = t->data_buffer_idx();
      EMBER_CHECK_OR_RETURN_ERROR(idx < program_.constant_entries, InvalidProgram,
                                  "method '%s': value %zu uses constant %u, but the constant segment has %zu entries%s",
                                  method_, i, static_cast<unsigned>(idx),
                                  program_.constant_entries ? program_.constant_entries - 1 : 0,
                                  count(program_.program->constant_buffer()) > 1
                                      ? " (constants inline in constant_buffer, the pre-segment layout, are not "
                                        "supported: re-export the program)"
                                      : "");
      const uint64_t offset = at(program_.program->constant_segment()->offsets(), idx);
      EMBER_CHECK_OR_RETURN_ERROR(offset <= program_.constant_bytes && nbytes.get() <= program_.constant_bytes - offset,
                                  InvalidProgram,
                                  "method '%s': value %zu needs bytes [%llu, +%zu) of a %llu-byte constant segment",
                                  method_, i, static_cast<ull>(offset), nbytes.get(),
                                  static_cast<ull>(program_.constant_bytes));
      EMBER_CHECK_OR_RETURN_ERROR(offset % element_size(static_cast<ScalarType>(type)) == 0, InvalidProgram,
                                  "method '%s': value %zu's constant starts at byte %llu of the constant segment, not "
                                  "a multiple of its %zu-byte elements",
                                  method_, i, static_cast<ull>(offset), element_size(static_cast<ScalarType>(type)));
    }
    return Error::Ok;
  }

  Error check_initial_value(size_t i, const fb::Tensor* t, size_t nbytes) {
    const auto* lists = program_.program->mutable_data_segments();
    const uint64_t list_index = t->extra_tensor_info() ? t->extra_tensor_info()->mutable_data_segments_idx() : 0;
    EMBER_CHECK_OR_RETURN_ERROR(list_index < count(lists), InvalidProgram,
                                "method '%s': value %zu's initial value is in list %llu, but the program has %zu",
                                method_, i, static_cast<ull>(list_index), count(lists));
    const auto* list = at(lists, static_cast<size_t>(list_index));
    const uint32_t idx = t->data_buffer_idx();
    EMBER_CHECK_OR_RETURN_ERROR(idx < count(list->offsets()), InvalidProgram,
                                "method '%s': value %zu's initial value %u does not exist (%zu entries)", method_, i,
                                static_cast<unsigned>(idx), count(list->offsets()) ? count(list->offsets()) - 1 : 0);
    EMBER_CHECK_OR_RETURN_ERROR(list->segment_index() < program_.num_segments, InvalidProgram,
                                "method '%s': value %zu's initial values point at segment %u, which does not exist",
                                method_, i, static_cast<unsigned>(list->segment_index()));
    const uint64_t size = at(program_.program->segments(), list->segment_index())->size();
    const uint64_t offset = at(list->offsets(), idx);
    EMBER_CHECK_OR_RETURN_ERROR(offset <= size && nbytes <= size - offset, InvalidProgram,
                                "method '%s': value %zu's initial value needs bytes [%llu, +%zu) of a %llu-byte "
                                "segment",
                                method_, i, static_cast<ull>(offset), nbytes, static_cast<ull>(size));
    return Error::Ok;
  }

  // Inputs are tensors; outputs may also be scalars (`scalars`): a constant method's values, a computed size.
  Error check_io(const flatbuffers::Vector<int32_t>* io, const char* what, bool scalars) {
    for (size_t k = 0; k < count(io); ++k) {
      const int64_t v = at(io, k);
      const bool ok =
          names(v, KernelTypes::Tensor) ||
          (scalars && (names(v, KernelTypes::Int) || names(v, KernelTypes::Double) || names(v, KernelTypes::Bool)));
      EMBER_CHECK_OR_RETURN_ERROR(ok, NotSupported, "method '%s': %s %zu is value %d, which is not a tensor%s", method_,
                                  what, k, static_cast<int>(v), scalars ? ", int, double or bool" : "");
    }
    return Error::Ok;
  }

  Error check_args(const flatbuffers::Vector<int32_t>* args, size_t chain, size_t pc) {
    for (size_t k = 0; k < count(args); ++k) {
      EMBER_CHECK_OR_RETURN_ERROR(names(at(args, k), KernelTypes::NONE), InvalidProgram,
                                  "method '%s' chain %zu instruction %zu: argument %zu is value %d, out of range (%zu "
                                  "values)",
                                  method_, chain, pc, k, static_cast<int>(at(args, k)), num_values_);
    }
    return Error::Ok;
  }

  Error check_chain(size_t c) {
    const auto* instrs = at(plan_->chains(), c)->instructions();
    const size_t n = count(instrs);
    for (size_t pc = 0; pc < n; ++pc) {
      const fb::Instruction* ins = at(instrs, pc);
      const InstructionArguments kind = ins->instr_args_type();
      EMBER_CHECK_OR_RETURN_ERROR(kind != InstructionArguments::NONE && kind <= InstructionArguments::MAX &&
                                      ins->instr_args() != nullptr,
                                  InvalidProgram, "method '%s' chain %zu instruction %zu: no arguments for kind %d",
                                  method_, c, pc, static_cast<int>(kind));
      switch (kind) {
        case InstructionArguments::KernelCall: {
          const auto* call = ins->instr_args_as_KernelCall();
          EMBER_CHECK_OR_RETURN_ERROR(call->op_index() >= 0 &&
                                          static_cast<size_t>(call->op_index()) < count(plan_->operators()),
                                      InvalidProgram,
                                      "method '%s' chain %zu instruction %zu: operator index %d out of range (%zu "
                                      "operators)",
                                      method_, c, pc, static_cast<int>(call->op_index()), count(plan_->operators()));
          EMBER_TRY(check_args(call->args(), c, pc));
          break;
        }
        case InstructionArguments::DelegateCall: {
          const auto* call = ins->instr_args_as_DelegateCall();
          EMBER_CHECK_OR_RETURN_ERROR(call->delegate_index() >= 0 &&
                                          static_cast<size_t>(call->delegate_index()) < count(plan_->delegates()),
                                      InvalidProgram,
                                      "method '%s' chain %zu instruction %zu: delegate index %d out of range (%zu "
                                      "delegates)",
                                      method_, c, pc, static_cast<int>(call->delegate_index()),
                                      count(plan_->delegates()));
          EMBER_TRY(check_args(call->args(), c, pc));
          break;
        }
        case InstructionArguments::MoveCall: {
          const auto* mv = ins->instr_args_as_MoveCall();
          EMBER_CHECK_OR_RETURN_ERROR(names(mv->move_from(), KernelTypes::NONE) &&
                                          names(mv->move_to(), KernelTypes::NONE),
                                      InvalidProgram,
                                      "method '%s' chain %zu instruction %zu: move %d -> %d out of "
                                      "range (%zu values)",
                                      method_, c, pc, static_cast<int>(mv->move_from()),
                                      static_cast<int>(mv->move_to()), num_values_);
          // A move replaces a value whole: of another kind, a kernel checked at load against the old kind would
          // read the new one as the old (program_fuzz: an Int moved over an IntList, then read as its items).
          EMBER_CHECK_OR_RETURN_ERROR(value(static_cast<size_t>(mv->move_from()))->val_type() ==
                                          value(static_cast<size_t>(mv->move_to()))->val_type(),
                                      InvalidProgram,
                                      "method '%s' chain %zu instruction %zu: move %d -> %d between "
                                      "values of different kinds",
                                      method_, c, pc, static_cast<int>(mv->move_from()),
                                      static_cast<int>(mv->move_to()));
          break;
        }
        case InstructionArguments::JumpFalseCall: {
          const auto* jf = ins->instr_args_as_JumpFalseCall();
          // A Bool, or a tensor (torch.cond's predicate is a one-element Bool tensor; its dtype is checked when
          // the method loads, its size when the jump runs).
          EMBER_CHECK_OR_RETURN_ERROR(names(jf->cond_value_index(), KernelTypes::Bool) ||
                                          names(jf->cond_value_index(), KernelTypes::Tensor),
                                      InvalidProgram,
                                      "method '%s' chain %zu instruction %zu: jump condition %d is neither a Bool "
                                      "nor a tensor",
                                      method_, c, pc, static_cast<int>(jf->cond_value_index()));
          EMBER_CHECK_OR_RETURN_ERROR(jf->destination_instruction() >= 0 &&
                                          static_cast<size_t>(jf->destination_instruction()) <= n,
                                      InvalidProgram,
                                      "method '%s' chain %zu instruction %zu: jump to %d, outside the "
                                      "chain's %zu instructions",
                                      method_, c, pc, static_cast<int>(jf->destination_instruction()), n);
          break;
        }
        case InstructionArguments::FreeCall: {
          const int32_t idx = ins->instr_args_as_FreeCall()->value_index();
          EMBER_CHECK_OR_RETURN_ERROR(names(idx, KernelTypes::Tensor), InvalidProgram,
                                      "method '%s' chain %zu instruction %zu: free of value %d, not a tensor", method_,
                                      c, pc, static_cast<int>(idx));
          break;
        }
        default: break;  // unreachable: NONE and unknown kinds were refused above
      }
    }
    return Error::Ok;
  }

  const ProgramExtents& program_;
  const fb::ExecutionPlan* plan_;
  size_t plan_index_;
  const char* method_ = "?";
  size_t num_values_ = 0;
};

Error check_segments(const fb::Program* program, uint64_t segment_data_size, ProgramExtents* extents) {
  const auto* segments = program->segments();
  for (size_t i = 0; i < count(segments); ++i) {
    const auto* s = at(segments, i);
    EMBER_CHECK_OR_RETURN_ERROR(s->offset() <= segment_data_size && s->size() <= segment_data_size - s->offset(),
                                InvalidProgram, "segment %zu [%llu, +%llu) lies outside the %llu bytes of segment data",
                                i, static_cast<ull>(s->offset()), static_cast<ull>(s->size()),
                                static_cast<ull>(segment_data_size));
  }
  *extents = ProgramExtents{program, segment_data_size, count(segments), 0, 0};
  const auto* cs = program->constant_segment();
  if (cs != nullptr && !elements_aligned(cs->offsets())) return misaligned("program", "constant offsets", 0);
  const auto* lists = program->mutable_data_segments();
  for (size_t i = 0; i < count(lists); ++i) {
    if (!elements_aligned(at(lists, i)->offsets())) return misaligned("program", "initial-value offsets (list)", i);
  }
  if (cs != nullptr && count(cs->offsets()) > 1) {
    EMBER_CHECK_OR_RETURN_ERROR(cs->segment_index() < count(segments), InvalidProgram,
                                "constant segment index %u, but the program has %zu segments",
                                static_cast<unsigned>(cs->segment_index()), count(segments));
    extents->constant_bytes = at(segments, cs->segment_index())->size();
    extents->constant_entries = count(cs->offsets());
  }
  return Error::Ok;
}

}  // namespace

Error verify_program_structure(const fb::Program* program, uint64_t segment_data_size) {
  ProgramExtents extents;
  EMBER_TRY(check_segments(program, segment_data_size, &extents));
  const auto* plans = program->execution_plan();
  EMBER_CHECK_OR_RETURN_ERROR(count(plans) > 0, InvalidProgram, "the program has no methods");
  for (size_t p = 0; p < plans->size(); ++p) EMBER_TRY(PlanVerifier(extents, at(plans, p), p).run());
  return Error::Ok;
}

}  // namespace ember
