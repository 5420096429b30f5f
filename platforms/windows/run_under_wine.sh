#!/bin/sh
# Runs a Windows program under wine64 in a quiet, throwaway prefix shared by every run of a test session.
# Creating a prefix takes wine several seconds; the first caller does it, under a lock, and later callers reuse
# it. EMBER_WINEPREFIX names the prefix (default: one per user under /tmp); delete it to start afresh.
#
#   run_under_wine.sh program.exe [args...]
set -eu

WINE=/usr/lib/wine/wine64
[ -x "$WINE" ] || WINE=$(command -v wine64 || command -v wine || true)
if [ -z "$WINE" ]; then
  echo "run_under_wine: wine64 is not installed (apt-get install wine64; ./setup.sh installs it)" >&2
  exit 127
fi

# wine starts a Unix program it is handed (a sh_test's script) but drops its exit status: refuse anything that is
# not a Windows executable, so no test passes without having run.
if [ "$(head -c 2 "$1" 2>/dev/null)" != "MZ" ]; then
  echo "run_under_wine: $1 is not a Windows executable; mark its test incompatible with //platforms:windows" >&2
  exit 2
fi

WINEPREFIX=${EMBER_WINEPREFIX:-/tmp/ember-wine-$(id -u)}
# No debug channels; no Mono or Gecko installers (nothing here needs .NET or HTML).
WINEDEBUG=-all
WINEDLLOVERRIDES="mscoree,mshtml="
export WINEPREFIX WINEDEBUG WINEDLLOVERRIDES
# Bazel's test environment has no HOME; wine only needs one to exist.
export HOME="${HOME:-$WINEPREFIX}"

# Under bazel test: gtest takes XML_OUTPUT_FILE, a Unix absolute path, as relative on Windows (no drive letter)
# and fails to write it; Bazel writes the XML from the exit status and log instead.
unset XML_OUTPUT_FILE

if [ ! -f "$WINEPREFIX/.ember-ready" ]; then
  mkdir -p "$(dirname "$WINEPREFIX")"
  (
    flock 9
    if [ ! -f "$WINEPREFIX/.ember-ready" ]; then
      "$WINE" wineboot --init >/dev/null 2>&1 || true
      touch "$WINEPREFIX/.ember-ready"
    fi
  ) 9>"$WINEPREFIX.lock"
fi

exec "$WINE" "$@"
