#!/bin/sh
# The core (and the loaders) must not call the heap, throw, use RTTI or iostream: the undefined symbols of their
# archives must name none of those. Arguments: the libraries' outputs as Bazel lists them (static and/or shared);
# every .a among them is checked, and finding none is a failure, so the test cannot pass by checking nothing.
set -eu
status=0
checked=0
pattern=' U (malloc|calloc|realloc|free|aligned_alloc|posix_memalign|strdup)$'
pattern="$pattern"'| U operator (new|delete)'
pattern="$pattern"'| U (__cxa_throw|__cxa_allocate_exception|__cxa_begin_catch|__gxx_personality_v0)$'
pattern="$pattern"'| U std::__throw_'
pattern="$pattern"'| U (typeinfo for |vtable for __cxxabiv1|__dynamic_cast)'
pattern="$pattern"'| U std::(cout|cerr|ios_base)'
for lib in "$@"; do
  case "$lib" in *.a) ;; *) continue ;; esac
  checked=$((checked + 1))
  symbols=$(nm -C --undefined-only "$lib")
  found=$(printf '%s\n' "$symbols" | sed 's/^ *//; s/^/ /' | grep -E "$pattern" || true)
  if [ -n "$found" ]; then
    echo "FAIL: $lib references:"
    echo "$found"
    status=1
  else
    echo "ok: $lib ($(printf '%s\n' "$symbols" | grep -c ' U ') undefined symbols) has no heap, exception, RTTI or iostream reference"
  fi
done
if [ "$checked" -eq 0 ]; then
  echo "FAIL: no static archive among the arguments: $*"
  exit 1
fi
exit $status
