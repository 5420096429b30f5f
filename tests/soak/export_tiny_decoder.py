"""The soak tier's decoder: a tiny Llama-shaped examples/llm Decoder with seeded random weights, exported as
examples/llm exports by default (fp32, sessions). Built from a DecoderConfig directly, not through transformers,
so the build step imports torch and the exporter only. Its context is short on purpose: a long soak slides the
window and starts new chats many times, as real chats do.

    python tests/soak/export_tiny_decoder.py OUT.pte   (from the repository root, on PYTHONPATH)
"""

import argparse

import torch

from examples.llm.export import export_decoder
from examples.llm.model import Decoder, DecoderConfig

# tests/llm/tiny_models.py's LLAMA shape: two layers, grouped-query attention, a 64-wide residual stream.
CONFIG = DecoderConfig(vocab_size=320, dim=64, hidden_dim=128, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=16)
MAX_SEQ_LEN = 64
SEED = 37


def tiny_decoder() -> Decoder:
    """CONFIG's decoder with every parameter drawn after torch.manual_seed(SEED) (norms included, so no layer
    is an identity)."""
    torch.manual_seed(SEED)
    model = Decoder(CONFIG, MAX_SEQ_LEN)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.2 + (1.0 if p.dim() == 1 else 0.0))
    return model.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="where to write the .pte")
    export_decoder(tiny_decoder()).save(parser.parse_args().out)


if __name__ == "__main__":
    main()
