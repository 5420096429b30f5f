// MethodMeta, Method::load's phases and execute(), over hand-built programs (test_program.h) and the kernels of
// test_kernels.cc: every refusal site, and the bookkeeping prediction to the byte.
#include "runtime/executor/method.h"

#include <string.h>

#include "gtest/gtest.h"
#include "runtime/core/test/recording_pal.h"
#include "runtime/executor/method_meta.h"
#include "runtime/executor/program.h"
#include "runtime/executor/test/test_program.h"

namespace ember {
namespace {

namespace fb = ember_pte_obj;
using testing::base_program;
using testing::forward;
using testing::serialize;
using testing::tensor;
using testing::TestMemory;

// A serialized program kept alive with its loader and Program.
struct Loaded {
  explicit Loaded(const fb::ProgramT& p) : bytes(serialize(p)), loader(bytes.data(), bytes.size()) {
    Result<Program> r = Program::load(&loader);
    EXPECT_TRUE(r.ok()) << ember::testing::last_log();
    if (r.ok()) program.reset(new Program(static_cast<Program&&>(r.get())));
  }
  Error load_error(TestMemory& memory) {
    ember::testing::clear_log();
    Result<Method> m = program->load_method("forward", &memory.manager);
    return m.ok() ? Error::Ok : m.error();
  }
  std::vector<uint8_t> bytes;
  BufferDataLoader loader;
  std::unique_ptr<Program> program;
};

bool logged(const char* text) { return ember::testing::last_log().find(text) != std::string::npos; }

TEST(MethodMetaTest, DescribesTheBaseProgram) {
  Loaded l(*base_program());
  Result<MethodMeta> meta = l.program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  EXPECT_STREQ(meta->name(), "forward");
  EXPECT_EQ(meta->num_inputs(), 1u);
  EXPECT_EQ(meta->num_outputs(), 1u);
  EXPECT_EQ(meta->num_instructions(), 1u);
  ASSERT_EQ(meta->num_memory_planned_buffers(), 1u);
  EXPECT_EQ(meta->memory_planned_buffer_size(0).get(), testing::kPoolBytes);
  Result<TensorInfo> in = meta->input_tensor_meta(0);
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->scalar_type, ScalarType::Float);
  EXPECT_EQ(in->sizes.size(), 2u);
  EXPECT_EQ(in->nbytes, 16u);
  EXPECT_TRUE(in->is_planned);
}

TEST(MethodMetaTest, IndexRefusals) {
  Loaded l(*base_program());
  Result<MethodMeta> meta = l.program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->memory_planned_buffer_size(1).error(), Error::InvalidArgument);
  EXPECT_TRUE(logged("has 1 planned buffers; asked for 1"));
  EXPECT_EQ(meta->input_tensor_meta(1).error(), Error::InvalidArgument);
  EXPECT_TRUE(logged("has 1 inputs; asked for 1"));
  EXPECT_EQ(meta->output_tensor_meta(2).error(), Error::InvalidArgument);
  EXPECT_TRUE(logged("has 1 outputs; asked for 2"));
}

// The prediction is load's own allocation step, counted: it must equal what load takes, to the byte, with an
// allocator of exactly that size, and one byte less must fail with a named error.
TEST(MethodMetaTest, BookkeepingPredictedToTheByte) {
  Loaded l(*base_program());
  const size_t predicted = l.program->method_meta("forward")->method_allocator_bytes();
  ASSERT_GT(predicted, 0u);
  TestMemory exact(predicted);
  EXPECT_EQ(l.load_error(exact), Error::Ok) << ember::testing::last_log();
  EXPECT_EQ(exact.method_allocator.used_bytes(), predicted);
  TestMemory short_by_one(predicted - 1);
  EXPECT_EQ(l.load_error(short_by_one), Error::MemoryAllocationFailed);
  EXPECT_TRUE(logged("no room for")) << ember::testing::last_log();
}

// The base program calling test::scaled.out (test_kernels.cc), whose memory function asks for 4 bytes of state
// and numel(x) floats of scratch, and whose prepare step writes the state.
std::unique_ptr<fb::ProgramT> scaled_program() {
  auto p = base_program();
  forward(*p).operators[0]->name = "test::scaled";
  return p;
}

