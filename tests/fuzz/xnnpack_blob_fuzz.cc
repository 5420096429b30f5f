// Fuzz target: an XnnpackBackend delegate blob (XH00 header, XN01 graph, constant data) from untrusted bytes, through
// the backend's interface on Debian's XNNPACK. The input is the blob, exactly (an exact-size, 16-byte-aligned copy,
// so a read past its end is an AddressSanitizer report). Weights kept as the program's named data come from one
// small fixed buffer whatever their key (keys starting with 'z' are missing), so a constant larger than it, or an
// absent one, is refused by name. init_bytes first; when it accepts, init into an arena of exactly that size, and
// when init accepts, execute twice over tensors of the shapes the graph declares, then once with a wrong argument
// count. Any crash, sanitizer report, leak or hang is a finding; refusals are fine.
//
// Built only with --config=fuzz_xnnpack (libXNNPACK is Debian's shared library, uninstrumented: what it reads is
// checked by Ember's planner before any xnn_define_* call, which is the code under test).
#include <stdio.h>
#include <new>
#include <stdlib.h>
#include <string.h>

#include "backends/xnnpack/runtime/graph_plan.h"
#include "backends/xnnpack/runtime/xnnpack_backend.h"
#include "runtime/core/evalue.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/tensor.h"

namespace ember {

// No generated backend table here: the target calls the backend directly.
Span<const Backend* const> registered_backends() { return {}; }

namespace {

using xnnpack::GraphPlan;
using xnnpack::ValuePlan;

// The named-data buffer every key resolves to: room for the seeds' weights, not much more.
constexpr size_t kNamedBytes = 4096;
// A blob may declare any shape; past this many bytes over all its values the graph is skipped before init (so
// before XNNPACK sizes its workspace): the fuzzer looks for crashes, and a real caller sizes memory up front too.
constexpr uint64_t kMaxValueBytes = 1u << 20;
constexpr size_t kMaxArgs = 64;

float* named_pattern() {
  static float* p = [] {
    float* b = static_cast<float*>(aligned_alloc(16, kNamedBytes));
    for (size_t i = 0; i < kNamedBytes / sizeof(float); ++i) b[i] = static_cast<float>(i % 17) * 0.125f - 1.0f;
    return b;
  }();
  return p;
}

Result<FreeableBuffer> load_named(const void*, const char* key) {
  if (key[0] == 'z') return Error::NotFound;
  return FreeableBuffer(named_pattern(), kNamedBytes);
}

const NamedDataMap kNamedData = {nullptr, &load_named};

// Exactly `size` bytes (at least one unit), 16-byte aligned, so AddressSanitizer sees any access past the end.
uint8_t* alloc_exact(size_t size) {
  return static_cast<uint8_t*>(aligned_alloc(16, size == 0 ? 16 : (size + 15) / 16 * 16));
}

// The plan init would make, from a scratch allocator, to see how big the graph's values are before init runs.
bool small_enough(const void* blob, size_t size) {
  Result<xnnpack::BlobParts> parts = xnnpack::split_blob(blob, size);
  if (!parts.ok()) return true;  // init refuses it the same way: nothing to size
  Result<const ember_xnn::Graph*> graph = xnnpack::read_graph(*parts);
  if (!graph.ok()) return true;
  const size_t bound = xnnpack::plan_tables_bound(*graph) + 16;
  void* scratch = malloc(bound);
  MemoryAllocator tables(scratch, bound);
  MemoryAllocator buffers(reinterpret_cast<void*>(uintptr_t{16}), SIZE_MAX - 16);
  Result<GraphPlan*> plan = xnnpack::plan_graph(blob, size, &tables, &buffers);
  bool ok = true;
  if (plan.ok()) {
    uint64_t total = 0;
    for (uint32_t id = 0; id < (*plan)->num_values; ++id) total += (*plan)->values[id].nbytes;
    ok = total <= kMaxValueBytes;
  }
  free(scratch);
  return ok;
}

// One delegate argument: a tensor of the value's declared shape and type over an exact-size block (plus the
// XNNPACK_EXTRA_BYTES an XNNPACK input may be read past), filled with small numbers.
struct Arg {
  int32_t sizes[xnnpack::kMaxDims];
  uint8_t order[xnnpack::kMaxDims];
  int32_t strides[xnnpack::kMaxDims];
  uint8_t* data = nullptr;
  alignas(TensorImpl) unsigned char impl[sizeof(TensorImpl)];  // TensorImpl has no default constructor
  EValue value;

