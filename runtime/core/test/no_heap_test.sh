#!/bin/sh
# The core must not call the heap, throw, or use RTTI: its objects' undefined symbols must name none of them.
# Arguments: the core library's archive(s) (static and/or shared, as Bazel lists them).
set -eu
status=0
for lib in "$@"; do
  case "$lib" in *.a|*.pic.a) ;; *) continue ;; esac
  found=$(nm -C --undefined-only "$lib" 2>/dev/null |
          grep -E " (malloc|calloc|realloc|free|operator new|operator delete|__cxa_throw|__cxa_allocate_exception|typeinfo for|__dynamic_cast)" || true)
  if [ -n "$found" ]; then
    echo "FAIL: $lib references:"
    echo "$found"
    status=1
  else
    echo "ok: $lib has no heap, exception or RTTI references"
  fi
done
exit $status
