#!/usr/bin/env bash
# Builds .venv-xgrammar, the peer that tests/llm/test_grammar_xgrammar.py checks Ember's constrained decoding
# against: xgrammar from its wheel with only what `import xgrammar` and its TokenizerInfo / GrammarCompiler /
# GrammarMatcher need, every package pinned. xgrammar's own requirements pull a CUDA torch (gigabytes); here torch
# is the CPU build the project's .venv uses, and transformers (imported by `import xgrammar`) and its dependencies
# are the .venv's versions too. Installed with --no-deps so nothing unpinned comes in.
# It never touches the project's .venv. Idempotent; prints the interpreter path last.
#
#   tools/setup_xgrammar_venv.sh            # creates .venv-xgrammar (a minute: torch's wheel is large)
#   EMBER_XGRAMMAR_VENV=/path tools/setup_xgrammar_venv.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${EMBER_XGRAMMAR_VENV:-$ROOT/.venv-xgrammar}"
XGRAMMAR="xgrammar==0.2.8"
DEPS="apache-tvm-ffi==0.1.15.post2 numpy==2.4.6 pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 \
typing-inspection==0.4.5 typing_extensions==4.16.0 torch==2.13.0+cpu filelock==4.3.1 sympy==1.14.0 mpmath==1.3.0 \
networkx==3.6.1 Jinja2==3.1.6 MarkupSafe==3.0.4 fsspec==2026.9.0 setuptools==84.2.1 transformers==5.23.0 \
huggingface_hub==2.4.0 tokenizers==0.23.3 safetensors==0.8.0 regex==2026.11.19 PyYAML==6.0.3 tqdm==4.70.1 \
packaging==26.4 hf-xet==1.8.0 typer==0.29.2 click==8.5.1 rich==15.0.0 shellingham==1.5.4 annotated-doc==0.0.7 \
markdown-it-py==4.3.0 mdurl==0.1.2 Pygments==2.21.0 httpx2==2.16.2 httpcore2==2.16.2 anyio==4.16.0 h11==0.16.0 \
idna==3.20 certifi==2026.10.19.post1 sniffio==1.3.1 truststore==0.10.5"
WANT="$XGRAMMAR $DEPS"
STAMP="$VENV/.ember-xgrammar-requirements"
if [[ -x "$VENV/bin/python3" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "$VENV/bin/python3"; exit 0
fi
echo "setup_xgrammar_venv: installing $WANT into $VENV" >&2
[[ -x "$VENV/bin/python3" ]] || "${EMBER_BASE_PYTHON:-python3}" -m venv "$VENV"
pip_install() {
  # The machine's pip configuration names extra package folders that may not exist; pip warns for each.
  "$VENV/bin/python3" -m pip install --disable-pip-version-check "$@" 2>&1 | { grep -v "^WARNING: Location '" || true; }
}
# shellcheck disable=SC2086
pip_install -q --no-deps $XGRAMMAR $DEPS >&2
"$VENV/bin/python3" -c "import xgrammar, torch; assert torch.version.cuda is None; import importlib.metadata as m; print('xgrammar', m.version('xgrammar'))" >&2
echo "$WANT" > "$STAMP"
echo "$VENV/bin/python3"
