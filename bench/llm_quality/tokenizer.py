"""The model's tokenizer: a byte-level BPE (GPT-2's pre-tokenizer and byte alphabet) trained with Hugging Face's
`tokenizers` on the training split only, saved as tokenizer.json, which Ember's C++ tokenizer
(examples/llm/tokenizer) reads as well.

Byte-level rather than plain bytes: Python source is mostly identifiers, keywords and indentation runs, which BPE
turns into a few tokens each, so a 256-token context holds several hundred bytes of code instead of 256. Perplexity
per token then depends on the tokenizer, so the results also give bits per byte of held-out text.

Id 0 is "<|endoftext|>", the model's BOS and EOS: every file's tokens follow one, so the model sees where a file
begins. The trainer runs on one thread (TOKENIZERS_PARALLELISM=false before the first import): the merges, and so
the ids, are then the same on every run, which the recorded SHA-256 of tokenizer.json lets a rerun check.
"""

from __future__ import annotations

import hashlib
import os
from typing import List, Sequence

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

SPECIAL = "<|endoftext|>"
SPECIAL_ID = 0


def train(texts: Sequence[str], vocab_size: int):
    """A tokenizers.Tokenizer trained on texts, with exactly vocab_size ids (SPECIAL first)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[SPECIAL],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    if tok.get_vocab_size() != vocab_size or tok.token_to_id(SPECIAL) != SPECIAL_ID:
        raise ValueError(
            f"the BPE trainer made {tok.get_vocab_size()} tokens (asked {vocab_size}) with {SPECIAL} at "
            f"{tok.token_to_id(SPECIAL)}: the text has too few distinct pairs for this vocabulary"
        )
    return tok


def load(path: str):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(path)


def file_sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def stream(tok, texts: Sequence[str]) -> List[int]:
    """The token stream of texts: each text's ids after one SPECIAL_ID, texts in the given order."""
    out: List[int] = []
    for enc in tok.encode_batch(list(texts), add_special_tokens=False):
        out.append(SPECIAL_ID)
        out.extend(enc.ids)
    return out


def ember_tokenizer_module(root: str):
    """Ember's C++ tokenizer as a Python module (//examples/llm/tokenizer:_ember_tokenizer.so, built if missing)."""
    import importlib.util
    import subprocess

    target = "//examples/llm/tokenizer:_ember_tokenizer.so"
    r = subprocess.run(["bazel", "build", target], cwd=root, capture_output=True, text=True)
    path = os.path.join(root, "bazel-bin", "examples", "llm", "tokenizer", "_ember_tokenizer.so")
    if r.returncode != 0 or not os.path.exists(path):
        raise RuntimeError(f"bazel build {target} failed:\n{r.stderr[-2000:]}")
    spec = importlib.util.spec_from_file_location("_ember_tokenizer", os.path.realpath(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ember_mismatches(root: str, path: str, tok, texts: Sequence[str]) -> List[int]:
    """Indexes of the texts that Ember's tokenizer (reading tokenizer.json at path) encodes otherwise than `tok`."""
    ember = ember_tokenizer_module(root).load(path)
    ref = tok.encode_batch(list(texts), add_special_tokens=False)
    return [i for i, (t, r) in enumerate(zip(texts, ref)) if list(ember.encode(t, False, False)) != r.ids]
