// Reading a verified program's flatbuffer (see program_verifier.h): absent optional vectors and strings read as
// empty. Internal to runtime/executor.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "schema/program_generated.h"
#include "runtime/core/span.h"

namespace ember {
namespace pte {

template <typename V>
size_t count(const V* vector) {
  return vector != nullptr ? vector->size() : 0;
}

template <typename V>
auto at(const V* vector, size_t i) -> decltype(vector->Get(0)) {
  return vector->Get(static_cast<flatbuffers::uoffset_t>(i));
}

inline const char* str(const flatbuffers::String* s) { return s != nullptr ? s->c_str() : ""; }

inline size_t tensor_dim(const ember_pte::Tensor* t) { return count(t->sizes()); }

inline ArrayRef<int32_t> tensor_sizes(const ember_pte::Tensor* t) {
  return {t->sizes() != nullptr ? t->sizes()->data() : nullptr, tensor_dim(t)};
}

// A constant whose bytes live in an external data file (.ptd), found by its fully qualified name at load. Its
// data_buffer_idx means nothing to this runtime (ExecuTorch numbers its external buffers there).
inline bool is_external(const ember_pte::Tensor* t) {
  const auto* e = t->extra_tensor_info();
  return e != nullptr && e->location() == ember_pte::TensorDataLocation::EXTERNAL;
}

// Byte offset of a planned tensor inside its pool.
inline uint64_t planned_offset(const ember_pte::AllocationDetails* a) {
  return static_cast<uint64_t>(a->memory_offset_high()) << 32 | a->memory_offset_low();
}

// Planned pools, memory id 1 first: non_const_buffer_sizes[0] stands for the constants and is not planned.
inline size_t num_pools(const ember_pte::ExecutionPlan* plan) {
  const size_t n = count(plan->non_const_buffer_sizes());
  return n > 1 ? n - 1 : 0;
}

// A method's instructions: its first chain's (Ember runs single-chain methods; load refuses others).
inline const flatbuffers::Vector<flatbuffers::Offset<ember_pte::Instruction>>* instructions(
    const ember_pte::ExecutionPlan* plan) {
  return count(plan->chains()) > 0 ? at(plan->chains(), 0)->instructions() : nullptr;
}

}  // namespace pte
}  // namespace ember
