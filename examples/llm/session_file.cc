#include "examples/llm/session_file.h"

#include <stdio.h>
#include <string.h>

#include <memory>

#include "runtime/core/log.h"

namespace ember {
namespace llm {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "session files are little-endian, as the host's words");

constexpr char kMagic[8] = {'E', 'M', 'B', 'R', 'S', 'E', 'S', 'S'};
constexpr uint32_t kVersion = 1;

struct FileCloser {
  void operator()(FILE* f) const { fclose(f); }
};
using File = std::unique_ptr<FILE, FileCloser>;

void put_u32(uint8_t* p, uint32_t v) { memcpy(p, &v, 4); }
void put_u64(uint8_t* p, uint64_t v) { memcpy(p, &v, 8); }
uint32_t get_u32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

// Writes the bytes and folds them into the running checksum.
bool write_hashed(FILE* f, const void* data, size_t n, uint64_t* h) {
  *h = session_hash(*h, data, n);
  return n == 0 || fwrite(data, 1, n, f) == n;
}

bool read_hashed(FILE* f, void* data, size_t n, uint64_t* h) {
  if (n != 0 && fread(data, 1, n, f) != n) return false;
  *h = session_hash(*h, data, n);
  return true;
}

Error refuse(const char* path, const char* what) {
  // The reason first: a log line has a bounded length, and a temporary path can be long.
  EMBER_LOG(ERROR, "not a session of this program: %s (file %s)", what, path);
  return Error::InvalidExternalData;
}

}  // namespace

uint64_t session_hash(uint64_t h, const void* bytes, size_t n) {
  // Word at a time: fast enough for a program's hundreds of megabytes (its fingerprint) at memory speed.
  const uint8_t* p = static_cast<const uint8_t*>(bytes);
  constexpr uint64_t kMul = 0x9fb21c651e98df25ull;
  for (; n >= 8; n -= 8, p += 8) {
    h = (h ^ get_u64(p)) * kMul;
    h ^= h >> 32;
  }
  for (; n > 0; --n, ++p) h = (h ^ *p) * kMul;
  return h ^ (h >> 29);
}

Result<uint64_t> session_fingerprint(const char* path) {
  File f(fopen(path, "rb"));
  EMBER_CHECK_OR_RETURN_ERROR(f != nullptr, AccessFailed, "cannot open %s to fingerprint it", path);
  std::unique_ptr<uint8_t[]> chunk(new uint8_t[1 << 20]);
  uint64_t h = kSessionHashSeed;
  size_t got;
  while ((got = fread(chunk.get(), 1, 1 << 20, f.get())) > 0) h = session_hash(h, chunk.get(), got);
  EMBER_CHECK_OR_RETURN_ERROR(!ferror(f.get()), AccessFailed, "cannot read %s to fingerprint it", path);
  return h;
}

Error write_session_file(const char* path, const SessionFileWrite& s) {
  File f(fopen(path, "wb"));
  EMBER_CHECK_OR_RETURN_ERROR(f != nullptr, AccessFailed, "cannot create session file %s", path);
  uint8_t header[kSessionHeaderBytes];
  memcpy(header, kMagic, 8);
  put_u32(header + 8, kVersion);
  put_u32(header + 12, 0);
  put_u64(header + 16, s.fingerprint);
  put_u64(header + 24, static_cast<uint64_t>(s.max_seq_len));
  put_u64(header + 32, s.n_tokens);
  put_u64(header + 40, s.kv_bytes);
  uint64_t h = kSessionHashSeed;
  bool ok = write_hashed(f.get(), header, sizeof(header), &h) &&
            write_hashed(f.get(), s.tokens, s.n_tokens * sizeof(int64_t), &h) &&
            write_hashed(f.get(), s.kv, s.kv_bytes, &h);
  uint8_t sum[8];
  put_u64(sum, h);
  ok = ok && fwrite(sum, 1, 8, f.get()) == 8;
  ok = fclose(f.release()) == 0 && ok;
  EMBER_CHECK_OR_RETURN_ERROR(ok, AccessFailed, "cannot write session file %s (%zu bytes)", path,
                              kSessionHeaderBytes + s.n_tokens * sizeof(int64_t) + s.kv_bytes + 8);
  return Error::Ok;
}

