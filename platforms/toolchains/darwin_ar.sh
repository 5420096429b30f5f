#!/bin/sh
# llvm-ar writing a BSD (Darwin) archive, the format Apple's linker reads; Bazel passes the usual ar flags.
exec /usr/bin/llvm-ar --format=darwin "$@"
