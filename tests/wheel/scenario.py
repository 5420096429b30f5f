"""What a user does right after `pip install ember-*.whl`, run by tests/wheel (test_wheel.py, run.sh) with the venv's
interpreter, from a folder outside the repository and with this file copied there: export a model, inspect it, run
it against eager PyTorch, profile it, lower and run an XNNPACK-delegated program, generate text with a tiny Llama.
It checks that no module came from the repository, and that the packaged parts were used (nothing built).

    python scenario.py REPO_ROOT EXPECTED_VERSION WORK_DIR [--quick]

--quick: the import, version and path checks, one export + run against eager, and the XNNPACK program (what CI
runs); without it every step. Prints one line per step; exits non-zero on the first failure.
"""

import json
import os
import subprocess
import sys
import time

REPO, VERSION, WORK = (os.path.realpath(a) if i != 1 else a for i, a in enumerate(sys.argv[1:4]))
QUICK = "--quick" in sys.argv


def _under_repo(path):
    """Inside the checkout, but not in a venv of it: --quick links torch and its requirements from the project's
    .venv (third-party code, whatever folder it sits in), and a checkout keeps that venv inside itself."""
    path = os.path.realpath(path)
    inside = path == REPO or path.startswith(REPO + os.sep)
    return inside and not os.path.relpath(path, REPO).split(os.sep)[0].startswith(".venv")


def check_no_repo_paths(when):
    """No sys.path entry and no loaded module's file inside the repository checkout."""
    bad = [p for p in sys.path if p and _under_repo(p)]
    assert not bad, f"{when}: repository paths on sys.path: {bad}"
    assert not any(_under_repo(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p), "PYTHONPATH"
    for name, module in list(sys.modules.items()):
        f = getattr(module, "__file__", None)
        assert not (f and _under_repo(f)), f"{when}: module {name} was loaded from the repository: {f}"
    assert not _under_repo(os.getcwd()), f"cwd {os.getcwd()} is inside the repository"


def step(name, t0=[time.monotonic()]):  # noqa: B006 (the default holds the previous step's end)
    now = time.monotonic()
    print(f"scenario: {name} ok ({now - t0[0]:.1f} s)", flush=True)
    t0[0] = now


check_no_repo_paths("at start")
import torch  # noqa: E402
from torch import nn  # noqa: E402

import ember  # noqa: E402
import exir  # noqa: E402
from ember import _tools, runtime  # noqa: E402

assert _tools.installed(), f"ember at {ember.__file__} is not the wheel's (no ember/_lib)"
assert ember.__version__ == VERSION, f"ember.__version__ {ember.__version__} != VERSION {VERSION}"
step(f"import ember {ember.__version__} from {os.path.dirname(ember.__file__)}")


def close(got, want, what):
    err = (got - want).abs().max().item()
    tol = 1e-4 * max(1.0, want.abs().max().item())
    assert err <= tol, f"{what}: max |ember - eager| = {err} > {tol}"
    return err


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, x):
        return torch.softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1) + x[:, :4]


torch.manual_seed(0)
model, x = Small().eval(), torch.randn(3, 16)
pte = os.path.join(WORK, "small.pte")
exir.to_edge(torch.export.export(model, (x,))).to_executorch().save(pte)
step(f"export {os.path.getsize(pte)} bytes")

program = runtime.load(pte)
with torch.no_grad():
    eager = model(x)
err = close(program.run("forward", [x])[0], eager, "run")
step(f"run (max error {err:.2e})")


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        return self.fc(torch.flatten(torch.relu(self.conv(x)), 1))


from backends.xnnpack import XnnpackPartitioner  # noqa: E402
from exir.serialize.pte import deserialize_pte  # noqa: E402

cnn, img = Cnn().eval(), torch.randn(1, 3, 8, 8)
xnn_pte = os.path.join(WORK, "cnn_xnnpack.pte")
edge = exir.to_edge_transform_and_lower(torch.export.export(cnn, (img,)), partitioner=[XnnpackPartitioner()])
edge.to_executorch().save(xnn_pte)
with open(xnn_pte, "rb") as f:
    delegates = [d.id for plan in deserialize_pte(f.read()).program.execution_plan for d in plan.delegates]
