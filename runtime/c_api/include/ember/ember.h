/* Ember's C API: load a .pte program, read what its methods need, run them. Plain C (C89 with <stdint.h>),
 * usable from C++; nothing here is POSIX-only, so the same header serves every host. docs/c_api.md explains the
 * allocation policy, the errors and the stability rules; in short:
 *
 *   - Objects are opaque handles made by a *_load / *_create call and released by the matching *_destroy.
 *   - Every call that can fail returns an ember_status; EMBER_OK (0) is success. ember_last_error() then gives,
 *     for the calling thread, a message naming what was at fault (the operator, input index, byte counts).
 *   - Structs the caller fills or receives start with `size`: set it to sizeof(the struct) (the *_init calls
 *     do). A newer library reads only the fields an older caller's size covers, so structs can grow without
 *     breaking programs compiled against this header.
 */
#ifndef EMBER_EMBER_H_
#define EMBER_EMBER_H_

#include <stddef.h>
#include <stdint.h>

#include <ember/version.h>

/* EMBER_API marks the exported functions: a shared library built with hidden visibility exports only these. */
#if defined(_WIN32)
#if defined(EMBER_BUILDING_SHARED)
#define EMBER_API __declspec(dllexport)
#elif defined(EMBER_USING_SHARED)
#define EMBER_API __declspec(dllimport)
#else
#define EMBER_API
#endif
#elif defined(__GNUC__)
#define EMBER_API __attribute__((visibility("default")))
#else
#define EMBER_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes: the runtime's own error numbers (runtime/core/error.h), plus the C API's from 0x40. */
typedef enum ember_status {
  EMBER_OK = 0x00,
  EMBER_INTERNAL = 0x01,
  EMBER_INVALID_STATE = 0x02,
  EMBER_END_OF_METHOD = 0x03,
  EMBER_ALREADY_LOADED = 0x04,
  EMBER_NOT_SUPPORTED = 0x10,
  EMBER_NOT_IMPLEMENTED = 0x11,
  EMBER_INVALID_ARGUMENT = 0x12,
  EMBER_INVALID_TYPE = 0x13,
  EMBER_OPERATOR_MISSING = 0x14,
  EMBER_NOT_FOUND = 0x20,
  EMBER_MEMORY_ALLOCATION_FAILED = 0x21,
  EMBER_ACCESS_FAILED = 0x22,
  EMBER_INVALID_PROGRAM = 0x23,
  EMBER_INVALID_EXTERNAL_DATA = 0x24,
  EMBER_OUT_OF_RESOURCES = 0x25,
  EMBER_DELEGATE_INVALID_COMPATIBILITY = 0x30,
  EMBER_DELEGATE_MEMORY_ALLOCATION_FAILED = 0x31,
  EMBER_DELEGATE_INVALID_HANDLE = 0x32,
  /* A caller-provided buffer is smaller than what it must hold (the message gives both byte counts). */
  EMBER_BUFFER_TOO_SMALL = 0x40,
  /* A struct's `size` field is smaller than the oldest layout this library accepts, or zero. */
  EMBER_BAD_STRUCT_SIZE = 0x41
} ember_status;

/* Element types, numbered as the .pte format and PyTorch number them. */
typedef enum ember_dtype {
  EMBER_DTYPE_UINT8 = 0,
  EMBER_DTYPE_INT8 = 1,
  EMBER_DTYPE_INT16 = 2,
  EMBER_DTYPE_INT32 = 3,
  EMBER_DTYPE_INT64 = 4,
  EMBER_DTYPE_FLOAT16 = 5,
  EMBER_DTYPE_FLOAT32 = 6,
  EMBER_DTYPE_FLOAT64 = 7,
  EMBER_DTYPE_BOOL = 11,
  EMBER_DTYPE_BFLOAT16 = 15,
  EMBER_DTYPE_UINT16 = 27,
  EMBER_DTYPE_UINT32 = 28,
  EMBER_DTYPE_UINT64 = 29
} ember_dtype;

