#include <gtest/gtest.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <string>
#include <utility>

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
  EXPECT_EQ(testing::last_log(), "bytes [8, 8 + 18446744073709551613) are outside the 16 bytes of data");
  EXPECT_EQ(loader.load_into(17, 0, SegmentInfo{}, out), Error::InvalidArgument);
  EXPECT_EQ(testing::last_log(), "bytes [17, 17 + 0) are outside the 16 bytes of data");
  Result<FreeableBuffer> empty = loader.load(16, 0, SegmentInfo{});  // an empty range at the end is valid
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->size(), 0u);
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

// Whether the process has a mapping of `path` (Linux: /proc/self/maps lists each mapping with its file).
bool is_mapped(const std::string& path) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == nullptr) return false;
  char line[4096];
  bool found = false;
  while (!found && fgets(line, sizeof(line), maps) != nullptr) found = strstr(line, path.c_str()) != nullptr;
  fclose(maps);
  return found;
}

TEST(DataLoader, MmapMapsEachLoadFromItsPageAndUnmapsOnFree) {
  // Three pages and a bit of distinct bytes, so a wrong page offset shows as wrong content.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::string content(3 * page + 100, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>((i * 7 + i / 251) & 0xff);
  const std::string path = write_temp("pages.bin", content);
  FreeableBuffer straddling;
  {
    Result<MmapDataLoader> loader = MmapDataLoader::open(path.c_str());
    ASSERT_TRUE(loader.ok());
    EXPECT_FALSE(is_mapped(path));  // opening maps nothing
    const uint64_t offset = page - 3;  // unaligned, and the range crosses into the next two pages
    Result<FreeableBuffer> loaded = loader->load(offset, page + 10, SegmentInfo{SegmentInfo::Type::Constant, 1});
    ASSERT_TRUE(loaded.ok());
    straddling = std::move(*loaded);
    EXPECT_EQ(std::string(static_cast<const char*>(straddling.data()), straddling.size()),
              content.substr(offset, page + 10));
    char out[5];
    EXPECT_EQ(loader->load_into(3 * page + 95, 5, SegmentInfo{}, out), Error::Ok);
    EXPECT_EQ(std::string(out, 5), content.substr(3 * page + 95));
  }
  // The loader is gone; its buffer stays readable until freed, and freeing unmaps it.
  EXPECT_EQ(static_cast<const char*>(straddling.data())[0], content[page - 3]);
  EXPECT_TRUE(is_mapped(path));
  straddling.free();
  EXPECT_EQ(straddling.data(), nullptr);
  EXPECT_FALSE(is_mapped(path));
}

// Minor page faults this process has taken so far.
long minor_faults() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Reading every page of a load: a prefaulted mapping is already in place (no fault); an on-demand one faults its
// pages in as they are read (the kernel maps up to 16 around each fault, so at least pages / 16 faults).
TEST(DataLoader, MmapPrefaultMapsThePagesAtLoad) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), pages = 256;
  std::string content(pages * page, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>((i * 13 + i / 4093) & 0xff);
  const std::string path = write_temp("prefault.bin", content);
  for (MmapDataLoader::Residency r : {MmapDataLoader::Residency::OnDemand, MmapDataLoader::Residency::Prefault}) {
    Result<MmapDataLoader> loader = MmapDataLoader::open(path.c_str(), r);
    ASSERT_TRUE(loader.ok());
    Result<FreeableBuffer> loaded = loader->load(0, content.size(), SegmentInfo{SegmentInfo::Type::Constant, 1});
    ASSERT_TRUE(loaded.ok());
    const volatile char* bytes = static_cast<const char*>(loaded->data());
    const long before = minor_faults();
    unsigned sum = 0, want = 0;
    for (size_t i = 0; i < content.size(); i += page) sum += static_cast<unsigned char>(bytes[i]);
    const long faults = minor_faults() - before;
    for (size_t i = 0; i < content.size(); i += page) want += static_cast<unsigned char>(content[i]);
    EXPECT_EQ(sum, want);
    if (r == MmapDataLoader::Residency::Prefault) {
      EXPECT_LE(faults, 2) << "a prefaulted load faulted while being read";
    } else {
      EXPECT_GE(faults, static_cast<long>(pages / 16)) << "an on-demand load was mapped in already";
    }
  }
}

TEST(DataLoader, MissingFileNamesPathAndReason) {
  EXPECT_EQ(MmapDataLoader::open("/nonexistent/model.pte").error(), Error::AccessFailed);
  EXPECT_EQ(testing::last_log(), "cannot open /nonexistent/model.pte: No such file or directory");
  EXPECT_EQ(FileDataLoader::open("/nonexistent/model.pte", nullptr).error(), Error::AccessFailed);
  EXPECT_EQ(testing::last_log(), "cannot open /nonexistent/model.pte: No such file or directory");
}

TEST(DataLoader, FileLoadWithoutAllocatorIsRefused) {
  Result<FileDataLoader> loader = FileDataLoader::open(write_temp("noalloc.bin", kContent).c_str(), nullptr);
  ASSERT_TRUE(loader.ok());
  EXPECT_EQ(loader->load(0, 4, SegmentInfo{}).error(), Error::InvalidState);
  EXPECT_EQ(testing::last_log(), "FileDataLoader::load of 4 bytes needs a MemoryAllocator; none was given");
  char out[4];
  EXPECT_EQ(loader->load_into(0, 4, SegmentInfo{}, out), Error::Ok);  // load_into needs no allocator
  EXPECT_EQ(std::string(out, 4), "0123");
}

TEST(FreeableBuffer, FreesOnceAndMovesOwnership) {
  int frees = 0;
  auto count = [](void* context, const void*, size_t) { ++*static_cast<int*>(context); };
  const char bytes[4] = {1, 2, 3, 4};
  {
    FreeableBuffer a(bytes, 4, count, &frees);
    FreeableBuffer b(static_cast<FreeableBuffer&&>(a));
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(b.size(), 4u);
    FreeableBuffer c;
    c = static_cast<FreeableBuffer&&>(b);
    EXPECT_EQ(frees, 0);
    c.free();
    EXPECT_EQ(frees, 1);
    c.free();  // a second free is a no-op
  }
  EXPECT_EQ(frees, 1);  // destructors of moved-from and freed buffers free nothing
}

}  // namespace
}  // namespace ember