// A temp allocator over a 16-byte-aligned buffer of `bytes`.
struct Scratch {
  explicit Scratch(size_t bytes)
      : storage(bytes + 16),
        allocator(storage.data() + ((16 - reinterpret_cast<uintptr_t>(storage.data()) % 16) % 16), bytes) {}
  std::vector<uint8_t> storage;
  MemoryAllocator allocator;
};

TEST(MethodMetaTest, KernelStateAndScratchPredictedToTheByte) {
  Loaded base(*base_program());
  Loaded l(*scaled_program());
  Result<MethodMeta> meta = l.program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  // Four Floats of scratch; four bytes of state, which the method allocator holds in a 16-byte unit.
  EXPECT_EQ(meta->scratch_bytes(), 16u);
  EXPECT_EQ(base.program->method_meta("forward")->scratch_bytes(), 0u);
  const size_t predicted = meta->method_allocator_bytes();
  EXPECT_EQ(predicted, base.program->method_meta("forward")->method_allocator_bytes() + 16);
  TestMemory exact(predicted);
  Scratch scratch(meta->scratch_bytes());
  exact.manager.temp_allocator = &scratch.allocator;
  EXPECT_EQ(l.load_error(exact), Error::Ok) << ember::testing::last_log();
  EXPECT_EQ(exact.method_allocator.used_bytes(), predicted);
  EXPECT_EQ(scratch.allocator.used_bytes(), meta->scratch_bytes());
}

// A method loaded for threads takes its kernels' per-thread scratch too: exactly scratch_bytes(threads).
TEST(MethodMetaTest, ScratchPerThreadPredictedToTheByte) {
  Loaded l(*scaled_program());
  Result<MethodMeta> meta = l.program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->scratch_bytes(1), 16u);
  EXPECT_EQ(meta->scratch_bytes(3), 48u);
  Loaded base(*base_program());
  EXPECT_EQ(base.program->method_meta("forward")->scratch_bytes(8), 0u);
  TestMemory short_by_one;
  short_by_one.manager.threads = 3;
  Scratch small(47);
  short_by_one.manager.temp_allocator = &small.allocator;
  EXPECT_EQ(l.load_error(short_by_one), Error::MemoryAllocationFailed);
  EXPECT_TRUE(logged("needs 48 bytes of kernel scratch; the temp allocator has 47 free")) << ember::testing::last_log();
  TestMemory exact;
  exact.manager.threads = 3;
  Scratch scratch(48);
  exact.manager.temp_allocator = &scratch.allocator;
  EXPECT_EQ(l.load_error(exact), Error::Ok) << ember::testing::last_log();
  EXPECT_EQ(scratch.allocator.used_bytes(), 48u);
}

TEST(MethodTest, AZeroDimInputWithoutASizesVectorIsCheckedNotDereferenced) {
  // The object API packs an empty vector as absent: a 0-d input's sizes may be missing from a .pte. Setting it
  // with a wrong shape read them through null (bundled_program_fuzz at 0b04cd4, UBSan in resize_input).
  std::unique_ptr<fb::ProgramT> p = base_program();
  fb::TensorT& in = tensor(*p, forward(*p).inputs[0]);
  in.sizes.clear();
  in.dim_order.clear();
  Loaded l(*p);
  TestMemory memory;
  Result<Method> m = l.program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  const float x[2] = {1, 2};
  const int32_t sizes[1] = {2};
  ember::testing::clear_log();
  EXPECT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(sizes, 1), x, sizeof(x)), Error::InvalidArgument);
  EXPECT_NE(ember::testing::last_log().find("has shape []; got [2]"), std::string::npos) << ember::testing::last_log();
  const float one = 3;
  EXPECT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(), &one, sizeof(one)), Error::Ok)
      << ember::testing::last_log();
}

