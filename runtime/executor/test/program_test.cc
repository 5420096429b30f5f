// Program::load and the structural verifier (program_verifier.h), one hand-built program per refusal site.
#include "runtime/executor/program.h"

#include <string.h>

#include "gtest/gtest.h"
#include "runtime/core/test/recording_pal.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/test/test_program.h"
#include "schema/format_versions.h"

namespace ember {
namespace {

namespace fb = ember_pte_obj;
using testing::base_program;
using testing::forward;
using testing::serialize;
using testing::tensor;
using testing::two_segments;
using testing::with_initial_value;

// The error Program::load gives for `bytes` (Ok if it loads), with the log line kept for the message check.
Error load_error(const std::vector<uint8_t>& bytes) {
  ember::testing::clear_log();
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> p = Program::load(&loader);
  return p.ok() ? Error::Ok : p.error();
}

#define EXPECT_REFUSED(bytes, code, text)                                                                         \
  do {                                                                                                            \
    EXPECT_EQ(load_error(bytes), Error::code);                                                                    \
    EXPECT_NE(ember::testing::last_log().find(text), std::string::npos) << "log: " << ember::testing::last_log(); \
  } while (0)

TEST(ProgramTest, BaseProgramLoads) {
  auto p = base_program();
  std::vector<uint8_t> bytes = serialize(*p);
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok());
  EXPECT_EQ(program->num_methods(), 1u);
  EXPECT_STREQ(program->get_method_name(0).get(), "forward");
}

TEST(ProgramTest, NullLoader) { EXPECT_EQ(Program::load(nullptr).error(), Error::InvalidArgument); }

TEST(ProgramTest, ShorterThanAnIdentifier) { EXPECT_REFUSED(std::vector<uint8_t>(7), InvalidProgram, "7 bytes"); }

TEST(ProgramTest, WrongIdentifier) {
  std::vector<uint8_t> bytes = serialize(*base_program());
  memcpy(bytes.data() + 4, "TFL3", 4);
  EXPECT_REFUSED(bytes, InvalidProgram, "not a .pte: identifier at byte 4 is 'TFL3' (54464c33), expected 'ET12'");
}

// Another ExecuTorch format version is named, newer or older, with the window this runtime reads.
TEST(ProgramTest, OtherExecuTorchFormatRefusedByName) {
  std::vector<uint8_t> bytes = serialize(*base_program());
  memcpy(bytes.data() + 4, "ET13", 4);
  EXPECT_REFUSED(bytes, NotSupported,
                 "the .pte was written in a newer ExecuTorch format, 'ET13'; Ember reads ET12 with Program.version "
                 "0..0");
  memcpy(bytes.data() + 4, "ET11", 4);
  EXPECT_REFUSED(bytes, NotSupported, "the .pte was written in an older ExecuTorch format, 'ET11'");
}

TEST(ProgramTest, NewerProgramVersionRefusedByName) {
  auto p = base_program();
  p->version = format_versions::kPte.max_version + 1;
  EXPECT_REFUSED(serialize(*p), NotSupported,
                 "the .pte has Program.version 1, newer than Ember reads: ET12 with Program.version 0..0");
}

// A newer writer may append header fields and grow `length`: they are skipped, and the program still loads.
TEST(ProgramTest, LongerExtendedHeaderLoads) {
  auto p = base_program();
  std::vector<uint8_t> bytes = serialize(*p);
  bytes[extended_header::kLengthOffset] = static_cast<uint8_t>(extended_header::kLength + 8);
  EXPECT_EQ(load_error(bytes), Error::Ok) << ember::testing::last_log();
}

TEST(ProgramTest, ExtendedHeaderTooShort) {
  std::vector<uint8_t> bytes = serialize(*base_program());
  bytes[12] = 8;
  EXPECT_REFUSED(bytes, InvalidProgram, "extended header length 8");
}

TEST(ProgramTest, ProgramSizeBeyondFile) {
  std::vector<uint8_t> bytes = serialize(*base_program());
  bytes[16] = 0xff, bytes[17] = 0xff, bytes[18] = 0xff;
  EXPECT_REFUSED(bytes, InvalidProgram, "truncated: the header says");
}

TEST(ProgramTest, SegmentDataBeyondFile) {
  std::vector<uint8_t> bytes = serialize(*base_program());
  bytes.resize(bytes.size() - 4);  // the header still claims 16 bytes of segment data
  EXPECT_REFUSED(bytes, InvalidProgram, "segment data");
}

TEST(ProgramTest, FlatbufferVerifierRejects) {
  std::vector<uint8_t> bytes = serialize(*base_program());
  bytes[0] = 0xf0, bytes[1] = 0xff;  // root offset past the end
  EXPECT_REFUSED(bytes, InvalidProgram, "failed verification");
}

TEST(ProgramTest, MethodNameIndexOutOfRange) {
  std::vector<uint8_t> bytes = serialize(*base_program());
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok());
  EXPECT_EQ(program->get_method_name(1).error(), Error::InvalidArgument);
  EXPECT_EQ(program->method_meta("decode").error(), Error::NotFound);
  EXPECT_NE(ember::testing::last_log().find("no method 'decode'"), std::string::npos);
  EXPECT_EQ(program->method_meta(nullptr).error(), Error::InvalidArgument);
}

