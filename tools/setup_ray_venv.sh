#!/usr/bin/env bash
# Builds .venv-ray: Ray for the heavy tiers (tools/heavy), layered over the project's own .venv. Its interpreter is
# .venv's Python; a .pth file adds .venv's site-packages after its own, so torch, exir's dependencies and ember's
# path file come from .venv while Ray and its dependencies (pinned here) shadow nothing in .venv, which it never
# touches. Every machine of a multi-machine cluster runs this in a checkout at the same path and commit.
# Idempotent; prints the interpreter path last.
#
#   tools/setup_ray_venv.sh            # creates .venv-ray
#   EMBER_RAY_VENV=/path tools/setup_ray_venv.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${EMBER_RAY_VENV:-$ROOT/.venv-ray}"
BASE="$ROOT/.venv/bin/python3"
WANT="ray==2.60.0"
STAMP="$VENV/.ember-ray-requirements"
if [[ -x "$VENV/bin/python3" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "$VENV/bin/python3"; exit 0
fi
[[ -x "$BASE" ]] || { echo "setup_ray_venv: $BASE is missing: run ./setup.sh first" >&2; exit 1; }
echo "setup_ray_venv: installing $WANT into $VENV over $("$BASE" -c 'import sys; print(sys.prefix)')" >&2
[[ -x "$VENV/bin/python3" ]] || "$BASE" -m venv "$VENV"
# A plain path line in a .pth file would skip .venv's own .pth files (ember's among them); addsitedir reads them.
BASE_SITE="$("$BASE" -c 'import site; print(site.getsitepackages()[0])')"
VENV_SITE="$("$VENV/bin/python3" -c 'import site; print(site.getsitepackages()[0])')"
echo "import site; site.addsitedir('$BASE_SITE')" > "$VENV_SITE/zz_ember_base_venv.pth"
# The machine's pip configuration names extra package folders that may not exist; pip warns for each. Those
# lines are noise here; every other line, and pip's exit status, are kept.
"$VENV/bin/python3" -m pip install -q --disable-pip-version-check "$WANT" 2>&1 | { grep -v "^WARNING: Location '" || true; } >&2
"$VENV/bin/python3" -c "import ray, torch; assert ray.__version__ == '${WANT#ray==}', ray.__version__" >&2
echo "$WANT" > "$STAMP"
echo "$VENV/bin/python3"
