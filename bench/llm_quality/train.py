"""Training of the small decoder whose held-out perplexity bench.llm_quality measures.

    python -m bench.llm_quality.train --out DIR [--steps N]     (bench.llm_quality runs it when its cache is cold)

The model is transformers' LlamaForCausalLM built from CONFIG, so examples/llm/export.py reads the checkpoint as it
reads any Llama (DIR: config.json, model.safetensors, tokenizer.json, train_log.json). Every width is a multiple
of 32, so 8da4w's smallest group size (32) applies to every linear layer. It is sized for one CPU core: the run
sees well under one pass over the training text, so the held-out loss still falls at the end.

Reproducible: one thread, torch.manual_seed(seed) before the weights are made, and the batches drawn from a
torch.Generator seeded alike (random windows of context + 1 tokens from the training stream). The optimizer is
AdamW (weight decay on matrices only) with linear warm-up then cosine decay to a tenth of the peak rate, and the
gradient norm clipped at 1. train_log.json records the settings, the loss curve, held-out loss at checkpoints along
the way (the first windows of the held-out stream, eager), the wall-clock time and the machine's load.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from typing import Dict, List, Optional

import torch

from bench.llm_quality import corpus as corpus_mod
from bench.llm_quality import tokenizer as tok_mod

# transformers LlamaConfig fields of the measured model. Grouped-query attention (a KV head per 2 query heads) as the
# Llama family ships; the output head is its own matrix (untied), so quantizing the linears quantizes it too. The
# widths (256, 768) are multiples of every 8da4w group size (32 to 256).
CONFIG = {
    "model_type": "llama",
    "vocab_size": 2048,
    "hidden_size": 256,
    "intermediate_size": 768,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
    "attention_bias": False,
    "mlp_bias": False,
    "initializer_range": 0.02,
    "bos_token_id": tok_mod.SPECIAL_ID,
    "eos_token_id": tok_mod.SPECIAL_ID,
}


@dataclasses.dataclass(frozen=True)
class Settings:
    seed: int = 0
    steps: int = 600
    batch: int = 16
    context: int = 256  # tokens the model reads per training window (and the exported max_seq_len)
    lr: float = 2e-3
    warmup: int = 40
    weight_decay: float = 0.1
    eval_every: int = 100
    eval_windows: int = 16  # held-out windows scored at each checkpoint of the curve


def import_transformers():
    from zoo.public import torchvision_cpu

    torchvision_cpu.ensure()
    import transformers

    return transformers


def build_model(seed: int, config: Optional[dict] = None):
    transformers = import_transformers()
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(**{k: v for k, v in (config or CONFIG).items() if k != "model_type"})
    return transformers.LlamaForCausalLM(cfg)


def learning_rate(step: int, s: Settings) -> float:
    if step < s.warmup:
        return s.lr * (step + 1) / s.warmup
    progress = (step - s.warmup) / max(1, s.steps - s.warmup)
    return s.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def optimizer(model, s: Settings) -> torch.optim.Optimizer:
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": s.weight_decay}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=s.lr, betas=(0.9, 0.95), eps=1e-8)


def batches(stream: torch.Tensor, s: Settings):
    """Endless (inputs, targets) [batch, context] from random offsets drawn by a generator seeded with s.seed."""
    if stream.numel() < s.context + 2:
        raise ValueError(f"{stream.numel()} training tokens: a window needs {s.context + 1}")
    g = torch.Generator().manual_seed(s.seed)
    span = torch.arange(s.context + 1)
    while True:
        starts = torch.randint(0, stream.numel() - s.context - 1, (s.batch,), generator=g)
        rows = stream[starts[:, None] + span]
        yield rows[:, :-1], rows[:, 1:]


def loss_of(model, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    logits = model(input_ids=inputs, use_cache=False).logits
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def heldout_loss(model, heldout: torch.Tensor, s: Settings) -> float:
    """Mean loss over the first eval_windows non-overlapping windows of the held-out stream (eager, no grad)."""
    n = min(s.eval_windows, (heldout.numel() - 1) // s.context)
    rows = heldout[: n * s.context + 1]
    inputs = rows[:-1].reshape(n, s.context)
    targets = rows[1:].reshape(n, s.context)
    model.eval()
    with torch.no_grad():
        value = float(loss_of(model, inputs, targets))
    model.train()
    return value


def train(model, stream: torch.Tensor, heldout: torch.Tensor, s: Settings, log=print) -> Dict[str, object]:
    """Trains model in place for s.steps; returns the log (loss curve, held-out checkpoints, time)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: the same arithmetic order, so the same weights, on every run
    try:
        return _train(model, stream, heldout, s, log)
    finally:
        torch.set_num_threads(threads)