// Flatbuffers read 8-byte scalars in place: the program's bytes must start 8-byte aligned.
TEST(ProgramTest, ProgramBytesMisaligned) {
  const std::vector<uint8_t> bytes = serialize(*base_program());
  std::vector<uint8_t> shifted(bytes.size() + 16);
  uint8_t* start = shifted.data() + (8 - reinterpret_cast<uintptr_t>(shifted.data()) % 8) % 8 + 1;
  memcpy(start, bytes.data(), bytes.size());
  ember::testing::clear_log();
  BufferDataLoader loader(start, bytes.size());
  EXPECT_EQ(Program::load(&loader).error(), Error::InvalidArgument);
  EXPECT_NE(ember::testing::last_log().find("are not 8-byte aligned"), std::string::npos) << ember::testing::last_log();
}

// Constants are read in place too: a constant segment at an offset that is not a multiple of 8 is refused when
// the program loads its constants, with the program (the verifier checks the segment lies inside the file, not its
// alignment).
TEST(ProgramTest, ConstantSegmentMisaligned) {
  auto p = base_program();
  p->segments[0]->offset = 4;
  std::vector<uint8_t> data(4, 0);
  const std::vector<uint8_t> w = testing::constant_segment_data();
  data.insert(data.end(), w.begin(), w.end());
  data.resize(32, 0);
  const std::vector<uint8_t> bytes = serialize(*p, data);
  BufferDataLoader loader(bytes.data(), bytes.size());
  ember::testing::clear_log();
  EXPECT_EQ(Program::load(&loader).error(), Error::InvalidProgram);
  EXPECT_NE(ember::testing::last_log().find("is not 8-byte aligned"), std::string::npos) << ember::testing::last_log();
}

// --- the verifier: program level -------------------------------------------------------------------------

TEST(VerifierTest, SegmentOutsideSegmentData) {
  auto p = base_program();
  p->segments[0]->size = 64;
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "segment 0 [0, +64) lies outside the 16 bytes");
}

TEST(VerifierTest, ConstantSegmentIndexOutOfRange) {
  auto p = base_program();
  p->constant_segment->segment_index = 3;
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "constant segment index 3");
}

TEST(VerifierTest, NoMethods) {
  auto p = base_program();
  p->execution_plan.clear();
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "no methods");
}

// --- the verifier: plan level ----------------------------------------------------------------------------

TEST(VerifierTest, MethodWithoutName) {
  auto p = base_program();
  forward(*p).name.clear();
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "method 0 has no name");
}

