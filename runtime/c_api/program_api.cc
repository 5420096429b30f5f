// ember.h's program calls: load (file, buffer, mapped) with an optional .ptd, the method list, and what each
// method needs before it is loaded (MethodMeta).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <new>

#include "runtime/c_api/handles.h"
#include "runtime/c_api/status.h"
#include "runtime/executor/method_meta.h"

namespace ember {
namespace c_api {

AlignedBlock::~AlignedBlock() { free(raw_); }

bool AlignedBlock::allocate(size_t bytes) {
  free(raw_);
  raw_ = malloc(bytes + EMBER_BUFFER_ALIGNMENT);
  if (raw_ == nullptr) return false;
  const uintptr_t p = reinterpret_cast<uintptr_t>(raw_);
  aligned_ = reinterpret_cast<uint8_t*>((p + EMBER_BUFFER_ALIGNMENT - 1) &
                                        ~static_cast<uintptr_t>(EMBER_BUFFER_ALIGNMENT - 1));
  size_ = bytes;
  return true;
}

bool struct_size_ok(const char* call, const char* type, size_t size, size_t minimum, ember_status* status) {
  if (size >= minimum) return true;
  *status =
      fail(EMBER_BAD_STRUCT_SIZE, "%s: %s.size is %zu, below the %zu bytes of its first layout (set it to sizeof)",
           call, type, size, minimum);
  return false;
}

namespace {

// The options a call runs with: the caller's, read only as far as their `size` reaches, over the defaults.
bool read_options(const char* call, const ember_program_options* given, ember_program_options* out,
                  ember_status* status) {
  ember_program_options_init(out);
  if (given == nullptr) return true;
  if (!struct_size_ok(call, "ember_program_options", given->size, sizeof(ember_program_options), status)) return false;
  // Only the fields the caller's struct has: a caller compiled against an older, shorter layout keeps the
  // defaults for the rest.
  memcpy(out, given, given->size < sizeof(ember_program_options) ? given->size : sizeof(ember_program_options));
  out->size = sizeof(ember_program_options);
  if (out->threads < 0 || out->threads > PosixThreadPool::kMaxThreads) {
    *status = fail(EMBER_INVALID_ARGUMENT, "%s: threads is %d; give 0 .. %d", call, static_cast<int>(out->threads),
                   PosixThreadPool::kMaxThreads);
    return false;
  }
  if (out->verification != EMBER_VERIFY_FULL && out->verification != EMBER_VERIFY_MINIMAL) {
    *status = fail(EMBER_INVALID_ARGUMENT, "%s: verification is %d, neither EMBER_VERIFY_FULL nor EMBER_VERIFY_MINIMAL",
                   call, static_cast<int>(out->verification));
    return false;
  }
  return true;
}

// The steps every load shares once the program's bytes have a loader: verify and load the program, open the data
// file, start the thread pool.
ember_status finish_load(const char* call, const char* what, std::unique_ptr<ember_program> p, DataLoader* loader,
                         const ember_program_options& options, ember_program** out) {
  const Program::Verification verification = options.verification == EMBER_VERIFY_MINIMAL
                                                 ? Program::Verification::Minimal
                                                 : Program::Verification::InternalConsistency;
  Result<Program> program = Program::load(loader, verification);
  if (!program.ok()) return fail_error(program.error(), "%s: loading the program %s", call, what);
  p->program.reset(new (std::nothrow) Program(static_cast<Program&&>(program.get())));
  if (p->program == nullptr) return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: the program handle", call);
  if (options.data_file != nullptr) {
    Result<MmapDataLoader> data = MmapDataLoader::open(options.data_file);
    if (!data.ok()) return fail_error(data.error(), "%s: opening the data file %s", call, options.data_file);
    p->data_loader.reset(new (std::nothrow) MmapDataLoader(static_cast<MmapDataLoader&&>(data.get())));
    if (p->data_loader == nullptr) return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: the data file handle", call);
    Result<FlatTensorFile> file = FlatTensorFile::load(p->data_loader.get());
    if (!file.ok()) return fail_error(file.error(), "%s: reading the data file %s", call, options.data_file);
    p->data_file.reset(new (std::nothrow) FlatTensorFile(static_cast<FlatTensorFile&&>(file.get())));
    if (p->data_file == nullptr) return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: the data file handle", call);
  }
  if (options.threads > 1) {
    Result<PosixThreadPool*> pool = PosixThreadPool::create(options.threads);
    if (!pool.ok()) return fail_error(pool.error(), "%s: starting %d threads", call, static_cast<int>(options.threads));
    p->pool = pool.get();
    p->threads = options.threads;
  }
  *out = p.release();
  return EMBER_OK;
}

// Reads a whole file with C stdio (no POSIX calls: the same code on every host).
ember_status read_file(const char* call, const char* path, AlignedBlock* block) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return fail(EMBER_ACCESS_FAILED, "%s: cannot open %s", call, path);
  long size = -1;
  if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
  if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return fail(EMBER_ACCESS_FAILED, "%s: cannot find the size of %s", call, path);
  }
  if (!block->allocate(static_cast<size_t>(size))) {
    fclose(f);
    return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: %ld bytes for %s", call, size, path);
  }
  const size_t got = fread(block->data(), 1, static_cast<size_t>(size), f);
  fclose(f);
  if (got != static_cast<size_t>(size)) {
    return fail(EMBER_ACCESS_FAILED, "%s: read %zu of the %ld bytes of %s", call, got, size, path);
  }
  return EMBER_OK;
}

// What every load does first: `source` (the path or the bytes) and `out` checked, *out cleared, the options read
// into *opts and the handle made. EMBER_OK, or the failure recorded.
ember_status start_load(const char* call, const char* source_name, const void* source,
                        const ember_program_options* options, ember_program** out, ember_program_options* opts,
                        std::unique_ptr<ember_program>* p) {
  if (out == nullptr || source == nullptr) {
    return fail(EMBER_INVALID_ARGUMENT, "%s: %s and out must not be NULL", call, source_name);
  }
  *out = nullptr;
  ember_status status = EMBER_OK;
  if (!read_options(call, options, opts, &status)) return status;
  p->reset(new (std::nothrow) ember_program);
  if (*p == nullptr) return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: the program handle", call);
  return EMBER_OK;
}

}  // namespace
}  // namespace c_api
}  // namespace ember