/* What a method input or output is. A scalar output (a constant method's value) reads as a rank-0 tensor. */
typedef enum ember_value_kind {
  EMBER_VALUE_TENSOR = 0,
  EMBER_VALUE_INT = 1,
  EMBER_VALUE_DOUBLE = 2,
  EMBER_VALUE_BOOL = 3,
  EMBER_VALUE_OTHER = 4
} ember_value_kind;

/* The most dimensions a tensor passed through this API has. */
#define EMBER_MAX_RANK 16
/* Alignment of every caller-provided buffer (planned pools, method allocator, scratch, pointed-to inputs). */
#define EMBER_BUFFER_ALIGNMENT 16

typedef struct ember_program ember_program;
typedef struct ember_method ember_method;

/* ---- Version and errors ---------------------------------------------------------------------------------- */

/* The library's version as (major << 16) | (minor << 8) | patch; compare with EMBER_VERSION_* of the header. */
EMBER_API uint32_t ember_version(void);
EMBER_API const char* ember_version_string(void);
/* "EMBER_INVALID_ARGUMENT" for EMBER_INVALID_ARGUMENT; "EMBER_UNKNOWN_STATUS" for a number outside the enum. */
EMBER_API const char* ember_status_name(ember_status status);
/* The message of the last call that failed on this thread ("" if none has): kept until the next failure on the
 * same thread, so it may be read after any number of successful calls. Valid until then. */
EMBER_API const char* ember_last_error(void);

/* ---- Programs -------------------------------------------------------------------------------------------- */

#define EMBER_VERIFY_FULL 0    /* the flatbuffer verifier and every index, offset and size (the default) */
#define EMBER_VERIFY_MINIMAL 1 /* the header only: for a trusted program checked when it was built */

typedef struct ember_program_options {
  size_t size;            /* sizeof(ember_program_options) */
  int32_t threads;        /* threads the kernels split each call over: 0 or 1, the calling thread alone */
  int32_t verification;   /* EMBER_VERIFY_FULL or EMBER_VERIFY_MINIMAL */
  const char* data_file;  /* a .ptd holding the program's external tensors, or NULL */
  int32_t borrow_buffer;  /* ember_program_load_buffer: nonzero uses the caller's bytes in place (see there) */
} ember_program_options;

/* Sets `size` and the defaults (one thread, full verification, no data file, buffer copied). */
EMBER_API void ember_program_options_init(ember_program_options* options);

/* `options` may be NULL for the defaults. On failure *out is NULL. */
/* Reads the whole file into memory the program owns. */
EMBER_API ember_status ember_program_load_file(const char* path, const ember_program_options* options,
                                               ember_program** out);
/* Maps the file: constants stay file-backed pages, read when first touched, never copied. */
EMBER_API ember_status ember_program_load_mapped(const char* path, const ember_program_options* options,
                                                 ember_program** out);
/* From bytes in memory: copied into the program's own aligned buffer, or with options->borrow_buffer set, used
 * in place (then `data` must be EMBER_BUFFER_ALIGNMENT-aligned and outlive the program: a program in flash). */
EMBER_API ember_status ember_program_load_buffer(const void* data, size_t size, const ember_program_options* options,
                                                 ember_program** out);
/* Releases the program. Its methods must have been destroyed first. NULL is ignored. */
EMBER_API void ember_program_destroy(ember_program* program);

EMBER_API ember_status ember_program_method_count(const ember_program* program, size_t* out);
/* The name stays valid for the program's life. */
EMBER_API ember_status ember_program_method_name(const ember_program* program, size_t index, const char** out);

/* ---- Method metadata (known before a method is loaded) ---------------------------------------------------- */

typedef struct ember_method_info {
  size_t size; /* sizeof(ember_method_info) */
  size_t num_inputs;
  size_t num_outputs;
  size_t num_instructions;
  /* Planned memory pools (activations, a KV cache): their bytes come from ember_method_pool_bytes. */
  size_t num_pools;
  /* The runtime's bookkeeping for the method (values, tensor descriptions, argument lists), exact. */
  size_t method_allocator_bytes;
  /* The kernels' scratch for a method loaded with this program's threads, exact for the linked kernels. */
  size_t scratch_bytes;
  /* Mutable buffers (state kept from one execute to the next, e.g. a KV cache). */
  size_t num_mutable_buffers;
} ember_method_info;