TEST(MethodTest, PrepareStateAndScratchReachTheKernel) {
  Loaded l(*scaled_program());
  TestMemory memory;
  Scratch scratch(16);
  memory.manager.temp_allocator = &scratch.allocator;
  Result<Method> m = l.program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  const float x[4] = {1, 2, 3, 4};
  const int32_t sizes[2] = {2, 2};
  ASSERT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(sizes, 2), x, sizeof(x)), Error::Ok);
  ASSERT_EQ(m->execute(), Error::Ok) << ember::testing::last_log();
  const float* out = m->output(0)->const_data_ptr<float>();
  // (x + w) * 2 with w = [1, 2, 3, 4]: the 2 came from prepare, x went through scratch.
  EXPECT_EQ(out[0], 4.0f);
  EXPECT_EQ(out[3], 16.0f);
}

TEST(MethodTest, ScratchNeededButNoTempAllocator) {
  Loaded l(*scaled_program());
  TestMemory memory;
  EXPECT_EQ(l.load_error(memory), Error::InvalidArgument);
  EXPECT_TRUE(logged("needs 16 bytes of kernel scratch but has no temp allocator")) << ember::testing::last_log();
}

TEST(MethodTest, ScratchShortByOneUnit) {
  Loaded l(*scaled_program());
  TestMemory memory;
  Scratch scratch(15);
  memory.manager.temp_allocator = &scratch.allocator;
  EXPECT_EQ(l.load_error(memory), Error::MemoryAllocationFailed);
  EXPECT_TRUE(logged("needs 16 bytes of kernel scratch; the temp allocator has 15 free")) << ember::testing::last_log();
}

TEST(MethodTest, PrepareRefusalFailsLoadNamingTheInstruction) {
  auto p = scaled_program();
  tensor(*p, testing::kW).sizes = {4, 1};  // same bytes, another shape: only the prepare step objects
  Loaded l(*p);
  TestMemory memory;
  Scratch scratch(16);
  memory.manager.temp_allocator = &scratch.allocator;
  EXPECT_EQ(l.load_error(memory), Error::InvalidArgument);
  EXPECT_TRUE(logged("instruction 0 (test::scaled.out): prepare failed")) << ember::testing::last_log();
}

// The prepare step learns which arguments are the program's constants: here b is x (an input, of w's shape), not
// w, and the test kernel's prepare refuses a b that is not constant (PrepareStateAndScratchReachTheKernel: with w
// it loads, so the constant was seen as one and the input and output as not).
TEST(MethodTest, PrepareSeesWhichArgumentsAreConstants) {
  auto p = scaled_program();
  forward(*p).chains[0]->instructions[0]->instr_args.AsKernelCall()->args[1] = testing::kX;
  Loaded l(*p);
  TestMemory memory;
  Scratch scratch(16);
  memory.manager.temp_allocator = &scratch.allocator;
  EXPECT_EQ(l.load_error(memory), Error::InvalidArgument);
  EXPECT_TRUE(logged("instruction 0 (test::scaled.out): prepare failed")) << ember::testing::last_log();
}

TEST(MethodTest, RunsTheBaseProgram) {
  Loaded l(*base_program());
  TestMemory memory;
  Result<Method> m = l.program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  const float x[4] = {1, 1, 1, 1};
  const int32_t sizes[2] = {2, 2};
  ASSERT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(sizes, 2), x, sizeof(x)), Error::Ok);
  ASSERT_EQ(m->execute(), Error::Ok);
  const float* out = m->output(0)->const_data_ptr<float>();
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out[3], 5.0f);
  EXPECT_EQ(m->num_instructions(), 1u);
  EXPECT_STREQ(m->name(), "forward");
}

// Scalar outputs (a constant method's values, a computed size): read as EValues, refused as tensors by name, and
// described by MethodMeta's output_tag.
TEST(MethodTest, ScalarOutputs) {
  auto p = base_program();
  forward(*p).outputs = {testing::kOut, testing::kInt, testing::kDouble, testing::kBool};
  Loaded l(*p);
  Result<MethodMeta> meta = l.program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->output_tag(0).get(), Tag::Tensor);
  EXPECT_EQ(meta->output_tag(1).get(), Tag::Int);
  EXPECT_EQ(meta->output_tag(2).get(), Tag::Double);
  EXPECT_EQ(meta->output_tag(3).get(), Tag::Bool);
  EXPECT_EQ(meta->output_tag(4).error(), Error::InvalidArgument);
  EXPECT_EQ(meta->output_tensor_meta(1).error(), Error::InvalidType);
  EXPECT_TRUE(logged("output 1 is Int, not a tensor")) << ember::testing::last_log();
  TestMemory memory;
  Result<Method> m = l.program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  EXPECT_EQ(m->output_value(1)->as_int(), 2);
  EXPECT_EQ(m->output_value(2)->as_double(), 0.5);
  EXPECT_TRUE(m->output_value(3)->as_bool());
  EXPECT_TRUE(m->output_value(0)->is_tensor());
  EXPECT_EQ(m->output(2).error(), Error::InvalidType);
  EXPECT_TRUE(logged("method 'forward': output 2 is Double, not a tensor")) << ember::testing::last_log();
}

