// verify_flatbuffer() with program_schema.h against flatc's generated ember_pte::VerifyProgramBuffer: on real
// programs (the fuzz corpus and the programs that once crashed the runtime) and on many damaged copies of them,
// the two must accept and refuse exactly the same buffers. Damage: every byte of the flatbuffer set to values
// that break offsets, lengths and alignment; every truncation; seeded random multi-byte writes; and tight depth
// and table-count limits.
#include <stdio.h>
#include <string.h>

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "schema/extended_header.h"
#include "schema/program_generated.h"
#include "schema/program_schema.h"

namespace ember {
namespace {

std::vector<std::string> g_paths;

std::vector<uint8_t> read_file(const std::string& path) {
  std::vector<uint8_t> bytes;
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return bytes;
  uint8_t chunk[4096];
  for (size_t n; (n = fread(chunk, 1, sizeof(chunk), f)) > 0;) bytes.insert(bytes.end(), chunk, chunk + n);
  fclose(f);
  return bytes;
}

struct Limits {
  size_t max_depth = 64;
  size_t max_tables = 10000000;
};

struct Tally {
  size_t accepted = 0;
  size_t refused = 0;
  size_t disagreements = 0;
  std::string first_disagreement;
};

// Both verifiers on `bytes` (copied into a fresh 16-byte-aligned buffer of exactly that size, so the sanitizers
// see any read past it).
void compare(const std::vector<uint8_t>& bytes, const Limits& limits, const std::string& what, Tally* tally) {
  std::vector<uint64_t> storage((bytes.size() + 7) / 8 + 1);
  uint8_t* buf = reinterpret_cast<uint8_t*>(storage.data());
  if (!bytes.empty()) memcpy(buf, bytes.data(), bytes.size());
  flatbuffers::Verifier::Options options;
  options.max_depth = limits.max_depth;
  options.max_tables = limits.max_tables;
  flatbuffers::Verifier by_flatc(buf, bytes.size(), options);
  const bool flatc_ok = ember_pte::VerifyProgramBuffer(by_flatc);
  flatbuffers::Verifier by_table(buf, bytes.size(), options);
  const bool table_ok =
      verify_flatbuffer(ember_pte::program_schema(), by_table, buf, bytes.size(), ember_pte::ProgramIdentifier());
  (flatc_ok ? tally->accepted : tally->refused)++;
  if (flatc_ok != table_ok && tally->disagreements++ == 0) {
    tally->first_disagreement = what + (flatc_ok ? ": flatc accepts, the table refuses"
                                                 : ": flatc refuses, the "
                                                   "table accepts");
  }
}

// The flatbuffer part of a .pte (the extended header says where it ends; segments after it are not verified).
std::vector<uint8_t> flatbuffer_of(const std::vector<uint8_t>& file) {
  const size_t head = file.size() < extended_header::kHeadBytes ? file.size() : extended_header::kHeadBytes;
  Result<ExtendedHeader> header = parse_extended_header(file.data(), head, file.size());
  if (!header.ok()) return file;
  return std::vector<uint8_t>(file.begin(), file.begin() + static_cast<ptrdiff_t>(header->program_size));
}

TEST(FlatbufferSchemaTest, AgreesWithFlatcOnProgramsAndDamagedCopies) {
  ASSERT_FALSE(g_paths.empty()) << "pass .pte files as arguments";
  Tally tally;
  size_t programs = 0;
  std::mt19937 rng(1234);
  for (const std::string& path : g_paths) {
    const std::vector<uint8_t> file = read_file(path);
    if (file.size() < 8 || memcmp(file.data() + 4, "ET12", 4) != 0) continue;
    ++programs;
    const std::vector<uint8_t> fb = flatbuffer_of(file);
    compare(fb, {}, path, &tally);
    // Every byte, set to values that make offsets point nowhere or at themselves, lengths huge, and alignment odd.
    for (size_t i = 0; i < fb.size(); ++i) {
      for (uint8_t value :
           {uint8_t{0x00}, uint8_t{0xff}, static_cast<uint8_t>(fb[i] ^ 0x01), static_cast<uint8_t>(fb[i] + 0x10)}) {
        if (value == fb[i]) continue;
        std::vector<uint8_t> damaged = fb;
        damaged[i] = value;
        compare(damaged, {}, path + " byte " + std::to_string(i) + " = " + std::to_string(value), &tally);
      }
    }
    for (size_t n = 0; n < fb.size(); ++n) {
      compare(std::vector<uint8_t>(fb.begin(), fb.begin() + static_cast<ptrdiff_t>(n)), {},
              path + " cut to " + std::to_string(n), &tally);
    }
    // A few random 4-byte words at once, as a corrupted transfer would write them.
    for (int trial = 0; trial < 1500 && fb.size() >= 4; ++trial) {
      std::vector<uint8_t> damaged = fb;
      const int words = 1 + static_cast<int>(rng() % 4);
      for (int w = 0; w < words; ++w) {
        const size_t at = rng() % (fb.size() - 3);
        const uint32_t value = rng() % 2 ? rng() : rng() % 64;
        memcpy(&damaged[at], &value, 4);
      }
      compare(damaged, {}, path + " random trial " + std::to_string(trial), &tally);
    }
    // Limits: too few tables, too little depth, for the original and a damaged copy alike.
    for (size_t depth : {1, 2, 3, 4, 5, 6}) compare(fb, {depth, 10000000}, path + " max_depth", &tally);
    for (size_t tables : {1, 2, 5, 10, 20, 50, 100, 1000}) compare(fb, {64, tables}, path + " max_tables", &tally);
  }
  ASSERT_GE(programs, 10u) << "too few programs among the arguments";
  EXPECT_EQ(tally.disagreements, 0u) << "first: " << tally.first_disagreement;
  // Both answers must be common, or the comparison says little.
  EXPECT_GT(tally.accepted, 1000u);
  EXPECT_GT(tally.refused, 1000u);
  printf("%zu programs: %zu buffers accepted and %zu refused by both verifiers\n", programs, tally.accepted,
         tally.refused);
}

}  // namespace
}  // namespace ember

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) ember::g_paths.push_back(argv[i]);
  return RUN_ALL_TESTS();
}
