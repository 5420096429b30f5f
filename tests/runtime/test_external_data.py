"""Program-data separation on Ember alone: constants exported to .ptd files by name, resolved at method load, shared
between methods and programs (one mapping), LoRA adapters over one shared base, and what a wrong .ptd does."""

import os

import pytest
import torch

import exir
from ember import runtime
from exir.program import ExecutorchBackendConfig
from exir.serialize.ptd import PtdEntry, TensorLayout, deserialize_ptd, serialize_ptd


class LoraLinear(torch.nn.Module):
    """A frozen base linear plus a low-rank update: base(x) + (alpha / rank) * B(A(x))."""

    def __init__(self, base: torch.nn.Linear, rank: int, alpha: float):
        super().__init__()
        self.base = base
        self.lora_a = torch.nn.Linear(base.in_features, rank, bias=False)
        self.lora_b = torch.nn.Linear(rank, base.out_features, bias=False)
        self.scaling = alpha / rank

    def forward(self, x):
        return self.base(x) + self.lora_b(self.lora_a(x)) * self.scaling


class TinyLoraModel(torch.nn.Module):
    def __init__(self, bases, rank: int, alpha: float):
        super().__init__()
        self.l1 = LoraLinear(bases[0], rank, alpha)
        self.l2 = LoraLinear(bases[1], rank, alpha)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


def _base_only(name: str):
    """The file each constant goes to: the base weights (and what is folded from them) to the shared "base" .ptd,
    the adapters into each program."""
    return "base" if ".base." in name else None


def _maps_of(path: str):
    real = os.path.realpath(path)
    with open("/proc/self/maps") as f:
        return [line for line in f if line.rstrip().endswith(real)]


def _rss_kib_of(path: str) -> int:
    real, total, mine = os.path.realpath(path), 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            if "-" in line.split(" ", 1)[0]:
                mine = line.rstrip().endswith(real)
            elif mine and line.startswith("Rss:"):
                total += int(line.split()[1])
    return total


@pytest.fixture(scope="module")
def lora(tmp_path_factory):
    torch.manual_seed(34)
    bases = [torch.nn.Linear(64, 256), torch.nn.Linear(256, 64)]
    x = torch.randn(4, 64)
    out = tmp_path_factory.mktemp("lora")
    adapters = {}
    for name, seed in (("adapter_a", 1), ("adapter_b", 2)):
        torch.manual_seed(seed)
        model = TinyLoraModel(bases, rank=4, alpha=8.0).eval()
        for m in (model.l1, model.l2):  # LoRA's B starts at zero; trained adapters do not
            torch.nn.init.normal_(m.lora_b.weight, std=0.1)
        prog = exir.to_edge(torch.export.export(model, (x,))).to_executorch(
            ExecutorchBackendConfig(external_constants=_base_only)
        )
        d = out / name
        d.mkdir()
        prog.save(str(d / "model.pte"))
        with torch.no_grad():
            adapters[name] = (d, model(x))
    return out, adapters, x, bases


