#include <gtest/gtest.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
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

// How many of the pages in [data, data + bytes) are in this process's page table, from /proc/self/pagemap (bit 63
// of each page's entry: present); -1 when that file cannot be read.
long present_pages(const void* data, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const int fd = ::open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return -1;
  long present = 0;
  const uintptr_t first = reinterpret_cast<uintptr_t>(data) / page;
  const uintptr_t last = (reinterpret_cast<uintptr_t>(data) + bytes - 1) / page;
  for (uintptr_t p = first; p <= last; ++p) {
    uint64_t entry = 0;
    if (pread(fd, &entry, sizeof(entry), static_cast<off_t>(p * sizeof(entry))) != sizeof(entry)) {
      present = -1;
      break;
    }
    present += static_cast<long>(entry >> 63);
  }
  ::close(fd);
  return present;
}

// A prefaulted load has every page in the page table before anything reads it; an on-demand one has none of them
// until they are touched. Asked of the page table rather than counted as faults: how many faults a read takes depends
// on the kernel (fault-around, large folios) and on an emulator's own faults.
TEST(DataLoader, MmapPrefaultMapsThePagesAtLoad) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), pages = 256;
  std::string content(pages * page, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>((i * 13 + i / 4093) & 0xff);
  const std::string path = write_temp("prefault.bin", content);
  // The probe: a page this test has written must read as present, or pagemap does not describe this process (as
  // under qemu-user, where it is the emulator's).
  if (present_pages(content.data(), 1) != 1) GTEST_SKIP() << "/proc/self/pagemap does not describe this process";
  // And the platform must honour MAP_POPULATE itself (qemu-user drops it): an anonymous mapping asked to be
  // populated must come back present.
  void* anonymous = mmap(nullptr, 4 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  ASSERT_NE(anonymous, MAP_FAILED);
  const long populated = present_pages(anonymous, 4 * page);
  munmap(anonymous, 4 * page);
  if (populated != 4) GTEST_SKIP() << "this platform does not honour MAP_POPULATE";

  for (MmapDataLoader::Residency r : {MmapDataLoader::Residency::OnDemand, MmapDataLoader::Residency::Prefault}) {
    Result<MmapDataLoader> loader = MmapDataLoader::open(path.c_str(), r);
    ASSERT_TRUE(loader.ok());
    Result<FreeableBuffer> loaded = loader->load(0, content.size(), SegmentInfo{SegmentInfo::Type::Constant, 1});
    ASSERT_TRUE(loaded.ok());
    const long present = present_pages(loaded->data(), loaded->size());
    if (r == MmapDataLoader::Residency::Prefault) {
      EXPECT_EQ(present, static_cast<long>(pages)) << "a prefaulted load left pages out of the page table";
    } else {
      EXPECT_EQ(present, 0) << "an on-demand load was mapped in before it was read";
    }
    EXPECT_EQ(std::string(static_cast<const char*>(loaded->data()), loaded->size()), content);
  }
  // prefault on part of an on-demand load maps in the pages that part spans: here from the middle of page 10 to the
  // middle of page 19. (Its neighbours may come in too, by fault-around or a large folio, so they are not counted.)
  Result<MmapDataLoader> loader = MmapDataLoader::open(path.c_str(), MmapDataLoader::Residency::OnDemand);
  ASSERT_TRUE(loader.ok());
  Result<FreeableBuffer> loaded = loader->load(0, content.size(), SegmentInfo{SegmentInfo::Type::Constant, 1});
  ASSERT_TRUE(loaded.ok());
  const uint8_t* base = static_cast<const uint8_t*>(loaded->data());
  MmapDataLoader::prefault(base, 0);  // nothing to do, and no fault
  EXPECT_EQ(present_pages(base, content.size()), 0);
  MmapDataLoader::prefault(base + 10 * page + page / 2, 9 * page);
  EXPECT_EQ(present_pages(base + 10 * page, 10 * page), 10);
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
