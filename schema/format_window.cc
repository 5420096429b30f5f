#include "schema/format_window.h"

#include <string.h>

#include "runtime/core/log.h"

namespace ember {

namespace {

bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

char printable(uint8_t c) { return c >= 32 && c < 127 ? static_cast<char>(c) : '?'; }

int two_digits(const char* p) { return (p[0] - '0') * 10 + (p[1] - '0'); }

}  // namespace

Error check_format_identifier(const FormatWindow& w, const uint8_t* id, Error foreign) {
  if (memcmp(id, w.identifier, 4) == 0) return Error::Ok;
  const char* ours = w.identifier;
  // Same letters, other digits: ExecuTorch's marker of a change old readers would misread.
  if (id[0] == static_cast<uint8_t>(ours[0]) && id[1] == static_cast<uint8_t>(ours[1]) && is_digit(id[2]) &&
      is_digit(id[3])) {
    const char found[2] = {static_cast<char>(id[2]), static_cast<char>(id[3])};
    EMBER_LOG(ERROR, "the %s was written in %s ExecuTorch format, '%c%c%c%c'; Ember reads %.4s with %s %u..%u", w.name,
              two_digits(found) > two_digits(ours + 2) ? "a newer" : "an older", id[0], id[1], id[2], id[3], ours,
              w.version_field, static_cast<unsigned>(w.min_version), static_cast<unsigned>(w.max_version));
    return Error::NotSupported;
  }
  EMBER_LOG(ERROR, "not a %s: identifier at byte 4 is '%c%c%c%c' (%02x%02x%02x%02x), expected '%.4s'", w.name,
            printable(id[0]), printable(id[1]), printable(id[2]), printable(id[3]), id[0], id[1], id[2], id[3], ours);
  return foreign;
}

Error check_format_version(const FormatWindow& w, uint32_t version) {
  if (version >= w.min_version && version <= w.max_version) return Error::Ok;
  EMBER_LOG(ERROR, "the %s has %s %u, %s than Ember reads: %.4s with %s %u..%u", w.name, w.version_field,
            static_cast<unsigned>(version), version > w.max_version ? "newer" : "older", w.identifier, w.version_field,
            static_cast<unsigned>(w.min_version), static_cast<unsigned>(w.max_version));
  return Error::NotSupported;
}

}  // namespace ember
