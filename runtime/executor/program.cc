#include "runtime/executor/program.h"

#include <string.h>

#include "exir/schema/program_generated.h"
#include "runtime/core/log.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"

namespace ember {

namespace {

constexpr char kIdentifier[4] = {'E', 'T', '1', '2'};
constexpr uint32_t kExtendedHeaderOffset = 8;
constexpr uint32_t kExtendedHeaderMinLength = 32;

uint32_t read_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}
uint64_t read_u64(const uint8_t* p) { return static_cast<uint64_t>(read_u32(p)) | static_cast<uint64_t>(read_u32(p + 4)) << 32; }

}  // namespace

Result<Program> Program::load(DataLoader* loader, Verification verification) {
  EMBER_CHECK_OR_RETURN_ERROR(loader != nullptr, InvalidArgument, "Program::load needs a DataLoader");
  EMBER_TRY_ASSIGN(file_size, loader->size());
  EMBER_CHECK_OR_RETURN_ERROR(file_size >= 8, InvalidProgram,
                              "program is %llu bytes; a .pte starts with at least 8 (root offset, identifier)",
                              static_cast<unsigned long long>(file_size));
  // The head first: the identifier and extended header say how much of the file is the program proper.
  const uint64_t head_size = file_size < kHeaderBytes ? file_size : kHeaderBytes;
  uint64_t program_size = file_size, segment_base = file_size, segment_size = 0;
  {
    EMBER_TRY_ASSIGN(head, loader->load(0, head_size, SegmentInfo{SegmentInfo::Type::Program, 0}));
    const uint8_t* h = static_cast<const uint8_t*>(head.data());
    EMBER_CHECK_OR_RETURN_ERROR(memcmp(h + 4, kIdentifier, 4) == 0, InvalidProgram,
                                "not a .pte: identifier at byte 4 is '%c%c%c%c' (0x%02x%02x%02x%02x), expected 'ET12'",
                                h[4] >= 32 && h[4] < 127 ? h[4] : '?', h[5] >= 32 && h[5] < 127 ? h[5] : '?',
                                h[6] >= 32 && h[6] < 127 ? h[6] : '?', h[7] >= 32 && h[7] < 127 ? h[7] : '?', h[4],
                                h[5], h[6], h[7]);
    if (head_size >= kExtendedHeaderOffset + kExtendedHeaderMinLength &&
        memcmp(h + kExtendedHeaderOffset, "eh00", 4) == 0) {
      const uint32_t length = read_u32(h + kExtendedHeaderOffset + 4);
      EMBER_CHECK_OR_RETURN_ERROR(length >= kExtendedHeaderMinLength, InvalidProgram,
                                  "extended header length %u is below the %u bytes it must hold",
                                  static_cast<unsigned>(length), static_cast<unsigned>(kExtendedHeaderMinLength));
      program_size = read_u64(h + 16);
      segment_base = read_u64(h + 24);
      segment_size = read_u64(h + 32);
      EMBER_CHECK_OR_RETURN_ERROR(program_size <= file_size && program_size >= 8, InvalidProgram,
                                  "truncated: the header says the program is %llu bytes, the file has %llu",
                                  static_cast<unsigned long long>(program_size),
                                  static_cast<unsigned long long>(file_size));
      EMBER_CHECK_OR_RETURN_ERROR(segment_base >= program_size && segment_base <= file_size &&
                                      segment_size <= file_size - segment_base,
                                  InvalidProgram,
                                  "truncated: segment data [%llu, %llu + %llu) does not fit the file's %llu bytes",
                                  static_cast<unsigned long long>(segment_base),
                                  static_cast<unsigned long long>(segment_base),
                                  static_cast<unsigned long long>(segment_size),
                                  static_cast<unsigned long long>(file_size));
    }
  }
  EMBER_TRY_ASSIGN(data, loader->load(0, program_size, SegmentInfo{SegmentInfo::Type::Program, 0}));
  if (verification == Verification::InternalConsistency) {
    flatbuffers::Verifier::Options options;
    options.max_depth = 64;
    options.max_tables = 10000000;
    flatbuffers::Verifier verifier(static_cast<const uint8_t*>(data.data()), static_cast<size_t>(program_size),
                                   options);
    EMBER_CHECK_OR_RETURN_ERROR(ember_pte::VerifyProgramBuffer(verifier), InvalidProgram,
                                "the program's flatbuffer failed verification (%llu bytes): corrupt or truncated",
                                static_cast<unsigned long long>(program_size));
  }
  const ember_pte::Program* fb = ember_pte::GetProgram(data.data());
  Program program(loader, static_cast<FreeableBuffer&&>(data), fb, segment_base, segment_size);
  EMBER_TRY(program.check_segments());
  return program;
}

Error Program::check_segments() const {
  const auto* segments = program_->segments();
  const size_t n = segments ? segments->size() : 0;
  for (size_t i = 0; i < n; ++i) {
    const auto* s = segments->Get(static_cast<flatbuffers::uoffset_t>(i));
    EMBER_CHECK_OR_RETURN_ERROR(s != nullptr && s->offset() <= segment_size_ && s->size() <= segment_size_ - s->offset(),
                                InvalidProgram, "segment %zu [%llu, +%llu) lies outside the %llu bytes of segment data",
                                i, static_cast<unsigned long long>(s ? s->offset() : 0),
                                static_cast<unsigned long long>(s ? s->size() : 0),
                                static_cast<unsigned long long>(segment_size_));
  }
  const auto* cs = program_->constant_segment();
  if (cs != nullptr && cs->offsets() != nullptr && cs->offsets()->size() > 1) {
    EMBER_CHECK_OR_RETURN_ERROR(cs->segment_index() < n, InvalidProgram,
                                "constant segment index %u, but the program has %zu segments",
                                static_cast<unsigned>(cs->segment_index()), n);
  }
  EMBER_CHECK_OR_RETURN_ERROR(program_->execution_plan() != nullptr, InvalidProgram, "the program has no methods");
  return Error::Ok;
}

