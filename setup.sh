#!/usr/bin/env bash
# Installs what Ember needs on a Debian machine: system packages (apt) and a Python virtual environment
# (.venv, from requirements.txt). Safe to run again: it checks first and prints nothing when all is in place.
#
#   ./setup.sh            install what is missing
#   ./setup.sh --verbose  say what is checked
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$ROOT/.venv"
LOG="$ROOT/.setup.log"
VERBOSE=0
[[ "${1:-}" == "--verbose" ]] && VERBOSE=1

# Debian packages, one group per purpose (see ../shared/BAZEL_OFFLINE.md for the Bazel ones).
APT_PACKAGES=(
  # build: Bazel 4 from Debian and the local repositories it reads
  bazel-bootstrap bazel-platforms bazel-skylib bazel-rules-java bazel-rules-proto
  # C++ tests and the .pte schema
  googletest flatbuffers-compiler libflatbuffers-dev
  # toolchain basics
  g++ python3-venv
  # platforms: linux_aarch64 cross compiler and the emulator its tests run under
  g++-aarch64-linux-gnu qemu-user
  # platforms: cortex_m55 bare metal (GCC + newlib + libstdc++ headers) and the mps3-an547 board emulator
  gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib qemu-system-arm
  # platforms: windows_x86_64 (mingw-w64 g++, posix threads) and wine64, which runs its .exe files in the tests
  mingw-w64 wine64
  # platforms: android_arm64 and ios_arm64 static libraries (clang with a target triple, llvm-ar/nm/size)
  clang lld llvm
  # ./ember cache serve: a Bazel remote cache over HTTP (nginx's built-in WebDAV PUT; no extra module needed)
  nginx
  # leak checks of load/run cycles (tests/runtime/test_valgrind.py)
  valgrind
  # fuzzing: libFuzzer and clang's sanitizer runtimes (tests/fuzz, --config=fuzz)
  libclang-rt-14-dev
  # the XNNPACK delegate backend (backends/xnnpack/runtime, --config=xnnpack): Debian's 2022 XNNPACK snapshot
  # with its subgraph API, and the thread pool it is built on (host builds only; cross builds leave it out)
  libxnnpack-dev libpthreadpool-dev
  # SDK bundles (tools/sdk, docs/sdk.md): the CMake, pkg-config and Makefile examples their tests build
  cmake pkg-config make
  # llm_server's HTTP server (examples/llm/server): cpp-httplib, built by Debian as a shared library
  libcpp-httplib-dev
  # ember explore's browser test (tests/devtools/test_explorer_browser.py): headless Chromium and its WebDriver,
  # which Selenium is pointed at directly, so nothing is downloaded
  chromium chromium-driver
)

say() { [[ $VERBOSE == 1 ]] && echo "setup: $*" || true; }
fail() {
  echo "setup: FAILED while $1" >&2
  [[ -s "$LOG" ]] && { echo "--- last lines of $LOG ---" >&2; tail -n 25 "$LOG" >&2; }
  exit 1
}

as_root() {
  if [[ $(id -u) == 0 ]]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "setup: need root (or sudo) to run: $*" >&2; return 1
  fi
}

# --- apt ---------------------------------------------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if (( ${#missing[@]} )); then
  echo "setup: installing Debian packages: ${missing[*]}"
  : > "$LOG"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$LOG" 2>&1 || fail "running apt-get update"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >>"$LOG" 2>&1 || fail "installing Debian packages (${missing[*]})"
else
  say "Debian packages present"
fi

# --- Python venv -------------------------------------------------------------------------------------
# The stamp records which requirements.txt the venv was built from; a changed file triggers a re-install.
STAMP="$VENV/.ember-requirements.sha256"
want="$(sha256sum "$ROOT/requirements.txt" | cut -d' ' -f1)"
if [[ -x "$VENV/bin/python3" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
  say "Python environment up to date ($VENV)"
else
  echo "setup: installing Python packages into $VENV (torch is large; this takes a minute or two)"
  : > "$LOG"
  PY="${EMBER_BASE_PYTHON:-python3}"
  [[ -x "$VENV/bin/python3" ]] || "$PY" -m venv "$VENV" >>"$LOG" 2>&1 || fail "creating the virtual environment with $PY"
  "$VENV/bin/python3" -m pip install -q --disable-pip-version-check -r "$ROOT/requirements.txt" >>"$LOG" 2>&1 \
    || fail "installing requirements.txt into $VENV"
  "$VENV/bin/python3" -c "import torch, flatbuffers, yaml, pybind11, pytest" >>"$LOG" 2>&1 \
    || fail "importing the installed Python packages"
  # The zoo's model libraries must not have replaced the CPU torch (a CUDA build is gigabytes), and torchvision
  # must import through the zoo's shim (zoo/public/torchvision_cpu.py).
  PYTHONPATH="$ROOT" "$VENV/bin/python3" -c "import torch; assert torch.version.cuda is None, torch.__version__
from zoo.public import torchvision_cpu; torchvision_cpu.ensure(); import timm, transformers" >>"$LOG" 2>&1 \
    || fail "checking the CPU torch and importing torchvision, timm and transformers"
  echo "$want" > "$STAMP"
fi

# Make the repository's Python packages (exir, codegen, selective_build, ...) and the runtime's Python API
# (ember.runtime) importable from anywhere.
PTH="$("$VENV/bin/python3" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/ember.pth"
WANT_PTH="$(printf '%s\n%s' "$ROOT" "$ROOT/runtime/python")"
[[ -f "$PTH" && "$(cat "$PTH")" == "$WANT_PTH" ]] || echo "$WANT_PTH" > "$PTH"

say "all set"
