"""What quantization costs in accuracy: a small decoder trained here on the Python standard library, and its held-out
perplexity in each format (python -m bench.llm_quality; bench/README.md, "LLM quality").

| module | holds |
|---|---|
| corpus.py | the standard library's .py files, split by file into train and held-out, and their digests |
| tokenizer.py | the byte-level BPE trained on the train split (tokenizer.json), token streams |
| train.py | the model's config and the seeded one-thread training run (a transformers Llama checkpoint) |
| windows.py, perplexity.py | perplexity over windows, from an Ember .pte, eager PyTorch or any logits source |
| llamacpp.py | llama.cpp's rows (its GGUF formats), when its converter and venv are in the tree |
| report.py, __main__.py | the one command and its results file |
"""
