#!/usr/bin/env bash
# Runs pytest against a sanitizer build of the Python extension (runtime/python: _ember_runtime.so and
# _ember_runtime_portable.so, built with --config=asan, --config=ubsan or --config=tsan, gcc's sanitizers). Python
# itself is not instrumented: for ASan and TSan their runtime is preloaded (LD_PRELOAD, what an uninstrumented host
# needs), and tests/conftest.py keeps it out of the tools the tests start. Leak checking is off: CPython and torch
# keep memory until exit by design; the C++ tests and the fuzz targets check leaks. For TSan, torch runs on one
# thread (its OpenMP runtime is not instrumented, so TSan cannot see its synchronisation), and pytest captures at
# the sys level, so a report written to file descriptor 2 before the process halts reaches the terminal.
#
#   tools/sanitize_pytest.sh asan [PYTEST ARGS]    default: the whole suite
#   tools/sanitize_pytest.sh ubsan [PYTEST ARGS]
#   tools/sanitize_pytest.sh tsan tests/runtime/test_concurrent_run.py   # Program.run from threads (docs/threads.md)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

config="${1:-}"
case "$config" in
  asan|ubsan|tsan) shift ;;
  *) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac

bazel build --config="$config" //runtime/python:_ember_runtime.so //runtime/python:_ember_runtime_portable.so
lib_dir="$(bazel info --config="$config" bazel-bin 2>/dev/null)/runtime/python"

export EMBER_SANITIZER="$config"
export EMBER_RUNTIME_LIB_DIR="$lib_dir"
capture=()
if [[ "$config" == asan ]]; then
  export LD_PRELOAD="$(gcc -print-file-name=libasan.so)"
  export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1"
elif [[ "$config" == tsan ]]; then
  export LD_PRELOAD="$(gcc -print-file-name=libtsan.so)"
  export TSAN_OPTIONS="halt_on_error=1:report_signal_unsafe=0"
  export OMP_NUM_THREADS=1
  capture=(--capture=sys)
else
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi
echo "sanitize_pytest: pytest with the $config extension from $lib_dir" >&2
exec .venv/bin/python3 -m pytest -q "${capture[@]}" "$@"