  bool make(const ValuePlan& v) {
    for (uint32_t d = 0; d < v.num_dims; ++d) {
      if (v.dims[d] > INT32_MAX) return false;  // no caller's tensor has such a dim (the plan allows size-0 ones)
      sizes[d] = static_cast<int32_t>(v.dims[d]);
      order[d] = static_cast<uint8_t>(d);
    }
    data = alloc_exact(v.nbytes + xnnpack::kExtraBytes);
    const ScalarType type = xnnpack::scalar_type_of(v.datatype);
    if (type == ScalarType::Float) {
      float* f = reinterpret_cast<float*>(data);
      for (size_t i = 0; i < v.nbytes / sizeof(float); ++i) f[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
    } else {
      for (size_t i = 0; i < v.nbytes; ++i) data[i] = static_cast<uint8_t>(i * 37u);
    }
    memset(data + v.nbytes, 0, xnnpack::kExtraBytes);
    Result<TensorImpl> t = TensorImpl::make(type, static_cast<int32_t>(v.num_dims), sizes, order, strides, data);
    if (!t.ok()) return false;
    value = EValue(Tensor(new (impl) TensorImpl(t.get())));
    return true;
  }
  ~Arg() { free(data); }
};

void run(void* handle) {
  const GraphPlan* plan = static_cast<const GraphPlan*>(handle);
  const size_t n = plan->num_inputs + plan->num_outputs;
  if (n > kMaxArgs) return;
  Arg* args = new Arg[n];
  EValue* values[kMaxArgs];
  bool made = true;
  for (size_t k = 0; k < n && made; ++k) {
    made = args[k].make(plan->values[plan->arg_values[k]]);
    values[k] = &args[k].value;
  }
  if (made) {
    // Twice: the second call finds the runtimes set up for these same tensors.
    (void)xnnpack::kBackend.execute(handle, values, n);
    (void)xnnpack::kBackend.execute(handle, values, n);
    if (xnnpack::kBackend.execute(handle, values, n - 1) == Error::Ok) {
      fprintf(stderr, "xnnpack_blob_fuzz: execute accepted %zu arguments for a graph of %zu\n", n - 1, n);
      abort();
    }
  }
  delete[] args;
}

}  // namespace
}  // namespace ember

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  uint8_t* blob = alloc_exact(size);
  if (size) memcpy(blob, data, size);
  Result<size_t> need = xnnpack::kBackend.init_bytes(blob, size, {});
  if (need.ok() && small_enough(blob, size)) {
    // Exactly what init_bytes said: init taking more is a finding (a method's memory is sized from that number).
    uint8_t* arena = alloc_exact(*need);
    MemoryAllocator allocator(arena, *need);
    BackendInitContext ctx{&allocator, "forward", 0, &kNamedData};
    FreeableBuffer processed(blob, size);
    Result<void*> handle = xnnpack::kBackend.init(ctx, processed, {});
    if (handle.ok()) {
      run(handle.get());
      xnnpack::kBackend.destroy(handle.get());
    } else if (handle.error() == Error::MemoryAllocationFailed) {
      fprintf(stderr, "xnnpack_blob_fuzz: init ran out of the %zu bytes init_bytes asked for\n", *need);
      abort();
    }
    free(arena);
  }
  free(blob);
  return 0;
}
