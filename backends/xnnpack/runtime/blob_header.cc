#include "backends/xnnpack/runtime/blob_header.h"

#include <string.h>

#include "runtime/core/log.h"

namespace ember {
namespace xnnpack {

namespace {

// Little-endian reads at any alignment: the header's u64 sits at byte 22.
uint64_t read_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

bool printable(uint8_t c) { return c >= 0x20 && c < 0x7f; }

}  // namespace

Result<BlobParts> split_blob(const void* blob, size_t nbytes) {
  const uint8_t* b = static_cast<const uint8_t*>(blob);
  // A flatbuffer's root offset and identifier take 8 bytes; nothing shorter can be either form.
  EMBER_CHECK_OR_RETURN_ERROR(b != nullptr && nbytes >= 8, InvalidProgram,
                              "XnnpackBackend: the blob is %zu bytes; even its identifier needs 8", nbytes);
  BlobParts parts{};
  if (memcmp(b + 4, "XH00", 4) == 0) {
    EMBER_CHECK_OR_RETURN_ERROR(nbytes >= kHeaderMinLength, InvalidProgram,
                                "XnnpackBackend: the blob has an XH00 header but is %zu bytes; the header alone is %zu",
                                nbytes, kHeaderMinLength);
    const uint64_t length = read_le(b + 8, 2);
    const uint64_t fb_offset = read_le(b + 10, 4);
    const uint64_t fb_size = read_le(b + 14, 4);
    const uint64_t cd_offset = read_le(b + 18, 4);
    const uint64_t cd_size = read_le(b + 22, 8);
    // A longer header is a newer writer's (new fields go at the end); a shorter one is not a header.
    EMBER_CHECK_OR_RETURN_ERROR(length >= kHeaderMinLength && length <= nbytes, InvalidProgram,
                                "XnnpackBackend: XH00 header length %llu (bytes 8 to 9); it must be at least %zu "
                                "and within the %zu-byte blob",
                                static_cast<unsigned long long>(length), kHeaderMinLength, nbytes);
    EMBER_CHECK_OR_RETURN_ERROR(fb_size >= 8 && fb_offset >= length && fb_offset <= nbytes &&
                                    fb_size <= nbytes - fb_offset,
                                InvalidProgram,
                                "XnnpackBackend: XH00 header (bytes 10 to 17) puts the flatbuffer at [%llu, +%llu), "
                                "outside the %zu-byte blob (or over the %llu-byte header, or under 8 bytes)",
                                static_cast<unsigned long long>(fb_offset), static_cast<unsigned long long>(fb_size),
                                nbytes, static_cast<unsigned long long>(length));
    EMBER_CHECK_OR_RETURN_ERROR(cd_offset >= fb_offset + fb_size && cd_offset <= nbytes &&
                                    cd_size <= nbytes - cd_offset,
                                InvalidProgram,
                                "XnnpackBackend: XH00 header (bytes 18 to 29) puts the constant data at [%llu, "
                                "+%llu), which must follow the flatbuffer (ends at %llu) inside the %zu-byte blob",
                                static_cast<unsigned long long>(cd_offset), static_cast<unsigned long long>(cd_size),
                                static_cast<unsigned long long>(fb_offset + fb_size), nbytes);
    parts.flatbuffer = b + fb_offset;
    parts.flatbuffer_size = static_cast<size_t>(fb_size);
    parts.flatbuffer_offset = static_cast<size_t>(fb_offset);
    parts.constant_data = b + cd_offset;
    parts.constant_data_size = cd_size;
    parts.constant_data_offset = cd_offset;
    parts.has_header = true;
  } else {
    parts.flatbuffer = b;
    parts.flatbuffer_size = nbytes;
  }
  const uint8_t* id = parts.flatbuffer + 4;
  if (memcmp(id, "XN01", 4) != 0 && memcmp(id, "XN00", 4) != 0) {
    EMBER_LOG(ERROR,
              "XnnpackBackend: wrong magic: the graph's identifier is '%c%c%c%c' (%02x %02x %02x %02x) at blob byte "
              "%zu%s; expected XN01 or XN00",
              printable(id[0]) ? id[0] : '?', printable(id[1]) ? id[1] : '?', printable(id[2]) ? id[2] : '?',
              printable(id[3]) ? id[3] : '?', id[0], id[1], id[2], id[3], parts.flatbuffer_offset + 4,
              parts.has_header ? " (the offset the XH00 header gives)" : " (the blob has no XH00 header)");
    return Error::InvalidProgram;
  }
  memcpy(parts.identifier, id, 4);
  parts.identifier[4] = '\0';
  return parts;
}

}  // namespace xnnpack
}  // namespace ember
