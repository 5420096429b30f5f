"""exir.serialize.ptd: .ptd files written and read back, laid out as ExecuTorch lays them out, and refused clearly
when damaged; ExecutorchBackendConfig.external_constants' selector."""

import struct

import pytest
import torch

import exir
from exir.emit.emitter import EmitError
from exir.program import ExecutorchBackendConfig
from exir.serialize.ptd import PtdEntry, PtdFormatError, deserialize_ptd, layout_of, serialize_ptd


def _entries():
    torch.manual_seed(0)
    tensors = {
        "f32": torch.randn(3, 5),
        "i64": torch.arange(7, dtype=torch.int64),
        "u8": torch.randint(0, 255, (2, 2, 3), dtype=torch.uint8),
        "bf16": torch.randn(4, dtype=torch.bfloat16),
        "scalar": torch.tensor(2.5),
    }
    entries = [
        PtdEntry(k, t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes(), layout_of(t))
        for k, t in tensors.items()
    ]
    return tensors, entries


def test_round_trip_and_layout():
    tensors, entries = _entries()
    # A second name for f32's bytes: stored once.
    entries.append(PtdEntry("f32_again", entries[0].data, entries[0].layout))
    data = serialize_ptd(entries, segment_alignment=128)
    ptd = deserialize_ptd(data)
    for k, t in tensors.items():
        assert torch.equal(ptd.tensor(k), t), k
    assert torch.equal(ptd.tensor("f32_again"), tensors["f32"])
    assert len(ptd.segments) == len(tensors)
    # The FH01 header at byte 8, the tables after it at 16-byte alignment, each segment at a multiple of 128.
    magic, length, fb_offset, fb_size, base, seg_size = struct.unpack_from("<4sIQQQQ", data, 8)
    assert (data[4:8], magic, length, fb_offset) == (b"FT01", b"FH01", 40, 48)
    assert base % 128 == 0 and base >= fb_offset + fb_size and base + seg_size == len(data)
    assert all(off % 128 == 0 for off, _ in ptd.segments)


def test_writer_refuses_bad_entries():
    _, entries = _entries()
    with pytest.raises(ValueError, match="'f32' appears twice"):
        serialize_ptd([entries[0], entries[0]])
    with pytest.raises(ValueError, match="describes 60 bytes but it has 4"):
        serialize_ptd([PtdEntry("f32", b"1234", entries[0].layout)])


def test_reader_refuses_damage_naming_it():
    _, entries = _entries()
    data = serialize_ptd(entries)
    with pytest.raises(PtdFormatError, match="too short"):
        deserialize_ptd(data[:40])
    with pytest.raises(PtdFormatError, match="not a .ptd"):
        deserialize_ptd(data[:4] + b"ET12" + data[8:])
    with pytest.raises(PtdFormatError, match="segment data"):
        deserialize_ptd(data[:-1])
    newer = bytearray(data)
    struct.pack_into("<Q", newer, 16, 10**9)  # the flatbuffer's offset, far past the file
    with pytest.raises(PtdFormatError, match="does not fit"):
        deserialize_ptd(bytes(newer))


def test_external_constants_selector():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    ep = torch.export.export(model, (torch.randn(1, 4),))

    def first_layer_only(name):
        return "first" if name.startswith("0.") else None

    prog = exir.to_edge(ep).to_executorch(ExecutorchBackendConfig(external_constants=first_layer_only))
    assert list(prog.data_files) == ["first"]
    assert sorted(deserialize_ptd(prog.data_files["first"]).entries) == ["0.bias", "0.weight:permute"]
    assert prog.constant_bytes > 0  # the second layer stays in the .pte
    with pytest.raises(EmitError, match="give a file tag"):
        exir.to_edge(ep).to_executorch(ExecutorchBackendConfig(external_constants=lambda n: "../x")).buffer
