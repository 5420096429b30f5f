#include "runtime/devtools/buffer_event_tracer.h"

namespace ember {

void BufferEventTracer::add(const TraceRecord& r) {
  if (used_ >= records_.size()) {
    ++dropped_;
    return;
  }
  records_[used_++] = r;
}

void BufferEventTracer::instruction(TraceKind kind, uint32_t chain, uint32_t instruction, uint32_t op_index,
                                    uint64_t start, uint64_t end) {
  TraceRecord r{};
  r.start = start;
  r.end = end;
  r.instruction = instruction;
  r.op_index = op_index;
  r.chain = chain;
  r.kind = static_cast<uint8_t>(kind);
  r.run = static_cast<uint8_t>(runs_);
  add(r);
}

// A run's own record comes after its instructions' (it ends last); the next run's instructions get the next number.
void BufferEventTracer::run(uint64_t start, uint64_t end) {
  TraceRecord r{};
  r.start = start;
  r.end = end;
  r.instruction = kNoInstruction;
  r.op_index = kNoOperator;
  r.kind = static_cast<uint8_t>(TraceKind::kRun);
  r.run = static_cast<uint8_t>(runs_);
  add(r);
  ++runs_;
}

}  // namespace ember
