"""Serialization of programs to .pte bytes and back (flatbuffer + extended header + segments), and of external
tensors to .ptd files (ExecuTorch's FlatTensor)."""

from exir.serialize.pte import PteFile, PteFormatError, deserialize_pte, serialize_pte
from exir.serialize.ptd import PtdEntry, PtdFile, PtdFormatError, deserialize_ptd, serialize_ptd

__all__ = [
    "PteFile",
    "PteFormatError",
    "deserialize_pte",
    "serialize_pte",
    "PtdEntry",
    "PtdFile",
    "PtdFormatError",
    "deserialize_ptd",
    "serialize_ptd",
]
