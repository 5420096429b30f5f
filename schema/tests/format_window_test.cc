// check_format_identifier() and check_format_version() against the generated windows: each refusal message, and
// the windows' identifiers against the ones flatc compiled from the schemas.
#include "schema/format_window.h"

#include <gtest/gtest.h>

#include <string>

#include "runtime/core/test/recording_pal.h"
#include "schema/program_generated.h"

namespace ember {
namespace {

namespace fv = format_versions;
using testing::last_log;

const uint8_t* id(const char* text) { return reinterpret_cast<const uint8_t*>(text); }

bool logged(const std::string& text) { return last_log().find(text) != std::string::npos; }

TEST(FormatWindow, IdentifiersAreTheSchemas) {
  EXPECT_EQ(std::string(fv::kPte.identifier, 4), ember_pte::ProgramIdentifier());
  EXPECT_EQ(std::string(fv::kPtd.identifier, 4), "FT01");
  EXPECT_EQ(std::string(fv::kBpte.identifier, 4), "BP08");
  EXPECT_EQ(std::string(fv::kEtdump.identifier, 4), "ED00");
}

TEST(FormatWindow, OwnIdentifierPasses) {
  for (const FormatWindow* w : {&fv::kPte, &fv::kPtd, &fv::kBpte, &fv::kEtdump}) {
    EXPECT_EQ(check_format_identifier(*w, id(w->identifier), Error::InvalidProgram), Error::Ok) << w->name;
  }
}

TEST(FormatWindow, SameLettersOtherDigitsNamedNewerOrOlder) {
  EXPECT_EQ(check_format_identifier(fv::kPtd, id("FT02"), Error::InvalidExternalData), Error::NotSupported);
  EXPECT_TRUE(
      logged("the .ptd was written in a newer ExecuTorch format, 'FT02'; Ember reads FT01 with "
             "FlatTensor.version 0..0"))
      << last_log();
  EXPECT_EQ(check_format_identifier(fv::kPtd, id("FT00"), Error::InvalidExternalData), Error::NotSupported);
  EXPECT_TRUE(logged("the .ptd was written in an older ExecuTorch format, 'FT00'")) << last_log();
}

TEST(FormatWindow, ForeignIdentifierGetsTheCallersError) {
  EXPECT_EQ(check_format_identifier(fv::kPtd, id("ET12"), Error::InvalidExternalData), Error::InvalidExternalData);
  EXPECT_TRUE(logged("not a .ptd: identifier at byte 4 is 'ET12' (45543132), expected 'FT01'")) << last_log();
  // Letters that match but no digits: not a version of the format.
  EXPECT_EQ(check_format_identifier(fv::kPte, id("ET\x01x"), Error::InvalidProgram), Error::InvalidProgram);
  EXPECT_TRUE(logged("not a .pte: identifier at byte 4 is 'ET?x' (45540178), expected 'ET12'")) << last_log();
}

TEST(FormatWindow, VersionOutsideTheWindowNamed) {
  EXPECT_EQ(check_format_version(fv::kBpte, 2), Error::Ok);
  EXPECT_EQ(check_format_version(fv::kBpte, 0), Error::Ok);
  EXPECT_EQ(check_format_version(fv::kBpte, 3), Error::NotSupported);
  EXPECT_TRUE(
      logged("the bundled program has BundledProgram.version 3, newer than Ember reads: BP08 with "
             "BundledProgram.version 0..2"))
      << last_log();
  EXPECT_EQ(check_format_version(fv::kEtdump, 7), Error::NotSupported);
  EXPECT_TRUE(logged("the ETDump has ETDump.version 7, newer than Ember reads")) << last_log();
}

}  // namespace
}  // namespace ember
