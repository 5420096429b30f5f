// The structural check of a program, run once by Program::load after the flatbuffer verifier. The flatbuffer
// verifier proves every offset stays inside the buffer, but not that an optional field is present, that an index
// names an existing value, or that a planned range fits its pool: a verified file can still hold a Tensor value
// with no Tensor table. This pass checks every field the runtime reads, in one place, so that MethodMeta,
// Method::load and execute() read the flatbuffer without checking again.
//
// When it returns Ok, these hold for every execution plan:
// - the plan has a name and a value table; every value's union table is present for its type; unknown types
//   are refused;
// - a Tensor has a scalar type with storage, at most kMaxTensorDim sizes, all non-negative, a dim order of the
//   same length (TensorImpl::make checks that it is a permutation, at load), storage offset 0, and a byte count
//   that fits size_t; a planned tensor names an existing pool (1..N) and its bytes fit inside that pool; a
//   constant's bytes fit inside the constant segment; an initial value's bytes fit inside its mutable segment;
// - every list item, input, output, instruction argument, move, jump condition and free names an existing value
//   of the kind it needs (Int for int lists, Tensor for tensor lists, inputs, outputs and frees, Bool for jump
//   conditions); a jump destination lies in [0, number of instructions];
// - every chain and instruction table is present; a kernel call's operator exists and has a name; a delegate
//   call's delegate exists;
// - every planned pool size is non-negative and fits size_t (a 32-bit target refuses a 5 GB pool here, naming it).
// Absent optional vectors (sizes, items, args, inputs, ...) mean empty, and readers treat them so.
#pragma once

#include <stdint.h>

#include "runtime/core/error.h"

namespace ember_pte {
struct Program;
}

namespace ember {

// `segment_data_size` is the number of bytes after the program proper that the segments index into.
Error verify_program_structure(const ember_pte::Program* program, uint64_t segment_data_size);

}  // namespace ember
