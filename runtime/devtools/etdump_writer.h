// A recorded trace (BufferEventTracer's records) as an ETDump file (schema/etdump.fbs, ExecuTorch's "ED00"):
// one RunData per execute(), one ProfileEvent per instruction named after its operator, its instruction index as
// the debug handle. Host code: it builds with the flatbuffers library on the heap, after the runs. A device keeps
// only the raw records (heapless) and sends them to a host (the Cortex-M55 runner, through semihosting), where
// exir/raw_trace.py reads them.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "runtime/core/span.h"
#include "runtime/devtools/buffer_event_tracer.h"

namespace ember {

// Names operators by index (the method's operator table); returns null for an index it does not know.
struct OperatorNames {
  const void* context;
  // `*overload` is set to "" when the operator has none.
  const char* (*name)(const void* context, uint32_t op_index, const char** overload);
};

// The ETDump bytes (size-prefixed, identifier "ED00") of `records`, every run named `method` (suffixed with the
// dropped count when `dropped` is not 0, so readers see the trace is a prefix).
std::vector<uint8_t> write_etdump(ArrayRef<TraceRecord> records, size_t dropped, const char* method,
                                  const OperatorNames& names);

}  // namespace ember
