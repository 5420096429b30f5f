// The file and mapped loaders on Windows (loader/windows_*.cc), held to the contract data_loader_test.cc checks on
// POSIX: the same content, range checks and messages, and a load mapped from its granule that stays readable
// after its loader is gone and is unmapped when freed (asked of the OS with VirtualQuery).
#include <gtest/gtest.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

#include <string>
#include <utility>

#include "runtime/core/loader/file_data_loader.h"
#include "runtime/core/loader/mmap_data_loader.h"
#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace {

std::string write_temp(const std::string& name, const std::string& content) {
  const char* dir = getenv("TEST_TMPDIR");
  std::string path = std::string(dir ? dir : ".") + "/" + name;
  FILE* f = fopen(path.c_str(), "wb");
  fwrite(content.data(), 1, content.size(), f);
  fclose(f);
  return path;
}

// Bytes that text mode would change (CR LF, ^Z) among others: the loaders must read files as binary.
const std::string kContent(
    "01\r\n45\x1a"
    "789abcdef",
    16);

void check_loader(DataLoader& loader) {
  EXPECT_EQ(*loader.size(), kContent.size());
  Result<FreeableBuffer> b = loader.load(1, 6, SegmentInfo{});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(std::string(static_cast<const char*>(b->data()), b->size()), kContent.substr(1, 6));
  char out[4];
  EXPECT_EQ(loader.load_into(12, 4, SegmentInfo{}, out), Error::Ok);
  EXPECT_EQ(std::string(out, 4), "cdef");
  EXPECT_EQ(loader.load(10, 7, SegmentInfo{}).error(), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "bytes [10, 10 + 7) are outside the 16 bytes of data");
  Result<FreeableBuffer> empty = loader.load(16, 0, SegmentInfo{});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->size(), 0u);
}

TEST(WindowsDataLoader, File) {
  alignas(16) uint8_t pool[64];
  MemoryAllocator allocator(pool, sizeof(pool));
  Result<FileDataLoader> loader = FileDataLoader::open(write_temp("file.bin", kContent).c_str(), &allocator);
  ASSERT_TRUE(loader.ok());
  check_loader(*loader);
}

TEST(WindowsDataLoader, Mmap) {
  Result<MmapDataLoader> loader = MmapDataLoader::open(write_temp("mmap.bin", kContent).c_str());
  ASSERT_TRUE(loader.ok());
  check_loader(*loader);
}

MEMORY_BASIC_INFORMATION query(const void* address) {
  MEMORY_BASIC_INFORMATION info = {};
  VirtualQuery(address, &info, sizeof(info));
  return info;
}

TEST(WindowsDataLoader, MmapMapsEachLoadFromItsGranuleAndUnmapsOnFree) {
  SYSTEM_INFO system;
  GetSystemInfo(&system);
  const size_t granule = system.dwAllocationGranularity;
  std::string content(3 * granule + 100, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>((i * 7 + i / 251) & 0xff);
  const std::string path = write_temp("granules.bin", content);
  FreeableBuffer straddling;
  for (auto residency : {MmapDataLoader::Residency::OnDemand, MmapDataLoader::Residency::Prefault}) {
    Result<MmapDataLoader> loader = MmapDataLoader::open(path.c_str(), residency);
    ASSERT_TRUE(loader.ok());
    const uint64_t offset = granule - 3;  // unaligned, and the range crosses into the next two granules
    Result<FreeableBuffer> loaded = loader->load(offset, granule + 10, SegmentInfo{SegmentInfo::Type::Constant, 1});
    ASSERT_TRUE(loaded.ok());
    straddling = std::move(*loaded);
    EXPECT_EQ(std::string(static_cast<const char*>(straddling.data()), straddling.size()),
              content.substr(offset, granule + 10));
    char out[5];
    EXPECT_EQ(loader->load_into(3 * granule + 95, 5, SegmentInfo{}, out), Error::Ok);
    EXPECT_EQ(std::string(out, 5), content.substr(3 * granule + 95));
  }
  // The loader is gone; its buffer stays a mapped view until freed, and freeing releases it.
  const void* data = straddling.data();
  EXPECT_EQ(static_cast<const char*>(data)[0], content[granule - 3]);
  EXPECT_EQ(query(data).Type, static_cast<DWORD>(MEM_MAPPED));
  straddling.free();
  EXPECT_EQ(straddling.data(), nullptr);
  EXPECT_EQ(query(data).State, static_cast<DWORD>(MEM_FREE));
}

TEST(WindowsDataLoader, MissingFileNamesPathAndReason) {
  EXPECT_EQ(MmapDataLoader::open("C:/nonexistent/model.pte").error(), Error::AccessFailed);
  EXPECT_EQ(testing::last_log(), "cannot open C:/nonexistent/model.pte: No such file or directory");
  EXPECT_EQ(FileDataLoader::open("C:/nonexistent/model.pte", nullptr).error(), Error::AccessFailed);
  EXPECT_EQ(testing::last_log(), "cannot open C:/nonexistent/model.pte: No such file or directory");
}

}  // namespace
}  // namespace ember
