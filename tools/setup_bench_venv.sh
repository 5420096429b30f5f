#!/usr/bin/env bash
# Builds the benchmark's peer venv, .venv-bench: ONNX Runtime (and what torch.onnx.export needs in torch 2.13:
# onnx, onnxscript) beside torch 2.13.0 CPU, plus matplotlib for bench/'s latency plot. It never touches the
# project's own .venv. torch is pinned in the same pip command, so no other package can pull another torch.
# Idempotent; prints the interpreter path last.
#
#   tools/setup_bench_venv.sh            # creates .venv-bench
#   EMBER_BENCH_VENV=/path tools/setup_bench_venv.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${EMBER_BENCH_VENV:-$ROOT/.venv-bench}"
WANT="torch==2.13.0 onnxruntime==1.31.1 onnx==1.23.2 onnxscript==0.7.2 matplotlib==3.11.2 PyYAML==6.0.3"
STAMP="$VENV/.ember-bench-requirements"
if [[ -x "$VENV/bin/python3" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "$VENV/bin/python3"; exit 0
fi
echo "setup_bench_venv: installing $WANT into $VENV" >&2
[[ -x "$VENV/bin/python3" ]] || "${EMBER_BASE_PYTHON:-python3}" -m venv "$VENV"
# The machine's pip configuration names extra package folders that may not exist; pip warns for each. Those
# lines are noise here; every other line, and pip's exit status, are kept.
# shellcheck disable=SC2086
"$VENV/bin/python3" -m pip install -q --disable-pip-version-check $WANT 2>&1 | { grep -v "^WARNING: Location '" || true; } >&2
"$VENV/bin/python3" -c "import torch, onnx, onnxscript, onnxruntime, matplotlib; \
assert torch.__version__.startswith('2.13.0'), torch.__version__" >&2
echo "$WANT" > "$STAMP"
echo "$VENV/bin/python3"