Error read_session_file(const char* path, const SessionFileExpect& expect, std::vector<int64_t>* tokens,
                        std::vector<uint8_t>* kv) {
  File f(fopen(path, "rb"));
  EMBER_CHECK_OR_RETURN_ERROR(f != nullptr, AccessFailed, "cannot open session file %s", path);
  EMBER_CHECK_OR_RETURN_ERROR(fseek(f.get(), 0, SEEK_END) == 0, AccessFailed, "cannot read session file %s", path);
  const long end = ftell(f.get());
  EMBER_CHECK_OR_RETURN_ERROR(end >= 0 && fseek(f.get(), 0, SEEK_SET) == 0, AccessFailed, "cannot read session file %s",
                              path);
  const uint64_t file_bytes = static_cast<uint64_t>(end);
  char why[256];
  if (file_bytes < kSessionHeaderBytes + 8) {
    snprintf(why, sizeof(why), "%llu bytes, less than the %zu of a header and checksum",
             static_cast<unsigned long long>(file_bytes), kSessionHeaderBytes + 8);
    return refuse(path, why);
  }
  uint8_t header[kSessionHeaderBytes];
  uint64_t h = kSessionHashSeed;
  EMBER_CHECK_OR_RETURN_ERROR(read_hashed(f.get(), header, sizeof(header), &h), AccessFailed,
                              "cannot read the header of session file %s", path);
  if (memcmp(header, kMagic, 8) != 0) return refuse(path, "bytes 0..7 are not the magic \"EMBRSESS\"");
  const uint32_t version = get_u32(header + 8), flags = get_u32(header + 12);
  const uint64_t fingerprint = get_u64(header + 16), max_seq_len = get_u64(header + 24);
  const uint64_t n = get_u64(header + 32), kv_bytes = get_u64(header + 40);
  if (version != kVersion) {
    snprintf(why, sizeof(why), "version %u; this build reads version %u", version, kVersion);
    return refuse(path, why);
  }
  if (flags != 0) {
    snprintf(why, sizeof(why), "flags 0x%x; version %u has none", flags, kVersion);
    return refuse(path, why);
  }
  if (fingerprint != expect.fingerprint) {
    snprintf(why, sizeof(why), "it was saved from another program (fingerprint %016llx; this program's is %016llx)",
             static_cast<unsigned long long>(fingerprint), static_cast<unsigned long long>(expect.fingerprint));
    return refuse(path, why);
  }
  if (max_seq_len != static_cast<uint64_t>(expect.max_seq_len)) {
    snprintf(why, sizeof(why), "max_seq_len %llu; the program's is %lld", static_cast<unsigned long long>(max_seq_len),
             static_cast<long long>(expect.max_seq_len));
    return refuse(path, why);
  }
  if (n > max_seq_len) {
    snprintf(why, sizeof(why), "%llu tokens, more than max_seq_len %llu", static_cast<unsigned long long>(n),
             static_cast<unsigned long long>(max_seq_len));
    return refuse(path, why);
  }
  // n <= max_seq_len: the program's KV bytes for n tokens fit its pool, no overflow.
  const uint64_t want_kv = expect.kv_fixed_bytes + n * expect.kv_bytes_per_token;
  if (kv_bytes != want_kv) {
    snprintf(why, sizeof(why), "%llu KV bytes; the program's cache holds %llu for %llu tokens",
             static_cast<unsigned long long>(kv_bytes), static_cast<unsigned long long>(want_kv),
             static_cast<unsigned long long>(n));
    return refuse(path, why);
  }
  const uint64_t want = kSessionHeaderBytes + n * sizeof(int64_t) + kv_bytes + 8;
  if (file_bytes != want) {
    snprintf(why, sizeof(why), "%llu bytes; its header says %llu (48 header + 8 x %llu tokens + %llu KV + 8 checksum)",
             static_cast<unsigned long long>(file_bytes), static_cast<unsigned long long>(want),
             static_cast<unsigned long long>(n), static_cast<unsigned long long>(kv_bytes));
    return refuse(path, why);
  }
  std::vector<int64_t> ids(static_cast<size_t>(n));
  EMBER_CHECK_OR_RETURN_ERROR(read_hashed(f.get(), ids.data(), ids.size() * sizeof(int64_t), &h), AccessFailed,
                              "cannot read the tokens of session file %s", path);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= expect.vocab_size) {
      snprintf(why, sizeof(why), "token %zu is %lld, outside the vocabulary [0, %lld)", i,
               static_cast<long long>(ids[i]), static_cast<long long>(expect.vocab_size));
      return refuse(path, why);
    }
  }
  std::vector<uint8_t> rows(static_cast<size_t>(kv_bytes));
  EMBER_CHECK_OR_RETURN_ERROR(read_hashed(f.get(), rows.data(), rows.size(), &h), AccessFailed,
                              "cannot read the KV bytes of session file %s", path);
  uint8_t sum[8];
  EMBER_CHECK_OR_RETURN_ERROR(fread(sum, 1, 8, f.get()) == 8, AccessFailed,
                              "cannot read the checksum of session file %s", path);
  if (get_u64(sum) != h) {
    snprintf(why, sizeof(why), "its checksum %016llx does not match its bytes' %016llx (the file is corrupted)",
             static_cast<unsigned long long>(get_u64(sum)), static_cast<unsigned long long>(h));
    return refuse(path, why);
  }
  *tokens = std::move(ids);
  *kv = std::move(rows);
  return Error::Ok;
}

}  // namespace llm
}  // namespace ember