TEST(MethodTest, InitialValueLoadedIntoPlannedBytes) {
  std::vector<uint8_t> bytes = serialize(*testing::with_initial_value(), testing::two_segments());
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << ember::testing::last_log();
  TestMemory memory;
  Result<Method> m = program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  EXPECT_EQ(m->input(0)->const_data_ptr<float>()[3], 40.0f);
  ASSERT_EQ(m->execute(), Error::Ok);
  EXPECT_EQ(m->output(0)->const_data_ptr<float>()[3], 44.0f);
}

// bind_pool moves a pool's tensors to another buffer (an LLM session's KV cache), load_initial_values resets them
// there, and the first buffer keeps what it held.
TEST(MethodTest, PoolRebound) {
  std::vector<uint8_t> bytes = serialize(*testing::with_initial_value(), testing::two_segments());
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << ember::testing::last_log();
  TestMemory memory;
  Result<Method> m = program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  alignas(16) uint8_t other[testing::kPoolBytes] = {};
  ASSERT_EQ(m->bind_pool(1, Span<uint8_t>(other, sizeof(other))), Error::Ok) << ember::testing::last_log();
  EXPECT_EQ(m->input(0)->const_data_ptr(), static_cast<const void*>(other));
  EXPECT_EQ(m->input(0)->const_data_ptr<float>()[3], 0.0f);  // used as it is
  ASSERT_EQ(m->load_initial_values(1), Error::Ok);
  EXPECT_EQ(m->input(0)->const_data_ptr<float>()[3], 40.0f);
  const float x[4] = {1, 2, 3, 4};
  const int32_t sizes[2] = {2, 2};
  ASSERT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(sizes, 2), x, sizeof(x)), Error::Ok);
  ASSERT_EQ(m->execute(), Error::Ok);
  EXPECT_EQ(m->output(0)->const_data_ptr(), static_cast<const void*>(other + 16));
  EXPECT_EQ(reinterpret_cast<const float*>(other + 16)[3], 8.0f);
  Method::PoolBuffer buffers[2];
  ASSERT_EQ(m->pool_buffers(1, buffers, 2), 1u);  // x, with its initial value; out is an activation
  EXPECT_EQ(buffers[0].offset, 0u);
  EXPECT_EQ(buffers[0].tensor->nbytes(), 16u);
  EXPECT_EQ(m->pool_buffers(2, buffers, 2), 0u);
  // The load-time pool still holds the initial value; binding back reads it again.
  ASSERT_EQ(m->bind_pool(1, memory.spans[0]), Error::Ok);
  EXPECT_EQ(m->input(0)->const_data_ptr<float>()[3], 40.0f);
}

TEST(MethodTest, PoolReboundRefusals) {
  std::vector<uint8_t> bytes = serialize(*testing::with_initial_value(), testing::two_segments());
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << ember::testing::last_log();
  TestMemory memory;
  Result<Method> m = program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  alignas(16) uint8_t other[testing::kPoolBytes + 16] = {};
  EXPECT_EQ(m->bind_pool(1, Span<uint8_t>(other, 16)), Error::InvalidArgument);
  EXPECT_TRUE(logged("pool 1 is planned at 32 bytes; the buffer given has 16")) << ember::testing::last_log();
  EXPECT_EQ(m->bind_pool(2, Span<uint8_t>(other, sizeof(other))), Error::InvalidArgument);
  EXPECT_TRUE(logged("plans 1 memory pools; there is no pool 2")) << ember::testing::last_log();
  EXPECT_EQ(m->bind_pool(1, Span<uint8_t>(other + 4, testing::kPoolBytes)), Error::InvalidArgument);
  EXPECT_TRUE(logged("not 16-byte aligned")) << ember::testing::last_log();
  EXPECT_EQ(m->input(0)->const_data_ptr(), static_cast<const void*>(memory.spans[0].data()));  // unchanged
}

