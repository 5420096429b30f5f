"""Run by .venv-xgrammar's interpreter (tools/setup_xgrammar_venv.sh), not by the project's .venv: replays token
sequences that Ember's grammar_tool generated through xgrammar's GrammarMatcher and compares, before every token,
xgrammar's allowed-token bitmask with Ember's.

    .venv-xgrammar/bin/python3 tests/llm/xgrammar_compare.py TOKENIZER.json SEQUENCES.jsonl \
        (--ebnf FILE | --json-schema FILE)

xgrammar options: TokenizerInfo from the tokenizer's own token bytes (VocabType.RAW; special tokens as empty
strings, which xgrammar never allows; EOS = the stop token); a JSON Schema with any_whitespace=False,
separators=(",", ":") and strict_mode=True (no whitespace, no unlisted properties: Ember's policy). Prints one JSON
object: steps compared, mismatching steps, steps whose only difference is xgrammar also allowing UTF-8-encoded
surrogates (counted apart), and the first mismatches' differing tokens."""

import argparse
import json
import re
import sys

import xgrammar as xgr


def byte_decoder():
    # GPT-2's byte-to-unicode table, inverted: printable bytes map to themselves, the rest to U+0100 onwards.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def token_bytes(path):
    with open(path) as f:
        tj = json.load(f)
    vocab = tj["model"]["vocab"]
    special = {t["id"] for t in tj.get("added_tokens", []) if t.get("special")}
    size = max(list(vocab.values()) + [t["id"] for t in tj.get("added_tokens", [])]) + 1
    dec = byte_decoder()
    out = [b""] * size
    for piece, i in vocab.items():
        if i not in special:
            out[i] = bytes(dec[c] for c in piece)
    return out


SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")


def surrogates_only(ours, theirs, n, vocab, prefix_ids):
    """xgrammar also allows UTF-8 encodings of surrogates (ED A0..BF ..), which are not UTF-8 (RFC 3629) and
    which Ember refuses: True when that is the whole difference at this step."""
    tail = b"".join(vocab[t] for t in prefix_ids)[-3:]
    diff = ours ^ theirs
    return ours & diff == 0 and all(SURROGATE.search(tail + vocab[t]) for t in range(n) if (diff >> t) & 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tokenizer")
    ap.add_argument("sequences")
    ap.add_argument("--ebnf")
    ap.add_argument("--json-schema")
    ap.add_argument("--eos", type=int, default=0)
    a = ap.parse_args()
    vocab = token_bytes(a.tokenizer)
    info = xgr.TokenizerInfo(vocab, xgr.VocabType.RAW, vocab_size=len(vocab), stop_token_ids=[a.eos])
    if a.ebnf:
        with open(a.ebnf) as f:
            text = "\n".join(line for line in f.read().splitlines() if not line.lstrip().startswith("#"))
        grammar = xgr.Grammar.from_ebnf(text)
    else:
        with open(a.json_schema) as f:
            grammar = xgr.Grammar.from_json_schema(
                f.read(), any_whitespace=False, separators=(",", ":"), strict_mode=True
            )
    compiled = xgr.GrammarCompiler(info, max_threads=1).compile_grammar(grammar)
    n = len(vocab)
    steps = mismatches = surrogate_steps = 0
    examples = []
    with open(a.sequences) as f:
        for line in f:
            seq = json.loads(line)
            matcher = xgr.GrammarMatcher(compiled)
            bitmask = xgr.allocate_token_bitmask(1, n)
            for i, hexmask in enumerate(seq["masks"]):
                matcher.fill_next_token_bitmask(bitmask)
                theirs = int.from_bytes(bitmask[0].numpy().astype("<i4").tobytes()[: (n + 7) // 8], "little")
                theirs &= (1 << n) - 1
                ours = int.from_bytes(bytes.fromhex(hexmask), "little")
                steps += 1
                if ours != theirs and surrogates_only(ours, theirs, n, vocab, seq["tokens"][:i]):
                    surrogate_steps += 1
                elif ours != theirs:
                    mismatches += 1
                    if len(examples) < 5:
                        only_ours = [t for t in range(n) if (ours >> t) & 1 and not (theirs >> t) & 1]
                        only_theirs = [t for t in range(n) if (theirs >> t) & 1 and not (ours >> t) & 1]
                        prefix = b"".join(vocab[t] for t in seq["tokens"][:i])
                        examples.append(
                            {
                                "prefix_end": repr(prefix[-24:]),
                                "only_ember": [
                                    vocab[t].decode("utf-8", "backslashreplace") or t for t in only_ours[:8]
                                ],
                                "only_xgrammar": [
                                    vocab[t].decode("utf-8", "backslashreplace") or t for t in only_theirs[:8]
                                ],
                                "counts": [len(only_ours), len(only_theirs)],
                            }
                        )
                if i < len(seq["tokens"]):
                    if not matcher.accept_token(seq["tokens"][i]):
                        mismatches += 1
                        examples.append({"xgrammar refused token": seq["tokens"][i], "at step": i})
                        break
    result = {"steps": steps, "mismatches": mismatches, "surrogate_steps": surrogate_steps, "examples": examples}
    json.dump(result, sys.stdout, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
