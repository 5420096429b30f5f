"""Named data: bytes a backend's blob refers to by key (ExecuTorch's NamedDataStore), stored once per program in
segments of the .pte and listed in Program.named_data, so several delegates (or methods) that use the same weights
share one copy. At run time a backend asks the program's NamedDataMap for a key at init.

A backend's preprocess fills a NamedDataStore and returns its output in PreprocessResult.data_store_output;
to_executorch gathers every delegate's entries, and serialize_pte writes each distinct key once.
"""

from __future__ import annotations

import dataclasses
from typing import Dict


class NamedDataError(ValueError):
    """Two blobs under one key, or an alignment that is not a power of two."""


@dataclasses.dataclass
class NamedDataStoreOutput:
    # key -> bytes, in the order they were added.
    pte_data: Dict[str, bytes] = dataclasses.field(default_factory=dict)
    # key -> the alignment its bytes need in the file (at least 1; a power of two).
    alignment: Dict[str, int] = dataclasses.field(default_factory=dict)


class NamedDataStore:
    def __init__(self):
        self._out = NamedDataStoreOutput()

    def add_named_data(self, key: str, data: bytes, alignment: int = 16) -> None:
        """Stores `data` under `key`. Adding the same bytes again is a no-op; other bytes under a used key are
        refused (keys are usually content hashes, so that would be a collision or a caller's bug)."""
        if not key:
            raise NamedDataError("a named data key must not be empty")
        if alignment < 1 or alignment & (alignment - 1):
            raise NamedDataError(f"named data '{key}': alignment {alignment} is not a power of two")
        data = bytes(data)
        held = self._out.pte_data.get(key)
        if held is not None and held != data:
            raise NamedDataError(
                f"named data '{key}' is already stored with other bytes ({len(held)} bytes, now {len(data)})"
            )
        self._out.pte_data[key] = data
        self._out.alignment[key] = max(alignment, self._out.alignment.get(key, 1))

    def get_named_data_store_output(self) -> NamedDataStoreOutput:
        return self._out


def merge_named_data(into: NamedDataStoreOutput, other: NamedDataStoreOutput, where: str = "") -> None:
    """Adds `other`'s entries to `into`; one key with two different contents is refused, naming `where`."""
    for key, data in other.pte_data.items():
        held = into.pte_data.get(key)
        if held is not None and held != data:
            raise NamedDataError(f"{where}named data '{key}' has two different contents in one program")
        into.pte_data[key] = data
        into.alignment[key] = max(into.alignment.get(key, 1), other.alignment.get(key, 1))
