// The backend delegate interface, in ExecuTorch's shape: a backend is handed the processed blob a partitioner
// and its preprocess step wrote into the .pte, with the delegate's compile specs, once at load (init), runs it
// over the delegate call's values (execute), and lets go of it when the method dies (destroy).
//
// Backends are entries of a table generated per build (codegen/gen_registration.py --backend), sorted by id and
// sized exactly, like the kernel table: no static initializers, and a selective build links only the backends
// its programs name (selective_build: `backends:` in selected_operators.yaml).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/evalue.h"
#include "runtime/core/freeable_buffer.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"

namespace ember {

// One compile spec of a delegate: a key and opaque bytes the backend's preprocess step chose (ExecuTorch's).
struct CompileSpec {
  const char* key;
  const void* value;
  size_t nbytes;
};

// The program's named data (Program.named_data: blobs stored once under a key, each one segment), which delegate
// blobs reference instead of carrying their weights (ExecuTorch's XNNPACK blobs name theirs by sha256 hex).
struct NamedDataMap {
  const void* context;
  // The bytes stored under `key` (NotFound when no entry has it). The backend keeps the buffer as long as it
  // uses the bytes and frees it (FreeableBuffer) when done.
  Result<FreeableBuffer> (*load)(const void* context, const char* key);
};

struct BackendInitContext {
  // The method allocator: whatever the backend keeps (its handle, its state) comes from here, so the method's
  // memory stays the caller's, sized up front (see delegate_memory.h).
  MemoryAllocator* allocator;
  const char* method;        // for messages
  uint32_t delegate_index;   // for messages
  const NamedDataMap* named_data = nullptr;  // null when the program has none
  // Threads the method was loaded for (MemoryManager::threads; 0 or 1: one). A backend with its own thread pool
  // may make one this size at init; execute must still not allocate.
  int threads = 1;
};

struct Backend {
  const char* id;  // as a program names it: BackendDelegate.id
  // Whether this backend can run here at all (a CPU feature, a device present). False refuses the program at load.
  bool (*is_available)();
  // Reads `processed` (and may keep pointers into it when keeps_processed) and returns the handle execute gets.
  // Null is a valid handle. Errors are logged by the backend, naming what in the blob is at fault.
  Result<void*> (*init)(BackendInitContext& context, const FreeableBuffer& processed, ArrayRef<CompileSpec> specs);
  // `args`: the delegate call's values, the delegate's inputs then its outputs (as ExecuTorch's emitter writes
  // them). Heapless: memory was taken at init.
  Error (*execute)(void* handle, EValue** args, size_t num_args);
  // Releases what init acquired outside the method allocator (may be null when there is nothing).
  void (*destroy)(void* handle);
  // Bytes init takes from the method allocator for this blob, or an error when the blob is not one the backend
  // reads (may be null: the backend cannot say before init, and delegate_memory() reports it as unknown).
  Result<size_t> (*init_bytes)(const void* processed, size_t nbytes, ArrayRef<CompileSpec> specs);
  // False: the runtime frees the blob right after init (a segment's bytes need not stay for the method's life).
  bool keeps_processed;
};

// Defined by the generated table linked into the binary (codegen/gen_registration.py): sorted by id. Pointers,
// so the table is constant-initialized from each backend library's own `const Backend`.
Span<const Backend* const> registered_backends();

// The backend named `id`, or nullptr.
const Backend* find_backend(const char* id);

}  // namespace ember
