// A file's identifier and version field checked against its format's window (schema/format_versions.yaml,
// generated into schema/format_versions.h), with the same messages as schema/format_versions.py: a file from
// another ExecuTorch format version is refused by name, with what this runtime reads stated.
#pragma once

#include <stdint.h>

#include "runtime/core/result.h"
#include "schema/format_versions.h"

namespace ember {

// Ok when the four bytes at `identifier` are the window's identifier. The same two letters with other digits:
// NotSupported, logging that the file is a newer or older ExecuTorch format and what this runtime reads. Anything
// else: `foreign`, logging "not a <format>" with the bytes found.
Error check_format_identifier(const FormatWindow& window, const uint8_t* identifier, Error foreign);

// Ok when `version` lies in the window; else NotSupported, logging the version field, whether it is newer or
// older, and the window.
Error check_format_version(const FormatWindow& window, uint32_t version);

}  // namespace ember
