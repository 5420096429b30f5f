// ember.h's method calls: metadata before load, load into Ember's or the caller's memory, inputs and outputs as
// tensor views, execute.
#include <string.h>

#include <new>

#include "runtime/c_api/handles.h"
#include "runtime/c_api/status.h"
#include "runtime/executor/method_meta.h"
#include "runtime/runner/memory_claims.h"

namespace ember {
namespace c_api {
namespace {

ember_status check_names(const char* call, const ember_program* program, const char* method) {
  if (program == nullptr || method == nullptr) {
    return fail(EMBER_INVALID_ARGUMENT, "%s: program and method must not be NULL", call);
  }
  return EMBER_OK;
}

void fill_tensor_info(const TensorInfo& t, ember_tensor_info* out) {
  out->kind = EMBER_VALUE_TENSOR;
  out->dtype = static_cast<int32_t>(t.scalar_type);
  out->rank = static_cast<int32_t>(t.sizes.size());
  for (size_t d = 0; d < t.sizes.size() && d < EMBER_MAX_RANK; ++d) out->shape[d] = t.sizes[d];
  out->is_dynamic = t.is_dynamic ? 1 : 0;
  out->nbytes = t.nbytes;
}

// Copies a caller's shape into the runtime's form, refusing a rank above EMBER_MAX_RANK or a negative size.
ember_status read_value(const char* call, const ember_method* m, size_t index, const ember_tensor* value) {
  ember_status status = EMBER_OK;
  if (value == nullptr) return fail(EMBER_INVALID_ARGUMENT, "%s: input %zu: value is NULL", call, index);
  if (!struct_size_ok(call, "ember_tensor", value->size, sizeof(ember_tensor), &status)) return status;
  if (value->rank < 0 || value->rank > EMBER_MAX_RANK) {
    return fail(EMBER_INVALID_ARGUMENT, "%s: input %zu of '%s': rank %d outside 0 .. %d", call, index,
                m->method->name(), static_cast<int>(value->rank), EMBER_MAX_RANK);
  }
  if (value->data == nullptr && value->nbytes > 0) {
    return fail(EMBER_INVALID_ARGUMENT, "%s: input %zu of '%s': data is NULL", call, index, m->method->name());
  }
  if (index >= m->method->num_inputs()) {
    return fail(EMBER_INVALID_ARGUMENT, "%s: input %zu of '%s', which takes %zu", call, index, m->method->name(),
                m->method->num_inputs());
  }
  return EMBER_OK;
}

void view_of(const Tensor& t, ember_tensor* out) {
  const size_t size = out->size;
  memset(out, 0, sizeof(ember_tensor));
  out->size = size;
  out->dtype = static_cast<int32_t>(t.scalar_type());
  out->rank = t.dim();
  for (int32_t d = 0; d < t.dim() && d < EMBER_MAX_RANK; ++d) out->shape[d] = t.size(d);
  out->data = t.mutable_data_ptr();
  out->nbytes = t.nbytes();
}

// Memory for a method: the caller's (checked against its claims) or Ember's own (checked against the machine).
ember_status place_memory(const char* call, ember_method* m, const char* name, const MethodMeta& meta,
                          const ember_method_memory* given) {
  const int threads = m->program->threads;
  MemoryClaims claims;
  char why[320];
  const uint64_t available = given != nullptr ? UINT64_MAX : physical_memory_bytes();
  if (!read_memory_claims(meta, available, &claims, why, sizeof(why), threads)) {
    return fail(EMBER_OUT_OF_RESOURCES, "%s: %s", call, why);
  }
  void* method_bytes = nullptr;
  void* scratch_bytes = nullptr;
  if (given == nullptr) {
    for (size_t i = 0; i < claims.num_pools + 2; ++i) {
      const size_t bytes = i < claims.num_pools    ? claims.pool_bytes[i]
                           : i == claims.num_pools ? claims.method_allocator_bytes
                                                   : claims.scratch_bytes;
      std::unique_ptr<AlignedBlock> block(new (std::nothrow) AlignedBlock);
      if (block == nullptr || !block->allocate(bytes)) {
        return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: %zu bytes for '%s'", call, bytes, name);
      }
      if (i < claims.num_pools) m->pools.emplace_back(block->data(), bytes);
      m->owned.push_back(static_cast<std::unique_ptr<AlignedBlock>&&>(block));
    }
    method_bytes = m->owned[claims.num_pools]->data();
    scratch_bytes = m->owned[claims.num_pools + 1]->data();
  } else {
    ember_status status = EMBER_OK;
    if (!struct_size_ok(call, "ember_method_memory", given->size, sizeof(ember_method_memory), &status)) return status;
    if (given->num_pools != claims.num_pools) {
      return fail(EMBER_INVALID_ARGUMENT, "%s: '%s' plans %zu pools; memory gives %zu", call, name, claims.num_pools,
                  given->num_pools);
    }
    for (size_t i = 0; i < claims.num_pools; ++i) {
      void* pool = given->pools != nullptr ? given->pools[i] : nullptr;
      const size_t bytes = given->pool_bytes != nullptr ? given->pool_bytes[i] : 0;
      if (pool == nullptr && claims.pool_bytes[i] > 0) {
        return fail(EMBER_INVALID_ARGUMENT, "%s: pool %zu of '%s' (%zu bytes) is NULL", call, i, name,
                    claims.pool_bytes[i]);
      }
      if (bytes < claims.pool_bytes[i]) {
        return fail(EMBER_BUFFER_TOO_SMALL, "%s: pool %zu of '%s' needs %zu bytes; the caller's holds %zu", call, i,
                    name, claims.pool_bytes[i], bytes);
      }
      m->pools.emplace_back(static_cast<uint8_t*>(pool), bytes);
    }
    if (given->method_allocator_bytes < claims.method_allocator_bytes || given->method_allocator == nullptr) {
      return fail(EMBER_BUFFER_TOO_SMALL, "%s: the method allocator of '%s' needs %zu bytes; the caller's holds %zu",
                  call, name, claims.method_allocator_bytes,
                  given->method_allocator == nullptr ? static_cast<size_t>(0) : given->method_allocator_bytes);
    }
    if (claims.scratch_bytes > 0 && (given->scratch == nullptr || given->scratch_bytes < claims.scratch_bytes)) {
      return fail(EMBER_BUFFER_TOO_SMALL, "%s: the scratch of '%s' needs %zu bytes; the caller's holds %zu", call, name,
                  claims.scratch_bytes, given->scratch == nullptr ? static_cast<size_t>(0) : given->scratch_bytes);
    }
    const void* regions[3] = {given->method_allocator, given->scratch, nullptr};
    for (size_t i = 0; i < claims.num_pools + 2; ++i) {
      const void* r = i < 2 ? regions[i] : m->pools[i - 2].data();
      if (reinterpret_cast<uintptr_t>(r) % EMBER_BUFFER_ALIGNMENT != 0) {
        return fail(EMBER_INVALID_ARGUMENT, "%s: %s%zu of '%s' at %p is not %d-byte aligned", call,
                    i == 0   ? "the method allocator"
                    : i == 1 ? "the scratch"
                             : "pool ",
                    i < 2 ? static_cast<size_t>(0) : i - 2, name, r, EMBER_BUFFER_ALIGNMENT);
      }
    }
    method_bytes = given->method_allocator;
    scratch_bytes = given->scratch;
    claims.method_allocator_bytes = given->method_allocator_bytes;
    if (scratch_bytes != nullptr) claims.scratch_bytes = given->scratch_bytes;
  }
  m->planned.reset(new (std::nothrow) HierarchicalAllocator(Span<Span<uint8_t>>(m->pools.data(), m->pools.size())));
  m->method_allocator.reset(new (std::nothrow) MemoryAllocator(method_bytes, claims.method_allocator_bytes));
  m->temp_allocator.reset(new (std::nothrow) MemoryAllocator(scratch_bytes, claims.scratch_bytes));
  if (m->planned == nullptr || m->method_allocator == nullptr || m->temp_allocator == nullptr) {
    return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: the allocators of '%s'", call, name);
  }
  m->memory = MemoryManager{m->method_allocator.get(), m->planned.get(), m->temp_allocator.get(), threads};
  return EMBER_OK;
}

// Releases a method and, when it was the last of a program already destroyed, the program.
void release(ember_method* m) {
  ember_program* program = m->program;
  delete m;
  if (program != nullptr && program->live_methods.fetch_sub(1) == 1 && program->released.load()) delete program;
}

// The checks ember_method_input_info and ember_method_output_info share: the names, the method's metadata, `out`
// and its size, and `index` below `count` (the method's inputs or outputs, named by `what`). The metadata, or
// the failure recorded (its status in *status).
Result<MethodMeta> describe_value(const char* call, const ember_program* program, const char* method, size_t index,
                                  ember_tensor_info* out, const char* what, size_t (MethodMeta::*count)() const,
                                  ember_status* status) {
  *status = check_names(call, program, method);
  if (*status != EMBER_OK) return Error::InvalidArgument;
  Result<MethodMeta> meta = program->program->method_meta(method);
  if (!meta.ok()) {
    *status = fail_error(meta.error(), "%s: method '%s'", call, method);
  } else if (out == nullptr) {
    *status = fail(EMBER_INVALID_ARGUMENT, "%s: out is NULL", call);
  } else if (!struct_size_ok(call, "ember_tensor_info", out->size, sizeof(ember_tensor_info), status)) {
    // *status set
  } else if (index >= (meta.get().*count)()) {
    *status = fail(EMBER_INVALID_ARGUMENT, "%s: %s %zu of '%s', which has %zu", call, what, index, method,
                   (meta.get().*count)());
  }
  if (*status != EMBER_OK) return Error::InvalidArgument;
  return meta;
}

}  // namespace
}  // namespace c_api
}  // namespace ember

