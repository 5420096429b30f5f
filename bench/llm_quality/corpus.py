"""The text: the running interpreter's standard library, its .py files, split by file into train and held-out.

Nothing is downloaded, and the same interpreter gives the same bytes on any machine. The split is fixed by a seed:
the sorted file list is shuffled by random.Random(seed), and held-out files are taken from the front of that order
until they hold `heldout_fraction` of the bytes; the rest is the training text. Test suites (folders named test,
tests, idle_test) and installed packages (site-packages, dist-packages) are left out: the first hold deliberately
malformed inputs and generated literals, the second are not the standard library. A file that is not UTF-8 is
skipped and listed.

`digest` names what was read: SHA-256 over one line per file (path relative to the library, the SHA-256 of its
bytes), in split order. Equal digests mean equal text, so a perplexity recorded with a digest can be reproduced.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import sys
import sysconfig
from typing import Dict, List, Tuple

SKIPPED_DIRS = {"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__"}


@dataclasses.dataclass
class Split:
    """One side of the split: its files (relative paths, in the order their text is concatenated) and texts."""

    files: List[str]
    texts: List[str]

    @property
    def n_bytes(self) -> int:
        return sum(len(t.encode("utf-8")) for t in self.texts)

    def digest(self) -> str:
        h = hashlib.sha256()
        for name, text in zip(self.files, self.texts):
            h.update(f"{name}\t{hashlib.sha256(text.encode('utf-8')).hexdigest()}\n".encode())
        return h.hexdigest()


@dataclasses.dataclass
class Corpus:
    root: str
    python: str
    seed: int
    heldout_fraction: float
    train: Split
    heldout: Split
    not_utf8: List[str]

    def describe(self) -> Dict[str, object]:
        """What the results file records: enough to tell whether a rerun read the same text."""
        return {
            "source": "the Python standard library's .py files",
            "root": self.root,
            "python": self.python,
            "seed": self.seed,
            "heldout_fraction_of_bytes": self.heldout_fraction,
            "skipped_dirs": sorted(SKIPPED_DIRS),
            "train": {"files": len(self.train.files), "bytes": self.train.n_bytes, "sha256": self.train.digest()},
            "heldout": {
                "files": len(self.heldout.files),
                "bytes": self.heldout.n_bytes,
                "sha256": self.heldout.digest(),
                "file_list": list(self.heldout.files),
            },
            "not_utf8_skipped": list(self.not_utf8),
        }


def stdlib_root() -> str:
    return sysconfig.get_paths()["stdlib"]


def list_files(root: str) -> List[str]:
    """Every .py file under root outside SKIPPED_DIRS, as sorted relative paths ('/'-separated)."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        for f in files:
            if f.endswith(".py"):
                found.append(os.path.relpath(os.path.join(folder, f), root).replace(os.sep, "/"))
    return sorted(found)


def _read(root: str, files: List[str]) -> Tuple[Dict[str, str], List[str]]:
    texts, bad = {}, []
    for name in files:
        with open(os.path.join(root, name), "rb") as f:
            data = f.read()
        try:
            texts[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            bad.append(name)
    return texts, bad


def load(seed: int = 0, heldout_fraction: float = 0.03, root: str = None, limit_files: int = None) -> Corpus:
    """The split corpus. `limit_files` keeps only the first files of the sorted list (tests)."""
    root = root or stdlib_root()
    files = list_files(root)
    if limit_files is not None:
        files = files[:limit_files]
    texts, bad = _read(root, files)
    order = [f for f in files if f in texts]
    random.Random(seed).shuffle(order)
    total = sum(len(texts[f].encode("utf-8")) for f in order)
    heldout, held_bytes = [], 0
    for name in order:
        if held_bytes >= heldout_fraction * total:
            break
        heldout.append(name)
        held_bytes += len(texts[name].encode("utf-8"))
    train = order[len(heldout) :]
    if not train or not heldout:
        raise ValueError(f"{root}: {len(order)} readable .py files cannot be split into train and held-out text")
    return Corpus(
        root=root,
        python=sys.version.split()[0],
        seed=seed,
        heldout_fraction=heldout_fraction,
        train=Split(train, [texts[f] for f in train]),
        heldout=Split(heldout, [texts[f] for f in heldout]),
        not_utf8=bad,
    )
