"""Serialization of programs to .pte bytes and back (flatbuffer + extended header + segments)."""

from exir.serialize.pte import PteFile, PteFormatError, deserialize_pte, serialize_pte

__all__ = ["PteFile", "PteFormatError", "deserialize_pte", "serialize_pte"]
