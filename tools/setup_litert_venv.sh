#!/usr/bin/env bash
# Builds the benchmark's LiteRT venv, .venv-litert: litert-torch (PyTorch -> .tflite) and ai-edge-litert (the
# LiteRT interpreter, with its XNNPACK CPU delegate) beside torch 2.13.0 CPU, for bench/litert_side.py. It never
# touches the project's own .venv. torch is pinned in the same pip command (litert-torch 0.10.0 accepts
# torch >= 2.4, < 2.15), so nothing can pull another torch; the converter's own stack (litert-converter,
# ai-edge-quantizer, torchao, jax) is pinned too, since each release changes what converts. Everything comes from
# the package index at install time; converting and running download nothing. Idempotent; prints the interpreter
# path last.
#
#   tools/setup_litert_venv.sh            # creates .venv-litert
#   EMBER_LITERT_VENV=/path tools/setup_litert_venv.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${EMBER_LITERT_VENV:-$ROOT/.venv-litert}"
WANT="torch==2.13.0 litert-torch==0.10.0 ai-edge-litert==2.3.0 litert-converter==0.5.0 ai-edge-quantizer==0.10.0 \
torchao==0.18.0 jax==0.10.2 jaxlib==0.10.2"
STAMP="$VENV/.ember-litert-requirements"
if [[ -x "$VENV/bin/python3" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "$VENV/bin/python3"; exit 0
fi
echo "setup_litert_venv: installing $WANT into $VENV" >&2
[[ -x "$VENV/bin/python3" ]] || "${EMBER_BASE_PYTHON:-python3}" -m venv "$VENV"
# The machine's pip configuration names extra package folders that may not exist; pip warns for each. Those
# lines are noise here; every other line, and pip's exit status, are kept.
# shellcheck disable=SC2086
"$VENV/bin/python3" -m pip install -q --disable-pip-version-check $WANT 2>&1 | { grep -v "^WARNING: Location '" || true; } >&2
"$VENV/bin/python3" -c "import torch, litert_torch; from ai_edge_litert.interpreter import Interpreter; \
assert torch.__version__.startswith('2.13.0'), torch.__version__" >&2
echo "$WANT" > "$STAMP"
echo "$VENV/bin/python3"