TEST(VerifierTest, NoValueTable) {
  auto p = base_program();
  forward(*p).values.clear();
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "has no value table");
}

TEST(VerifierTest, NegativePool) {
  auto p = base_program();
  forward(*p).non_const_buffer_sizes[1] = -5;
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "planned pool 1 has size -5");
}

TEST(VerifierTest, UnknownValueKind) {
  auto p = base_program();
  // The object API cannot write an unknown union tag, so patch one in after packing: the kNull value's tag byte.
  forward(*p).values[testing::kNull]->val.type = fb::KernelTypes::Null;
  std::vector<uint8_t> bytes = serialize(*p);
  BufferDataLoader loader(bytes.data(), bytes.size());
  ASSERT_TRUE(Program::load(&loader).ok());
  const fb::Program* root = fb::GetProgram(bytes.data());
  auto* v = const_cast<fb::EValue*>(root->execution_plan()->Get(0)->values()->Get(testing::kNull));
  // The generated API has no mutator for a union's tag; the table's own does.
  ASSERT_TRUE(reinterpret_cast<flatbuffers::Table*>(v)->SetField<uint8_t>(fb::EValue::VT_VAL_TYPE, 42, 0));
  EXPECT_REFUSED(bytes, InvalidProgram, "value 12 has unknown kind 42");
}

TEST(VerifierTest, IntListItemNotAnInt) {
  auto p = base_program();
  forward(*p).values[testing::kIntList]->val.AsIntList()->items = {testing::kDouble};
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "int list 4 item 0 refers to value 8, which is not an Int");
}

TEST(VerifierTest, IntListItemOutOfRange) {
  auto p = base_program();
  forward(*p).values[testing::kIntList]->val.AsIntList()->items = {1LL << 40};
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "int list 4 item 0 refers to value 1099511627776");
}

TEST(VerifierTest, TensorListItemNotATensor) {
  auto p = base_program();
  forward(*p).values[testing::kTensorList]->val.AsTensorList()->items = {testing::kX, testing::kInt};
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "tensor list 6 item 1 refers to value 3, which is not a tensor");
}

TEST(VerifierTest, OptionalTensorListItemOutOfRange) {
  auto p = base_program();
  forward(*p).values[testing::kOptionalTensorList]->val.AsOptionalTensorList()->items = {-2};
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "tensor list 7 item 0 refers to value -2");
}

TEST(VerifierTest, TensorOfUnsupportedScalarType) {
  auto p = base_program();
  tensor(*p, testing::kX).scalar_type = static_cast<fb::ScalarType>(99);
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "value 0 is a tensor of unsupported scalar type 99");
}

TEST(VerifierTest, TooManyDimensions) {
  auto p = base_program();
  tensor(*p, testing::kX).sizes.assign(17, 1);
  tensor(*p, testing::kX).dim_order.assign(17, 0);
  EXPECT_REFUSED(serialize(*p), NotSupported, "value 0 has 17 dimensions (at most 16)");
}

TEST(VerifierTest, DimOrderLengthDiffers) {
  auto p = base_program();
  tensor(*p, testing::kX).dim_order = {0};
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "value 0 has 2 sizes but 1 dim order entries");
}

TEST(VerifierTest, StorageOffset) {
  auto p = base_program();
  tensor(*p, testing::kX).storage_offset = 4;
  EXPECT_REFUSED(serialize(*p), NotSupported, "value 0 has storage offset 4");
}

TEST(VerifierTest, NegativeSize) {
  auto p = base_program();
  tensor(*p, testing::kX).sizes = {2, -2};
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "value 0 has a negative size");
}

TEST(VerifierTest, ElementCountOverflows) {
  auto p = base_program();
  tensor(*p, testing::kX).sizes = {INT32_MAX, INT32_MAX, INT32_MAX};
  tensor(*p, testing::kX).dim_order = {0, 1, 2};
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "value 0 has a negative size or more bytes");
}