def test_lora_adapters_share_one_base_file(lora):
    """Each adapter program keeps its adapter weights and names its base weights; both export the same base .ptd,
    so one file serves both. Loaded together, the base file is mapped once and each adapter gives its eager output."""
    _, adapters, x, bases = lora
    (da, want_a), (db, want_b) = adapters["adapter_a"], adapters["adapter_b"]
    base_a, base_b = (da / "base.ptd").read_bytes(), (db / "base.ptd").read_bytes()
    assert base_a == base_b
    ptd = deserialize_ptd(base_a)
    base_bytes = sum(p.numel() * 4 for b in bases for p in b.parameters())
    assert sum(len(e.data) for e in ptd.entries.values()) == base_bytes
    assert all(".base." in k for k in ptd.entries)
    # The programs hold the adapters, not the base: each is far smaller than the base weights.
    for d in (da, db):
        assert os.path.getsize(d / "model.pte") < base_bytes // 4

    shared = str(da / "base.ptd")
    prog_a = runtime.load(da / "model.pte", data_files=[shared])
    maps_one = len(_maps_of(shared))
    prog_b = runtime.load(db / "model.pte", data_files=[shared])
    assert prog_a.data_files[0] is prog_b.data_files[0]
    got_a = prog_a.run("forward", [x])[0]
    got_b = prog_b.run("forward", [x])[0]
    torch.testing.assert_close(got_a, want_a, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got_b, want_b, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(got_a, got_b, atol=1e-3)  # the adapters do differ
    # One mapping of the base for both programs (and every method copy of each): as many as for one program, and
    # its resident pages no more than the file's segment data, not twice it.
    assert 0 < maps_one == len(_maps_of(shared))
    assert _rss_kib_of(shared) * 1024 <= prog_a.data_files[0].segment_bytes + 2 * os.sysconf("SC_PAGE_SIZE") + 4096


def test_two_methods_share_one_file(tmp_path):
    """Two methods reading the same parameter: the name is stored once, and both resolve it from one file."""
    torch.manual_seed(3)
    lin = torch.nn.Linear(16, 8)

    class Plain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def forward(self, x):
            return self.lin(x)

    class Doubled(Plain):
        def forward(self, x):
            return self.lin(x) * 2

    x = torch.randn(2, 16)
    eps = {"forward": torch.export.export(Plain(), (x,)), "doubled": torch.export.export(Doubled(), (x,))}
    prog = exir.to_edge(eps).to_executorch(ExecutorchBackendConfig(external_constants=True))
    prog.save(str(tmp_path / "two.pte"))
    ptd = deserialize_ptd(prog.data_files["_default_external_constant"])
    assert sorted(ptd.entries) == ["lin.bias", "lin.weight:permute"]
    p = runtime.load(tmp_path / "two.pte", data_files=[tmp_path / "_default_external_constant.ptd"])
    torch.testing.assert_close(p.run("forward", [x])[0], lin(x).detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(p.run("doubled", [x])[0], 2 * lin(x).detach(), rtol=1e-5, atol=1e-5)


def _tiny_external(tmp_path):
    torch.manual_seed(5)
    lin = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    prog = exir.to_edge(torch.export.export(lin, (x,))).to_executorch(ExecutorchBackendConfig(external_constants=True))
    prog.save(str(tmp_path / "lin.pte"))
    return tmp_path / "lin.pte", tmp_path / "_default_external_constant.ptd", x


def test_wrong_data_file_names_the_tensor(tmp_path):
    """A .ptd whose entry has another dtype or shape, or lacks the name, is refused at load, naming the tensor."""
    pte, ptd, x = _tiny_external(tmp_path)
    good = deserialize_ptd(ptd.read_bytes())
    bias = good.entries["bias"]
    cases = {
        "dtype": PtdEntry("bias", bias.data, TensorLayout(3, [3], [0])),  # Int, 3 elements: 12 bytes as well
        "shape": PtdEntry("bias", bias.data, TensorLayout(6, [1, 3], [0, 1])),
    }
    for what, entry in cases.items():
        bad = tmp_path / f"{what}.ptd"
        bad.write_bytes(serialize_ptd([e for k, e in good.entries.items() if k != "bias"] + [entry]))
        with pytest.raises(RuntimeError, match=r"InvalidExternalData.*'bias'"):
            runtime.load(pte, data_files=[bad]).run("forward", [x])
    missing = tmp_path / "missing.ptd"
    missing.write_bytes(serialize_ptd([e for k, e in good.entries.items() if k != "bias"]))
    with pytest.raises(RuntimeError, match=r"'bias'.*none of the external data files"):
        runtime.load(pte, data_files=[missing]).run("forward", [x])
    # Several files are searched in order: the bias from a second one.
    only_bias = tmp_path / "bias.ptd"
    only_bias.write_bytes(serialize_ptd([bias]))
    got = runtime.load(pte, data_files=[missing, only_bias]).run("forward", [x])[0]
    torch.testing.assert_close(got, runtime.load(pte, data_files=[ptd]).run("forward", [x])[0])


def _open_and_run(pte, ptd_path, x):
    """Opens a (possibly damaged) .ptd and runs the program with it; returns the error text, or None if it ran."""
    try:
        f = runtime.DataFile(str(ptd_path))
    except RuntimeError as e:
        return str(e)
    try:
        runtime.load(pte, data_files=[f]).run("forward", [x])
    except RuntimeError as e:
        return str(e)
    return None


def test_damaged_data_files_are_refused_clearly(tmp_path):
    """A .ptd is untrusted input: every truncation and every flipped byte of the header and tables either still
    reads (a byte that changes only a weight's value, or padding) or is refused with InvalidExternalData,
    NotSupported or NotFound and a message, never a crash."""
    pte, ptd, x = _tiny_external(tmp_path)
    data = ptd.read_bytes()
    base = deserialize_ptd(data).segment_base
    damaged = tmp_path / "damaged.ptd"
    cases = [data[:n] for n in range(0, len(data), 7)] + [data[:-1]]
    for i in range(base):  # the header and the flatbuffer: every byte, two ways
        for flip in (0xFF, 0x01):
            cases.append(data[:i] + bytes([data[i] ^ flip]) + data[i + 1 :])
    refused = 0
    for case in cases:
        damaged.write_bytes(case)
        err = _open_and_run(pte, damaged, x)
        if err is not None:
            refused += 1
            assert any(k in err for k in ("InvalidExternalData", "NotSupported", "NotFound")), err
            assert "(" in err and len(err) > 40, err  # the runtime's own message, not just a code
    assert refused > len(cases) // 2
