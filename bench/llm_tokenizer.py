"""The LLM benchmark's tokenizer and prompt: a synthetic byte-level BPE tokenizer.json, built here from nothing
(no corpus, no download), whose vocabulary has exactly the model's size, and a prompt of a chosen token count.

Both runners read the same file: Ember's llm_runner (examples/llm/tokenizer) and ExecuTorch's TextLLMRunner
(pytorch/tokenizers' HFTokenizer); the `tokenizers` package reads it too. Every id from 0 to vocab - 1 is a token,
so whatever a random-weight model generates decodes.

Layout: id 0 is "<|endoftext|>" (special), ids 1..256 the 256 bytes in GPT-2's byte-to-character alphabet, and
every further id the result of one merge, in rank order:
  "Ġ" + letter, "Ġ" + 2 letters, "Ġ" + 3 letters, then 2 and 3 letters without the space, then "Ġ" + 4 letters
  until the vocabulary is full ("Ġ" is the byte-level space).
The space-prefixed merges come first so that BPE, lowest rank first, builds a word in the vocabulary up to one token
(Ġ, Ġa, Ġab, Ġabc): the same answer as a whole-word lookup, which ExecuTorch's HFTokenizer does before BPE and
`ignore_merges` asks the others to do. A prompt of n lower-case three-letter words is then exactly n tokens in all
three readers, which is what lets the benchmark give both runners the same prompt length.
"""

from __future__ import annotations

import json
import os
import string
from typing import Dict, List, Tuple

SPECIAL = "<|endoftext|>"
LETTERS = string.ascii_lowercase


def byte_alphabet() -> Dict[int, str]:
    """GPT-2's reversible map from bytes to printable characters: printable Latin-1 bytes stand for themselves, the
    others (controls, space, ...) take the code points from 256 on, in byte order."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def _merges(budget: int) -> List[Tuple[str, str]]:
    space = byte_alphabet()[ord(" ")]
    two = [a + b for a in LETTERS for b in LETTERS]
    three = [ab + c for ab in two for c in LETTERS]
    merges = [(space, a) for a in LETTERS]
    merges += [(space + a, b) for a in LETTERS for b in LETTERS]
    merges += [(space + ab, c) for ab in two for c in LETTERS]
    merges += [(a, b) for a in LETTERS for b in LETTERS]
    merges += [(ab, c) for ab in two for c in LETTERS]
    merges += [(space + abc, d) for abc in three for d in LETTERS][: max(0, budget - len(merges))]
    if len(merges) < budget:
        raise ValueError(f"a vocabulary of {budget + 257} is more than this scheme builds ({len(merges) + 257})")
    return merges[:budget]


def build(vocab_size: int) -> dict:
    """The tokenizer.json document for a vocabulary of exactly vocab_size ids (at least 257 + 26)."""
    if vocab_size < 257 + len(LETTERS):
        raise ValueError(f"vocab_size {vocab_size}: the synthetic tokenizer needs at least {257 + len(LETTERS)}")
    alphabet = byte_alphabet()
    vocab = {SPECIAL: 0}
    for b in range(256):
        vocab[alphabet[b]] = 1 + b
    merges = _merges(vocab_size - 257)
    for left, right in merges:
        vocab[left + right] = len(vocab)
    assert len(vocab) == vocab_size, (len(vocab), vocab_size)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": 0,
                "content": SPECIAL,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": True,
            "vocab": vocab,
            "merges": [[left, right] for left, right in merges],
        },
    }


def write(path: str, vocab_size: int) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(build(vocab_size), f, ensure_ascii=False)
    return path


def prompt(n_tokens: int, seed: int = 7) -> str:
    """n_tokens lower-case three-letter words, space-separated, drawn by a fixed linear congruential generator (so
    the prompt is the same on every machine and Python); each word is one token of the synthetic tokenizer."""
    state, words = seed, []
    for _ in range(n_tokens):
        word = ""
        for _ in range(3):
            state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            word += LETTERS[(state >> 33) % len(LETTERS)]
        words.append(word)
    return " ".join(words)


def encode_with_tokenizers(path: str, text: str) -> List[int]:
    """The reference encoding (Hugging Face's `tokenizers`, in the project's .venv)."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(path).encode(text, add_special_tokens=False).ids
