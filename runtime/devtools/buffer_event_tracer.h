// An EventTracer over caller memory: fixed-size records, no heap. When the buffer is full it stops recording and
// counts what it dropped, so a long run on a small device keeps its first events and says how many it lost.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/span.h"
#include "runtime/devtools/event_tracer.h"

namespace ember {

// One timed event. 32 bytes; a 100-instruction model with one run takes 3.2 KB.
struct TraceRecord {
  uint64_t start;
  uint64_t end;
  uint32_t instruction;  // kNoInstruction for a run
  uint32_t op_index;     // kNoOperator unless kind is kKernel
  uint32_t chain;
  uint8_t kind;  // TraceKind
  uint8_t run;   // which execute() since reset(), modulo 256: the writer splits runs on it
  uint8_t pad[2];
};
static_assert(sizeof(TraceRecord) == 32, "TraceRecord's size is part of the raw trace format (semihosted dumps)");

class BufferEventTracer final : public EventTracer {
 public:
  // `records` must outlive the tracer; its size bounds what is kept.
  explicit BufferEventTracer(Span<TraceRecord> records) : records_(records) {}

  void instruction(TraceKind kind, uint32_t chain, uint32_t instruction, uint32_t op_index, uint64_t start,
                   uint64_t end) override;
  void run(uint64_t start, uint64_t end) override;

  // Forgets every record (the buffer is reused) and the dropped count.
  void reset() {
    used_ = 0;
    dropped_ = 0;
    runs_ = 0;
  }

  ArrayRef<TraceRecord> records() const { return ArrayRef<TraceRecord>(records_.data(), used_); }
  // Events that did not fit. Non-zero means the trace is a prefix of the run; tools print it.
  size_t dropped() const { return dropped_; }
  size_t capacity() const { return records_.size(); }

 private:
  void add(const TraceRecord& r);

  Span<TraceRecord> records_;
  size_t used_ = 0;
  size_t dropped_ = 0;
  uint32_t runs_ = 0;
};

}  // namespace ember
