#include "runtime/executor/program.h"

#include <string.h>

#include "runtime/core/log.h"
#include "runtime/executor/delegate_support.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/plan_access.h"
#include "runtime/executor/program_verifier.h"
#include "schema/extended_header.h"
#include "schema/format_window.h"
#include "schema/program_schema.h"

namespace ember {

namespace {

// The constant segment's bytes, or an empty buffer when the program has no constants (an offset table of one
// entry or none: entry 0 is unused). The verifier proved the segment lies inside the file.
Result<FreeableBuffer> load_constants(DataLoader* loader, const ember_pte::Program* program, uint64_t segment_base) {
  const auto* cs = program->constant_segment();
  if (cs == nullptr || pte::count(cs->offsets()) <= 1) return FreeableBuffer();
  const auto* seg = pte::at(program->segments(), cs->segment_index());
  EMBER_TRY_ASSIGN(buffer, loader->load(segment_base + seg->offset(), seg->size(),
                                        SegmentInfo{SegmentInfo::Type::Constant, cs->segment_index()}));
  // Constants are read in place: an 8-byte-aligned start keeps every element aligned (the verifier checked each
  // offset against its element size). A segment at an odd file offset inside a user's buffer would break that.
  EMBER_CHECK_OR_RETURN_ERROR(reinterpret_cast<uintptr_t>(buffer.data()) % alignof(int64_t) == 0, InvalidProgram,
                              "the constant segment at %p (file offset %llu) is not 8-byte aligned", buffer.data(),
                              static_cast<unsigned long long>(segment_base + seg->offset()));
  return static_cast<FreeableBuffer&&>(buffer);
}

}  // namespace

Result<Program> Program::load(DataLoader* loader, Verification verification) {
  EMBER_CHECK_OR_RETURN_ERROR(loader != nullptr, InvalidArgument, "Program::load needs a DataLoader");
  EMBER_TRY_ASSIGN(file_size, loader->size());
  EMBER_CHECK_OR_RETURN_ERROR(file_size >= 8, InvalidProgram,
                              "program is %llu bytes; a .pte starts with at least 8 (root offset, identifier)",
                              static_cast<unsigned long long>(file_size));
  // The head first: the identifier and extended header say how much of the file is the program proper.
  const uint64_t head_size = file_size < extended_header::kHeadBytes ? file_size : extended_header::kHeadBytes;
  ExtendedHeader header;
  {
    EMBER_TRY_ASSIGN(head, loader->load(0, head_size, SegmentInfo{SegmentInfo::Type::Program, 0}));
    const uint8_t* h = static_cast<const uint8_t*>(head.data());
    EMBER_TRY(check_format_identifier(format_versions::kPte, h + 4, Error::InvalidProgram));
    EMBER_TRY_ASSIGN(parsed, parse_extended_header(h, static_cast<size_t>(head_size), file_size));
    header = parsed;
  }
  const uint64_t program_size = header.program_size;
  EMBER_TRY_ASSIGN(data, loader->load(0, program_size, SegmentInfo{SegmentInfo::Type::Program, 0}));
  // The flatbuffer holds 8-byte scalars at 8-byte offsets from its start, so its start must be 8-byte aligned too.
  EMBER_CHECK_OR_RETURN_ERROR(reinterpret_cast<uintptr_t>(data.data()) % alignof(int64_t) == 0, InvalidArgument,
                              "the program's bytes at %p are not 8-byte aligned (give the loader an alignas(16) "
                              "buffer)",
                              data.data());
  if (verification == Verification::InternalConsistency) {
    flatbuffers::Verifier::Options options;
    options.max_depth = 64;
    options.max_tables = 10000000;
    const uint8_t* bytes = static_cast<const uint8_t*>(data.data());
    flatbuffers::Verifier verifier(bytes, static_cast<size_t>(program_size), options);
    // What ember_pte::VerifyProgramBuffer checks, walked from program.fbs as data rather than flatc's per-table code.
    EMBER_CHECK_OR_RETURN_ERROR(verify_flatbuffer(ember_pte::program_schema(), verifier, bytes,
                                                  static_cast<size_t>(program_size), ember_pte::ProgramIdentifier()),
                                InvalidProgram,
                                "the program's flatbuffer failed verification (%llu bytes): corrupt or truncated",
                                static_cast<unsigned long long>(program_size));
  }
  const ember_pte::Program* fb = ember_pte::GetProgram(data.data());
  // Before anything reads the tables: a newer version may give a field a meaning this runtime does not know.
  EMBER_TRY(check_format_version(format_versions::kPte, fb->version()));
  // Structure is checked whatever the verification level: it is cheap next to the flatbuffer verifier, and
  // everything after this point reads the flatbuffer without checking again.
  EMBER_TRY(verify_program_structure(fb, header.segment_data_size));
  EMBER_TRY_ASSIGN(constants, load_constants(loader, fb, header.segment_base_offset));
  return Program(loader, static_cast<FreeableBuffer&&>(data), fb, header.segment_base_offset,
                 static_cast<FreeableBuffer&&>(constants));
}

size_t Program::num_methods() const { return pte::count(program_->execution_plan()); }

Result<const char*> Program::get_method_name(size_t index) const {
  EMBER_CHECK_OR_RETURN_ERROR(index < num_methods(), InvalidArgument, "method index %zu out of range (%zu methods)",
                              index, num_methods());
  return pte::at(program_->execution_plan(), index)->name()->c_str();
}

Result<const ember_pte::ExecutionPlan*> Program::find_plan(const char* method_name) const {
  EMBER_CHECK_OR_RETURN_ERROR(method_name != nullptr, InvalidArgument, "a method name is needed (got null)");
  const auto* plans = program_->execution_plan();
  for (flatbuffers::uoffset_t i = 0; i < plans->size(); ++i) {
    const auto* plan = plans->Get(i);
    // Through pte::str: gcc 12 for Arm takes c_str() of a flatbuffers String as a read past a 4-byte object.
    if (strcmp(pte::str(plan->name()), method_name) == 0) return plan;
  }
  EMBER_LOG(ERROR, "the program has no method '%s' (it has %u)", method_name, static_cast<unsigned>(plans->size()));
  return Error::NotFound;
}

Result<MethodMeta> Program::method_meta(const char* method_name) const {
  EMBER_TRY_ASSIGN(plan, find_plan(method_name));
#ifdef EMBER_DELEGATES
  // Through the delegate support: with backends, their records and state are method allocator bytes too.
  return delegate_support()->method_meta(this, plan);
#else
  return MethodMeta::make(plan);
#endif
}

Result<Method> Program::load_method(const char* method_name, MemoryManager* memory, const ExternalData* data) const {
  EMBER_TRY_ASSIGN(plan, find_plan(method_name));
  return Method::load(this, plan, memory, data);
}

Result<const void*> Program::constant_data(uint32_t index, size_t nbytes) const {
  // The verifier proved index and bytes lie inside the constant segment as the program describes it; what the
  // loader handed back is checked here.
  const uint64_t offset = pte::at(program_->constant_segment()->offsets(), index);
  EMBER_CHECK_OR_RETURN_ERROR(offset <= constants_.size() && nbytes <= constants_.size() - offset, InvalidProgram,
                              "constant %u needs bytes [%llu, +%zu) of the %zu bytes the loader returned",
                              static_cast<unsigned>(index), static_cast<unsigned long long>(offset), nbytes,
                              constants_.size());
  return static_cast<const void*>(static_cast<const uint8_t*>(constants_.data()) + offset);
}

Error Program::load_initial_value(uint32_t segment_list, uint32_t index, size_t nbytes, void* destination) const {
  // Ranges proved by the verifier (program_verifier.h).
  const auto* list = pte::at(program_->mutable_data_segments(), segment_list);
  const auto* seg = pte::at(program_->segments(), list->segment_index());
  const uint64_t offset = pte::at(list->offsets(), index);
  return loader_->load_into(segment_base_ + seg->offset() + offset, nbytes,
                            SegmentInfo{SegmentInfo::Type::Mutable, list->segment_index()}, destination);
}

}  // namespace ember
