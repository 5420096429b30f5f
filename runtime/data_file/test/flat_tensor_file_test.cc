// FlatTensorFile on files built here with flatc's builder and the FH01 header as ExecuTorch lays it out: lookups by
// name with their type and shape checks, several files asked in turn, and damaged copies (every truncation, every
// byte of the head flipped), which must be refused with a message or still read, never crash (run it under
// tools/sanitize.sh to see reads outside the buffer).
#include "runtime/data_file/flat_tensor_file.h"

#include <gtest/gtest.h>
#include <string.h>

#include <string>
#include <vector>

#include "runtime/core/buffer_data_loader.h"
#include "runtime/core/test/recording_pal.h"
#include "runtime/data_file/test/ptd_builder.h"

namespace ember {
namespace {

using testing::Entry;
using testing::last_log;
using testing::make_ptd;

const std::vector<Entry> kEntries = {{"w", {1, 2, 3, 4, 5, 6}, {2, 3}}, {"b", {7, 8}, {2}}};

TEST(FlatTensorFile, FindsTensorsByNameAndChecksThem) {
  const std::vector<uint8_t> file = make_ptd(kEntries);
  BufferDataLoader loader(file.data(), file.size());
  Result<FlatTensorFile> f = FlatTensorFile::load(&loader);
  ASSERT_TRUE(f.ok()) << last_log();
  ASSERT_EQ(f->num_entries(), 2u);
  EXPECT_STREQ(f->key(1).get(), "b");
  const int32_t sizes[] = {2, 3};
  Result<const void*> w = f->tensor("w", ScalarType::Float, ArrayRef<int32_t>(sizes, 2), 24);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(static_cast<const float*>(w.get())[5], 6.0f);
  EXPECT_EQ(f->tensor("nope", ScalarType::Float, ArrayRef<int32_t>(sizes, 2), 24).error(), Error::NotFound);
  EXPECT_EQ(f->tensor("w", ScalarType::Int, ArrayRef<int32_t>(sizes, 2), 24).error(), Error::InvalidExternalData);
  EXPECT_NE(last_log().find("'w'"), std::string::npos) << last_log();
  const int32_t other[] = {3, 2};
  EXPECT_EQ(f->tensor("w", ScalarType::Float, ArrayRef<int32_t>(other, 2), 24).error(), Error::InvalidExternalData);
  EXPECT_NE(last_log().find("dimension 0"), std::string::npos) << last_log();
}

TEST(FlatTensorFile, ListAsksEachFileInTurn) {
  const std::vector<uint8_t> a = make_ptd({kEntries[0]}), b = make_ptd({kEntries[1]});
  BufferDataLoader la(a.data(), a.size()), lb(b.data(), b.size());
  Result<FlatTensorFile> fa = FlatTensorFile::load(&la), fb = FlatTensorFile::load(&lb);
  ASSERT_TRUE(fa.ok() && fb.ok());
  const ExternalData* files[] = {&fa.get(), &fb.get()};
  ExternalDataList list(files, 2);
  const int32_t two[] = {2};
  Result<const void*> bias = list.tensor("b", ScalarType::Float, ArrayRef<int32_t>(two, 1), 8);
  ASSERT_TRUE(bias.ok());
  EXPECT_EQ(static_cast<const float*>(bias.get())[1], 8.0f);
  EXPECT_EQ(list.tensor("c", ScalarType::Float, ArrayRef<int32_t>(two, 1), 8).error(), Error::NotFound);
}

// Damaged files: refused with a message, or (a byte of padding or of a weight) read; never a crash.
Error load_damaged(const std::vector<uint8_t>& bytes) {
  // A copy of exactly the damaged length, so a read past the end is one past this allocation.
  std::vector<uint8_t> copy(bytes);
  BufferDataLoader loader(copy.data(), copy.size());
  Result<FlatTensorFile> f = FlatTensorFile::load(&loader);
  if (!f.ok()) {
    EXPECT_FALSE(last_log().empty());
    return f.error();
  }
  const int32_t sizes[] = {2, 3};
  (void)f->tensor("w", ScalarType::Float, ArrayRef<int32_t>(sizes, 2), 24);
  return Error::Ok;
}

TEST(FlatTensorFile, RefusesEveryTruncation) {
  const std::vector<uint8_t> file = make_ptd(kEntries);
  for (size_t n = 0; n < file.size(); ++n) {
    std::vector<uint8_t> cut(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(load_damaged(cut), Error::Ok) << "truncated to " << n << " bytes";
  }
}

TEST(FlatTensorFile, SurvivesEveryFlippedByteOfTheHead) {
  const std::vector<uint8_t> file = make_ptd(kEntries);
  size_t refused = 0, total = 0;
  for (size_t i = 0; i < file.size(); ++i) {
    for (uint8_t flip : {uint8_t{0xFF}, uint8_t{0x01}, uint8_t{0x80}}) {
      std::vector<uint8_t> bad(file);
      bad[i] ^= flip;
      refused += load_damaged(bad) != Error::Ok;
      ++total;
    }
  }
  EXPECT_GT(refused, total / 4);
}

}  // namespace
}  // namespace ember
