#include "backends/ember_portable/runtime/ember_portable.h"

#include <new>
#include <string.h>

#include "runtime/core/buffer_data_loader.h"
#include "runtime/core/hierarchical_allocator.h"
#include "runtime/core/log.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"

namespace ember {
namespace ember_portable {

namespace {

constexpr size_t kAlign = 16;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Everything one delegate keeps, in the method allocator. The sub-program reads its flatbuffer in place, so the
// blob stays (keeps_processed).
struct Delegate {
  BufferDataLoader loader;
  Program program;
  Method method;
  HierarchicalAllocator planned;
  MemoryAllocator method_allocator;
  MemoryAllocator temp;
  MemoryManager memory;
};

// What the sub-program needs, read from its MethodMeta: what init takes, in 16-byte units.
struct Needs {
  size_t pools;        // number of planned pools
  size_t pool_bytes;   // their sizes, each rounded up
  size_t bookkeeping;  // the sub-method's method allocator
  size_t scratch;      // its kernels' scratch
  size_t total() const {
    return round_up(sizeof(Delegate)) + round_up(pools * sizeof(Span<uint8_t>)) + pool_bytes + round_up(bookkeeping) +
           round_up(scratch);
  }
};

Result<Needs> needs_of(const Program& program, const char** method_name) {
  EMBER_CHECK_OR_RETURN_ERROR(program.num_methods() == 1, DelegateInvalidCompatibility,
                              "EmberPortable: the blob holds %zu methods; it must hold exactly one",
                              program.num_methods());
  EMBER_TRY_ASSIGN(name, program.get_method_name(0));
  *method_name = name;
  EMBER_TRY_ASSIGN(meta, program.method_meta(name));
  Needs n{meta.num_memory_planned_buffers(), 0, meta.method_allocator_bytes(), meta.scratch_bytes()};
  for (size_t p = 0; p < n.pools; ++p) {
    EMBER_TRY_ASSIGN(bytes, meta.memory_planned_buffer_size(p));
    n.pool_bytes += round_up(bytes);
  }
  return n;
}

Result<size_t> init_bytes(const void* processed, size_t nbytes, ArrayRef<CompileSpec>) {
  BufferDataLoader loader(processed, nbytes);
  EMBER_TRY_ASSIGN(program, Program::load(&loader));
  const char* name = nullptr;
  EMBER_TRY_ASSIGN(needs, needs_of(program, &name));
  return needs.total();
}

void* take(MemoryAllocator* a, size_t bytes, const char* what, const char* method, uint32_t index) {
  void* p = a->allocate(round_up(bytes), kAlign);
  if (p == nullptr) {
    EMBER_LOG(ERROR,
              "method '%s' delegate %u (EmberPortable): no room for %zu bytes of %s (%zu free in the method "
              "allocator)",
              method, static_cast<unsigned>(index), round_up(bytes), what, a->free_bytes());
  }
  return p;
}

Result<void*> init(BackendInitContext& ctx, const FreeableBuffer& processed, ArrayRef<CompileSpec>) {
  MemoryAllocator* a = ctx.allocator;
  void* self = take(a, sizeof(Delegate), "delegate state", ctx.method, ctx.delegate_index);
  if (self == nullptr) return Error::MemoryAllocationFailed;
  // Built in place piece by piece: Program and Method come out of Results and have no default state.
  Delegate* d = static_cast<Delegate*>(self);
  new (&d->loader) BufferDataLoader(processed.data(), processed.size());
  Result<Program> program = Program::load(&d->loader);
  if (!program.ok()) return Error::DelegateInvalidCompatibility;
  new (&d->program) Program(static_cast<Program&&>(program.get()));
  const char* name = nullptr;
  Result<Needs> needs = needs_of(d->program, &name);
  if (!needs.ok()) return needs.error();
  const Needs n = needs.get();
  Span<uint8_t>* pools = static_cast<Span<uint8_t>*>(
      take(a, n.pools * sizeof(Span<uint8_t>), "pool table", ctx.method, ctx.delegate_index));
  if (pools == nullptr) return Error::MemoryAllocationFailed;
  EMBER_TRY_ASSIGN(meta, d->program.method_meta(name));
  for (size_t p = 0; p < n.pools; ++p) {
    EMBER_TRY_ASSIGN(bytes, meta.memory_planned_buffer_size(p));
    void* pool = take(a, bytes, "planned pool", ctx.method, ctx.delegate_index);
    if (pool == nullptr) return Error::MemoryAllocationFailed;
    pools[p] = Span<uint8_t>(static_cast<uint8_t*>(pool), bytes);
  }
  void* bookkeeping = take(a, n.bookkeeping, "sub-method bookkeeping", ctx.method, ctx.delegate_index);
  void* scratch = n.scratch ? take(a, n.scratch, "kernel scratch", ctx.method, ctx.delegate_index) : a;
  if (bookkeeping == nullptr || scratch == nullptr) return Error::MemoryAllocationFailed;
  new (&d->planned) HierarchicalAllocator(Span<Span<uint8_t>>(pools, n.pools));
  new (&d->method_allocator) MemoryAllocator(bookkeeping, round_up(n.bookkeeping));
  new (&d->temp) MemoryAllocator(n.scratch ? scratch : nullptr, n.scratch ? round_up(n.scratch) : 0);
  d->memory = MemoryManager{&d->method_allocator, &d->planned, &d->temp};
  Result<Method> method = d->program.load_method(name, &d->memory);
  if (!method.ok()) {
    EMBER_LOG(ERROR, "method '%s' delegate %u (EmberPortable): its sub-program's method '%s' did not load", ctx.method,
              static_cast<unsigned>(ctx.delegate_index), name);
    d->program.~Program();
    return method.error();
  }
  new (&d->method) Method(static_cast<Method&&>(method.get()));
  return self;
}

// args: the sub-method's inputs, then its outputs. Inputs are copied in (checked for dtype and shape by
// set_input), outputs copied out, each checked for dtype and byte count.
Error execute(void* handle, EValue** args, size_t num_args) {
  Delegate* d = static_cast<Delegate*>(handle);
  Method& m = d->method;
  const size_t nin = m.num_inputs(), nout = m.num_outputs();
  EMBER_CHECK_OR_RETURN_ERROR(num_args == nin + nout, InvalidProgram,
                              "EmberPortable: the call passes %zu values; the sub-program takes %zu inputs and %zu "
                              "outputs",
                              num_args, nin, nout);
  for (size_t i = 0; i < num_args; ++i) {
    EMBER_CHECK_OR_RETURN_ERROR(args[i]->is_tensor(), InvalidProgram,
                                "EmberPortable: argument %zu is a %s; the sub-program's inputs and outputs are tensors",
                                i, tag_name(args[i]->tag()));
  }
  for (size_t i = 0; i < nin; ++i) {
    const Tensor& t = args[i]->as_tensor();
    EMBER_TRY(m.set_input(i, t.scalar_type(), t.sizes(), t.const_data_ptr(), t.nbytes()));
  }
  EMBER_TRY(m.execute());
  for (size_t j = 0; j < nout; ++j) {
    EMBER_TRY_ASSIGN(src, m.output(j));
    Tensor& dst = args[nin + j]->as_mutable_tensor();
    EMBER_CHECK_OR_RETURN_ERROR(src.scalar_type() == dst.scalar_type(), InvalidProgram,
                                "EmberPortable: output %zu is %s in the sub-program and %s in the method", j,
                                scalar_type_name(src.scalar_type()), scalar_type_name(dst.scalar_type()));
    if (dst.impl()->shape_dynamism() != ShapeDynamism::Static) EMBER_TRY(dst.impl()->resize(src.sizes()));
    EMBER_CHECK_OR_RETURN_ERROR(src.nbytes() == dst.nbytes(), InvalidProgram,
                                "EmberPortable: output %zu is %zu bytes in the sub-program and %zu in the method", j,
                                src.nbytes(), dst.nbytes());
    memcpy(dst.mutable_data_ptr(), src.const_data_ptr(), src.nbytes());
  }
  return Error::Ok;
}

void destroy(void* handle) {
  Delegate* d = static_cast<Delegate*>(handle);
  d->method.~Method();  // its own delegates, if the sub-program has any
  d->program.~Program();
}

bool is_available() { return true; }

}  // namespace

const Backend kBackend = {"EmberPortable", &is_available, &init, &execute, &destroy, &init_bytes, true};

}  // namespace ember_portable
}  // namespace ember
