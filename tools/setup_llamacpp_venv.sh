#!/usr/bin/env bash
# Builds the LLM benchmark's llama.cpp venv, .venv-llamacpp: llama-cpp-python built from its source distribution
# (which carries llama.cpp's own sources under vendor/llama.cpp) with Debian's CMake and gcc, and the gguf package
# that writes the benchmark's model as GGUF. It never touches the project's own .venv. Every package is pinned,
# the build backend too: it is installed first and the build runs without pip's build isolation, so nothing
# unpinned is fetched for it. llama.cpp is built with its default options, as `pip install llama-cpp-python` gives
# a user (GGML_NATIVE on, so -march=native: the build machine's vector extensions; OpenMP threads); the CPU features
# the library was built with are written to $VENV/.ember-llamacpp-build.txt with the build time.
# Idempotent; prints the interpreter path last.
#
#   tools/setup_llamacpp_venv.sh            # creates .venv-llamacpp (several minutes: llama.cpp compiles)
#   EMBER_LLAMACPP_VENV=/path tools/setup_llamacpp_venv.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${EMBER_LLAMACPP_VENV:-$ROOT/.venv-llamacpp}"
LLAMA="llama-cpp-python==0.3.36"
DEPS="gguf==0.19.0 numpy==2.4.6 typing-extensions==4.16.0 diskcache==5.6.3 jinja2==3.1.6 MarkupSafe==3.0.4 \
PyYAML==6.0.3 requests==2.34.2 tqdm==4.70.1 certifi==2026.10.19.post1 charset-normalizer==3.5.3 idna==3.20 \
urllib3==2.8.0"
BUILD="scikit-build-core==1.1.2 packaging==26.4 pathspec==1.1.1"
WANT="$LLAMA $DEPS $BUILD"
STAMP="$VENV/.ember-llamacpp-requirements"
INFO="$VENV/.ember-llamacpp-build.txt"
if [[ -x "$VENV/bin/python3" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "$VENV/bin/python3"; exit 0
fi
for tool in cmake gcc g++; do
  command -v "$tool" >/dev/null || { echo "setup_llamacpp_venv: $tool is needed to build llama.cpp" >&2; exit 1; }
done
echo "setup_llamacpp_venv: installing $WANT into $VENV" >&2
[[ -x "$VENV/bin/python3" ]] || "${EMBER_BASE_PYTHON:-python3}" -m venv "$VENV"
pip_install() {
  # The machine's pip configuration names extra package folders that may not exist; pip warns for each. Those
  # lines are noise here; every other line, and pip's exit status, are kept.
  "$VENV/bin/python3" -m pip install --disable-pip-version-check "$@" 2>&1 | { grep -v "^WARNING: Location '" || true; }
}
# shellcheck disable=SC2086
pip_install -q $DEPS $BUILD >&2
# The compile: from the sdist (--no-binary), not from pip's wheel cache (--no-cache-dir), so the time below is the
# build's. Its log (CMake's configuration included) stays in the venv.
echo "setup_llamacpp_venv: building $LLAMA from its source distribution (llama.cpp compiles; minutes)" >&2
start=$(date +%s)
pip_install -v --no-cache-dir --no-build-isolation --no-deps --no-binary llama-cpp-python "$LLAMA" \
  >"$VENV/llamacpp-build.log"
took=$(($(date +%s) - start))
"$VENV/bin/python3" - "$took" "$(nproc)" >"$INFO" <<'EOF'
import sys

import llama_cpp

took, cores = sys.argv[1:]
print(f"llama-cpp-python {llama_cpp.__version__} built from its sdist in {took} s on {cores} cores")
print("llama_print_system_info: " + llama_cpp.llama_print_system_info().decode().strip())
EOF
cat "$INFO" >&2
"$VENV/bin/python3" -c "import gguf, llama_cpp, numpy" >&2
echo "$WANT" > "$STAMP"
echo "$VENV/bin/python3"