using ember::Error;
using ember::MethodMeta;
using ember::Result;
using ember::TensorInfo;
using ember::c_api::begin_call;
using ember::c_api::fail;
using ember::c_api::fail_error;

extern "C" {

EMBER_API uint32_t ember_version(void) {
  return (static_cast<uint32_t>(EMBER_VERSION_MAJOR) << 16) | (static_cast<uint32_t>(EMBER_VERSION_MINOR) << 8) |
         static_cast<uint32_t>(EMBER_VERSION_PATCH);
}

EMBER_API const char* ember_version_string(void) { return EMBER_VERSION_STRING; }

EMBER_API const char* ember_status_name(ember_status status) {
  switch (status) {
#define EMBER_STATUS_CASE(s) \
  case s: return #s;
    EMBER_STATUS_CASE(EMBER_OK)
    EMBER_STATUS_CASE(EMBER_INTERNAL)
    EMBER_STATUS_CASE(EMBER_INVALID_STATE)
    EMBER_STATUS_CASE(EMBER_END_OF_METHOD)
    EMBER_STATUS_CASE(EMBER_ALREADY_LOADED)
    EMBER_STATUS_CASE(EMBER_NOT_SUPPORTED)
    EMBER_STATUS_CASE(EMBER_NOT_IMPLEMENTED)
    EMBER_STATUS_CASE(EMBER_INVALID_ARGUMENT)
    EMBER_STATUS_CASE(EMBER_INVALID_TYPE)
    EMBER_STATUS_CASE(EMBER_OPERATOR_MISSING)
    EMBER_STATUS_CASE(EMBER_NOT_FOUND)
    EMBER_STATUS_CASE(EMBER_MEMORY_ALLOCATION_FAILED)
    EMBER_STATUS_CASE(EMBER_ACCESS_FAILED)
    EMBER_STATUS_CASE(EMBER_INVALID_PROGRAM)
    EMBER_STATUS_CASE(EMBER_INVALID_EXTERNAL_DATA)
    EMBER_STATUS_CASE(EMBER_OUT_OF_RESOURCES)
    EMBER_STATUS_CASE(EMBER_DELEGATE_INVALID_COMPATIBILITY)
    EMBER_STATUS_CASE(EMBER_DELEGATE_MEMORY_ALLOCATION_FAILED)
    EMBER_STATUS_CASE(EMBER_DELEGATE_INVALID_HANDLE)
    EMBER_STATUS_CASE(EMBER_BUFFER_TOO_SMALL)
    EMBER_STATUS_CASE(EMBER_BAD_STRUCT_SIZE)
#undef EMBER_STATUS_CASE
  }
  return "EMBER_UNKNOWN_STATUS";
}

EMBER_API void ember_program_options_init(ember_program_options* options) {
  if (options == nullptr) return;
  memset(options, 0, sizeof(*options));
  options->size = sizeof(*options);
  options->threads = 1;
  options->verification = EMBER_VERIFY_FULL;
}

EMBER_API ember_status ember_program_load_file(const char* path, const ember_program_options* options,
                                               ember_program** out) {
  begin_call();
  const char* call = "ember_program_load_file";
  ember_program_options opts;
  std::unique_ptr<ember_program> p;
  ember_status status = ember::c_api::start_load(call, "path", path, options, out, &opts, &p);
  if (status != EMBER_OK) return status;
  status = ember::c_api::read_file(call, path, &p->storage);
  if (status != EMBER_OK) return status;
  p->buffer_loader.reset(new (std::nothrow) ember::BufferDataLoader(p->storage.data(), p->storage.size()));
  if (p->buffer_loader == nullptr) return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: the loader", call);
  ember::DataLoader* loader = p->buffer_loader.get();
  return ember::c_api::finish_load(call, path, static_cast<std::unique_ptr<ember_program>&&>(p), loader, opts, out);
}

EMBER_API ember_status ember_program_load_mapped(const char* path, const ember_program_options* options,
                                                 ember_program** out) {
  begin_call();
  const char* call = "ember_program_load_mapped";
  ember_program_options opts;
  std::unique_ptr<ember_program> p;
  ember_status status = ember::c_api::start_load(call, "path", path, options, out, &opts, &p);
  if (status != EMBER_OK) return status;
  Result<ember::MmapDataLoader> loader = ember::MmapDataLoader::open(path);
  if (!loader.ok()) return fail_error(loader.error(), "%s: mapping %s", call, path);
  p->mmap_loader.reset(new (std::nothrow) ember::MmapDataLoader(static_cast<ember::MmapDataLoader&&>(loader.get())));
  if (p->mmap_loader == nullptr) return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: the loader", call);
  ember::DataLoader* l = p->mmap_loader.get();
  return ember::c_api::finish_load(call, path, static_cast<std::unique_ptr<ember_program>&&>(p), l, opts, out);
}

EMBER_API ember_status ember_program_load_buffer(const void* data, size_t size, const ember_program_options* options,
                                                 ember_program** out) {
  begin_call();
  const char* call = "ember_program_load_buffer";
  ember_program_options opts;
  std::unique_ptr<ember_program> p;
  ember_status status = ember::c_api::start_load(call, "data", data, options, out, &opts, &p);
  if (status != EMBER_OK) return status;
  const void* bytes = data;
  if (opts.borrow_buffer) {
    // Constants are read in place, so they must sit at the alignment the exporter laid them out for.
    if (reinterpret_cast<uintptr_t>(data) % EMBER_BUFFER_ALIGNMENT != 0) {
      return fail(EMBER_INVALID_ARGUMENT, "%s: a borrowed buffer must be %d-byte aligned; %p is not", call,
                  EMBER_BUFFER_ALIGNMENT, data);
    }
  } else {
    if (!p->storage.allocate(size))
      return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: %zu bytes for the copy", call, size);
    memcpy(p->storage.data(), data, size);
    bytes = p->storage.data();
  }
  p->buffer_loader.reset(new (std::nothrow) ember::BufferDataLoader(bytes, size));
  if (p->buffer_loader == nullptr) return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: the loader", call);
  ember::DataLoader* loader = p->buffer_loader.get();
  return ember::c_api::finish_load(call, "from a buffer", static_cast<std::unique_ptr<ember_program>&&>(p), loader,
                                   opts, out);
}

EMBER_API void ember_program_destroy(ember_program* program) {
  if (program == nullptr) return;
  program->released.store(true);
  if (program->live_methods.load() == 0) delete program;
}

EMBER_API ember_status ember_program_method_count(const ember_program* program, size_t* out) {
  begin_call();
  if (program == nullptr || out == nullptr) {
    return fail(EMBER_INVALID_ARGUMENT, "ember_program_method_count: program and out must not be NULL");
  }
  *out = program->program->num_methods();
  return EMBER_OK;
}

EMBER_API ember_status ember_program_method_name(const ember_program* program, size_t index, const char** out) {
  begin_call();
  const char* call = "ember_program_method_name";
  if (program == nullptr || out == nullptr)
    return fail(EMBER_INVALID_ARGUMENT, "%s: program and out must not be NULL", call);
  Result<const char*> name = program->program->get_method_name(index);
  if (!name.ok()) {
    return fail_error(name.error(), "%s: method %zu of a program with %zu", call, index,
                      program->program->num_methods());
  }
  *out = name.get();
  return EMBER_OK;
}

}  // extern "C"
