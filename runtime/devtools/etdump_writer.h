// A recorded trace (BufferEventTracer's records) as an ETDump file (schema/etdump.fbs, ExecuTorch's "ED00"):
// one RunData per execute(), one ProfileEvent per instruction named after its operator, its instruction index as
// the debug handle. Host code: it builds with the flatbuffers library on the heap, after the runs. A device keeps
// only the raw records (heapless) and sends them to a host (the Cortex-M55 runner, through semihosting), where
// devtools/raw_trace.py reads them.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
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

// Which of the recorded events a file gets. Allocation events are opt-in: ExecuTorch 1.5.1's Inspector reads
// profile and debug events only and refuses a file with any other ("Unable to find populated event").
enum class EtdumpEvents { kProfile, kProfileAndAllocations };

// The ETDump bytes (size-prefixed, identifier "ED00") of `records`, every run named `method` (suffixed with the
// dropped count when `dropped` is not 0, so readers see the trace is a prefix). With allocations, each run lists
// the allocators its events name (RunData.allocators, indexed by allocator id: "method allocator", "temp
// allocator", "planned pool 1", ...). Output records (debug mode) become DebugEvents whose tensors point into
// `debug` (the tracer's debug_buffer(), which the caller saves beside the ETDump: ExecuTorch's Inspector takes it
// as debug_buffer_path).
std::vector<uint8_t> write_etdump(ArrayRef<TraceRecord> records, size_t dropped, const char* method,
                                  const OperatorNames& names, EtdumpEvents which = EtdumpEvents::kProfile,
                                  ArrayRef<uint8_t> debug = ArrayRef<uint8_t>());

// The name of allocator `id` (event_tracer.h's kMethodAllocator...), as the writer and devtools/raw_trace.py give it.
std::string allocator_name(uint32_t id);

}  // namespace ember
