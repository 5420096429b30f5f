// A build whose selection compiled out every optional runtime feature (test_no_features.cc, as the table of a
// selection with `features: []`): programs that need control flow, dynamic shapes, scalar outputs or external data are refused
// when their method loads, naming the feature, and programs that need none still run.
#include "gtest/gtest.h"
#include "runtime/core/test/recording_pal.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "runtime/executor/test/test_program.h"

namespace ember {
namespace {

namespace fb = ember_pte_obj;
using testing::base_program;
using testing::forward;
using testing::TestMemory;

Error load_error(const fb::ProgramT& p) {
  const std::vector<uint8_t> bytes = testing::serialize(p);
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  EXPECT_TRUE(program.ok()) << testing::last_log();
  if (!program.ok()) return program.error();
  TestMemory memory;
  testing::clear_log();
  Result<Method> m = program->load_method("forward", &memory.manager);
  return m.ok() ? Error::Ok : m.error();
}

bool logged(const char* text) { return testing::last_log().find(text) != std::string::npos; }

TEST(FeatureTest, StraightProgramStillRuns) {
  const std::vector<uint8_t> bytes = testing::serialize(*base_program());
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << testing::last_log();
  TestMemory memory;
  Result<Method> m = program->load_method("forward", &memory.manager);
  ASSERT_TRUE(m.ok()) << testing::last_log();
  const float x[4] = {1, 2, 3, 4};
  const int32_t sizes[2] = {2, 2};
  ASSERT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(sizes, 2), x, sizeof(x)), Error::Ok);
  ASSERT_EQ(m->execute(), Error::Ok) << testing::last_log();
  EXPECT_EQ(m->output(0)->const_data_ptr<float>()[3], 8.0f);  // x + w, w = [1, 2, 3, 4]
  // A static input still refuses another shape, by name.
  const int32_t wide[2] = {2, 3};
  EXPECT_EQ(m->resize_input(0, ArrayRef<int32_t>(wide, 2)), Error::InvalidArgument);
  EXPECT_TRUE(logged("method 'forward' input 0 has shape [2, 2]; got [2, 3]")) << testing::last_log();
}

// torch.cond's jump, as ControlInstructionsRun (method_test) runs it on a build with control flow.
TEST(FeatureTest, JumpRefusedNamingControlFlow) {
  auto p = base_program();
  forward(*p).values[testing::kBool]->val.AsBool()->bool_val = false;
  auto ins = std::make_unique<fb::InstructionT>();
  fb::JumpFalseCallT jf;
  jf.cond_value_index = testing::kBool;
  jf.destination_instruction = 1;
  ins->instr_args.Set(std::move(jf));
  auto& chain = forward(*p).chains[0]->instructions;
  chain.insert(chain.begin(), std::move(ins));
  EXPECT_EQ(load_error(*p), Error::NotSupported);
  EXPECT_TRUE(
      logged("method 'forward' instruction 0 needs the runtime feature 'control_flow', which this build "
             "compiled out"))
      << testing::last_log();
}

TEST(FeatureTest, BoundedInputRefusedNamingDynamicShapes) {
  auto p = base_program();
  testing::tensor(*p, testing::kX).shape_dynamism = fb::TensorShapeDynamism::DYNAMIC_BOUND;
  EXPECT_EQ(load_error(*p), Error::NotSupported);
  EXPECT_TRUE(logged("method 'forward' value 0 needs the runtime feature 'dynamic_shapes'")) << testing::last_log();
}

// A constant kept in a .ptd (docs/external_data.md): refused before any data file is asked.
TEST(FeatureTest, ExternalConstantRefusedNamingExternalData) {
  auto p = base_program();
  fb::TensorT& w = testing::tensor(*p, testing::kW);
  w.extra_tensor_info = std::make_unique<fb::ExtraTensorInfoT>();
  w.extra_tensor_info->fully_qualified_name = "w";
  w.extra_tensor_info->location = fb::TensorDataLocation::EXTERNAL;
  EXPECT_EQ(load_error(*p), Error::NotSupported);
  EXPECT_TRUE(logged("method 'forward' value 1 needs the runtime feature 'external_data'")) << testing::last_log();
}

TEST(FeatureTest, ScalarOutputRefusedNamingScalarOutputs) {
  auto p = base_program();
  forward(*p).outputs = {testing::kOut, testing::kInt};
  EXPECT_EQ(load_error(*p), Error::NotSupported);
  EXPECT_TRUE(logged("method 'forward' output 1 needs the runtime feature 'scalar_outputs'")) << testing::last_log();
}

// Delegate calls are selected by the selection's `backends:`; a table with none refuses them (test_no_backends).
TEST(FeatureTest, DelegateCallRefusedWithoutBackends) {
  auto p = base_program();
  forward(*p).delegates.push_back(std::make_unique<fb::BackendDelegateT>());
  fb::DelegateCallT call;
  forward(*p).chains[0]->instructions[0]->instr_args.Set(std::move(call));
  EXPECT_EQ(load_error(*p), Error::NotSupported);
  EXPECT_TRUE(logged("instruction 0: delegate calls need a backend, and this build has none")) << testing::last_log();
}

}  // namespace
}  // namespace ember
