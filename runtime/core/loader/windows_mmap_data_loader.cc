// MmapDataLoader on Windows: the contract of mmap_data_loader.h with file mapping objects. Each load maps its own
// read-only view (MapViewOfFile), which keeps the mapping alive after its handle is closed, so freeing the buffer
// (UnmapViewOfFile) is all the cleanup a load needs. Views start at a multiple of the allocation granularity
// (not the page size, as mmap's offsets do): that granularity is what the loader keeps as its "page size".
#include <io.h>
#include <windows.h>

#include "runtime/core/loader/mmap_data_loader.h"
#include "runtime/core/loader/posix_file.h"
#include "runtime/core/log.h"

namespace ember {

namespace {

// The view holding `data` starts at the granule that holds it: the granularity travels as the callback context,
// so the buffer does not refer back to the loader.
void unmap(void* context, const void* data, size_t) {
  const uintptr_t granularity = reinterpret_cast<uintptr_t>(context);
  UnmapViewOfFile(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(data) & ~(granularity - 1)));
}

uint64_t allocation_granularity() {
  SYSTEM_INFO info;
  GetSystemInfo(&info);
  return info.dwAllocationGranularity;
}

uint64_t page_size() {
  SYSTEM_INFO info;
  GetSystemInfo(&info);
  return info.dwPageSize;
}

}  // namespace

Result<MmapDataLoader> MmapDataLoader::open(const char* path, Residency residency) {
  EMBER_TRY_ASSIGN(file, internal::open_readonly(path));
  const uint64_t granularity = allocation_granularity();
  if (granularity == 0 || (granularity & (granularity - 1)) != 0) {
    EMBER_LOG(ERROR, "cannot map %s: the system reports an allocation granularity of %llu", path,
              static_cast<unsigned long long>(granularity));
    ::_close(file.fd);
    return Error::NotSupported;
  }
  return MmapDataLoader(file.fd, file.size, granularity, residency);
}

MmapDataLoader::MmapDataLoader(MmapDataLoader&& other)
    : fd_(other.fd_), file_size_(other.file_size_), page_size_(other.page_size_), residency_(other.residency_) {
  other.fd_ = -1;
}

MmapDataLoader::~MmapDataLoader() {
  if (fd_ >= 0) ::_close(fd_);
}

Result<FreeableBuffer> MmapDataLoader::load(uint64_t offset, uint64_t size, const SegmentInfo&) {
  EMBER_TRY(check_range(offset, size, file_size_));
  if (size == 0) return FreeableBuffer(nullptr, 0);  // a view of nothing cannot be mapped; there is nothing to read
  const uint64_t view_offset = offset & ~(page_size_ - 1);
  const uint64_t lead = offset - view_offset;
  const uint64_t length = lead + size;
  EMBER_CHECK_OR_RETURN_ERROR(static_cast<uint64_t>(static_cast<size_t>(length)) == length, NotSupported,
                              "%llu bytes do not fit this target's address space",
                              static_cast<unsigned long long>(length));
  const HANDLE file = reinterpret_cast<HANDLE>(::_get_osfhandle(fd_));
  const HANDLE mapping = CreateFileMappingW(file, nullptr, PAGE_READONLY, 0, 0, nullptr);
  if (mapping == nullptr) {
    EMBER_LOG(ERROR, "cannot map %llu bytes at offset %llu: CreateFileMapping failed (Windows error %lu)",
              static_cast<unsigned long long>(size), static_cast<unsigned long long>(offset),
              static_cast<unsigned long>(GetLastError()));
    return Error::AccessFailed;
  }
  void* view = MapViewOfFile(mapping, FILE_MAP_READ, static_cast<DWORD>(view_offset >> 32),
                             static_cast<DWORD>(view_offset), static_cast<SIZE_T>(length));
  const unsigned long map_error = view == nullptr ? static_cast<unsigned long>(GetLastError()) : 0;
  CloseHandle(mapping);  // the view holds its own reference to the mapping
  if (view == nullptr) {
    EMBER_LOG(ERROR, "cannot map %llu bytes at offset %llu: MapViewOfFile failed (Windows error %lu)",
              static_cast<unsigned long long>(size), static_cast<unsigned long long>(offset), map_error);
    return Error::AccessFailed;
  }
  const uint8_t* data = static_cast<const uint8_t*>(view) + lead;
  if (residency_ == Residency::Prefault) prefault(data, static_cast<size_t>(size));
  return FreeableBuffer(data, static_cast<size_t>(size), unmap,
                        reinterpret_cast<void*>(static_cast<uintptr_t>(page_size_)));
}

void MmapDataLoader::prefault(const void* data, size_t bytes) {
  // No populate advice that every Windows (and wine) honours: a read of one byte per page maps each in.
  if (bytes == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(page_size());
  const uintptr_t start = reinterpret_cast<uintptr_t>(data) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(data) + bytes;
  for (uintptr_t p = start; p < end; p += page) (void)*reinterpret_cast<const volatile uint8_t*>(p);
}

Error MmapDataLoader::load_into(uint64_t offset, uint64_t size, const SegmentInfo&, void* destination) {
  EMBER_TRY(check_range(offset, size, file_size_));
  return internal::read_at(fd_, offset, size, destination);
}

}  // namespace ember