using ember::Error;
using ember::EValue;
using ember::MethodMeta;
using ember::Result;
using ember::Tag;
using ember::Tensor;
using ember::TensorInfo;
using ember::c_api::begin_call;
using ember::c_api::fail;
using ember::c_api::fail_error;
using ember::c_api::struct_size_ok;

extern "C" {

EMBER_API ember_status ember_method_get_info(const ember_program* program, const char* method, ember_method_info* out) {
  begin_call();
  const char* call = "ember_method_get_info";
  ember_status status = ember::c_api::check_names(call, program, method);
  if (status != EMBER_OK) return status;
  Result<MethodMeta> meta = program->program->method_meta(method);
  if (!meta.ok()) return fail_error(meta.error(), "%s: method '%s'", call, method);
  if (out == nullptr) return fail(EMBER_INVALID_ARGUMENT, "%s: out is NULL", call);
  if (!struct_size_ok(call, "ember_method_info", out->size, sizeof(ember_method_info), &status)) return status;
  out->num_inputs = meta->num_inputs();
  out->num_outputs = meta->num_outputs();
  out->num_instructions = meta->num_instructions();
  out->num_pools = meta->num_memory_planned_buffers();
  out->method_allocator_bytes = meta->method_allocator_bytes();
  out->scratch_bytes = meta->scratch_bytes(program->threads);
  out->num_mutable_buffers = meta->num_mutable_buffers();
  return EMBER_OK;
}

EMBER_API ember_status ember_method_input_info(const ember_program* program, const char* method, size_t index,
                                               ember_tensor_info* out) {
  begin_call();
  ember_status status = EMBER_OK;
  Result<MethodMeta> meta = ember::c_api::describe_value("ember_method_input_info", program, method, index, out,
                                                         "input", &MethodMeta::num_inputs, &status);
  if (status != EMBER_OK) return status;
  Result<TensorInfo> t = meta->input_tensor_meta(index);
  if (!t.ok()) {
    // Not a tensor (an int or a float the method takes): described by kind alone.
    out->kind = EMBER_VALUE_OTHER;
    out->rank = 0;
    out->nbytes = 0;
    return EMBER_OK;
  }
  ember::c_api::fill_tensor_info(t.get(), out);
  return EMBER_OK;
}

EMBER_API ember_status ember_method_output_info(const ember_program* program, const char* method, size_t index,
                                                ember_tensor_info* out) {
  begin_call();
  const char* call = "ember_method_output_info";
  ember_status status = EMBER_OK;
  Result<MethodMeta> meta =
      ember::c_api::describe_value(call, program, method, index, out, "output", &MethodMeta::num_outputs, &status);
  if (status != EMBER_OK) return status;
  Result<Tag> tag = meta->output_tag(index);
  if (!tag.ok()) return fail_error(tag.error(), "%s: output %zu of '%s'", call, index, method);
  if (tag.get() != Tag::Tensor) {
    out->kind = tag.get() == Tag::Int      ? EMBER_VALUE_INT
                : tag.get() == Tag::Double ? EMBER_VALUE_DOUBLE
                : tag.get() == Tag::Bool   ? EMBER_VALUE_BOOL
                                           : EMBER_VALUE_OTHER;
    out->dtype = tag.get() == Tag::Int      ? EMBER_DTYPE_INT64
                 : tag.get() == Tag::Double ? EMBER_DTYPE_FLOAT64
                                            : EMBER_DTYPE_BOOL;
    out->rank = 0;
    out->is_dynamic = 0;
    out->nbytes = 8;
    return EMBER_OK;
  }
  Result<TensorInfo> t = meta->output_tensor_meta(index);
  if (!t.ok()) return fail_error(t.error(), "%s: output %zu of '%s'", call, index, method);
  ember::c_api::fill_tensor_info(t.get(), out);
  return EMBER_OK;
}

EMBER_API ember_status ember_method_pool_bytes(const ember_program* program, const char* method, size_t pool,
                                               size_t* out) {
  begin_call();
  const char* call = "ember_method_pool_bytes";
  ember_status status = ember::c_api::check_names(call, program, method);
  if (status != EMBER_OK) return status;
  Result<MethodMeta> meta = program->program->method_meta(method);
  if (!meta.ok()) return fail_error(meta.error(), "%s: method '%s'", call, method);
  if (out == nullptr) return fail(EMBER_INVALID_ARGUMENT, "%s: out is NULL", call);
  Result<size_t> bytes = meta->memory_planned_buffer_size(pool);
  if (!bytes.ok()) {
    return fail_error(bytes.error(), "%s: pool %zu of '%s', which plans %zu", call, pool, method,
                      meta->num_memory_planned_buffers());
  }
  *out = bytes.get();
  return EMBER_OK;
}

EMBER_API void ember_method_memory_init(ember_method_memory* memory) {
  if (memory == nullptr) return;
  memset(memory, 0, sizeof(*memory));
  memory->size = sizeof(*memory);
}

EMBER_API void ember_tensor_init(ember_tensor* tensor) {
  if (tensor == nullptr) return;
  memset(tensor, 0, sizeof(*tensor));
  tensor->size = sizeof(*tensor);
}

EMBER_API ember_status ember_method_load(ember_program* program, const char* method, const ember_method_memory* memory,
                                         ember_method** out) {
  begin_call();
  const char* call = "ember_method_load";
  if (out == nullptr) return fail(EMBER_INVALID_ARGUMENT, "%s: out is NULL", call);
  *out = nullptr;
  ember_status status = ember::c_api::check_names(call, program, method);
  if (status != EMBER_OK) return status;
  Result<MethodMeta> meta = program->program->method_meta(method);
  if (!meta.ok()) return fail_error(meta.error(), "%s: method '%s'", call, method);
  std::unique_ptr<ember_method> m(new (std::nothrow) ember_method);
  if (m == nullptr) return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: the method handle", call);
  m->program = program;
  status = ember::c_api::place_memory(call, m.get(), method, meta.get(), memory);
  if (status != EMBER_OK) {
    m->program = nullptr;
    return status;
  }
  Result<ember::Method> loaded = program->program->load_method(method, &m->memory, program->data_file.get());
  if (!loaded.ok()) {
    m->program = nullptr;
    return fail_error(loaded.error(), "%s: loading '%s'", call, method);
  }
  m->method.reset(new (std::nothrow) ember::Method(static_cast<ember::Method&&>(loaded.get())));
  if (m->method == nullptr) {
    m->program = nullptr;
    return fail(EMBER_MEMORY_ALLOCATION_FAILED, "%s: the method handle", call);
  }
  m->method->set_thread_pool(program->pool);
  // Each input's planned bytes, so a pointed input can be given back to them.
  for (size_t i = 0; i < m->method->num_inputs(); ++i) {
    Result<Tensor> t = m->method->input(i);
    m->planned_input_data.push_back(t.ok() ? t->mutable_data_ptr() : nullptr);
    m->planned_input_capacity.push_back(t.ok() ? t->impl()->capacity() : 0);
  }
  m->scalar_outputs.assign(m->method->num_outputs(), 0);
  program->live_methods.fetch_add(1);
  *out = m.release();
  return EMBER_OK;
}

EMBER_API void ember_method_destroy(ember_method* method) {
  if (method != nullptr) ember::c_api::release(method);
}

EMBER_API ember_status ember_method_num_inputs(const ember_method* method, size_t* out) {
  begin_call();
  if (method == nullptr || out == nullptr) {
    return fail(EMBER_INVALID_ARGUMENT, "ember_method_num_inputs: method and out must not be NULL");
  }
  *out = method->method->num_inputs();
  return EMBER_OK;
}

EMBER_API ember_status ember_method_num_outputs(const ember_method* method, size_t* out) {
  begin_call();
  if (method == nullptr || out == nullptr) {
    return fail(EMBER_INVALID_ARGUMENT, "ember_method_num_outputs: method and out must not be NULL");
  }
  *out = method->method->num_outputs();
  return EMBER_OK;
}

EMBER_API ember_status ember_method_set_input(ember_method* method, size_t index, const ember_tensor* value) {
  begin_call();
  const char* call = "ember_method_set_input";
  if (method == nullptr) return fail(EMBER_INVALID_ARGUMENT, "%s: method is NULL", call);
  ember_status status = ember::c_api::read_value(call, method, index, value);
  if (status != EMBER_OK) return status;
  // Back to the planned bytes if an earlier point_input moved the input elsewhere.
  Result<Tensor> input = method->method->input(index);
  if (input.ok() && method->planned_input_data[index] != nullptr) {
    input->impl()->set_data(method->planned_input_data[index]);
    input->impl()->set_capacity(method->planned_input_capacity[index]);
  }
  Error e = method->method->set_input(index, static_cast<ember::ScalarType>(value->dtype),
                                      ember::ArrayRef<int32_t>(value->shape, static_cast<size_t>(value->rank)),
                                      value->data, value->nbytes);
  if (e != Error::Ok) return fail_error(e, "%s: input %zu of '%s'", call, index, method->method->name());
  return EMBER_OK;
}

EMBER_API ember_status ember_method_point_input(ember_method* method, size_t index, const ember_tensor* value) {
  begin_call();
  const char* call = "ember_method_point_input";
  if (method == nullptr) return fail(EMBER_INVALID_ARGUMENT, "%s: method is NULL", call);
  ember_status status = ember::c_api::read_value(call, method, index, value);
  if (status != EMBER_OK) return status;
  const char* name = method->method->name();
  Result<Tensor> input = method->method->input(index);
  if (!input.ok()) return fail_error(input.error(), "%s: input %zu of '%s'", call, index, name);
  if (value->dtype != static_cast<int32_t>(input->scalar_type())) {
    return fail(EMBER_INVALID_ARGUMENT, "%s: input %zu of '%s' is %s; the value is dtype %d", call, index, name,
                ember::scalar_type_name(input->scalar_type()), static_cast<int>(value->dtype));
  }
  if (reinterpret_cast<uintptr_t>(value->data) % EMBER_BUFFER_ALIGNMENT != 0) {
    return fail(EMBER_INVALID_ARGUMENT, "%s: input %zu of '%s': data at %p is not %d-byte aligned", call, index, name,
                value->data, EMBER_BUFFER_ALIGNMENT);
  }
  Error e =
      method->method->resize_input(index, ember::ArrayRef<int32_t>(value->shape, static_cast<size_t>(value->rank)));
  if (e != Error::Ok) return fail_error(e, "%s: input %zu of '%s'", call, index, name);
  if (value->nbytes < input->nbytes()) {
    return fail(EMBER_BUFFER_TOO_SMALL, "%s: input %zu of '%s' at this shape is %zu bytes; the value holds %zu", call,
                index, name, input->nbytes(), value->nbytes);
  }
  input->impl()->set_data(value->data);
  input->impl()->set_capacity(value->nbytes);
  return EMBER_OK;
}

EMBER_API ember_status ember_method_input(ember_method* method, size_t index, ember_tensor* out) {
  begin_call();
  const char* call = "ember_method_input";
  if (method == nullptr || out == nullptr)
    return fail(EMBER_INVALID_ARGUMENT, "%s: method and out must not be NULL", call);
  ember_status status = EMBER_OK;
  if (!struct_size_ok(call, "ember_tensor", out->size, sizeof(ember_tensor), &status)) return status;
  Result<Tensor> t = method->method->input(index);
  if (!t.ok()) return fail_error(t.error(), "%s: input %zu of '%s'", call, index, method->method->name());
  ember::c_api::view_of(t.get(), out);
  return EMBER_OK;
}

EMBER_API ember_status ember_method_execute(ember_method* method) {
  begin_call();
  if (method == nullptr) return fail(EMBER_INVALID_ARGUMENT, "ember_method_execute: method is NULL");
  Error e = method->method->execute();
  if (e != Error::Ok) return fail_error(e, "ember_method_execute: executing '%s'", method->method->name());
  return EMBER_OK;
}

EMBER_API ember_status ember_method_output(ember_method* method, size_t index, ember_tensor* out) {
  begin_call();
  const char* call = "ember_method_output";
  if (method == nullptr || out == nullptr)
    return fail(EMBER_INVALID_ARGUMENT, "%s: method and out must not be NULL", call);
  ember_status status = EMBER_OK;
  if (!struct_size_ok(call, "ember_tensor", out->size, sizeof(ember_tensor), &status)) return status;
  Result<EValue> value = method->method->output_value(index);
  if (!value.ok()) {
    return fail_error(value.error(), "%s: output %zu of '%s', which has %zu", call, index, method->method->name(),
                      method->method->num_outputs());
  }
  if (value->is_tensor()) {
    ember::c_api::view_of(value->as_tensor(), out);
    return EMBER_OK;
  }
  // A scalar: a rank-0 view of the handle's own 8 bytes for it.
  uint64_t* slot = &method->scalar_outputs[index];
  const size_t size = out->size;
  memset(out, 0, sizeof(ember_tensor));
  out->size = size;
  if (value->is_int()) {
    const int64_t v = value->as_int();
    memcpy(slot, &v, 8);
    out->dtype = EMBER_DTYPE_INT64;
  } else if (value->is_double()) {
    const double v = value->as_double();
    memcpy(slot, &v, 8);
    out->dtype = EMBER_DTYPE_FLOAT64;
  } else if (value->is_bool()) {
    *reinterpret_cast<uint8_t*>(slot) = value->as_bool() ? 1 : 0;
    out->dtype = EMBER_DTYPE_BOOL;
  } else {
    return fail(EMBER_INVALID_TYPE, "%s: output %zu of '%s' is neither a tensor nor a scalar", call, index,
                method->method->name());
  }
  out->data = slot;
  out->nbytes = out->dtype == EMBER_DTYPE_BOOL ? 1 : 8;
  return EMBER_OK;
}

}  // extern "C"
