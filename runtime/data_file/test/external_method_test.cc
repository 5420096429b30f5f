// A method whose constant lives in a .ptd: found by name through FlatTensorFile, among other entries, and run; refused, naming
// the tensor, without a data file, with a file that lacks the name, or with one whose entry has another shape.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "runtime/core/buffer_data_loader.h"
#include "runtime/core/test/recording_pal.h"
#include "runtime/data_file/flat_tensor_file.h"
#include "runtime/data_file/test/ptd_builder.h"
#include "runtime/executor/constant_use.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "runtime/executor/test/test_program.h"

namespace ember {
namespace {

namespace fb = ember_pte_obj;

// The test program (out = x + w) with w external, named "w".
std::vector<uint8_t> external_program() {
  auto p = testing::base_program();
  fb::TensorT& w = testing::tensor(*p, testing::kW);
  w.extra_tensor_info = std::make_unique<fb::ExtraTensorInfoT>();
  w.extra_tensor_info->fully_qualified_name = "w";
  w.extra_tensor_info->location = fb::TensorDataLocation::EXTERNAL;
  return testing::serialize(*p);
}

struct Loaded {
  std::vector<uint8_t> ptd;
  BufferDataLoader loader;
  Result<FlatTensorFile> file;
  explicit Loaded(std::vector<testing::Entry> entries)
      : ptd(testing::make_ptd(entries)), loader(ptd.data(), ptd.size()), file(FlatTensorFile::load(&loader)) {}
};

Result<Method> load(const Program& program, testing::TestMemory* memory, const ExternalData* data) {
  testing::clear_log();
  return program.load_method("forward", &memory->manager, data);
}

bool logged(const char* text) { return testing::last_log().find(text) != std::string::npos; }

TEST(ExternalMethod, RunsWithTheFilesWeights) {
  const std::vector<uint8_t> bytes = external_program();
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << testing::last_log();
  Loaded data({{"other", {0}, {1}}, {"w", {10, 20, 30, 40}, {2, 2}}});
  ASSERT_TRUE(data.file.ok()) << testing::last_log();
  testing::TestMemory memory;
  Result<Method> m = load(*program, &memory, &data.file.get());
  ASSERT_TRUE(m.ok()) << testing::last_log();
  const float x[4] = {1, 2, 3, 4};
  const int32_t sizes[2] = {2, 2};
  ASSERT_EQ(m->set_input(0, ScalarType::Float, ArrayRef<int32_t>(sizes, 2), x, sizeof(x)), Error::Ok);
  ASSERT_EQ(m->execute(), Error::Ok) << testing::last_log();
  EXPECT_EQ(m->output(0)->const_data_ptr<float>()[3], 44.0f);
}

TEST(ExternalMethod, RefusedNamingTheTensor) {
  const std::vector<uint8_t> bytes = external_program();
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << testing::last_log();
  testing::TestMemory memory;
  EXPECT_EQ(load(*program, &memory, nullptr).error(), Error::NotFound);
  EXPECT_TRUE(logged("value 1 ('w') is kept in an external data file (.ptd), and the method was loaded without one"))
      << testing::last_log();

  Loaded lacking({{"v", {10, 20, 30, 40}, {2, 2}}});
  ASSERT_TRUE(lacking.file.ok());
  testing::TestMemory m2;
  EXPECT_EQ(load(*program, &m2, &lacking.file.get()).error(), Error::NotFound);
  EXPECT_TRUE(logged("value 1 ('w') is in none of the external data files given")) << testing::last_log();

  Loaded wrong({{"w", {10, 20, 30, 40}, {4, 1}}});
  ASSERT_TRUE(wrong.file.ok());
  testing::TestMemory m3;
  EXPECT_EQ(load(*program, &m3, &wrong.file.get()).error(), Error::InvalidExternalData);
  EXPECT_TRUE(logged("external tensor 'w': dimension 0 is 2 in the program but 4 in the .ptd")) << testing::last_log();
}

// A loader prefaulting the weights a method reads whole (constant_use.h) finds the external ones in the data file,
// where load points the method: the bytes of the file's entry, and nothing without the file.
TEST(ExternalMethod, ConstantsReadWholeIncludeTheFilesBytes) {
  const std::vector<uint8_t> bytes = external_program();
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << testing::last_log();
  Loaded data({{"other", {0}, {1}}, {"w", {10, 20, 30, 40}, {2, 2}}});
  ASSERT_TRUE(data.file.ok()) << testing::last_log();
  using Range = std::pair<const void*, size_t>;
  auto record = [](const void* p, size_t n, void* context) {
    static_cast<std::vector<Range>*>(context)->emplace_back(p, n);
  };
  std::vector<Range> with_file, without;
  ASSERT_EQ(for_each_constant_read_whole(*program, "forward", record, &with_file, &data.file.get()), Error::Ok);
  ASSERT_EQ(for_each_constant_read_whole(*program, "forward", record, &without), Error::Ok);
  Result<ArrayRef<uint8_t>> w = data.file->find("w");
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(with_file.size(), 1u);
  EXPECT_EQ(with_file[0].first, static_cast<const void*>(w->data()));
  EXPECT_EQ(with_file[0].second, 4 * sizeof(float));
  EXPECT_TRUE(without.empty());
}

}  // namespace
}  // namespace ember