size_t Program::num_methods() const { return program_->execution_plan()->size(); }

Result<const char*> Program::get_method_name(size_t index) const {
  EMBER_CHECK_OR_RETURN_ERROR(index < num_methods(), InvalidArgument, "method index %zu out of range (%zu methods)",
                              index, num_methods());
  const auto* plan = program_->execution_plan()->Get(static_cast<flatbuffers::uoffset_t>(index));
  EMBER_CHECK_OR_RETURN_ERROR(plan != nullptr && plan->name() != nullptr, InvalidProgram, "method %zu has no name",
                              index);
  return plan->name()->c_str();
}

Result<const ember_pte::ExecutionPlan*> Program::find_plan(const char* method_name) const {
  const auto* plans = program_->execution_plan();
  for (flatbuffers::uoffset_t i = 0; i < plans->size(); ++i) {
    const auto* plan = plans->Get(i);
    if (plan != nullptr && plan->name() != nullptr && strcmp(plan->name()->c_str(), method_name) == 0) return plan;
  }
  EMBER_LOG(ERROR, "the program has no method '%s' (it has %u)", method_name, static_cast<unsigned>(plans->size()));
  return Error::NotFound;
}

Result<MethodMeta> Program::method_meta(const char* method_name) const {
  EMBER_TRY_ASSIGN(plan, find_plan(method_name));
  return MethodMeta::make(plan);
}

Result<Method> Program::load_method(const char* method_name, MemoryManager* memory) const {
  EMBER_TRY_ASSIGN(plan, find_plan(method_name));
  return Method::load(this, plan, memory);
}

Result<const void*> Program::constant_data(uint32_t index, size_t nbytes) const {
  const auto* cs = program_->constant_segment();
  const size_t entries = cs && cs->offsets() ? cs->offsets()->size() : 0;
  EMBER_CHECK_OR_RETURN_ERROR(index > 0 && index < entries, InvalidProgram,
                              "constant %u does not exist (the constant segment has %zu entries)", static_cast<unsigned>(index),
                              entries ? entries - 1 : 0);
  if (!constants_loaded_) {
    const auto* seg = program_->segments()->Get(cs->segment_index());
    EMBER_TRY_ASSIGN(buffer, loader_->load(segment_base_ + seg->offset(), seg->size(),
                                           SegmentInfo{SegmentInfo::Type::Constant, cs->segment_index()}));
    constants_ = static_cast<FreeableBuffer&&>(buffer);
    constants_loaded_ = true;
  }
  const uint64_t offset = cs->offsets()->Get(index);
  EMBER_CHECK_OR_RETURN_ERROR(offset <= constants_.size() && nbytes <= constants_.size() - offset, InvalidProgram,
                              "constant %u needs bytes [%llu, +%zu) of a %zu-byte constant segment",
                              static_cast<unsigned>(index),
                              static_cast<unsigned long long>(offset), nbytes, constants_.size());
  return static_cast<const void*>(static_cast<const uint8_t*>(constants_.data()) + offset);
}

Error Program::load_initial_value(uint32_t segment_list, uint32_t index, size_t nbytes, void* destination) const {
  const auto* lists = program_->mutable_data_segments();
  EMBER_CHECK_OR_RETURN_ERROR(lists != nullptr && segment_list < lists->size(), InvalidProgram,
                              "initial value list %u does not exist (%u lists)", static_cast<unsigned>(segment_list),
                              static_cast<unsigned>(lists ? lists->size() : 0u));
  const auto* list = lists->Get(segment_list);
  const size_t entries = list->offsets() ? list->offsets()->size() : 0;
  EMBER_CHECK_OR_RETURN_ERROR(index > 0 && index < entries, InvalidProgram,
                              "initial value %u does not exist (%zu entries)", static_cast<unsigned>(index),
                              entries ? entries - 1 : 0);
  const auto* segments = program_->segments();
  EMBER_CHECK_OR_RETURN_ERROR(segments != nullptr && list->segment_index() < segments->size(), InvalidProgram,
                              "initial values point at segment %u, which does not exist",
                              static_cast<unsigned>(list->segment_index()));
  const auto* seg = segments->Get(list->segment_index());
  const uint64_t offset = list->offsets()->Get(index);
  EMBER_CHECK_OR_RETURN_ERROR(offset <= seg->size() && nbytes <= seg->size() - offset, InvalidProgram,
                              "initial value %u needs bytes [%llu, +%zu) of a %llu-byte segment",
                              static_cast<unsigned>(index),
                              static_cast<unsigned long long>(offset), nbytes,
                              static_cast<unsigned long long>(seg->size()));
  return loader_->load_into(segment_base_ + seg->offset() + offset, nbytes,
                            SegmentInfo{SegmentInfo::Type::Mutable, list->segment_index()}, destination);
}

}  // namespace ember
