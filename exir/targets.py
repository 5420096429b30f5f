"""Target boards: their memories and which planned memory id lives where, read from a board's board.yaml
(platforms/<board>/board.yaml), so that a program that cannot fit is refused at export, not on the device.

    cfg = exir.ExecutorchBackendConfig(memory_planning=exir.targets.memory_planning_for("mps3_an547"))
    edge.to_executorch(cfg)     # raises exir.MemoryBudgetError: "... needs N bytes in SRAM ... M bytes over"
"""

from __future__ import annotations

import dataclasses
import os
from typing import Dict, Iterator, Mapping

import yaml

from schema.resources import repo_path


class BoardError(ValueError):
    """A board description is missing or malformed."""


@dataclasses.dataclass(frozen=True)
class Memory:
    name: str
    base: int
    size: int
    holds: str = ""


@dataclasses.dataclass(frozen=True)
class Board:
    name: str
    cpu: str
    qemu_machine: str
    memories: Dict[str, Memory]
    pool_memories: Dict[int, str]
    default_pool_memory: str
    program_memory: str

    def pool_memory(self, mem_id: int) -> Memory:
        """The memory planned memory id `mem_id` is placed in."""
        return self.memories[self.pool_memories.get(mem_id, self.default_pool_memory)]


class _PerPool(Mapping[int, object]):
    # Answers for every memory id, listed or not, as the board does.
    def __init__(self, board: Board, field: str):
        self._board, self._field = board, field

    def __getitem__(self, mem_id: int):
        return getattr(self._board.pool_memory(mem_id), self._field)

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._board.pool_memories))

    def __len__(self) -> int:
        return len(self._board.pool_memories)


def board_path(name_or_path: str) -> str:
    if os.path.sep in name_or_path or name_or_path.endswith(".yaml"):
        return name_or_path
    return repo_path("platforms", name_or_path, "board.yaml")


def load_board(name_or_path: str) -> Board:
    """A board by name (a folder under platforms/) or by the path of its board.yaml."""
    path = board_path(name_or_path)
    try:
        with open(path) as f:
            raw = yaml.safe_load(f)
    except OSError as e:
        known = sorted(
            d for d in os.listdir(repo_path("platforms")) if os.path.exists(repo_path("platforms", d, "board.yaml"))
        )
        raise BoardError(f"no board description at {path} ({e.strerror}); known boards: {known}") from None
    try:
        memories = {
            n: Memory(n, int(m["base"]), int(m["size"]), str(m.get("holds", ""))) for n, m in raw["memories"].items()
        }
        board = Board(
            name=str(raw["board"]),
            cpu=str(raw["cpu"]),
            qemu_machine=str(raw.get("qemu_machine", "")),
            memories=memories,
            pool_memories={int(k): str(v) for k, v in (raw.get("pool_memories") or {}).items()},
            default_pool_memory=str(raw["default_pool_memory"]),
            program_memory=str(raw["program_memory"]),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise BoardError(
            f"{path}: malformed board description ({type(e).__name__}: {e}); it needs board, cpu, "
            f"memories (name: {{base, size}}), default_pool_memory and program_memory"
        ) from None
    for mem_id, name in [*board.pool_memories.items(), (0, board.default_pool_memory), (0, board.program_memory)]:
        if name not in memories:
            raise BoardError(f"{path}: memory '{name}' is used but not among memories {sorted(memories)}")
    return board


def memory_planning_for(board: str, **kwargs):
    """A MemoryPlanningConfig whose pool limits and names are the board's memories (other fields: kwargs)."""
    from exir.program import MemoryPlanningConfig

    b = board if isinstance(board, Board) else load_board(board)
    return MemoryPlanningConfig(pool_limits=_PerPool(b, "size"), pool_names=_PerPool(b, "name"), **kwargs)
