"""Chat templates on Ember's C++ renderer (examples/llm/chat): a conversation to the prompt text, or to the prompt
ids, as transformers' apply_chat_template writes them, without Python's Jinja.

    from ember import chat
    template = chat.ChatTemplate.from_tokenizer_config("tokenizer_config.json")  # no chat_template: plain format
    text = template.render([{"role": "user", "content": "Hi!"}], add_generation_prompt=True)
    ids = template.encode("tokenizer.json", [{"role": "user", "content": "Hi!"}], True, bos_id=1)

Messages are dicts (role, content, and tool_calls or any field the template reads); further variables (tools,
date_string, ...) are keyword arguments of render. A template's raise_exception raises chat.TemplateRaised; a
malformed template or input raises ValueError("line L, column C: message"). The extension is built by Bazel
(`bazel build //examples/llm/chat:_ember_chat.so`, built on first use).
"""

from __future__ import annotations

import json
from typing import Optional, Sequence

from ember import _tools
from ember.runtime import _load_module

_lib = None


def _extension():
    global _lib
    if _lib is None:
        _lib = _load_module(_tools.find_extension("//examples/llm/chat:_ember_chat.so"))
    return _lib


class TemplateRaised(ValueError):
    """The template refused the conversation with raise_exception(message)."""


class ChatTemplate:
    """A chat template and the special tokens it reads (bos_token, eos_token, ...), as tokenizer_config.json holds
    them; `template=None` is the plain default format."""

    def __init__(self, template: Optional[str] = None, **special_tokens: str):
        self._config = json.dumps({"chat_template": template, **special_tokens})

    @staticmethod
    def from_tokenizer_config(path: str) -> "ChatTemplate":
        t = ChatTemplate()
        with open(path, encoding="utf-8") as f:
            t._config = f.read()
        return t

    def render(self, messages: Sequence[dict], add_generation_prompt: bool = False, **variables) -> str:
        lib = _extension()
        try:
            return lib.render_tokenizer_config(
                self._config, json.dumps(list(messages)), add_generation_prompt, json.dumps(variables)
            )
        except lib.TemplateRaised as e:
            raise TemplateRaised(str(e)) from None

    def encode(
        self, tokenizer_path: str, messages: Sequence[dict], add_generation_prompt: bool = False, bos_id: int = -1
    ) -> list:
        """The prompt ids: the rendered text encoded by Ember's tokenizer without special tokens added (the
        template writes its own); the plain format gets `bos_id` in front (< 0: none)."""
        lib = _extension()
        try:
            return lib.encode_chat(
                self._config, tokenizer_path, json.dumps(list(messages)), add_generation_prompt, bos_id
            )
        except lib.TemplateRaised as e:
            raise TemplateRaised(str(e)) from None
