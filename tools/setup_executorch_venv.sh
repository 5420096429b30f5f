#!/usr/bin/env bash
# Builds a separate virtual environment with ExecuTorch 1.5.1 from PyPI (CPU only, beside torch 2.13.0), used to
# check that Ember's .pte files run on ExecuTorch and that ExecuTorch's files run on Ember. It never touches the
# project's own .venv. Idempotent; prints the interpreter path last.
#
#   tools/setup_executorch_venv.sh            # creates .venv-executorch
#   EMBER_ET_VENV=/path tools/setup_executorch_venv.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${EMBER_ET_VENV:-$ROOT/.venv-executorch}"
WANT="torch==2.13.0 executorch==1.5.1 flatbuffers==25.12.19 PyYAML==6.0.3 pytest==9.2.0"
STAMP="$VENV/.ember-et-requirements"
if [[ -x "$VENV/bin/python3" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "$VENV/bin/python3"; exit 0
fi
echo "setup_executorch_venv: installing $WANT into $VENV" >&2
[[ -x "$VENV/bin/python3" ]] || "${EMBER_BASE_PYTHON:-python3}" -m venv "$VENV"
# The machine's pip configuration names extra package folders that may not exist; pip warns for each. Those
# lines are noise here; every other line, and pip's exit status, are kept.
# shellcheck disable=SC2086
"$VENV/bin/python3" -m pip install -q --disable-pip-version-check $WANT 2>&1 | { grep -v "^WARNING: Location '" || true; } >&2
"$VENV/bin/python3" -c "import executorch, torch; from executorch.exir import to_edge; \
from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer" >&2
echo "$WANT" > "$STAMP"
echo "$VENV/bin/python3"
