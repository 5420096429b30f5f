"""A decoder with its weights in a .ptd (docs/external_data.md): the program keeps the KV cache plan and the
graph, the .ptd every weight; ember.llm generates the same greedy tokens as from the self-contained program."""

import os


from zoo.public import torchvision_cpu

torchvision_cpu.ensure()


import exir  # noqa: E402
from ember import llm, runtime  # noqa: E402
from examples.llm.export import export_decoder  # noqa: E402
from examples.llm.model import Decoder  # noqa: E402
from tests.llm import tiny_models  # noqa: E402


def test_decoder_with_external_weights_generates_the_same_tokens(tmp_path):
    hf = tiny_models.llama(34, vocab_size=256, max_position_embeddings=64)
    inline = export_decoder(Decoder.from_hf(hf, 32))
    external = export_decoder(Decoder.from_hf(hf, 32), exir.ExecutorchBackendConfig(external_constants=True))
    inline.save(str(tmp_path / "inline.pte"))
    external.save(str(tmp_path / "decoder.pte"))
    weights = tmp_path / "_default_external_constant.ptd"
    # The weights moved out: the program is a small part of the self-contained one.
    assert os.path.getsize(tmp_path / "decoder.pte") < os.path.getsize(tmp_path / "inline.pte") // 4
    assert os.path.getsize(weights) > os.path.getsize(tmp_path / "inline.pte") // 2

    prompt = [1, 17, 42, 7]
    want = llm.generate(runtime.load(tmp_path / "inline.pte"), prompt, max_new_tokens=12)
    got = llm.generate(runtime.load(tmp_path / "decoder.pte", data_files=[weights]), prompt, max_new_tokens=12)
    assert got.ids == want.ids and len(want.ids) > 0
