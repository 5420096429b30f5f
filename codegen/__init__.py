"""codegen: kernel manifests (+ a model's selection) -> registration table and dtype lists, in C++."""
