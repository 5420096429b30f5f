"""Small random-weight Hugging Face Llamas for the LLM tests: the shape they share is defined once here, and each
test names only what differs (its seed, its vocabulary, a longer context, a bigger model)."""

import torch

from zoo.public import torchvision_cpu

torchvision_cpu.ensure()

import transformers  # noqa: E402  (after torchvision_cpu.ensure)

# Two layers, grouped-query attention (4 query heads over 2 KV heads), a 64-wide residual stream.
LLAMA = dict(
    vocab_size=320,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=128,
    bos_token_id=1,
    eos_token_id=2,
)


def llama_config(**config) -> "transformers.LlamaConfig":
    """LLAMA with `config`'s fields replaced."""
    return transformers.LlamaConfig(**{**LLAMA, **config})


def llama(seed: int, **config) -> "transformers.LlamaForCausalLM":
    """llama_config(**config) with its weights drawn after torch.manual_seed(seed), in eval mode."""
    cfg = llama_config(**config)
    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(cfg).eval()


def export(hf, max_seq_len: int, path: str) -> str:
    """hf as examples/llm exports it by default (fp32, one forward method), saved at path."""
    from examples.llm.export import export_decoder
    from examples.llm.model import Decoder

    export_decoder(Decoder.from_hf(hf, max_seq_len)).save(path)
    return path
