// An EventTracer over caller memory: fixed-size records, no heap. When the buffer is full it stops recording and
// counts what it dropped, so a long run on a small device keeps its first events and says how many it lost.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runtime/core/span.h"
#include "runtime/devtools/event_tracer.h"

namespace ember {

class Tensor;

// One event. 32 bytes; a 100-instruction model with one run takes 3.2 KB. An allocation (kind kAllocation) keeps
// its allocator in op_index and its byte count in start and end. An output (kind kOutput) keeps the offsets of its
// OutputHeader (start) and its bytes (end) in the debug buffer, and in pad[0] 0 for a Tensor or 1 + i for item i
// of a TensorList.
struct TraceRecord {
  uint64_t start;
  uint64_t end;
  uint32_t instruction;  // kNoInstruction for a run or an allocation
  uint32_t op_index;     // kNoOperator unless kind is kKernel; the allocator of an allocation
  uint32_t chain;
  uint8_t kind;  // TraceKind
  uint8_t run;   // which execute() since reset(), modulo 256: the writer splits runs on it
  uint8_t pad[2];
};
static_assert(sizeof(TraceRecord) == 32, "TraceRecord's size is part of the raw trace format (semihosted dumps)");

// What precedes an output's bytes in the debug buffer: the tensor as ETDump describes it. Then `dim` sizes and
// `dim` strides (int32 each), padding to 16 bytes, the `nbytes` bytes as the tensor holds them, padding to 16.
struct OutputHeader {
  uint64_t nbytes;
  uint8_t scalar_type;
  uint8_t dim;
  uint8_t pad[6];
};
static_assert(sizeof(OutputHeader) == 16, "OutputHeader is read back by etdump_writer.cc");

class BufferEventTracer final : public EventTracer {
 public:
  // `records` must outlive the tracer; its size bounds what is kept. With a non-empty `debug` buffer the tracer is
  // in debug mode: it also keeps each kernel's output tensors there, as long as they fit.
  explicit BufferEventTracer(Span<TraceRecord> records, Span<uint8_t> debug = Span<uint8_t>())
      : records_(records), debug_(debug) {}

  void instruction(TraceKind kind, uint32_t chain, uint32_t instruction, uint32_t op_index, uint64_t start,
                   uint64_t end) override;
  void run(uint64_t start, uint64_t end) override;
  void allocation(uint32_t allocator, uint64_t bytes) override;
  void output(uint32_t chain, uint32_t instruction, uint32_t op_index, const EValue& value) override;

  // Forgets every record (the buffer is reused) and the dropped count.
  void reset() {
    used_ = 0;
    dropped_ = 0;
    runs_ = 0;
    debug_used_ = 0;
    dropped_outputs_ = 0;
  }

  ArrayRef<TraceRecord> records() const { return ArrayRef<TraceRecord>(records_.data(), used_); }
  // Events that did not fit. Non-zero means the trace is a prefix of the run; tools print it.
  size_t dropped() const { return dropped_; }
  size_t capacity() const { return records_.size(); }
  // The debug buffer's filled prefix (what the records' output offsets point into), and the output tensors that
  // did not fit in it (their records are not kept either).
  ArrayRef<uint8_t> debug_buffer() const { return ArrayRef<uint8_t>(debug_.data(), debug_used_); }
  size_t dropped_outputs() const { return dropped_outputs_; }

 private:
  void add(TraceKind kind, uint32_t chain, uint32_t instruction, uint32_t op_index, uint64_t start, uint64_t end,
           uint8_t item = 0);
  void keep_tensor(uint32_t chain, uint32_t instruction, uint32_t op_index, const Tensor& t, uint8_t item);

  Span<TraceRecord> records_;
  Span<uint8_t> debug_;
  size_t debug_used_ = 0;
  size_t dropped_outputs_ = 0;
  size_t used_ = 0;
  size_t dropped_ = 0;
  uint32_t runs_ = 0;
};

}  // namespace ember
