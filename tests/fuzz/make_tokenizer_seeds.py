"""Writes the tokenizer fuzzers' seeds: tiny tokenizer.json files trained with Hugging Face `tokenizers` (every
pre-tokenizer the loader supports, added tokens of each kind, merges as strings and as pairs, a post-processor) and
tiny SentencePiece .model files trained with `sentencepiece` (BPE and Unigram, byte fallback, a small custom
normalization charsmap). The training text is tests/llm/tokenizer_corpus.py's, seeded, and the vocabularies are
kept small so each seed is a few KB and the fuzzer mutates structure, not thousands of entries.

    .venv/bin/python3 -m tests.fuzz.make_tokenizer_seeds

writes tests/fuzz/corpus/tokenizer_json and tests/fuzz/corpus/sentencepiece (the same files on every run).
"""

import argparse
import json
import os
import tempfile

from tests.llm import tokenizer_corpus as corpus
from tests.llm.test_tokenizer_parity import GPT2_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN

LINES = 40
HF_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|endoftext|>"]


def _hf_tokenizer(kind):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from tokenizers import trainers

    bpe = {"unk": dict(unk_token="<unk>", fuse_unk=True), "llama3": dict(ignore_merges=True)}.get(kind, {})
    tok = Tokenizer(models.BPE(**bpe))
    if kind in ("gpt2", "gpt2_prefix_space", "unk"):
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=kind == "gpt2_prefix_space")
    else:
        pattern = {"llama3": LLAMA3_PATTERN, "qwen2": QWEN2_PATTERN, "gpt2_split": GPT2_PATTERN}[kind]
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    if kind == "qwen2":
        tok.normalizer = normalizers.NFC()
    tok.decoder = decoders.ByteLevel()
    specials = HF_SPECIALS + (["<unk>"] if kind == "unk" else [])
    trainer = trainers.BpeTrainer(vocab_size=90, special_tokens=specials, show_progress=False)
    tok.train_from_iterator(corpus.training_corpus(n=LINES, seed=3), trainer)
    tok.add_tokens([AddedToken("<custom>", normalized=True)])
    tok.add_special_tokens([AddedToken("<strip>", lstrip=True, rstrip=True), AddedToken("<word>", single_word=True)])
    if kind == "llama3":
        bos = tok.token_to_id("<|begin_of_text|>")
        eos = tok.token_to_id("<|end_of_text|>")
        tok.post_processor = processors.TemplateProcessing(
            single="<|begin_of_text|> $A <|end_of_text|>",
            special_tokens=[("<|begin_of_text|>", bos), ("<|end_of_text|>", eos)],
        )
    return tok


def _hf_seed(kind):
    """The tokenizer.json text, compact; `legacy_merges` writes merges as "a b" strings (older files)."""
    doc = json.loads(_hf_tokenizer(kind).to_str())
    if kind in ("gpt2", "unk"):
        doc["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in doc["model"]["merges"]]
    return json.dumps(doc, ensure_ascii=kind != "qwen2", separators=(",", ":")).encode()


# Two mappings in SentencePiece's normalization_rule_tsv form (source code points, target code points): enough to
# give the model a precompiled_charsmap of a few hundred bytes instead of nmt_nfkc's hundreds of KB.
CHARSMAP_RULES = "41\t61\nFF21\t41\n2160\t49\n"

SP_KINDS = {
    "bpe_byte_fallback": dict(model_type="bpe", byte_fallback=True, normalization_rule_name="identity"),
    "bpe_rules": dict(model_type="bpe", remove_extra_whitespaces=False, split_digits=True),
    "unigram_rules": dict(model_type="unigram"),
    "unigram_byte_fallback": dict(model_type="unigram", byte_fallback=True, normalization_rule_name="identity"),
}


def _sp_seed(kind, options, tmp):
    import sentencepiece as spm

    # Latin, Greek and Cyrillic lines only: every character must fit the small vocabulary.
    lines = [s for s in corpus.training_corpus(n=4 * LINES, seed=4) if s.strip() and max(map(ord, s)) < 0x500]
    # Relative paths, from inside `tmp`: the trainer writes its arguments into the model, and the seeds must be the
    # same bytes on every run.
    os.chdir(tmp)
    prefix = kind
    if "normalization_rule_name" not in options:
        with open("rules.tsv", "w") as f:
            f.write(CHARSMAP_RULES)
        options = dict(options, normalization_rule_tsv="rules.tsv")
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_prefix=prefix,
        vocab_size=400 if "byte_fallback" in kind else 140,
        character_coverage=0.98,
        user_defined_symbols=["<sep>"],
        minloglevel=2,
        num_threads=1,
        seed_sentencepiece_size=2000,
        hard_vocab_limit=False,
        **options,
    )
    with open(prefix + ".model", "rb") as f:
        return f.read()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=os.path.join(here, "corpus"))
    args = p.parse_args()
    hf_dir = os.path.abspath(os.path.join(args.out, "tokenizer_json"))
    sp_dir = os.path.abspath(os.path.join(args.out, "sentencepiece"))
    os.makedirs(hf_dir, exist_ok=True)
    os.makedirs(sp_dir, exist_ok=True)
    for kind in ("gpt2", "gpt2_prefix_space", "gpt2_split", "llama3", "qwen2", "unk"):
        data = _hf_seed(kind)
        with open(os.path.join(hf_dir, f"{kind}.json"), "wb") as f:
            f.write(data)
        print(f"{kind}.json: {len(data)} bytes")
    with tempfile.TemporaryDirectory() as tmp:
        for kind, options in SP_KINDS.items():
            data = _sp_seed(kind, options, tmp)
            with open(os.path.join(sp_dir, f"{kind}.model"), "wb") as f:
                f.write(data)
            print(f"{kind}.model: {len(data)} bytes")


if __name__ == "__main__":
    main()
