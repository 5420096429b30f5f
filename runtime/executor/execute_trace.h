// The event tracer's hooks in Method's instruction loop (instruction_loop.h; runtime/devtools/event_tracer.h), as
// macros that are empty unless the runtime is built with EMBER_EVENT_TRACER.
#pragma once

#if EMBER_EVENT_TRACER
#include <stdint.h>

#include "runtime/platform/platform.h"
// The instruction loop is execute_steps(); execute() wraps it in a run event (method.cc, at its end).
#define EMBER_EXECUTE_LOOP execute_steps
#define EMBER_TRACE_INSTRUCTION_BEGIN(pc) \
  const size_t ember_traced_pc = (pc);    \
  const uint64_t ember_traced_start = tracer_ != nullptr ? ember_pal_ticks_ns() : 0;
#define EMBER_TRACE_INSTRUCTION_END() \
  if (tracer_ != nullptr) trace_instruction(ember_traced_pc, ember_traced_start);
#else
#define EMBER_EXECUTE_LOOP execute
#define EMBER_TRACE_INSTRUCTION_BEGIN(pc)
#define EMBER_TRACE_INSTRUCTION_END()
#endif