// A kernel with prepared state over a pool's tensor may have recorded its address: that pool stays where it is.
TEST(MethodTest, PoolWithPreparedStateNotRebound) {
  Loaded l(*scaled_program());
  TestMemory memory;
  Scratch scratch(16);
  memory.manager.temp_allocator = &scratch.allocator;
  Result<Method> m = l.program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  alignas(16) uint8_t other[testing::kPoolBytes] = {};
  EXPECT_EQ(m->bind_pool(1, Span<uint8_t>(other, sizeof(other))), Error::NotSupported);
  EXPECT_TRUE(logged("instruction 0 (test::scaled) keeps prepared state over a tensor of pool 1"))
      << ember::testing::last_log();
  EXPECT_EQ(m->input(0)->const_data_ptr(), static_cast<const void*>(memory.spans[0].data()));
}

TEST(MethodTest, NeedsAMethodAllocator) {
  Loaded l(*base_program());
  EXPECT_EQ(l.program->load_method("forward", nullptr).error(), Error::InvalidArgument);
  EXPECT_TRUE(logged("needs a MemoryManager with a method allocator"));
}

TEST(MethodTest, OneChainOnly) {
  auto p = base_program();
  forward(*p).chains.push_back(std::make_unique<fb::ChainT>());
  Loaded l(*p);
  TestMemory memory;
  EXPECT_EQ(l.load_error(memory), Error::NotSupported);
  EXPECT_TRUE(logged("has 2 chains"));
}

TEST(MethodTest, PoolsNotProvided) {
  Loaded l(*base_program());
  TestMemory memory(4096, {});
  EXPECT_EQ(l.load_error(memory), Error::InvalidArgument);
  EXPECT_TRUE(logged("plans 1 memory pools but 0 were provided"));
}

TEST(MethodTest, PoolTooSmall) {
  Loaded l(*base_program());
  TestMemory memory(4096, {testing::kPoolBytes - 1});
  EXPECT_EQ(l.load_error(memory), Error::MemoryAllocationFailed);
  EXPECT_TRUE(logged("outside memory id 1's buffer of 31 bytes"));
}

TEST(MethodTest, DimOrderNotAPermutation) {
  auto p = base_program();
  tensor(*p, testing::kX).dim_order = {1, 1};
  Loaded l(*p);
  TestMemory memory;
  EXPECT_EQ(l.load_error(memory), Error::InvalidProgram);
  EXPECT_TRUE(logged("value 0 is not a valid tensor"));
}

TEST(MethodTest, OperatorMissingNamesIt) {
  auto p = base_program();
  forward(*p).operators[0]->name = "test::mul";
  Loaded l(*p);
  TestMemory memory;
  EXPECT_EQ(l.load_error(memory), Error::OperatorMissing);
  EXPECT_TRUE(logged("1 instruction(s) use operators this build does not have"));
}

TEST(MethodTest, ArgumentCountDiffers) {
  auto p = base_program();
  forward(*p).chains[0]->instructions[0]->instr_args.AsKernelCall()->args = {0, 1};
  Loaded l(*p);
  TestMemory memory;
  EXPECT_EQ(l.load_error(memory), Error::InvalidProgram);
  EXPECT_TRUE(logged("(test::add.out): 2 arguments, the kernel takes 3"));
}

TEST(MethodTest, ArgumentKindDiffers) {
  auto p = base_program();
  forward(*p).chains[0]->instructions[0]->instr_args.AsKernelCall()->args = {0, testing::kIntList, 2};
  Loaded l(*p);
  TestMemory memory;
  EXPECT_EQ(l.load_error(memory), Error::InvalidProgram);
  EXPECT_TRUE(logged("argument 1 is a IntList, the kernel expects 'T'")) << ember::testing::last_log();
}

