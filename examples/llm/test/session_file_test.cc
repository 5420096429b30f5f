// Session files as untrusted input: a written file reads back bit for bit, and every field that does not match
// the restoring program, a cut or lengthened file and a flipped byte are refused with a message naming it.
#include "examples/llm/session_file.h"

#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/test/recording_pal.h"

namespace ember {
namespace llm {
namespace {

constexpr uint64_t kFingerprint = 0x0123456789abcdefull;
constexpr int64_t kMaxSeqLen = 16;
constexpr int64_t kVocab = 50;
constexpr size_t kKvBytes = 96;  // 16 bytes whatever the count, and 16 per token: 5 tokens
constexpr size_t kKvFixed = 16;
constexpr size_t kKvPerToken = 16;

std::vector<uint8_t> read_all(const std::string& path) {
  std::vector<uint8_t> bytes;
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return bytes;
  int c;
  while ((c = fgetc(f)) != EOF) bytes.push_back(static_cast<uint8_t>(c));
  fclose(f);
  return bytes;
}

void write_all(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  fclose(f);
}

class SessionFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "session_file_test.session";
    for (size_t i = 0; i < kKvBytes; ++i) kv_[i] = static_cast<uint8_t>(i * 7 + 3);
    const SessionFileWrite w{kFingerprint, kMaxSeqLen, tokens_.data(), tokens_.size(), kv_, kKvBytes};
    ASSERT_EQ(write_session_file(path_.c_str(), w), Error::Ok) << ember::testing::last_log();
    bytes_ = read_all(path_);
  }

  // Reads `bytes` back as a file against the expected program; the error and the log line.
  Error read(const std::vector<uint8_t>& bytes,
             SessionFileExpect expect = {kFingerprint, kMaxSeqLen, kVocab, kKvFixed, kKvPerToken}) {
    write_all(path_, bytes);
    ember::testing::clear_log();
    std::vector<uint8_t> kv;
    tokens_read_.clear();
    const Error e = read_session_file(path_.c_str(), expect, &tokens_read_, &kv);
    EXPECT_EQ(kv.size(), e == Error::Ok ? kKvBytes : 0u);
    return e;
  }

  // The file with a little-endian u64 written at `offset`.
  std::vector<uint8_t> with_u64(size_t offset, uint64_t v) {
    std::vector<uint8_t> b = bytes_;
    memcpy(b.data() + offset, &v, 8);
    return b;
  }

  bool logged(const char* text) { return ember::testing::last_log().find(text) != std::string::npos; }

