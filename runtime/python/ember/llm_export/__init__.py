"""The LLM export (examples/llm's Python side: export, model, kv_cache, layout, quantize) under the name it has in
the wheel, so one import works in both places: `from ember.llm_export import export`,
`python -m ember.llm_export.export ...`.

The wheel carries those files in this folder, in place of this one; in a checkout this package's modules are
examples/llm's files themselves (they import one another relatively, so either name works).
"""

import os

__path__ = [
    os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))),
        "examples",
        "llm",
    )
]