TEST(MethodTest, DtypeNotCompiled) {
  auto p = base_program();
  tensor(*p, testing::kX).scalar_type = fb::ScalarType::INT;
  Loaded l(*p);
  TestMemory memory;
  EXPECT_EQ(l.load_error(memory), Error::OperatorMissing);
  EXPECT_TRUE(logged("dtype Int is not compiled into this build"));
}

// A jump back to 0 on a false Bool: a loop that never ends. It loads (map, scan and while_loop need backward
// jumps), says it loops, and execute stops at the instruction limit instead of hanging.
TEST(MethodTest, BackwardJumpStopsAtTheInstructionLimit) {
  auto p = base_program();
  static_cast<fb::BoolT*>(forward(*p).values[testing::kBool]->val.value)->bool_val = false;
  auto ins = std::make_unique<fb::InstructionT>();
  fb::JumpFalseCallT jf;
  jf.cond_value_index = testing::kBool;
  jf.destination_instruction = 0;
  ins->instr_args.Set(std::move(jf));
  forward(*p).chains[0]->instructions.push_back(std::move(ins));
  Loaded l(*p);
  TestMemory memory;
  Result<Method> m = l.program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  EXPECT_TRUE(m->has_loops());
  const float x[4] = {1, 2, 3, 4};
  const int32_t sizes[2] = {2, 2};
  ASSERT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(sizes, 2), x, sizeof(x)), Error::Ok);
  m->set_instruction_limit(1001);
  ember::testing::clear_log();
  EXPECT_EQ(m->execute(), Error::OutOfResources);
  EXPECT_TRUE(logged("after 1001 instructions")) << ember::testing::last_log();
}

TEST(MethodTest, StraightMethodHasNoLoops) {
  Loaded l(*base_program());
  TestMemory memory;
  Result<Method> m = l.program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  EXPECT_FALSE(m->has_loops());
}

// torch.cond's predicate is a tensor; one of another dtype than Bool is refused when the method loads.
TEST(MethodTest, FloatTensorPredicateRefused) {
  auto p = base_program();
  auto ins = std::make_unique<fb::InstructionT>();
  fb::JumpFalseCallT jf;
  jf.cond_value_index = testing::kX;
  jf.destination_instruction = 2;
  ins->instr_args.Set(std::move(jf));
  auto& chain = forward(*p).chains[0]->instructions;
  chain.insert(chain.begin(), std::move(ins));
  Loaded l(*p);
  TestMemory memory;
  EXPECT_EQ(l.load_error(memory), Error::InvalidProgram);
  EXPECT_TRUE(logged("the jump's predicate (value 0) is a Float tensor; it must be Bool"))
      << ember::testing::last_log();
}

// A bounded input takes any shape of its rank within the planned sizes, and names what it refuses.
TEST(MethodTest, BoundedInputTakesSmallerShapes) {
  auto p = base_program();
  tensor(*p, testing::kX).shape_dynamism = fb::TensorShapeDynamism::DYNAMIC_BOUND;
  Loaded l(*p);
  TestMemory memory;
  Result<Method> m = l.program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  const float x[4] = {1, 2, 3, 4};
  const int32_t small[2] = {1, 2}, wide[2] = {2, 3}, flat[1] = {4};
  ASSERT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(small, 2), x, 2 * sizeof(float)), Error::Ok);
  EXPECT_EQ(m->input(0)->size(0), 1);
  EXPECT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(wide, 2), x, 6 * sizeof(float)),
            Error::InvalidArgument);
  EXPECT_TRUE(logged("input 0: dimension 1 is 3, beyond its bound 2")) << ember::testing::last_log();
  EXPECT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(flat, 1), x, sizeof(x)), Error::InvalidArgument);
  EXPECT_TRUE(logged("input 0 takes sizes up to [2, 2]; got [4]: rank 1, the program's is 2"))
      << ember::testing::last_log();
}

