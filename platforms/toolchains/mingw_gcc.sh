#!/bin/sh
# Debian's mingw-w64 gcc (posix thread model) for Bazel. The mingw driver appends ".exe" to an output named
# without an extension, but Bazel expects its outputs under the names it chose: move the file back.
out=""
prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"
  prev="$a"
done
/usr/bin/x86_64-w64-mingw32-gcc-posix "$@" || exit $?
if [ -n "$out" ] && [ ! -e "$out" ] && [ -e "$out.exe" ]; then
  mv -f "$out.exe" "$out"
fi