TEST(VerifierTest, PlannedInMissingPool) {
  auto p = base_program();
  tensor(*p, testing::kX).allocation_info->memory_id = 2;
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "value 0 is planned in memory id 2; the method plans pools 1..1");
}

TEST(VerifierTest, PlannedPastPoolEnd) {
  auto p = base_program();
  tensor(*p, testing::kOut).allocation_info->memory_offset_low = 20;
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "value 2 (16 bytes at offset 20) does not fit memory id 1's 32");
}

TEST(VerifierTest, PlannedOffsetHighWordPastPoolEnd) {
  auto p = base_program();
  tensor(*p, testing::kOut).allocation_info->memory_offset_high = 1;
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "at offset 4294967312");
}

TEST(VerifierTest, InitialValueListMissing) {
  auto p = base_program();
  tensor(*p, testing::kX).data_buffer_idx = 1;
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "value 0's initial value is in list 0, but the program has 0");
}

TEST(VerifierTest, InitialValueLoads) {
  auto p = with_initial_value();
  EXPECT_EQ(load_error(serialize(*p, two_segments())), Error::Ok) << ember::testing::last_log();
}

TEST(VerifierTest, InitialValueIndexMissing) {
  auto p = with_initial_value();
  tensor(*p, testing::kX).data_buffer_idx = 2;
  EXPECT_REFUSED(serialize(*p, two_segments()), InvalidProgram, "value 0's initial value 2 does not exist (1 entries)");
}

TEST(VerifierTest, InitialValueSegmentMissing) {
  auto p = with_initial_value();
  p->mutable_data_segments[0]->segment_index = 5;
  EXPECT_REFUSED(serialize(*p, two_segments()), InvalidProgram, "initial values point at segment 5");
}

TEST(VerifierTest, InitialValuePastSegmentEnd) {
  auto p = with_initial_value();
  p->mutable_data_segments[0]->offsets = {0, 8};
  EXPECT_REFUSED(serialize(*p, two_segments()), InvalidProgram, "initial value needs bytes [8, +16) of a 16-byte");
}

TEST(VerifierTest, ConstantMissing) {
  auto p = base_program();
  tensor(*p, testing::kW).data_buffer_idx = 2;
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "value 1 uses constant 2, but the constant segment has 1 entries");
}

TEST(VerifierTest, ConstantInlineLayoutNamed) {
  auto p = base_program();
  p->constant_segment.reset();
  p->constant_buffer.push_back(std::make_unique<fb::BufferT>());
  p->constant_buffer.push_back(std::make_unique<fb::BufferT>());
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "pre-segment layout, are not supported");
}

TEST(VerifierTest, ConstantPastSegmentEnd) {
  auto p = base_program();
  p->constant_segment->offsets = {0, 4};
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "value 1 needs bytes [4, +16) of a 16-byte constant segment");
}

TEST(VerifierTest, InputNotATensor) {
  auto p = base_program();
  forward(*p).inputs = {testing::kInt};
  EXPECT_REFUSED(serialize(*p), NotSupported, "input 0 is value 3, which is not a tensor");
}

TEST(VerifierTest, OutputOutOfRange) {
  auto p = base_program();
  forward(*p).outputs = {testing::kOut, 99};
  EXPECT_REFUSED(serialize(*p), NotSupported, "output 1 is value 99, which is not a tensor");
}

TEST(VerifierTest, OutputOfAnotherKind) {
  auto p = base_program();
  forward(*p).outputs = {testing::kOut, testing::kString};
  EXPECT_REFUSED(serialize(*p), NotSupported, "output 1 is value 9, which is not a tensor, int, double or bool");
}

TEST(VerifierTest, OperatorWithoutName) {
  auto p = base_program();
  forward(*p).operators[0]->name.clear();
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "operator 0 has no name");
}

