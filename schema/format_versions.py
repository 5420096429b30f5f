"""Each file format's compatibility window, read from format_versions.yaml: the identifier and version range a
reader accepts, and the version a writer stamps.

from schema import format_versions as fv
fv.PTE.identifier                     # b"ET12"
fv.PTE.identifier_problem(data[4:8])  # None, or why the file is refused ("... a newer ExecuTorch format, 'ET13' ...")
fv.PTE.version_problem(version)       # None, or why a Program.version is refused
"""

from __future__ import annotations

import dataclasses
from typing import Dict, Optional

from schema._yaml import ContractError, entry, load

_FILE = "format_versions.yaml"
_FORMATS = ("pte", "ptd", "bpte", "etdump")


def _text(raw: bytes) -> str:
    return "".join(chr(b) if 32 <= b < 127 else "?" for b in raw)


@dataclasses.dataclass(frozen=True)
class FormatWindow:
    key: str  # "pte"
    name: str  # ".pte", "bundled program": how messages name a file of this format
    identifier: bytes  # b"ET12"
    version_field: str  # "Program.version"
    min_version: int
    max_version: int
    writes: int

    @property
    def window(self) -> str:
        """What this reader accepts, as messages state it: "ET12 with Program.version 0..0"."""
        return f"{self.identifier.decode()} with {self.version_field} {self.min_version}..{self.max_version}"

    def is_other_version(self, found: bytes) -> bool:
        """Whether `found` is this format's letters with other digits: another ExecuTorch version of it."""
        found = bytes(found)
        return len(found) == 4 and found != self.identifier and found[:2] == self.identifier[:2] and found[2:].isdigit()

    def identifier_problem(self, found: bytes) -> Optional[str]:
        """None when `found` (bytes 4..8) is this format's identifier; else why the file is refused, naming an
        identifier of the same format with other digits as newer or older."""
        found = bytes(found)
        if found == self.identifier:
            return None
        ours = self.identifier.decode()
        if self.is_other_version(found):
            age = "a newer" if int(found[2:]) > int(ours[2:]) else "an older"
            return (
                f"the {self.name} was written in {age} ExecuTorch format, '{found.decode()}'; Ember reads {self.window}"
            )
        return f"not a {self.name}: identifier at byte 4 is '{_text(found)}' ({found.hex()}), expected '{ours}'"

    def version_problem(self, version: int) -> Optional[str]:
        """None when `version` is in the window; else why the file is refused."""
        if self.min_version <= version <= self.max_version:
            return None
        age = "newer" if version > self.max_version else "older"
        return f"the {self.name} has {self.version_field} {version}, {age} than Ember reads: {self.window}"


def _read() -> Dict[str, FormatWindow]:
    doc = load(_FILE)
    entry(doc, f"schema/{_FILE}", _FORMATS)
    out = {}
    for key in _FORMATS:
        where = f"schema/{_FILE} {key}"
        e = entry(doc[key], where, ("name", "identifier", "version_field", "versions", "writes"))
        ident = str(e["identifier"]).encode("ascii")
        if len(ident) != 4 or not ident[2:].isdigit():
            raise ContractError(f"{where}: identifier '{e['identifier']}' must be two letters and two digits")
        versions = e["versions"]
        if not (isinstance(versions, list) and len(versions) == 2 and 0 <= versions[0] <= versions[1]):
            raise ContractError(f"{where}: versions must be [oldest, newest], got {versions!r}")
        if not versions[0] <= e["writes"] <= versions[1]:
            raise ContractError(f"{where}: writes {e['writes']} lies outside the versions it reads {versions}")
        out[key] = FormatWindow(key, e["name"], ident, e["version_field"], versions[0], versions[1], e["writes"])
    return out


FORMATS = _read()
PTE, PTD, BPTE, ETDUMP = (FORMATS[k] for k in _FORMATS)