// Each dimension against its bound: the element count is no test of a shape.
TEST(MethodTest, BoundedInputCheckedPerDimension) {
  auto p = base_program();
  tensor(*p, testing::kX).shape_dynamism = fb::TensorShapeDynamism::DYNAMIC_BOUND;
  Loaded l(*p);
  TestMemory memory;
  Result<Method> m = l.program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  const int32_t same_count[2] = {4, 1}, negative[2] = {-1, 2}, rank3[3] = {1, 2, 2}, empty[2] = {0, 2};
  EXPECT_EQ(m->resize_input(0, ArrayRef<int32_t>(same_count, 2)), Error::InvalidArgument);
  EXPECT_TRUE(logged("method 'forward' input 0: dimension 0 is 4, beyond its bound 2 (sizes up to [2, 2]; got [4, 1])"))
      << ember::testing::last_log();
  EXPECT_EQ(m->resize_input(0, ArrayRef<int32_t>(negative, 2)), Error::InvalidArgument);
  EXPECT_TRUE(logged("method 'forward' input 0: dimension 0 is -1; a size is never negative (got [-1, 2])"))
      << ember::testing::last_log();
  EXPECT_EQ(m->resize_input(0, ArrayRef<int32_t>(rank3, 3)), Error::InvalidArgument);
  EXPECT_TRUE(logged("takes sizes up to [2, 2]; got [1, 2, 2]: rank 3, the program's is 2"))
      << ember::testing::last_log();
  // No lower bound is in the file: an empty batch is within bounds.
  EXPECT_EQ(m->resize_input(0, ArrayRef<int32_t>(empty, 2)), Error::Ok) << ember::testing::last_log();
  EXPECT_EQ(m->input(0)->numel(), 0);
}

// A static input's every dimension is fixed: rank, a changed dimension, the same element count in another shape,
// and a negative size are each refused naming the dimension.
TEST(MethodTest, StaticInputCheckedPerDimension) {
  auto p = base_program();
  Loaded l(*p);
  TestMemory memory;
  Result<Method> m = l.program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok());
  const int32_t same_count[2] = {4, 1}, changed[2] = {2, 1}, negative[2] = {2, -2}, rank1[1] = {4};
  EXPECT_EQ(m->resize_input(0, ArrayRef<int32_t>(same_count, 2)), Error::InvalidArgument);
  EXPECT_TRUE(logged("method 'forward' input 0 has shape [2, 2]; got [4, 1]: dimension 0 is 4, fixed at 2"))
      << ember::testing::last_log();
  EXPECT_EQ(m->resize_input(0, ArrayRef<int32_t>(changed, 2)), Error::InvalidArgument);
  EXPECT_TRUE(logged("got [2, 1]: dimension 1 is 1, fixed at 2 (a static input)")) << ember::testing::last_log();
  EXPECT_EQ(m->resize_input(0, ArrayRef<int32_t>(negative, 2)), Error::InvalidArgument);
  EXPECT_TRUE(logged("got [2, -2]: dimension 1 is -2, fixed at 2")) << ember::testing::last_log();
  EXPECT_EQ(m->resize_input(0, ArrayRef<int32_t>(rank1, 1)), Error::InvalidArgument);
  EXPECT_TRUE(logged("has shape [2, 2]; got [4]: rank 1, the program's is 2")) << ember::testing::last_log();
}

TEST(MethodTest, DelegateCallRefused) {
  auto p = base_program();
  forward(*p).delegates.push_back(std::make_unique<fb::BackendDelegateT>());
  fb::DelegateCallT call;
  forward(*p).chains[0]->instructions[0]->instr_args.Set(std::move(call));
  Loaded l(*p);
  TestMemory memory;
  EXPECT_EQ(l.load_error(memory), Error::NotSupported);
  EXPECT_TRUE(logged("delegate calls need a backend"));
}