def _train(model, stream: torch.Tensor, heldout: torch.Tensor, s: Settings, log) -> Dict[str, object]:
    opt = optimizer(model, s)
    data = batches(stream, s)
    model.train()
    curve: List[dict] = []
    checkpoints: List[dict] = [{"step": 0, "heldout_loss": heldout_loss(model, heldout, s)}]
    window_losses: List[float] = []  # since the last point of the curve
    recent: List[float] = []  # since the last held-out checkpoint
    start, cpu_start = time.perf_counter(), time.process_time()
    for step in range(s.steps):
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, s)
        inputs, targets = next(data)
        loss = loss_of(model, inputs, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        window_losses.append(float(loss.detach()))
        recent.append(window_losses[-1])
        if (step + 1) % 25 == 0 or step + 1 == s.steps:
            mean = sum(window_losses) / len(window_losses)
            curve.append(
                {
                    "step": step + 1,
                    "train_loss": round(mean, 4),
                    "s": round(time.perf_counter() - start, 1),
                    "cpu_s": round(time.process_time() - cpu_start, 1),
                }
            )
            window_losses = []
        if (step + 1) % s.eval_every == 0 or step + 1 == s.steps:
            checkpoints.append({"step": step + 1, "heldout_loss": round(heldout_loss(model, heldout, s), 4)})
            log(
                f"step {step + 1}/{s.steps}: train loss {sum(recent) / len(recent):.3f}, held-out "
                f"{checkpoints[-1]['heldout_loss']:.3f}, {time.perf_counter() - start:.0f} s "
                f"({time.process_time() - cpu_start:.0f} s CPU)"
            )
            recent = []
    model.eval()
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    return {
        "settings": dataclasses.asdict(s),
        "parameters": sum(p.numel() for p in model.parameters()),
        "tokens_seen": s.steps * s.batch * s.context,
        "train_stream_tokens": int(stream.numel()),
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu_seconds, 1),  # the measure that the machine's other jobs do not stretch
        "tokens_per_cpu_s": round(s.steps * s.batch * s.context / cpu_seconds, 1),
        "threads": 1,
        "load_average": list(os.getloadavg()),
        "torch": torch.__version__,
        "curve": curve,
        "heldout_checkpoints": checkpoints,
    }


def prepare(out_dir: str, corpus: corpus_mod.Corpus, s: Settings, log=print):
    """The tokenizer and the trained checkpoint in out_dir; returns (tokenizer, train_log)."""
    os.makedirs(out_dir, exist_ok=True)
    tok_path = os.path.join(out_dir, "tokenizer.json")
    tok = tok_mod.train(corpus.train.texts, CONFIG["vocab_size"])
    tok.save(tok_path)
    log(f"tokenizer: {CONFIG['vocab_size']} ids, sha256 {tok_mod.file_sha256(tok_path)[:16]}")
    stream = torch.tensor(tok_mod.stream(tok, corpus.train.texts), dtype=torch.long)
    heldout = torch.tensor(tok_mod.stream(tok, corpus.heldout.texts), dtype=torch.long)
    config = dict(CONFIG, max_position_embeddings=s.context)
    model = build_model(s.seed, config)
    n = sum(p.numel() for p in model.parameters())
    log(f"training {n:,} parameters on {stream.numel():,} tokens: {s.steps} steps of {s.batch} x {s.context}")
    train_log = train(model, stream, heldout, s, log)
    train_log["tokenizer_sha256"] = tok_mod.file_sha256(tok_path)
    train_log["corpus"] = {"train_sha256": corpus.train.digest(), "heldout_sha256": corpus.heldout.digest()}
    model.save_pretrained(out_dir, safe_serialization=True)
    train_log["weights_sha256"] = tok_mod.file_sha256(os.path.join(out_dir, "model.safetensors"))
    with open(os.path.join(out_dir, "train_log.json"), "w") as f:
        json.dump(train_log, f, indent=1)
    return tok, train_log


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="checkpoint folder (config.json, weights, tokenizer.json, log)")
    ap.add_argument("--steps", type=int, default=Settings.steps)
    ap.add_argument("--seed", type=int, default=Settings.seed)
    a = ap.parse_args(argv)
    s = Settings(seed=a.seed, steps=a.steps)
    prepare(a.out, corpus_mod.load(seed=s.seed), s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