TEST(VerifierTest, NoChainTable) {
  auto p = base_program();
  forward(*p).chains.clear();
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "has no chain table");
}

TEST(VerifierTest, InstructionWithoutArguments) {
  auto p = base_program();
  forward(*p).chains[0]->instructions[0]->instr_args.Reset();
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "chain 0 instruction 0: no arguments for kind 0");
}

TEST(VerifierTest, KernelCallOperatorOutOfRange) {
  auto p = base_program();
  forward(*p).chains[0]->instructions[0]->instr_args.AsKernelCall()->op_index = 1;
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "operator index 1 out of range (1 operators)");
}

TEST(VerifierTest, KernelCallArgumentOutOfRange) {
  auto p = base_program();
  forward(*p).chains[0]->instructions[0]->instr_args.AsKernelCall()->args = {0, 1, 13};
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "argument 2 is value 13, out of range (13 values)");
}

void set_instruction(fb::ProgramT& p, fb::InstructionArgumentsUnion args) {
  forward(p).chains[0]->instructions[0]->instr_args = std::move(args);
}

template <typename T>
fb::InstructionArgumentsUnion instruction(T table) {
  fb::InstructionArgumentsUnion u;
  u.Set(std::move(table));
  return u;
}

TEST(VerifierTest, DelegateOutOfRange) {
  auto p = base_program();
  fb::DelegateCallT call;
  call.delegate_index = 0;
  set_instruction(*p, instruction(call));
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "delegate index 0 out of range (0 delegates)");
}

TEST(VerifierTest, DelegateArgumentOutOfRange) {
  auto p = base_program();
  forward(*p).delegates.push_back(std::make_unique<fb::BackendDelegateT>());
  fb::DelegateCallT call;
  call.args = {-1};
  set_instruction(*p, instruction(call));
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "argument 0 is value -1, out of range");
}

TEST(VerifierTest, MoveOutOfRange) {
  auto p = base_program();
  fb::MoveCallT mv;
  mv.move_from = 0;
  mv.move_to = 40;
  set_instruction(*p, instruction(mv));
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "move 0 -> 40 out of range");
}

TEST(VerifierTest, MoveBetweenKinds) {
  auto p = base_program();
  fb::MoveCallT mv;
  mv.move_from = testing::kInt;
  mv.move_to = testing::kIntList;
  set_instruction(*p, instruction(mv));
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "move 3 -> 4 between values of different kinds");
}

TEST(VerifierTest, JumpConditionNotBool) {
  auto p = base_program();
  fb::JumpFalseCallT jf;
  jf.cond_value_index = testing::kInt;
  jf.destination_instruction = 1;
  set_instruction(*p, instruction(jf));
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "jump condition 3 is neither a Bool nor a tensor");
}

TEST(VerifierTest, JumpOutsideChain) {
  auto p = base_program();
  fb::JumpFalseCallT jf;
  jf.cond_value_index = testing::kBool;
  jf.destination_instruction = 2;
  set_instruction(*p, instruction(jf));
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "jump to 2, outside the chain's 1 instructions");
}

TEST(VerifierTest, FreeOfNonTensor) {
  auto p = base_program();
  fb::FreeCallT free_call;
  free_call.value_index = testing::kString;
  set_instruction(*p, instruction(free_call));
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "free of value 9, not a tensor");
}

TEST(VerifierTest, EveryChainIsChecked) {
  auto p = base_program();
  auto chain = std::make_unique<fb::ChainT>();
  auto ins = std::make_unique<fb::InstructionT>();
  fb::FreeCallT free_call;
  free_call.value_index = 77;
  ins->instr_args.Set(std::move(free_call));
  chain->instructions.push_back(std::move(ins));
  forward(*p).chains.push_back(std::move(chain));
  EXPECT_REFUSED(serialize(*p), InvalidProgram, "chain 1 instruction 0: free of value 77");
}

}  // namespace
}  // namespace ember