// Moves, jumps and frees run in order; a false condition skips to the destination.
TEST(MethodTest, ControlInstructionsRun) {
  auto p = base_program();
  auto& instrs = forward(*p).chains[0]->instructions;
  auto push = [&](auto table) {
    auto ins = std::make_unique<fb::InstructionT>();
    ins->instr_args.Set(std::move(table));
    instrs.insert(instrs.begin(), std::move(ins));
  };
  forward(*p).values[testing::kBool]->val.AsBool()->bool_val = false;
  fb::FreeCallT free_call;  // skipped here; FreeKeepsPlannedBytes runs it
  free_call.value_index = testing::kX;
  push(free_call);
  fb::JumpFalseCallT jf;
  jf.cond_value_index = testing::kBool;
  jf.destination_instruction = 2;
  push(jf);
  fb::MoveCallT mv;
  mv.move_from = testing::kX;  // moves are between values of one kind (a tensor here, as torch.cond's)
  mv.move_to = testing::kX;
  push(mv);
  // Now: move, jump-if-false to 3, free(x), add. The jump must skip the free (instruction 2) and land on the add.
  instrs[1]->instr_args.AsJumpFalseCall()->destination_instruction = 3;
  Loaded l(*p);
  TestMemory memory;
  Result<Method> m = l.program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  ASSERT_EQ(m->execute(), Error::Ok) << ember::testing::last_log();
  EXPECT_EQ(m->output(0)->const_data_ptr<float>()[2], 3.0f);
}

// A free before a kernel that reads the freed value: planned bytes stay where they are (it once dropped the
// pointer, and the kernel read null).
TEST(MethodTest, FreeKeepsPlannedBytes) {
  auto p = base_program();
  auto& instrs = forward(*p).chains[0]->instructions;
  auto ins = std::make_unique<fb::InstructionT>();
  fb::FreeCallT free_call;
  free_call.value_index = testing::kX;
  ins->instr_args.Set(std::move(free_call));
  instrs.insert(instrs.begin(), std::move(ins));
  Loaded l(*p);
  TestMemory memory;
  Result<Method> m = l.program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << ember::testing::last_log();
  const float x[4] = {1, 1, 1, 1};
  const int32_t sizes[2] = {2, 2};
  ASSERT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(sizes, 2), x, sizeof(x)), Error::Ok);
  ASSERT_EQ(m->execute(), Error::Ok) << ember::testing::last_log();
  EXPECT_EQ(m->output(0)->const_data_ptr<float>()[3], 5.0f);
}

TEST(MethodTest, KernelFailureNamesTheInstruction) {
  auto p = base_program();
  forward(*p).operators[0]->name = "test::fail";
  Loaded l(*p);
  TestMemory memory;
  Result<Method> m = l.program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->execute(), Error::InvalidArgument);
  EXPECT_TRUE(logged("method 'forward' instruction 0 (test::fail.out) failed: InvalidArgument"))
      << ember::testing::last_log();
}

TEST(MethodTest, SetInputRefusals) {
  auto p = base_program();
  Loaded l(*p);
  TestMemory memory;
  Result<Method> m = l.program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok());
  const float x[4] = {};
  const int32_t good[2] = {2, 2}, bad[2] = {4, 1};
  EXPECT_EQ(m->set_input(0, ScalarType::Int, ArrayRef<int32_t>(good, 2), x, 16), Error::InvalidArgument);
  EXPECT_TRUE(logged("input 0 is Float; got Int"));
  EXPECT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(bad, 2), x, 16), Error::InvalidArgument);
  EXPECT_TRUE(logged("input 0 has shape [2, 2]; got [4, 1]"));
  EXPECT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(good, 2), x, 12), Error::InvalidArgument);
  EXPECT_TRUE(logged("input 0 takes 16 bytes; got 12"));
  EXPECT_EQ(m->set_input(1, ScalarType::Float, ArrayRef<int32_t>(good, 2), x, 16), Error::InvalidArgument);
  EXPECT_TRUE(logged("has 1 inputs; asked for 1"));
  EXPECT_EQ(m->output(1).error(), Error::InvalidArgument);
}

// An unplanned input has no bytes for set_input to copy into, and a kernel would read a null pointer: refused
// at load, naming the value (program_fuzz found the null read).
TEST(MethodTest, KernelArgumentWithoutStorageRefused) {
  auto p = base_program();
  tensor(*p, testing::kX).allocation_info.reset();
  Loaded l(*p);
  TestMemory memory;
  EXPECT_EQ(l.load_error(memory), Error::NotSupported);
  EXPECT_TRUE(logged("value 0 is a 16-byte tensor with no storage (neither planned nor constant)"))
      << ember::testing::last_log();
}

}  // namespace
}  // namespace ember
