#include "runtime/core/loader/mmap_data_loader.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/core/loader/posix_file.h"
#include "runtime/core/log.h"

namespace ember {

namespace {

// A load's mapping starts at the page holding its first byte; the free callback finds that page again from the
// data pointer, with the page size passed as the context (so the buffer does not refer back to the loader).
void unmap(void* context, const void* data, size_t size) {
  const uintptr_t page_size = reinterpret_cast<uintptr_t>(context);
  const uintptr_t address = reinterpret_cast<uintptr_t>(data);
  const uintptr_t page = address & ~(page_size - 1);
  munmap(reinterpret_cast<void*>(page), size + (address - page));
}

// Linux 5.14's madvise advice that populates a range's page table entries (readahead included); older kernels
// answer EINVAL, and the C library may not name it yet.
#if defined(__linux__) && !defined(MADV_POPULATE_READ)
#define MADV_POPULATE_READ 22
#endif

}  // namespace

Result<MmapDataLoader> MmapDataLoader::open(const char* path, Residency residency) {
  EMBER_TRY_ASSIGN(file, internal::open_readonly(path));
  const long page_size = sysconf(_SC_PAGESIZE);
  if (page_size <= 0 || (page_size & (page_size - 1)) != 0) {
    EMBER_LOG(ERROR, "cannot map %s: the system reports a page size of %ld", path, page_size);
    ::close(file.fd);
    return Error::NotSupported;
  }
  return MmapDataLoader(file.fd, file.size, static_cast<uint64_t>(page_size), residency);
}

MmapDataLoader::MmapDataLoader(MmapDataLoader&& other)
    : fd_(other.fd_), file_size_(other.file_size_), page_size_(other.page_size_), residency_(other.residency_) {
  other.fd_ = -1;
}

MmapDataLoader::~MmapDataLoader() {
  if (fd_ >= 0) ::close(fd_);
}

Result<FreeableBuffer> MmapDataLoader::load(uint64_t offset, uint64_t size, const SegmentInfo&) {
  EMBER_TRY(check_range(offset, size, file_size_));
  if (size == 0) return FreeableBuffer(nullptr, 0);  // mmap refuses empty mappings; there is nothing to read
  // mmap's file offset must be page-aligned: map from the start of the page that holds `offset`.
  const uint64_t page_offset = offset & ~(page_size_ - 1);
  const uint64_t lead = offset - page_offset;
  const uint64_t length = lead + size;  // no overflow: both are below the file size, itself an off_t
  EMBER_CHECK_OR_RETURN_ERROR(static_cast<uint64_t>(static_cast<size_t>(length)) == length, NotSupported,
                              "%llu bytes do not fit this target's address space",
                              static_cast<unsigned long long>(length));
  int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
  if (residency_ == Residency::Prefault) flags |= MAP_POPULATE;
#endif
  void* p = mmap(nullptr, static_cast<size_t>(length), PROT_READ, flags, fd_, static_cast<off_t>(page_offset));
  if (p == MAP_FAILED) {
    EMBER_LOG(ERROR, "cannot map %llu bytes at offset %llu: %s", static_cast<unsigned long long>(size),
              static_cast<unsigned long long>(offset), strerror(errno));
    return Error::AccessFailed;
  }
  return FreeableBuffer(static_cast<const uint8_t*>(p) + lead, static_cast<size_t>(size), unmap,
                        reinterpret_cast<void*>(static_cast<uintptr_t>(page_size_)));
}

void MmapDataLoader::prefault(const void* data, size_t bytes) {
  if (bytes == 0) return;
  const uintptr_t page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = reinterpret_cast<uintptr_t>(data) & ~(page_size - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(data) + bytes;
#ifdef MADV_POPULATE_READ
  if (madvise(reinterpret_cast<void*>(start), end - start, MADV_POPULATE_READ) == 0) return;
#endif
  // Without the advice: a read of one byte per page maps each in, one fault at a time. The first page is mapped
  // even where it starts before `data`: a load maps from the page that holds its first byte.
  for (uintptr_t p = start; p < end; p += page_size) (void)*reinterpret_cast<const volatile uint8_t*>(p);
}

Error MmapDataLoader::load_into(uint64_t offset, uint64_t size, const SegmentInfo&, void* destination) {
  EMBER_TRY(check_range(offset, size, file_size_));
  return internal::read_at(fd_, offset, size, destination);
}

}  // namespace ember
