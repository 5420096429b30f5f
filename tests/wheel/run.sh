#!/usr/bin/env bash
# The wheel, installed and used outside the repository (docs/wheel.md): builds it (tools/wheel/build.sh) unless
# EMBER_WHEEL names one, makes a new venv in a temporary folder with torch 2.13.0 only, pip installs the wheel
# there, and runs tests/wheel/scenario.py from that folder with no repository path anywhere.
#
#   tests/wheel/run.sh            # everything; torch pip-installed into the new venv (minutes: its wheel is large)
#   tests/wheel/run.sh --quick    # CI's subset (tests/wheel/test_wheel.py): torch linked from the project's venv
#   EMBER_WHEEL_TORCH=pip|link    # how the new venv gets torch (default: pip, link with --quick)
#
# link: the new venv's site-packages gets a .pth naming a folder of symbolic links to torch 2.13.0 and the
# packages it requires, and the wheel's other requirements (numpy, flatbuffers, PyYAML), as installed in the
# project's .venv (the same files pip would unpack from the same wheels), and nothing else from that venv:
# installing torch's wheel costs over two minutes on CI's machine.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
QUICK=""; [[ "${1:-}" == "--quick" ]] && QUICK="--quick"
TORCH_MODE="${EMBER_WHEEL_TORCH:-$([[ -n $QUICK ]] && echo link || echo pip)}"
WHEEL="${EMBER_WHEEL:-$("$ROOT/tools/wheel/build.sh")}"
WORK="$(mktemp -d /tmp/ember-wheel-test.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
say() { echo "wheel test: $* ($SECONDS s)" >&2; }

# Without pip of its own: bootstrapping one costs seconds; the wheel venv's pip installs into it (pip --python).
python3 -m venv --without-pip "$WORK/venv"
PY="$WORK/venv/bin/python3"
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
PIP_PY="$("$ROOT/tools/setup_wheel_venv.sh")"
pip_install() {
  "$PIP_PY" -m pip --python "$PY" install -q --disable-pip-version-check "$@" 2>&1 \
    | { grep -v "^WARNING: Location '" || true; } >&2
}
if [[ "$TORCH_MODE" == pip ]]; then
  pip_install torch==2.13.0
else
  # torch and the distributions it requires, transitively, from the project's venv: their top-level entries.
  mkdir "$WORK/torch-site"
  "$ROOT/.venv/bin/python3" - "$WORK/torch-site" <<'PYEOF'
import importlib.metadata as md, os, re, sys
# With the wheel's own requirements, as the project pins them (pip then finds them satisfied).
out, todo, seen = sys.argv[1], ["torch", "numpy", "flatbuffers", "pyyaml"], set()
while todo:
    name = re.split(r"[ ;<>=!~\[]", todo.pop())[0].lower().replace("_", "-")
    if name in seen:
        continue
    seen.add(name)
    dist = md.distribution(name)
    assert name != "torch" or dist.version == "2.13.0+cpu", dist.version
    todo += [r for r in dist.requires or [] if "extra ==" not in r]
    for f in dist.files:
        top = str(f).split("/")[0]
        src = os.path.realpath(dist.locate_file(top))
        if top not in ("..", "__pycache__") and not top.endswith(".pth") and os.path.exists(src):
            dst = os.path.join(out, top)
            if not os.path.lexists(dst):
                os.symlink(src, dst)
print(" ".join(sorted(seen)))
PYEOF
  echo "$WORK/torch-site" > "$SITE/torch-2.13.0-from-project-venv.pth"
fi
say "venv with torch ($TORCH_MODE)"
pip_install "$WHEEL"
say "pip install $(basename "$WHEEL")"
cp "$ROOT/tests/wheel/scenario.py" "$WORK/scenario.py"
mkdir "$WORK/out" "$WORK/fake-bin"
# An installed wheel never runs Bazel: a `bazel` first on PATH that only records being called.
printf '#!/bin/sh\necho "$*" >> "%s"\nexit 1\n' "$WORK/bazel-calls" > "$WORK/fake-bin/bazel"
chmod +x "$WORK/fake-bin/bazel"
cd "$WORK"
env -u PYTHONPATH PATH="$WORK/fake-bin:$PATH" "$PY" scenario.py "$ROOT" "$(cat "$ROOT/VERSION")" "$WORK/out" $QUICK
if [[ -e "$WORK/bazel-calls" ]]; then
  echo "wheel test: the installed wheel ran bazel: $(cat "$WORK/bazel-calls")" >&2; exit 1
fi
say "scenario done, bazel never called"
