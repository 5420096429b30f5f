"""The Python packages' import graph: every module of exir, backends, devtools and zoo imports on its own (nothing
works only because something else was imported first), exir's modules import one another without a circle, and
exir reaches no backend and no devtool (data flows from exir to them, never back)."""

import ast
import os
import subprocess
import sys

from tests.conftest import ROOT

PACKAGES = ("exir", "backends", "devtools", "zoo")

# The one import from exir into devtools: ExecutorchProgramManager.save(etrecord=True) writes the source map with
# devtools.etrecord, loaded only when asked for.
EXIR_TO_DEVTOOLS = {("exir.program", "devtools.etrecord")}


def _modules():
    """{dotted name: path} of every .py file under PACKAGES (a package's __init__ under the package's name)."""
    found = {}
    for package in PACKAGES:
        for folder, dirs, files in os.walk(os.path.join(ROOT, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                path = os.path.join(folder, f)
                name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                found[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return found


def _imported(name, path, known):
    """The modules `name` imports anywhere in its file (top level or inside functions), resolved to entries of
    `known` where they are one (`from pkg import sub` names the submodule), else the named module itself."""
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield sub if sub in known else base


def _graph():
    known = _modules()
    return {
        name: sorted({t for t in _imported(name, path, known) if t in known and t != name})
        for name, path in known.items()
    }


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]

    def visit(root):
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_finds_a_planted_circle():
    graph = {"exir.a": ["exir.b"], "exir.b": ["exir.c"], "exir.c": ["exir.a"], "exir.d": ["exir.a"]}
    assert _cycles(graph) == [["exir.a", "exir.b", "exir.c"]]


def test_no_import_circle_among_the_packages():
    cycles = _cycles(_graph())
    assert not cycles, "import circles (each a set of modules that import one another, at any depth):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def _is_test(name):
    return any(part in ("test", "tests") or part.startswith("test_") for part in name.split("."))


def test_exir_imports_no_backend_and_no_devtool():
    graph = _graph()
    # exir's own tests may run a backend (exir/backend/tests delegates to EmberPortable).
    wrong = [
        (m, t)
        for m, targets in graph.items()
        if m.split(".")[0] == "exir" and not _is_test(m)
        for t in targets
        if t.split(".")[0] in ("backends", "devtools") and (m, t) not in EXIR_TO_DEVTOOLS
    ]
    assert not wrong, f"exir imports upward (backends register themselves; devtools read exir's output): {wrong}"


# Run in one child interpreter: torch is imported once, then each module is imported in a fork of that process in
# which no module of this repository has been imported yet, which is a fresh interpreter for everything that
# matters here at a fraction of the cost of one interpreter per module.
_IMPORT_EACH = r"""
import importlib, os, sys, traceback
import torch, torch.export, torch.fx  # third-party, shared by all: imported once, before the fork
failed = []
for name in sys.argv[1:]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        code = 0
        try:
            importlib.import_module(name)
        except BaseException:
            os.write(write, traceback.format_exc(limit=6).encode())
            code = 1
        os._exit(code)
    os.close(write)
    message = b""
    while chunk := os.read(read, 65536):
        message += chunk
    os.close(read)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        failed.append(f"{name}:\n{message.decode(errors='replace')}")
print("\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_module_imports_alone():
    names = sorted(_modules())
    assert len(names) > 20, names  # the walk found the packages
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime", "python")]))
    r = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH, *names], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, f"modules that fail to import on their own:\n{r.stdout[-6000:]}{r.stderr[-2000:]}"


_RESOLVE_KNOWN = r"""
import sys
from exir.backend.backend_details import KNOWN_BACKEND_MODULES, get_backend
assert not [m for m in sys.modules if m.split(".")[0] == "backends"], "exir.backend imported a backend"
for backend_id, module in sorted(KNOWN_BACKEND_MODULES.items()):
    details = get_backend(backend_id)
    assert details.backend_id == backend_id and details.__module__.startswith(module + "."), (backend_id, details)
    print(backend_id, details.__module__, details.__name__)
"""


def test_registry_finds_each_known_backend_that_nobody_imported():
    """A program may name a backend id its user never imported (a DelegationSpec made by hand): the registry
    loads the module KNOWN_BACKEND_MODULES names, which registers the id itself."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run(
        [sys.executable, "-c", _RESOLVE_KNOWN], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "EmberPortable backends.ember_portable.preprocess EmberPortableBackend" in r.stdout
    assert "XnnpackBackend backends.xnnpack.preprocess XnnpackBackend" in r.stdout