  std::string path_;
  std::vector<int64_t> tokens_ = {1, 7, 49, 0, 12};
  uint8_t kv_[kKvBytes];
  std::vector<uint8_t> bytes_;
  std::vector<int64_t> tokens_read_;
};

TEST_F(SessionFileTest, RoundTrip) {
  EXPECT_EQ(bytes_.size(), kSessionHeaderBytes + tokens_.size() * 8 + kKvBytes + 8);
  std::vector<uint8_t> kv;
  std::vector<int64_t> tokens;
  ASSERT_EQ(read_session_file(path_.c_str(), {kFingerprint, kMaxSeqLen, kVocab, kKvFixed, kKvPerToken}, &tokens, &kv),
            Error::Ok)
      << ember::testing::last_log();
  EXPECT_EQ(tokens, tokens_);
  ASSERT_EQ(kv.size(), kKvBytes);
  EXPECT_EQ(memcmp(kv.data(), kv_, kKvBytes), 0);
}

TEST_F(SessionFileTest, HeaderFieldsRefused) {
  std::vector<uint8_t> b = bytes_;
  b[0] = 'X';
  EXPECT_EQ(read(b), Error::InvalidExternalData);
  EXPECT_TRUE(logged("bytes 0..7 are not the magic")) << ember::testing::last_log();
  b = bytes_;
  b[8] = 2;
  EXPECT_EQ(read(b), Error::InvalidExternalData);
  EXPECT_TRUE(logged("version 2; this build reads version 1")) << ember::testing::last_log();
  b = bytes_;
  b[12] = 1;
  EXPECT_EQ(read(b), Error::InvalidExternalData);
  EXPECT_TRUE(logged("flags 0x1")) << ember::testing::last_log();
  EXPECT_EQ(read(bytes_, {kFingerprint + 1, kMaxSeqLen, kVocab, kKvFixed, kKvPerToken}), Error::InvalidExternalData);
  EXPECT_TRUE(logged("saved from another program (fingerprint 0123456789abcdef")) << ember::testing::last_log();
  EXPECT_EQ(read(bytes_, {kFingerprint, kMaxSeqLen * 2, kVocab, kKvFixed, kKvPerToken}), Error::InvalidExternalData);
  EXPECT_TRUE(logged("max_seq_len 16; the program's is 32")) << ember::testing::last_log();
  EXPECT_EQ(read(with_u64(32, kMaxSeqLen + 1)), Error::InvalidExternalData);
  EXPECT_TRUE(logged("17 tokens, more than max_seq_len 16")) << ember::testing::last_log();
  EXPECT_EQ(read(bytes_, {kFingerprint, kMaxSeqLen, kVocab, kKvFixed, kKvPerToken + 4}), Error::InvalidExternalData);
  EXPECT_TRUE(logged("96 KV bytes; the program's cache holds 116 for 5 tokens")) << ember::testing::last_log();
  // A token count whose KV bytes the header does not state (huge counts are caught by max_seq_len first).
  EXPECT_EQ(read(with_u64(32, 6)), Error::InvalidExternalData);
  EXPECT_TRUE(logged("96 KV bytes; the program's cache holds 112 for 6 tokens")) << ember::testing::last_log();
  // A token count and KV bytes that agree, but not with the file's size.
  std::vector<uint8_t> b6 = with_u64(32, 6);
  const uint64_t kv6 = kKvFixed + 6 * kKvPerToken;
  memcpy(b6.data() + 40, &kv6, 8);
  EXPECT_EQ(read(b6), Error::InvalidExternalData);
  EXPECT_TRUE(logged("192 bytes; its header says 216 (48 header + 8 x 6 tokens + 112 KV + 8 checksum)"))
      << ember::testing::last_log();
}

TEST_F(SessionFileTest, CutOrLengthenedFilesRefused) {
  for (size_t keep : {size_t{0}, size_t{10}, kSessionHeaderBytes, bytes_.size() - 1}) {
    std::vector<uint8_t> b(bytes_.begin(), bytes_.begin() + static_cast<ptrdiff_t>(keep));
    EXPECT_EQ(read(b), Error::InvalidExternalData) << keep;
  }
  EXPECT_TRUE(logged("bytes; its header says 192")) << ember::testing::last_log();
  std::vector<uint8_t> b = bytes_;
  b.push_back(0);
  EXPECT_EQ(read(b), Error::InvalidExternalData);
  EXPECT_TRUE(logged("193 bytes; its header says 192")) << ember::testing::last_log();
  EXPECT_EQ(read({}), Error::InvalidExternalData);
  EXPECT_TRUE(logged("0 bytes, less than the 56 of a header and checksum")) << ember::testing::last_log();
}

TEST_F(SessionFileTest, ContentsChecked) {
  EXPECT_EQ(read(with_u64(kSessionHeaderBytes + 2 * 8, kVocab)), Error::InvalidExternalData);
  EXPECT_TRUE(logged("token 2 is 50, outside the vocabulary [0, 50)")) << ember::testing::last_log();
  EXPECT_EQ(read(with_u64(kSessionHeaderBytes, static_cast<uint64_t>(-1))), Error::InvalidExternalData);
  EXPECT_TRUE(logged("token 0 is -1")) << ember::testing::last_log();
  // Any flipped bit of a token or the KV bytes fails the checksum.
  for (size_t at : {kSessionHeaderBytes + 8, kSessionHeaderBytes + 40, bytes_.size() - 9}) {
    std::vector<uint8_t> b = bytes_;
    b[at] ^= 1;
    EXPECT_EQ(read(b), Error::InvalidExternalData) << at;
    EXPECT_TRUE(logged("does not match its bytes'")) << at << ": " << ember::testing::last_log();
  }
  EXPECT_TRUE(tokens_read_.empty());  // nothing handed out from a refused file
}

TEST_F(SessionFileTest, MissingFile) {
  std::vector<uint8_t> kv;
  std::vector<int64_t> tokens;
  EXPECT_EQ(read_session_file("/nonexistent/dir/x.session", {kFingerprint, kMaxSeqLen, kVocab, kKvFixed, kKvPerToken},
                              &tokens, &kv),
            Error::AccessFailed);
}

TEST_F(SessionFileTest, FingerprintIsOfTheBytes) {
  Result<uint64_t> a = session_fingerprint(path_.c_str());
  ASSERT_TRUE(a.ok());
  std::vector<uint8_t> b = bytes_;
  b[100] ^= 0x80;
  write_all(path_, b);
  Result<uint64_t> c = session_fingerprint(path_.c_str());
  ASSERT_TRUE(c.ok());
  EXPECT_NE(*a, *c);
  EXPECT_EQ(session_fingerprint("/nonexistent/dir/x.pte").error(), Error::AccessFailed);
}

}  // namespace
}  // namespace llm
}  // namespace ember
