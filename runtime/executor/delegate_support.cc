#include "runtime/executor/delegate_support.h"

#include <new>
#include <string.h>

#include "runtime/backend/backend.h"
#include "runtime/core/log.h"
#include "runtime/executor/plan_access.h"
#include "runtime/executor/program.h"

namespace ember {

namespace fb = ember_pte;
using pte::at;
using pte::count;

// Defined here, not in program.cc, so a runner without delegates links none of it (its strings included).
Result<FreeableBuffer> Program::load_segment(uint32_t index, SegmentInfo::Type type) const {
  EMBER_CHECK_OR_RETURN_ERROR(index < pte::count(program_->segments()), InvalidArgument,
                              "segment %u out of range (%zu segments)", static_cast<unsigned>(index),
                              pte::count(program_->segments()));
  const auto* seg = pte::at(program_->segments(), index);
  return loader_->load(segment_base_ + seg->offset(), seg->size(), SegmentInfo{type, index});
}

// Also here: only backends look data up by name. A linear scan: a program names tens of entries (ExecuTorch's
// XNNPACK ResNet18: 62), looked up once each at load.
Result<FreeableBuffer> Program::load_named_data(const char* key) const {
  const auto* entries = program_->named_data();
  for (size_t i = 0; i < pte::count(entries); ++i) {
    const auto* e = pte::at(entries, i);
    if (e == nullptr || e->key() == nullptr || strcmp(e->key()->c_str(), key) != 0) continue;
    EMBER_CHECK_OR_RETURN_ERROR(e->segment_index() < pte::count(program_->segments()), InvalidProgram,
                                "named data '%s' is segment %u, out of range (%zu segments)", key,
                                static_cast<unsigned>(e->segment_index()), pte::count(program_->segments()));
    return load_segment(e->segment_index(), SegmentInfo::Type::External);
  }
  EMBER_LOG(ERROR, "named data '%s' is not in the program (%zu entries)", key, pte::count(entries));
  return Error::NotFound;
}

namespace {

Result<FreeableBuffer> load_named(const void* program, const char* key) {
  return static_cast<const Program*>(program)->load_named_data(key);
}

}  // namespace

// One delegate of a plan, initialized on the first call that names it.
struct DelegateRecord {
  const Backend* backend;
  void* handle;
  FreeableBuffer processed;  // held only when the backend keeps_processed
  const char* method;
  uint32_t index;
  bool initialized;
};

namespace {

// A delegate call's state, what the KernelCall-shaped instruction passes to run_delegate.
struct DelegateCallState {
  DelegateRecord* record;
  uint32_t num_args;
};

// The instruction's function: delegate calls run through the execute loop's kernel path, so a program without
// delegates pays nothing in the loop.
void run_delegate(KernelContext& ctx, EValue** args) {
  const DelegateCallState* s = ctx.state<DelegateCallState>();
  const DelegateRecord* r = s->record;
  const Error e = r->backend->execute(r->handle, args, s->num_args);
  if (e != Error::Ok) {
    EMBER_LOG(ERROR, "method '%s' delegate %u (backend '%s') failed: %s", r->method, static_cast<unsigned>(r->index),
              r->backend->id, error_name(e));
    ctx.fail(e);
  }
}

void destroy_delegates(DelegateState* state) {
  for (size_t i = 0; i < state->count; ++i) {
    DelegateRecord& r = state->records[i];
    if (r.initialized && r.backend->destroy != nullptr) r.backend->destroy(r.handle);
    r.processed.~FreeableBuffer();
  }
  state->count = 0;
}

// Every field of delegate `index` the runtime reads, checked before use; `specs` gets the compile specs' views.
Error check_delegate(const DelegateLoad& load, uint32_t index, const fb::BackendDelegate* d, CompileSpec* specs) {
  const char* m = load.method;
  EMBER_CHECK_OR_RETURN_ERROR(d != nullptr && d->id() != nullptr && d->id()->size() > 0, InvalidProgram,
                              "method '%s' delegate %u has no backend id", m, static_cast<unsigned>(index));
  const char* id = d->id()->c_str();
  const auto* ref = d->processed();
  EMBER_CHECK_OR_RETURN_ERROR(ref != nullptr, InvalidProgram,
                              "method '%s' delegate %u (backend '%s') has no processed data reference", m,
                              static_cast<unsigned>(index), id);
  const fb::Program* program = load.program->flatbuffer();
  switch (ref->location()) {
    case fb::DataLocation::INLINE: {
      const auto* inline_data = program->backend_delegate_data();
      EMBER_CHECK_OR_RETURN_ERROR(ref->index() < count(inline_data), InvalidProgram,
                                  "method '%s' delegate %u (backend '%s'): inline data %u out of range (%zu entries)",
                                  m, static_cast<unsigned>(index), id, static_cast<unsigned>(ref->index()),
                                  count(inline_data));
      EMBER_CHECK_OR_RETURN_ERROR(at(inline_data, ref->index())->data() != nullptr, InvalidProgram,
                                  "method '%s' delegate %u (backend '%s'): inline data %u has no bytes", m,
                                  static_cast<unsigned>(index), id, static_cast<unsigned>(ref->index()));
      break;
    }
    case fb::DataLocation::SEGMENT:
      // The segment's byte range was checked against the file when the program loaded (program_verifier.cc).
      EMBER_CHECK_OR_RETURN_ERROR(ref->index() < count(program->segments()), InvalidProgram,
                                  "method '%s' delegate %u (backend '%s'): segment %u out of range (%zu segments)", m,
                                  static_cast<unsigned>(index), id, static_cast<unsigned>(ref->index()),
                                  count(program->segments()));
      break;
    default:
      EMBER_LOG(ERROR, "method '%s' delegate %u (backend '%s'): unknown data location %d", m,
                static_cast<unsigned>(index), id, static_cast<int>(ref->location()));
      return Error::InvalidProgram;
  }
  const auto* cs = d->compile_specs();
  for (size_t k = 0; k < count(cs); ++k) {
    const fb::CompileSpec* spec = at(cs, k);
    EMBER_CHECK_OR_RETURN_ERROR(spec != nullptr && spec->key() != nullptr, InvalidProgram,
                                "method '%s' delegate %u (backend '%s'): compile spec %zu has no key", m,
                                static_cast<unsigned>(index), id, k);
    specs[k] = CompileSpec{spec->key()->c_str(), spec->value() != nullptr ? spec->value()->data() : nullptr,
                           count(spec->value())};
  }
  return Error::Ok;
}

Error init_delegate(const DelegateLoad& load, uint32_t index, DelegateRecord* r) {
  MemoryAllocator* allocator = load.memory->method_allocator;
  const fb::BackendDelegate* d = at(load.plan->delegates(), index);
  const size_t num_specs = count(d != nullptr ? d->compile_specs() : nullptr);
  // The spec views live as long as the method: a backend may keep them.
  CompileSpec* specs = allocator->allocate_list<CompileSpec>(num_specs);
  EMBER_CHECK_OR_RETURN_ERROR(num_specs == 0 || specs != nullptr, MemoryAllocationFailed,
                              "method '%s' delegate %u: no room for %zu compile specs in the method allocator",
                              load.method, static_cast<unsigned>(index), num_specs);
  EMBER_TRY(check_delegate(load, index, d, specs));
  const char* id = d->id()->c_str();
  const Backend* backend = find_backend(id);
  if (backend == nullptr) {
    EMBER_LOG(ERROR, "method '%s' delegate %u: backend '%s' is not in this build (%zu backends registered)",
              load.method, static_cast<unsigned>(index), id, registered_backends().size());
    return Error::NotFound;
  }
  EMBER_CHECK_OR_RETURN_ERROR(backend->is_available == nullptr || backend->is_available(), NotSupported,
                              "method '%s' delegate %u: backend '%s' is not available on this device", load.method,
                              static_cast<unsigned>(index), id);
  const auto* ref = d->processed();
  FreeableBuffer blob;
  if (ref->location() == fb::DataLocation::INLINE) {
    const auto* data = at(load.program->flatbuffer()->backend_delegate_data(), ref->index())->data();
    blob = FreeableBuffer(data->data(), data->size());
  } else {
    EMBER_TRY_ASSIGN(loaded, load.program->load_segment(ref->index(), SegmentInfo::Type::Backend));
    blob = static_cast<FreeableBuffer&&>(loaded);
  }
  const NamedDataMap named{load.program, &load_named};
  BackendInitContext context{allocator, load.method, index,
                             pte::count(load.program->flatbuffer()->named_data()) > 0 ? &named : nullptr,
                             load.memory->threads > 1 ? load.memory->threads : 1};
  Result<void*> handle = backend->init(context, blob, ArrayRef<CompileSpec>(specs, num_specs));
  if (!handle.ok()) {
    EMBER_LOG(ERROR, "method '%s' delegate %u: backend '%s' refused its %zu-byte blob: %s", load.method,
              static_cast<unsigned>(index), id, blob.size(), error_name(handle.error()));
    return handle.error();
  }
  r->backend = backend;
  r->handle = handle.get();
  r->initialized = true;
  // A segment read for init only is given back now (an mmapped or heap-loaded blob can be megabytes).
  if (backend->keeps_processed) {
    r->processed = static_cast<FreeableBuffer&&>(blob);
  } else {
    blob.free();
  }
  return Error::Ok;
}

Error load_call(DelegateLoad& load, size_t pc, const fb::DelegateCall* call, Method::Instruction* out) {
  const size_t n = count(load.plan->delegates());
  MemoryAllocator* allocator = load.memory->method_allocator;
  if (load.state == nullptr) {
    DelegateState* state = allocator->allocate_instance<DelegateState>();
    DelegateRecord* records = allocator->allocate_list<DelegateRecord>(n);
    EMBER_CHECK_OR_RETURN_ERROR(state != nullptr && records != nullptr, MemoryAllocationFailed,
                                "method '%s': no room for %zu delegate records in the method allocator", load.method,
                                n);
    for (size_t i = 0; i < n; ++i) {
      DelegateRecord* r = new (&records[i]) DelegateRecord();
      r->method = load.method;
      r->index = static_cast<uint32_t>(i);
    }
    *state = DelegateState{&destroy_delegates, records, n};
    load.state = state;
  }
  // delegate_index was range-checked by the structural verifier, and so were the call's value indices.
  const uint32_t index = static_cast<uint32_t>(call->delegate_index());
  DelegateRecord* r = &load.state->records[index];
  if (!r->initialized) EMBER_TRY(init_delegate(load, index, r));
  const size_t nargs = count(call->args());
  EValue** args = allocator->allocate_list<EValue*>(nargs);
  DelegateCallState* s = allocator->allocate_instance<DelegateCallState>();
  EMBER_CHECK_OR_RETURN_ERROR((nargs == 0 || args != nullptr) && s != nullptr, MemoryAllocationFailed,
                              "method '%s' instruction %zu: no room for the delegate call's %zu arguments", load.method,
                              pc, nargs);
  for (size_t k = 0; k < nargs; ++k) args[k] = &load.values[at(call->args(), k)];
  *s = DelegateCallState{r, static_cast<uint32_t>(nargs)};
  out->kind = static_cast<uint8_t>(fb::InstructionArguments::KernelCall);
  out->kernel = Method::Instruction::Kernel{&run_delegate, args, s, static_cast<uint32_t>(nargs), UINT32_MAX};
  return Error::Ok;
}

// What init_delegate and load_call allocate, in their order, over a counting allocator (as
// Method::bookkeeping_bytes does for the core): the records on the first call, then per call the delegate's compile
// specs and backend state on its first use, the call's arguments and its state.
Result<size_t> method_bytes(const Program* program, const fb::ExecutionPlan* plan) {
  const size_t n = count(plan->delegates());
  if (n == 0) return static_cast<size_t>(0);
  MemoryAllocator counter(reinterpret_cast<void*>(uintptr_t{16}), SIZE_MAX - 16);
  const char* method = plan->name()->c_str();
  bool first = true;
  uint64_t seen_lo = 0;  // delegates counted so far: a bit each for the first 64, then a linear scan
  const auto* instrs = pte::instructions(plan);
  for (size_t pc = 0; pc < count(instrs); ++pc) {
    const fb::Instruction* ins = at(instrs, pc);
    if (ins->instr_args_type() != fb::InstructionArguments::DelegateCall) continue;
    const fb::DelegateCall* call = ins->instr_args_as_DelegateCall();
    if (first) {
      counter.allocate_instance<DelegateState>();
      counter.allocate_list<DelegateRecord>(n);
      first = false;
    }
    const uint32_t index = static_cast<uint32_t>(call->delegate_index());
    bool counted = index < 64 ? ((seen_lo >> index) & 1u) != 0 : false;
    for (size_t q = 0; !counted && index >= 64 && q < pc; ++q) {
      const fb::Instruction* earlier = at(instrs, q);
      counted = earlier->instr_args_type() == fb::InstructionArguments::DelegateCall &&
                static_cast<uint32_t>(earlier->instr_args_as_DelegateCall()->delegate_index()) == index;
    }
    if (!counted) {
      if (index < 64) seen_lo |= uint64_t{1} << index;
      const fb::BackendDelegate* d = at(plan->delegates(), index);
      const size_t num_specs = count(d != nullptr ? d->compile_specs() : nullptr);
      CompileSpec specs_storage[8];
      CompileSpec* specs = counter.allocate_list<CompileSpec>(num_specs);
      (void)specs;
      // The spec views are only needed for init_bytes; more than eight are passed as none.
      DelegateLoad load{program, plan, nullptr, method, nullptr, nullptr};
      CompileSpec* views = num_specs <= 8 ? specs_storage : nullptr;
      if (views != nullptr) {
        EMBER_TRY(check_delegate(load, index, d, views));
      }
      const char* id = d->id()->c_str();
      const Backend* backend = find_backend(id);
      if (backend == nullptr || backend->init_bytes == nullptr) {
        EMBER_LOG(INFO, "method '%s' delegate %u: backend '%s' %s; MethodMeta leaves its state out", method,
                  static_cast<unsigned>(index), id,
                  backend == nullptr ? "is not in this build" : "cannot say how much memory its init takes");
      } else {
        const auto* ref = d->processed();
        FreeableBuffer blob;
        if (ref->location() == fb::DataLocation::INLINE) {
          const auto* data = at(program->flatbuffer()->backend_delegate_data(), ref->index())->data();
          blob = FreeableBuffer(data->data(), data->size());
        } else {
          EMBER_TRY_ASSIGN(loaded, program->load_segment(ref->index(), SegmentInfo::Type::Backend));
          blob = static_cast<FreeableBuffer&&>(loaded);
        }
        Result<size_t> sized =
            backend->init_bytes(blob.data(), blob.size(), ArrayRef<CompileSpec>(views, views ? num_specs : 0));
        if (!sized.ok()) {
          EMBER_LOG(ERROR, "method '%s' delegate %u: backend '%s' refused its %zu-byte blob: %s", method,
                    static_cast<unsigned>(index), id, blob.size(), error_name(sized.error()));
          return sized.error();
        }
        const size_t bytes = sized.get();
        // Backends count from a 16-byte boundary; the padding to reach it is at most 15 bytes.
        counter.allocate(bytes + 15, 1);
      }
    }
    counter.allocate_list<EValue*>(count(call->args()));
    counter.allocate_instance<DelegateCallState>();
  }
  return counter.used_bytes();
}

}  // namespace

Result<MethodMeta> delegates_method_meta(const Program* program, const fb::ExecutionPlan* plan) {
  EMBER_TRY_ASSIGN(meta, MethodMeta::make(plan));
  EMBER_TRY_ASSIGN(extra, method_bytes(program, plan));
  meta.method_allocator_bytes_ += extra;
  return meta;
}

const DelegateSupport kDelegateSupport = {&load_call, &delegates_method_meta};

}  // namespace ember
