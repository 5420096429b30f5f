// BundledProgram: a case that passes, one that fails (naming the worst element), and each refusal of a hostile
// file, with the message it logs. Bundles are built here with flatbuffers' builder around the executor tests'
// hand-made program (out = x + w, w = [1, 2, 3, 4], Float [2, 2]).
#include "runtime/bundled/bundled_program.h"

#include <gtest/gtest.h>
#include <math.h>
#include <string.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "runtime/core/buffer_data_loader.h"
#include "runtime/core/test/recording_pal.h"
#include "runtime/executor/program.h"
#include "runtime/bundled/test/base_program.h"
#include "schema/bundled_program_generated.h"
#include "schema/format_versions.h"

namespace ember {
namespace bundled {
namespace {

namespace fb = ember_bundled;
using testing::last_log;

// What a test may bend before the bundle is built.
struct Spec {
  std::vector<float> x = {1, 2, 3, 4};
  std::vector<float> expected = {2, 4, 6, 8};
  std::vector<int32_t> sizes = {2, 2};
  std::vector<int32_t> expected_sizes = {2, 2};
  int8_t expected_type = static_cast<int8_t>(ember_pte::ScalarType::FLOAT);
  std::vector<uint8_t> dim_order = {0, 1};
  size_t data_bytes_cut = 0;  // bytes dropped from x's data
  double atol = 1e-6, rtol = 0;
  bool program = true;
  bool misalign_program = false;
  bool inputs_list = true;
  int extra_inputs = 0;
  uint32_t version = format_versions::kBpte.writes;
};

// An aligned copy of a built bundle (parse wants 8-byte alignment; vector storage gives 16 on this host, but
// the test should not depend on that).
struct Bytes {
  std::vector<uint64_t> words;
  size_t size = 0;
  const void* data() const { return words.data(); }
};

flatbuffers::Offset<fb::Value> tensor_value(flatbuffers::FlatBufferBuilder& b, int8_t type,
                                            const std::vector<int32_t>& sizes, const std::vector<float>& values,
                                            size_t cut, const std::vector<uint8_t>& dim_order) {
  const uint8_t* raw = reinterpret_cast<const uint8_t*>(values.data());
  std::vector<uint8_t> data(raw, raw + values.size() * sizeof(float) - cut);
  b.ForceVectorAlignment(data.size(), 1, 16);
  auto t = fb::CreateTensorDirect(b, static_cast<ember_pte::ScalarType>(type), &sizes, &data, &dim_order);
  return fb::CreateValue(b, fb::ValueUnion::Tensor, t.Union());
}

Bytes build(const Spec& s) {
  const std::vector<uint8_t> pte = base_pte();
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Value>> inputs, outputs;
  inputs.push_back(
      tensor_value(b, static_cast<int8_t>(ember_pte::ScalarType::FLOAT), s.sizes, s.x, s.data_bytes_cut, s.dim_order));
  for (int i = 0; i < s.extra_inputs; ++i)
    inputs.push_back(fb::CreateValue(b, fb::ValueUnion::Int, fb::CreateInt(b, 3).Union()));
  outputs.push_back(tensor_value(b, s.expected_type, s.expected_sizes, s.expected, 0, s.dim_order));
  auto tc = fb::CreateBundledMethodTestCaseDirect(b, s.inputs_list ? &inputs : nullptr, &outputs);
  std::vector<flatbuffers::Offset<fb::BundledMethodTestCase>> cases = {tc};
  auto suite = fb::CreateBundledMethodTestSuiteDirect(b, "forward", &cases, s.atol, s.rtol);
  std::vector<flatbuffers::Offset<fb::BundledMethodTestSuite>> suites = {suite};
  flatbuffers::Offset<flatbuffers::Vector<uint8_t>> program;
  if (s.program) {
    if (s.misalign_program) {
      // A 4-byte aligned vector (no force_align) placed so its bytes start off a multiple of 32.
      b.StartVector(pte.size(), 1);
      for (size_t i = pte.size(); i-- > 0;) b.PushElement(pte[i]);
      program = flatbuffers::Offset<flatbuffers::Vector<uint8_t>>(b.EndVector(pte.size()));
    } else {
      b.ForceVectorAlignment(pte.size(), 1, 32);
      program = b.CreateVector(pte);
    }
  }
  auto root = fb::CreateBundledProgram(b, s.version, b.CreateVector(suites), program);
  fb::FinishBundledProgramBuffer(b, root);
  Bytes out;
  out.size = b.GetSize();
  out.words.resize((out.size + 7) / 8);
  memcpy(out.words.data(), b.GetBufferPointer(), out.size);
  return out;
}

TEST(BundledProgram, PassingCaseRunsAndMatches) {
  Bytes bytes = build(Spec());
  Result<BundledProgram> bp = BundledProgram::parse(bytes.data(), bytes.size);
  ASSERT_TRUE(bp.ok()) << last_log();
  EXPECT_EQ(bp->program_offset() % 32, 0u);
  ASSERT_EQ(bp->num_suites(), 1u);
  EXPECT_STREQ(bp->method_name(0), "forward");
  EXPECT_EQ(bp->num_cases(0), 1u);
  BufferDataLoader loader(bp->program_data(), bp->program_size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << last_log();
  Result<Method> method = program->load_method("forward", fresh_test_memory());
  ASSERT_TRUE(method.ok()) << last_log();
  ASSERT_EQ(bp->load_inputs(method.get(), 0, 0), Error::Ok) << last_log();
  ASSERT_EQ(method->execute(), Error::Ok);
  CaseReport r;
  ASSERT_EQ(bp->check_outputs(method.get(), 0, 0, bp->atol(0), bp->rtol(0), &r), Error::Ok);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.elements, 4u);
  EXPECT_EQ(r.failed_elements, 0u);
  EXPECT_EQ(r.worst_error, 0.0);
}

// Runs the one case of `s` and returns its report.
CaseReport run_case(const Spec& s) {
  Bytes bytes = build(s);
  Result<BundledProgram> bp = BundledProgram::parse(bytes.data(), bytes.size);
  EXPECT_TRUE(bp.ok()) << last_log();
  BufferDataLoader loader(bp->program_data(), bp->program_size());
  Result<Program> program = Program::load(&loader);
  Result<Method> method = program->load_method("forward", fresh_test_memory());
  EXPECT_EQ(bp->load_inputs(method.get(), 0, 0), Error::Ok) << last_log();
  EXPECT_EQ(method->execute(), Error::Ok);
  CaseReport r;
  EXPECT_EQ(bp->check_outputs(method.get(), 0, 0, bp->atol(0), bp->rtol(0), &r), Error::Ok);
  return r;
}

TEST(BundledProgram, FailingCaseNamesTheWorstElement) {
  Spec s;
  s.expected = {2, 4, 6.5f, 8.001f};  // out = {2, 4, 6, 8}
  CaseReport r = run_case(s);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failed_elements, 2u);
  EXPECT_EQ(r.worst_output, 0u);
  EXPECT_EQ(r.worst_index, 2u);
  EXPECT_DOUBLE_EQ(r.worst_error, 0.5);
  EXPECT_DOUBLE_EQ(r.worst_actual, 6.0);
  EXPECT_DOUBLE_EQ(r.worst_expected, 6.5);
}

TEST(BundledProgram, RelativeToleranceAndNaN) {
  Spec s;
  s.expected = {2, 4, 6.5f, 8};
  s.rtol = 0.1;  // |6 - 6.5| = 0.5 <= 1e-6 + 0.1 * 6.5
  EXPECT_TRUE(run_case(s).passed);
  s.expected = {2, 4, NAN, 8};
  CaseReport r = run_case(s);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(isinf(r.worst_error));
  EXPECT_EQ(r.worst_index, 2u);
}

TEST(BundledProgram, OutputOfAnotherShapeOrDtypeIsAFailedCase) {
  Spec s;
  s.expected_sizes = {4, 1};
  CaseReport r = run_case(s);
  EXPECT_FALSE(r.passed);
  EXPECT_STREQ(r.mismatch, "another shape");
  s = Spec();
  s.expected_type = static_cast<int8_t>(ember_pte::ScalarType::INT);
  r = run_case(s);
  EXPECT_FALSE(r.passed);
  EXPECT_STREQ(r.mismatch, "another dtype");
}

struct Refusal {
  const char* name;
  std::function<void(Spec&)> bend;
  Error error;
  const char* message;
};

TEST(BundledProgram, RefusesHostileFiles) {
  const Refusal refusals[] = {
      {"data shorter than shape", [](Spec& s) { s.data_bytes_cut = 4; }, Error::InvalidProgram,
       "method 'forward' case 0 input 0: its shape needs 16 bytes of data, the file has 12"},
      {"negative dimension", [](Spec& s) { s.sizes = {-2, -2}; }, Error::InvalidProgram,
       "method 'forward' case 0 input 0: dimension 0 is -2"},
      {"bad scalar type", [](Spec& s) { s.expected_type = 99; }, Error::InvalidProgram,
       "method 'forward' case 0 expected output 0: scalar type 99 has no storage here"},
      {"permuted dim order", [](Spec& s) { s.dim_order = {1, 0}; }, Error::NotSupported,
       "method 'forward' case 0 input 0: dim_order is not contiguous (entry 0 is 1)"},
      {"short dim order", [](Spec& s) { s.dim_order = {0}; }, Error::InvalidProgram,
       "method 'forward' case 0 input 0: dim_order has 1 entries for rank 2"},
      {"NaN tolerance", [](Spec& s) { s.atol = NAN; }, Error::InvalidProgram,
       "test suite of method 'forward': tolerances atol nan, rtol 0 (each must be in [0, 1e300])"},
      {"no program", [](Spec& s) { s.program = false; }, Error::InvalidProgram, "the bundle holds no program"},
      {"no inputs list", [](Spec& s) { s.inputs_list = false; }, Error::InvalidProgram,
       "method 'forward' case 0 has no input list"},
  };
  for (const Refusal& r : refusals) {
    Spec s;
    r.bend(s);
    Bytes bytes = build(s);
    testing::clear_log();
    Result<BundledProgram> bp = BundledProgram::parse(bytes.data(), bytes.size);
    ASSERT_FALSE(bp.ok()) << r.name;
    EXPECT_EQ(bp.error(), r.error) << r.name;
    EXPECT_NE(last_log().find(r.message), std::string::npos) << r.name << ": " << last_log();
  }
}

TEST(BundledProgram, RefusesAMisalignedProgramNamingItsOffset) {
  Spec s;
  s.misalign_program = true;
  Bytes bytes = build(s);
  Result<BundledProgram> bp = BundledProgram::parse(bytes.data(), bytes.size);
  // The builder may land the unforced vector on a multiple of 32 by chance; this layout does not.
  ASSERT_FALSE(bp.ok());
  EXPECT_EQ(bp.error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("the embedded program starts at byte "), std::string::npos) << last_log();
  EXPECT_NE(last_log().find(", not a multiple of 32"), std::string::npos) << last_log();
}

TEST(BundledProgram, RefusesNotABundleTruncationAndMisalignedBase) {
  Bytes bytes = build(Spec());
  std::vector<uint64_t> copy(bytes.words);
  memcpy(reinterpret_cast<uint8_t*>(copy.data()) + 4, "ET12", 4);
  Result<BundledProgram> bp = BundledProgram::parse(copy.data(), bytes.size);
  EXPECT_EQ(bp.error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("not a bundled program: identifier at byte 4 is 'ET12'"), std::string::npos) << last_log();
  Result<BundledProgram> truncated = BundledProgram::parse(bytes.data(), bytes.size / 2);
  EXPECT_EQ(truncated.error(), Error::InvalidProgram);
  EXPECT_NE(last_log().find("failed verification"), std::string::npos) << last_log();
  std::vector<uint8_t> shifted(bytes.size + 1);
  const uint8_t* src = static_cast<const uint8_t*>(bytes.data());
  for (size_t i = 0; i < shifted.size() - 1; ++i) shifted[i + 1] = src[i];
  const uint8_t* odd = shifted.data() + 1;
  if (reinterpret_cast<uintptr_t>(odd) % 8 != 0) {
    Result<BundledProgram> misaligned = BundledProgram::parse(odd, bytes.size);
    EXPECT_EQ(misaligned.error(), Error::InvalidArgument);
    EXPECT_NE(last_log().find("not 8-byte aligned"), std::string::npos) << last_log();
  }
}

// Every version in the window parses; one past it, and another BP digit pair, are refused by name with the window.
TEST(BundledProgram, ReadsItsVersionWindowAndRefusesOthersByName) {
  for (uint32_t v = format_versions::kBpte.min_version; v <= format_versions::kBpte.max_version; ++v) {
    Spec s;
    s.version = v;
    Bytes bytes = build(s);
    EXPECT_TRUE(BundledProgram::parse(bytes.data(), bytes.size).ok()) << "version " << v << ": " << last_log();
  }
  Spec newer;
  newer.version = format_versions::kBpte.max_version + 1;
  Bytes bytes = build(newer);
  EXPECT_EQ(BundledProgram::parse(bytes.data(), bytes.size).error(), Error::NotSupported);
  EXPECT_NE(last_log().find("the bundled program has BundledProgram.version 3, newer than Ember reads: BP08 with "
                            "BundledProgram.version 0..2"),
            std::string::npos)
      << last_log();
  Bytes ok = build(Spec());
  std::vector<uint64_t> copy(ok.words);
  memcpy(reinterpret_cast<uint8_t*>(copy.data()) + 4, "BP09", 4);
  EXPECT_EQ(BundledProgram::parse(copy.data(), ok.size).error(), Error::NotSupported);
  EXPECT_NE(last_log().find("the bundled program was written in a newer ExecuTorch format, 'BP09'; Ember reads BP08"),
            std::string::npos)
      << last_log();
  memcpy(reinterpret_cast<uint8_t*>(copy.data()) + 4, "BP07", 4);
  EXPECT_EQ(BundledProgram::parse(copy.data(), ok.size).error(), Error::NotSupported);
  EXPECT_NE(last_log().find("older ExecuTorch format, 'BP07'"), std::string::npos) << last_log();
}

TEST(BundledProgram, LoadInputsChecksCountAndKind) {
  Spec s;
  s.extra_inputs = 1;
  Bytes bytes = build(s);
  Result<BundledProgram> bp = BundledProgram::parse(bytes.data(), bytes.size);
  ASSERT_TRUE(bp.ok()) << last_log();
  BufferDataLoader loader(bp->program_data(), bp->program_size());
  Result<Program> program = Program::load(&loader);
  Result<Method> method = program->load_method("forward", fresh_test_memory());
  EXPECT_EQ(bp->load_inputs(method.get(), 0, 0), Error::InvalidArgument);
  EXPECT_NE(last_log().find("method 'forward' case 0 has 2 inputs; the method takes 1"), std::string::npos)
      << last_log();
  EXPECT_EQ(bp->load_inputs(method.get(), 0, 1), Error::InvalidArgument);
  EXPECT_NE(last_log().find("method 'forward' case 1 out of range (1 cases)"), std::string::npos) << last_log();
  EXPECT_EQ(bp->load_inputs(method.get(), 3, 0), Error::InvalidArgument);
  EXPECT_NE(last_log().find("test suite 3 out of range (1 suites)"), std::string::npos) << last_log();
}

}  // namespace
}  // namespace bundled
}  // namespace ember
