#include "runtime/data_file/flat_tensor_file.h"

#include <string.h>

#include "runtime/core/log.h"
#include "runtime/core/tensor.h"
#include "schema/flat_tensor_generated.h"
#include "schema/format_window.h"

namespace ember {
namespace {

using ull = unsigned long long;

// The FH01 header sits after the flatbuffer's root offset and file identifier; its fields take 40 bytes.
constexpr size_t kHeaderOffset = 8;
constexpr size_t kHeaderFields = 40;
constexpr size_t kHeadBytes = kHeaderOffset + kHeaderFields;

uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

uint64_t le64(const uint8_t* p) { return static_cast<uint64_t>(le32(p)) | static_cast<uint64_t>(le32(p + 4)) << 32; }

struct Header {
  uint64_t flatbuffer_end;  // the flatbuffer, header included, is bytes [0, flatbuffer_end)
  uint64_t segment_base;
  uint64_t segment_size;
};

// The header's fields, each checked against the file: nothing after this trusts a number it has not bounded.
Result<Header> parse_header(const uint8_t* head, uint64_t file_size) {
  EMBER_TRY(check_format_identifier(format_versions::kPtd, head + 4, Error::InvalidExternalData));
  const uint8_t* h = head + kHeaderOffset;
  EMBER_CHECK_OR_RETURN_ERROR(memcmp(h, "FH01", 4) == 0, InvalidExternalData,
                              "the .ptd's header at byte 8 does not start with \"FH01\"");
  const uint32_t length = le32(h + 4);
  EMBER_CHECK_OR_RETURN_ERROR(length >= kHeaderFields, InvalidExternalData,
                              "the .ptd's header says it is %u bytes; its fields take %zu",
                              static_cast<unsigned>(length), kHeaderFields);
  const uint64_t fb_offset = le64(h + 8), fb_size = le64(h + 16);
  Header out{0, le64(h + 24), le64(h + 32)};
  EMBER_CHECK_OR_RETURN_ERROR(fb_offset >= kHeaderFields && fb_offset <= file_size && fb_size <= file_size - fb_offset,
                              InvalidExternalData,
                              "the .ptd's flatbuffer (offset %llu, %llu bytes) does not fit the %llu-byte file",
                              static_cast<ull>(fb_offset), static_cast<ull>(fb_size), static_cast<ull>(file_size));
  out.flatbuffer_end = fb_offset + fb_size;
  EMBER_CHECK_OR_RETURN_ERROR(out.flatbuffer_end >= kHeadBytes, InvalidExternalData,
                              "the .ptd's flatbuffer ends at byte %llu, inside its own header",
                              static_cast<ull>(out.flatbuffer_end));
  EMBER_CHECK_OR_RETURN_ERROR(out.segment_base >= out.flatbuffer_end && out.segment_base <= file_size &&
                                  out.segment_size <= file_size - out.segment_base,
                              InvalidExternalData,
                              "the .ptd's segment data (%llu bytes at %llu) does not fit between the flatbuffer's end "
                              "(%llu) and the end of the %llu-byte file",
                              static_cast<ull>(out.segment_size), static_cast<ull>(out.segment_base),
                              static_cast<ull>(out.flatbuffer_end), static_cast<ull>(file_size));
  return out;
}

// A tensor layout the runtime can hold: a known type with storage, sizes >= 0, a dim order that is a
// permutation, and no more bytes than the segment it describes.
Error check_layout(const char* key, const ember_ptd::TensorLayout* l, uint64_t segment_size) {
  const int type = static_cast<int>(l->scalar_type());
  EMBER_CHECK_OR_RETURN_ERROR(is_valid_scalar_type(type) && element_size(static_cast<ScalarType>(type)) > 0,
                              InvalidExternalData, "'%s' in the .ptd has scalar type %d, which the runtime cannot hold",
                              key, type);
  const size_t dim = l->sizes() != nullptr ? l->sizes()->size() : 0;
  const size_t orders = l->dim_order() != nullptr ? l->dim_order()->size() : 0;
  EMBER_CHECK_OR_RETURN_ERROR(dim <= static_cast<size_t>(kMaxTensorDim) && orders == dim, InvalidExternalData,
                              "'%s' in the .ptd has %zu sizes and %zu dim order entries (at most %d, and as many)", key,
                              dim, orders, kMaxTensorDim);
  uint32_t seen = 0;
  for (size_t d = 0; d < dim; ++d) {
    const uint8_t o = l->dim_order()->Get(static_cast<flatbuffers::uoffset_t>(d));
    EMBER_CHECK_OR_RETURN_ERROR(o < dim && !(seen >> o & 1u), InvalidExternalData,
                                "'%s' in the .ptd has a dim order that is not a permutation of its %zu dimensions", key,
                                dim);
    seen |= 1u << o;
  }
  Result<size_t> nbytes =
      checked_nbytes(static_cast<ScalarType>(type), ArrayRef<int32_t>(dim ? l->sizes()->data() : nullptr, dim));
  EMBER_CHECK_OR_RETURN_ERROR(nbytes.ok(), InvalidExternalData,
                              "'%s' in the .ptd has a negative size or more bytes than this target can address", key);
  EMBER_CHECK_OR_RETURN_ERROR(nbytes.get() <= segment_size, InvalidExternalData,
                              "'%s' in the .ptd describes %zu bytes but its segment holds %llu", key, nbytes.get(),
                              static_cast<ull>(segment_size));
  return Error::Ok;
}

// Every index and range of the tables, against the segment data the header declares.
Error check_tables(const ember_ptd::FlatTensor* root, uint64_t segment_size) {
  EMBER_TRY(check_format_version(format_versions::kPtd, root->version()));
  const auto* segments = root->segments();
  const size_t num_segments = segments != nullptr ? segments->size() : 0;
  for (size_t i = 0; i < num_segments; ++i) {
    const auto* s = segments->Get(static_cast<flatbuffers::uoffset_t>(i));
    EMBER_CHECK_OR_RETURN_ERROR(s->offset() <= segment_size && s->size() <= segment_size - s->offset(),
                                InvalidExternalData,
                                "the .ptd's segment %zu (%llu bytes at %llu) runs past its %llu bytes of segment data",
                                i, static_cast<ull>(s->size()), static_cast<ull>(s->offset()),
                                static_cast<ull>(segment_size));
  }
  const auto* named = root->named_data();
  const size_t n = named != nullptr ? named->size() : 0;
  for (size_t i = 0; i < n; ++i) {
    const auto* e = named->Get(static_cast<flatbuffers::uoffset_t>(i));
    EMBER_CHECK_OR_RETURN_ERROR(e->key() != nullptr, InvalidExternalData, "entry %zu of the .ptd has no name", i);
    const char* key = e->key()->c_str();
    EMBER_CHECK_OR_RETURN_ERROR(e->segment_index() < num_segments, InvalidExternalData,
                                "'%s' in the .ptd refers to segment %u; the file has %zu", key,
                                static_cast<unsigned>(e->segment_index()), num_segments);
    for (size_t j = 0; j < i; ++j) {
      EMBER_CHECK_OR_RETURN_ERROR(strcmp(named->Get(static_cast<flatbuffers::uoffset_t>(j))->key()->c_str(), key) != 0,
                                  InvalidExternalData, "the .ptd holds '%s' twice", key);
    }
    if (e->tensor_layout() != nullptr) {
      EMBER_TRY(check_layout(key, e->tensor_layout(), segments->Get(e->segment_index())->size()));
    }
  }
  return Error::Ok;
}

}  // namespace

Result<FlatTensorFile> FlatTensorFile::load(DataLoader* loader) {
  EMBER_CHECK_OR_RETURN_ERROR(loader != nullptr, InvalidArgument, "FlatTensorFile::load needs a data loader");
  EMBER_TRY_ASSIGN(file_size, loader->size());
  EMBER_CHECK_OR_RETURN_ERROR(file_size >= kHeadBytes, InvalidExternalData,
                              "the .ptd is %llu bytes; its header alone ends at byte %zu", static_cast<ull>(file_size),
                              kHeadBytes);
  uint8_t head[kHeadBytes];
  EMBER_TRY(loader->load_into(0, kHeadBytes, SegmentInfo{SegmentInfo::Type::Program, 0}, head));
  EMBER_TRY_ASSIGN(header, parse_header(head, file_size));

  EMBER_TRY_ASSIGN(fb, loader->load(0, header.flatbuffer_end, SegmentInfo{SegmentInfo::Type::Program, 0}));
  EMBER_CHECK_OR_RETURN_ERROR(fb.size() == header.flatbuffer_end, InvalidExternalData,
                              "the loader returned %zu of the .ptd flatbuffer's %llu bytes", fb.size(),
                              static_cast<ull>(header.flatbuffer_end));
  flatbuffers::Verifier verifier(static_cast<const uint8_t*>(fb.data()), fb.size());
  EMBER_CHECK_OR_RETURN_ERROR(ember_ptd::VerifyFlatTensorBuffer(verifier), InvalidExternalData,
                              "the .ptd's flatbuffer (%zu bytes) is malformed", fb.size());
  const ember_ptd::FlatTensor* root = ember_ptd::GetFlatTensor(fb.data());
  EMBER_TRY(check_tables(root, header.segment_size));

  FreeableBuffer segments;
  if (header.segment_size > 0) {
    EMBER_TRY_ASSIGN(loaded, loader->load(header.segment_base, header.segment_size,
                                          SegmentInfo{SegmentInfo::Type::External, 0}));
    EMBER_CHECK_OR_RETURN_ERROR(loaded.size() == header.segment_size, InvalidExternalData,
                                "the loader returned %zu of the .ptd's %llu bytes of segment data", loaded.size(),
                                static_cast<ull>(header.segment_size));
    segments = static_cast<FreeableBuffer&&>(loaded);
  }
  return FlatTensorFile(static_cast<FreeableBuffer&&>(fb), static_cast<FreeableBuffer&&>(segments), root);
}

size_t FlatTensorFile::num_entries() const { return root_->named_data() != nullptr ? root_->named_data()->size() : 0; }

Result<const char*> FlatTensorFile::key(size_t index) const {
  EMBER_CHECK_OR_RETURN_ERROR(index < num_entries(), InvalidArgument, "entry %zu of a .ptd with %zu", index,
                              num_entries());
  return root_->named_data()->Get(static_cast<flatbuffers::uoffset_t>(index))->key()->c_str();
}

Result<size_t> FlatTensorFile::index_of(const char* key) const {
  const size_t n = num_entries();
  for (size_t i = 0; i < n; ++i) {
    if (strcmp(root_->named_data()->Get(static_cast<flatbuffers::uoffset_t>(i))->key()->c_str(), key) == 0) return i;
  }
  return Error::NotFound;
}

Result<ArrayRef<uint8_t>> FlatTensorFile::find(const char* key) const {
  EMBER_TRY_ASSIGN(i, index_of(key));
  const auto* e = root_->named_data()->Get(static_cast<flatbuffers::uoffset_t>(i));
  const auto* s = root_->segments()->Get(e->segment_index());
  // load() proved the range lies inside the segment data.
  return ArrayRef<uint8_t>(static_cast<const uint8_t*>(segments_.data()) + s->offset(), static_cast<size_t>(s->size()));
}

Result<const void*> FlatTensorFile::tensor(const char* name, ScalarType type, ArrayRef<int32_t> sizes,
                                           size_t nbytes) const {
  EMBER_TRY_ASSIGN(i, index_of(name));
  const auto* e = root_->named_data()->Get(static_cast<flatbuffers::uoffset_t>(i));
  if (const auto* l = e->tensor_layout()) {
    const ScalarType stored = static_cast<ScalarType>(l->scalar_type());
    EMBER_CHECK_OR_RETURN_ERROR(stored == type, InvalidExternalData,
                                "external tensor '%s': the program reads %s but the .ptd stores %s", name,
                                scalar_type_name(type), scalar_type_name(stored));
    const size_t dim = l->sizes() != nullptr ? l->sizes()->size() : 0;
    EMBER_CHECK_OR_RETURN_ERROR(dim == sizes.size(), InvalidExternalData,
                                "external tensor '%s': the program reads %zu dimensions but the .ptd stores %zu", name,
                                sizes.size(), dim);
    for (size_t d = 0; d < dim; ++d) {
      const int32_t have = l->sizes()->Get(static_cast<flatbuffers::uoffset_t>(d));
      EMBER_CHECK_OR_RETURN_ERROR(have == sizes[d], InvalidExternalData,
                                  "external tensor '%s': dimension %zu is %d in the program but %d in the .ptd", name,
                                  d, static_cast<int>(sizes[d]), static_cast<int>(have));
    }
  }
  EMBER_TRY_ASSIGN(bytes, find(name));
  EMBER_CHECK_OR_RETURN_ERROR(bytes.size() >= nbytes, InvalidExternalData,
                              "external tensor '%s' needs %zu bytes; the .ptd holds %zu", name, nbytes, bytes.size());
  const size_t align = element_size(type);
  EMBER_CHECK_OR_RETURN_ERROR(align == 0 || reinterpret_cast<uintptr_t>(bytes.data()) % align == 0, InvalidExternalData,
                              "external tensor '%s' starts at an address that is not a multiple of its %zu-byte "
                              "elements",
                              name, align);
  return static_cast<const void*>(bytes.data());
}

Result<const void*> ExternalDataList::tensor(const char* name, ScalarType type, ArrayRef<int32_t> sizes,
                                             size_t nbytes) const {
  for (size_t i = 0; i < count_; ++i) {
    Result<const void*> r = files_[i]->tensor(name, type, sizes, nbytes);
    if (r.ok() || r.error() != Error::NotFound) return r;
  }
  return Error::NotFound;
}

}  // namespace ember
