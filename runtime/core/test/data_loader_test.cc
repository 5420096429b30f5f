#include <gtest/gtest.h>

#include <stdio.h>
#include <stdlib.h>

#include <string>

#include "runtime/core/buffer_data_loader.h"
#include "runtime/core/loader/file_data_loader.h"
#include "runtime/core/loader/mmap_data_loader.h"
#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace {

std::string write_temp(const std::string& name, const std::string& content) {
  const char* dir = getenv("TEST_TMPDIR");
  std::string path = std::string(dir ? dir : "/tmp") + "/" + name;
  FILE* f = fopen(path.c_str(), "wb");
  fwrite(content.data(), 1, content.size(), f);
  fclose(f);
  return path;
}

const std::string kContent = "0123456789abcdef";

void check_loader(DataLoader& loader) {
  EXPECT_EQ(*loader.size(), kContent.size());
  Result<FreeableBuffer> b = loader.load(4, 6, SegmentInfo{});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(std::string(static_cast<const char*>(b->data()), b->size()), "456789");
  char out[4];
  EXPECT_EQ(loader.load_into(12, 4, SegmentInfo{}, out), Error::Ok);
  EXPECT_EQ(std::string(out, 4), "cdef");
  EXPECT_EQ(loader.load(10, 7, SegmentInfo{}).error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "bytes [10, 10 + 7) are outside the 16 bytes of data");
  EXPECT_EQ(loader.load(8, UINT64_MAX - 2, SegmentInfo{}).error(), Error::InvalidArgument);  // wraps 64 bits
}

TEST(DataLoader, Buffer) {
  BufferDataLoader loader(kContent.data(), kContent.size());
  check_loader(loader);
}

TEST(DataLoader, File) {
  alignas(16) uint8_t pool[64];
  MemoryAllocator allocator(pool, sizeof(pool));
  Result<FileDataLoader> loader = FileDataLoader::open(write_temp("file.bin", kContent).c_str(), &allocator);
  ASSERT_TRUE(loader.ok());
  check_loader(*loader);
}

TEST(DataLoader, FileReportsMissingAllocatorMemory) {
  alignas(16) uint8_t pool[4];
  MemoryAllocator allocator(pool, sizeof(pool));
  Result<FileDataLoader> loader = FileDataLoader::open(write_temp("small.bin", kContent).c_str(), &allocator);
  ASSERT_TRUE(loader.ok());
  EXPECT_EQ(loader->load(0, 8, SegmentInfo{}).error(), Error::MemoryAllocationFailed);
  EXPECT_EQ(testing::last_log(), "no room to load 8 bytes at offset 0 (4 bytes free)");
}

TEST(DataLoader, Mmap) {
  Result<MmapDataLoader> loader = MmapDataLoader::open(write_temp("mmap.bin", kContent).c_str());
  ASSERT_TRUE(loader.ok());
  check_loader(*loader);
}

TEST(DataLoader, MissingFileNamesPathAndReason) {
  EXPECT_EQ(MmapDataLoader::open("/nonexistent/model.pte").error(), Error::AccessFailed);
  EXPECT_EQ(testing::last_log(), "cannot open /nonexistent/model.pte: No such file or directory");
  EXPECT_EQ(FileDataLoader::open("/nonexistent/model.pte", nullptr).error(), Error::AccessFailed);
}

}  // namespace
}  // namespace ember
