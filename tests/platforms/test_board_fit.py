"""A program that cannot fit the board is refused before it reaches the device: at export, when exported for the
board (exir.targets), and at build time (platforms/embed_program.py, which ember_firmware runs), each naming the
memory and the bytes over. Moving the big tensors to another memory id makes the same model fit."""

import pytest
import torch

import exir
from exir.targets import BoardError, load_board, memory_planning_for
from platforms import embed_program


class Wide(torch.nn.Module):
    # Two 2,800,000-byte intermediates (expand, mul): more than the board's 2 MiB SRAM, where memory id 1 lives.
    def forward(self, x):
        return (x.expand(1, 700_000) * 2.0).sum(dim=1)


def export(config=None):
    ep = torch.export.export(Wide(), (torch.ones(1, 1),))
    return exir.to_edge(ep).to_executorch(config)


def test_export_refuses_what_the_board_cannot_hold():
    with pytest.raises(exir.MemoryBudgetError) as e:
        export(exir.ExecutorchBackendConfig(memory_planning=memory_planning_for("mps3_an547")))
    msg = str(e.value)
    assert "in SRAM (memory id 1)" in msg and "has 2097152" in msg and "bytes over" in msg


def test_build_error_names_memory_and_bytes(tmp_path, capsys):
    pte = tmp_path / "wide.pte"
    export().save(str(pte))
    assert embed_program.main([str(pte), "--board", "mps3_an547", "-o", str(tmp_path / "x.cc")]) == 1
    err = capsys.readouterr().err
    assert "SRAM holds 2,097,152 bytes but needs" in err and "bytes over" in err and "pool 1" in err


def test_moving_tensors_to_ddr_fits(tmp_path):
    cfg = memory_planning_for("mps3_an547", mem_id=lambda t: 2 if t.nbytes > 1 << 20 else 1)
    prog = export(exir.ExecutorchBackendConfig(memory_planning=cfg))
    pte = tmp_path / "wide.pte"
    prog.save(str(pte))
    out = tmp_path / "wide.cc"
    assert embed_program.main([str(pte), "--board", "mps3_an547", "-o", str(out)]) == 0
    text = out.read_text()
    assert '".ember.ddr.pool2"' in text and "memory id 2: 5,600,000 bytes in DDR" in text  # expand + mul


def test_unknown_board_lists_the_known_ones():
    with pytest.raises(BoardError) as e:
        load_board("no_such_board")
    assert "mps3_an547" in str(e.value)


@pytest.mark.parametrize(
    "size,message",
    [
        (-5, "pool 1 has negative size -5: the program is corrupt"),
        # 2^32 + 16 would become 16 in the board's 32-bit size_t: refused with the whole number instead.
        ((1 << 32) + 16, "SRAM holds 2,097,152 bytes but needs 4,294,967,312 for pool 1 (4,294,967,312 bytes)"),
        (1 << 62, "needs 4,611,686,018,427,387,904 for pool 1"),
    ],
)
def test_build_refuses_hostile_pool_sizes(tmp_path, capsys, size, message):
    from tests.runtime.hostile import set_pool_size

    ep = torch.export.export(torch.nn.Linear(4, 4), (torch.ones(1, 4),))
    pte = tmp_path / "bad.pte"
    pte.write_bytes(set_pool_size(exir.to_edge(ep).to_executorch().buffer, 1, size))
    assert embed_program.main([str(pte), "--board", "mps3_an547", "-o", str(tmp_path / "x.cc")]) == 1
    assert message in capsys.readouterr().err