assert delegates == ["XnnpackBackend"], f"expected one XnnpackBackend delegate, got {delegates}"
with torch.no_grad():
    eager_cnn = cnn(img)
err = close(runtime.load(xnn_pte).run("forward", [img])[0], eager_cnn, "XNNPACK program")
r = subprocess.run([_tools.find_binary("runner"), xnn_pte, "--input", "ones"], capture_output=True, text=True)
assert r.returncode == 0, f"ember/bin/runner on the XNNPACK program: exit {r.returncode}\n{r.stderr[-2000:]}"
step(f"XNNPACK-delegated program, ember.runtime (max error {err:.2e}) and ember/bin/runner")

if not QUICK:
    r = subprocess.run([sys.executable, "-m", "devtools.inspect", pte, "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads(r.stdout)
    ops = {i["op"] for plan in summary["methods"] for i in plan["instructions"] if i["kind"] == "kernel"}
    assert {"aten::addmm.out", "aten::relu.out", "aten::_softmax.out"} <= ops, ops
    step("inspect (python -m devtools.inspect --json)")

    outputs, trace = program.run("forward", [x], profile=True)
    close(outputs[0], eager, "profiled run")
    assert trace.events > 0 and trace.dropped == 0, trace
    etdp = os.path.join(WORK, "small.etdp")
    trace.save(etdp)
    r = subprocess.run(
        [sys.executable, "-m", "devtools.profile", pte, etdp, "--no-svg"], capture_output=True, text=True
    )
    assert r.returncode == 0 and "addmm" in r.stdout, f"{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    runner_etdp = os.path.join(WORK, "small_runner.etdp")
    cmd = [_tools.find_binary("runner_profiling"), pte, "--input", "ones", "--profile", runner_etdp]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0 and os.path.getsize(runner_etdp) > 0, f"runner_profiling: {r.stderr[-2000:]}"
    step(f"profile ({trace.events} events; python -m devtools.profile; ember/bin/runner_profiling)")

    from ember import llm  # noqa: E402
    from ember.llm_export import layout  # noqa: E402
    from ember.llm_export.export import export_decoder  # noqa: E402
    from ember.llm_export.model import Decoder, DecoderConfig  # noqa: E402

    torch.manual_seed(0)
    cfg = DecoderConfig(vocab_size=200, dim=64, hidden_dim=128, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16)
    decoder = Decoder(cfg, max_seq_len=48).eval()
    layout.block_linears(decoder)
    llm_pte = os.path.join(WORK, "tiny_llama.pte")
    export_decoder(decoder).save(llm_pte)
    prompt, new = [1, 15, 27, 99, 4], 8
    # Eager greedy decoding: the prompt in one call, then one token per call, as ember.llm.generate does.
    decoder.reset_cache()
    ids, pos, tokens = [], 0, list(prompt)
    with torch.no_grad():
        for _ in range(new):
            logits = decoder(torch.tensor([tokens]), torch.tensor([pos]))
            pos += len(tokens)
            tokens = [int(torch.argmax(logits.reshape(-1, cfg.vocab_size)[-1]))]
            ids.append(tokens[0])
    result = llm.generate(runtime.load(llm_pte), prompt, max_new_tokens=new, eos_ids=[])
    assert result.ids == ids, f"ember.llm.generate {result.ids} != eager greedy {ids}"
    session = llm.load(llm_pte).new_session()
    decoder.reset_cache()
    with torch.no_grad():
        eager_logits = decoder(torch.tensor([prompt]), torch.tensor([0])).reshape(-1, cfg.vocab_size)[-1]
    close(session.append(prompt).reshape(-1), eager_logits, "LLM session logits")
    r = subprocess.run([_tools.find_binary("llm_runner"), "--help"], capture_output=True, text=True)
    assert "usage" in (r.stdout + r.stderr).lower(), f"ember/bin/llm_runner --help: {r.stdout}{r.stderr}"
    step(f"tiny Llama: export, generate {result.ids} = eager, session logits, ember/bin/llm_runner")

check_no_repo_paths("at the end")
step("no module from the repository")