typedef struct ember_tensor_info {
  size_t size;    /* sizeof(ember_tensor_info) */
  int32_t kind;   /* ember_value_kind; the fields below describe a tensor */
  int32_t dtype;  /* ember_dtype */
  int32_t rank;
  /* For a dynamic tensor, each dimension's upper bound: any shape of this rank within them is accepted. */
  int32_t shape[EMBER_MAX_RANK];
  int32_t is_dynamic;
  size_t nbytes; /* bytes at the shape above (the planned bytes, at the bounds, for a dynamic tensor) */
} ember_tensor_info;

EMBER_API ember_status ember_method_get_info(const ember_program* program, const char* method, ember_method_info* out);
EMBER_API ember_status ember_method_input_info(const ember_program* program, const char* method, size_t index,
                                               ember_tensor_info* out);
EMBER_API ember_status ember_method_output_info(const ember_program* program, const char* method, size_t index,
                                                ember_tensor_info* out);
/* Bytes of planned pool `pool` (0 .. num_pools - 1). */
EMBER_API ember_status ember_method_pool_bytes(const ember_program* program, const char* method, size_t pool,
                                               size_t* out);

/* ---- Loaded methods -------------------------------------------------------------------------------------- */

/* Memory a caller hands in for a method: every pointer EMBER_BUFFER_ALIGNMENT-aligned, every size at least what
 * ember_method_info / ember_method_pool_bytes say, all of it outliving the method. Ember writes nothing outside
 * it while loading or executing (the handle itself is a small heap object). */
typedef struct ember_method_memory {
  size_t size;               /* sizeof(ember_method_memory) */
  size_t num_pools;          /* ember_method_info.num_pools */
  void* const* pools;        /* pools[i] holds pool_bytes[i] bytes */
  const size_t* pool_bytes;
  void* method_allocator;
  size_t method_allocator_bytes;
  void* scratch; /* may be NULL when ember_method_info.scratch_bytes is 0 */
  size_t scratch_bytes;
} ember_method_memory;

EMBER_API void ember_method_memory_init(ember_method_memory* memory);

/* Loads `method`. With memory NULL, Ember allocates what the method needs (after checking the program's claims
 * against the machine's memory); otherwise it runs in the caller's memory. On failure *out is NULL. */
EMBER_API ember_status ember_method_load(ember_program* program, const char* method, const ember_method_memory* memory,
                                         ember_method** out);
EMBER_API void ember_method_destroy(ember_method* method);

/* A tensor's description and bytes. Views returned by Ember point into the method's memory: valid until the next
 * execute or set-input on the method. */
typedef struct ember_tensor {
  size_t size;   /* sizeof(ember_tensor) */
  int32_t dtype; /* ember_dtype */
  int32_t rank;
  int32_t shape[EMBER_MAX_RANK];
  void* data;
  size_t nbytes;
} ember_tensor;

EMBER_API void ember_tensor_init(ember_tensor* tensor);

EMBER_API ember_status ember_method_num_inputs(const ember_method* method, size_t* out);
EMBER_API ember_status ember_method_num_outputs(const ember_method* method, size_t* out);
/* Copies value->data (value->nbytes, C-contiguous) into input `index` after checking dtype, shape and bytes. */
EMBER_API ember_status ember_method_set_input(ember_method* method, size_t index, const ember_tensor* value);
/* Points input `index` at value->data without a copy (checked as set_input checks it, and value->data must be
 * EMBER_BUFFER_ALIGNMENT-aligned). The caller's bytes must stay valid through the executes that read them; a
 * later ember_method_set_input returns the input to its planned memory. */
EMBER_API ember_status ember_method_point_input(ember_method* method, size_t index, const ember_tensor* value);
/* Input `index` as a view of its current memory (write its bytes in place, after a set-input gave it its shape). */
EMBER_API ember_status ember_method_input(ember_method* method, size_t index, ember_tensor* out);
EMBER_API ember_status ember_method_execute(ember_method* method);
/* Output `index` as a view; a scalar output is a rank-0 tensor (INT64, FLOAT64 or BOOL). */
EMBER_API ember_status ember_method_output(ember_method* method, size_t index, ember_tensor* out);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_EMBER_H_ */
