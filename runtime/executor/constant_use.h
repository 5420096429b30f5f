// Which of a method's constants it reads whole. A loader that maps the program can then bring exactly those pages
// in before the first run, and leave a table the method only gathers rows from (an LLM's embedding: 113 MB of
// SmolLM-135M in fp32, of which a forward reads a few rows) to be paged in by the rows it touches.
#pragma once

#include <stddef.h>

#include "runtime/core/error.h"
#include "runtime/core/external_data.h"
#include "runtime/executor/program.h"

namespace ember {

// Whether operator `name` (as the program spells it, e.g. "aten::embedding") reads only some rows of the tensor
// given as its first argument.
bool gathers_rows_of_first_argument(const char* name);

// Calls visit(data, nbytes, context) for each constant tensor an instruction of `method_name` reads, except a
// tensor that only row-gathering operators read as their first argument. A constant read by several instructions
// is visited once per read (the callers are idempotent: bringing pages in twice costs a lookup). NotFound when
// the program has no such method. External constants (kept in a .ptd) are visited with their bytes in `data` (the
// files the method is loaded with), and skipped without it or when a file does not hold them (load reports that).
Error for_each_constant_read_whole(const Program& program, const char* method_name,
                                   void (*visit)(const void* data, size_t nbytes, void* context), void* context,
                                   const ExternalData* data = nullptr);

}  // namespace ember
