#include "runtime/devtools/buffer_event_tracer.h"

#include <string.h>

#include "runtime/core/evalue.h"

namespace ember {

void BufferEventTracer::add(TraceKind kind, uint32_t chain, uint32_t instruction, uint32_t op_index, uint64_t start,
                            uint64_t end, uint8_t item) {
  if (used_ >= records_.size()) {
    ++dropped_;
    return;
  }
  TraceRecord& r = records_[used_++];
  r = TraceRecord{};
  r.start = start;
  r.end = end;
  r.instruction = instruction;
  r.op_index = op_index;
  r.chain = chain;
  r.kind = static_cast<uint8_t>(kind);
  r.run = static_cast<uint8_t>(runs_);
  r.pad[0] = item;
}

void BufferEventTracer::instruction(TraceKind kind, uint32_t chain, uint32_t instruction, uint32_t op_index,
                                    uint64_t start, uint64_t end) {
  add(kind, chain, instruction, op_index, start, end);
}

// A run's own record comes after its instructions' (it ends last); the next run's instructions get the next number.
void BufferEventTracer::run(uint64_t start, uint64_t end) {
  add(TraceKind::kRun, 0, kNoInstruction, kNoOperator, start, end);
  ++runs_;
}

void BufferEventTracer::allocation(uint32_t allocator, uint64_t bytes) {
  add(TraceKind::kAllocation, 0, kNoInstruction, allocator, bytes, bytes);
}

void BufferEventTracer::output(uint32_t chain, uint32_t instruction, uint32_t op_index, const EValue& value) {
  if (debug_.size() == 0) return;  // not in debug mode
  if (value.is_tensor()) {
    keep_tensor(chain, instruction, op_index, value.as_tensor(), 0);
  } else if (value.is_tensor_list()) {
    const TensorList list = value.as_tensor_list();
    // Past 254 items the item number would not fit its byte; no kernel returns that many tensors.
    for (size_t i = 0; i < list.size() && i < 254; ++i) {
      keep_tensor(chain, instruction, op_index, list[i], static_cast<uint8_t>(i + 1));
    }
  }
  // A prim op's Int is a shape, not a numeric result: nothing to keep.
}

namespace {
size_t round16(size_t n) { return (n + 15) & ~size_t{15}; }
}  // namespace

// The header, sizes and strides, then the bytes, each 16-byte aligned from the buffer's start; all or nothing.
void BufferEventTracer::keep_tensor(uint32_t chain, uint32_t instruction, uint32_t op_index, const Tensor& t,
                                    uint8_t item) {
  const size_t dims = static_cast<size_t>(t.dim());
  const size_t nbytes = t.const_data_ptr() != nullptr ? t.nbytes() : 0;
  const size_t head = round16(sizeof(OutputHeader) + 2 * sizeof(int32_t) * dims);
  const size_t room = debug_.size() - debug_used_;
  if (dims > 255 || used_ >= records_.size() || head > room || round16(nbytes) > room - head) {
    ++dropped_outputs_;
    return;
  }
  uint8_t* at = debug_.data() + debug_used_;
  OutputHeader h{};
  h.nbytes = nbytes;
  h.scalar_type = static_cast<uint8_t>(t.scalar_type());
  h.dim = static_cast<uint8_t>(dims);
  memcpy(at, &h, sizeof(h));
  if (dims != 0) {
    memcpy(at + sizeof(h), t.sizes().data(), sizeof(int32_t) * dims);
    memcpy(at + sizeof(h) + sizeof(int32_t) * dims, t.strides().data(), sizeof(int32_t) * dims);
  }
  if (nbytes != 0) memcpy(at + head, t.const_data_ptr(), nbytes);
  add(TraceKind::kOutput, chain, instruction, op_index, debug_used_, debug_used_ + head, item);
  debug_used_ += head + round16(nbytes);
}

}  // namespace ember
