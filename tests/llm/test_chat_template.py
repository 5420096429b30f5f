"""Ember's C++ chat templates (examples/llm/chat) against transformers' apply_chat_template, byte for byte.

Each family's chat_template text is kept as data in tests/llm/chat_templates/ (as the public tokenizer_config.json
files carry it: Llama 3 and 3.1 Instruct, Qwen2 and Qwen2.5 Instruct, Mistral Instruct v0.1 and v0.3, Phi-3, Gemma).
The reference is a PreTrainedTokenizerFast over a one-token tokenizer (nothing is downloaded) with that template
and the family's special tokens; Ember renders the same template from a tokenizer_config.json made of the same
text and tokens. Both render every conversation with and without a generation prompt: equal text, or both refuse
(the template's raise_exception with the same message, or both fail on the data).
"""

import importlib.util
import json
import os

import pytest

from tests.conftest import ROOT, bazel_build
from zoo.public import torchvision_cpu

torchvision_cpu.ensure()

import jinja2  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, models  # noqa: E402

TEMPLATES = os.path.join(os.path.dirname(__file__), "chat_templates")

LLAMA3 = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
QWEN2 = {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
MISTRAL = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
FAMILIES = {
    "llama3": ("llama3.jinja", LLAMA3),
    "llama3.1": ("llama3.1.jinja", LLAMA3),
    "qwen2": ("qwen2.jinja", QWEN2),
    "qwen2.5": ("qwen2.5.jinja", QWEN2),
    "mistral_v0.1": ("mistral_v0.1.jinja", MISTRAL),
    "mistral_v0.3": ("mistral_v0.3.jinja", MISTRAL),
    "phi3": ("phi3.jinja", {"bos_token": "<s>", "eos_token": "<|endoftext|>", "unk_token": "<unk>"}),
    "gemma": ("gemma.jinja", {"bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>", "pad_token": "<pad>"}),
}


def _user(text):
    return {"role": "user", "content": text}


def _assistant(text):
    return {"role": "assistant", "content": text}


CONVERSATIONS = {
    "single": [_user("Hello, how are you?")],
    "system_multi_turn": [
        {"role": "system", "content": "You are a terse assistant.\n"},
        _user("What is 2 + 2?"),
        _assistant("4."),
        _user("And times 3?"),
    ],
    "multi_turn": [_user("Hi"), _assistant(" Hello! "), _user("Tell me a joke."), _assistant("No.")],
    "unicode": [
        _user("Grüße 👋 — 日本語のテキスト\u3000"),
        _assistant("Ça va? 🙂\n\t"),
        _user('  quotes \' " and \\ backslash {{ not a tag }} {% neither %}  '),
    ],
    "empty_content": [_user("")],
    # Refused by the templates that check alternation (Mistral, Gemma).
    "two_users": [_user("one"), _user("two")],
    # The content key is missing: templates that concatenate it fail on undefined, others print nothing.
    "no_content": [{"role": "user"}],
}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather at a place.",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string", "description": "City and country, e.g. Paris, France"}},
            "required": ["location"],
        },
    },
}
TOOL_CALL = {
    "type": "function",
    "id": "call12345",
    "function": {"name": "get_weather", "arguments": {"location": "Paris, France"}},
}
TOOL_CHAT = [
    _user("What's the weather in Paris?"),
    {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
    {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "22°C, sunny"},
    _assistant("It is 22°C and sunny in Paris."),
]

# (family, name, messages, extra variables): the tool and option paths of the templates that have them.
TOOL_CASES = [
    ("llama3.1", "tools_in_user_message", TOOL_CHAT, {"tools": [WEATHER_TOOL]}),
    ("llama3.1", "tools_in_system", TOOL_CHAT, {"tools": [WEATHER_TOOL], "tools_in_user_message": False}),
    ("llama3.1", "tool_call_history", TOOL_CHAT, {"date_string": "01 Jan 2025"}),
    (
        "llama3.1",
        "builtin_tools",
        [
            _user("Search for Ember"),
            {
                "role": "assistant",
                "tool_calls": [{"function": {"name": "brave_search", "arguments": {"query": "Ember", "n": "3"}}}],
            },
        ],
        {"builtin_tools": ["code_interpreter", "brave_search"]},
    ),
    ("llama3.1", "tools_without_user_message", [{"role": "system", "content": "s"}], {"tools": [WEATHER_TOOL]}),
    (
        "llama3.1",
        "two_tool_calls",
        [_user("x"), {"role": "assistant", "tool_calls": [TOOL_CALL, TOOL_CALL]}],
        {},
    ),
    ("qwen2.5", "tools", TOOL_CHAT, {"tools": [WEATHER_TOOL]}),
    ("qwen2.5", "tool_history", [{"role": "system", "content": "Be exact."}] + TOOL_CHAT, {}),
    ("mistral_v0.3", "tools", TOOL_CHAT, {"tools": [WEATHER_TOOL]}),
    (
        "mistral_v0.3",
        "bad_tool_call_id",
        [_user("x"), {"role": "assistant", "tool_calls": [dict(TOOL_CALL, id="short")]}],
        {},
    ),
]


@pytest.fixture(scope="module")
def ember_chat():
    bazel_build("//examples/llm/chat:_ember_chat.so")
    path = os.path.join(ROOT, "bazel-bin", "examples", "llm", "chat", "_ember_chat.so")
    spec = importlib.util.spec_from_file_location("_ember_chat", os.path.realpath(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _template(family):
    with open(os.path.join(TEMPLATES, FAMILIES[family][0]), encoding="utf-8") as f:
        return f.read()


_REFERENCES = {}


def _reference_tokenizer(template, special):
    key = (template, tuple(sorted(special.items())))
    if key not in _REFERENCES:
        tok = transformers.PreTrainedTokenizerFast(
            tokenizer_object=Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>")), **special
        )
        tok.chat_template = template
        _REFERENCES[key] = tok
    return _REFERENCES[key]


def _reference(template, special, messages, add_generation_prompt, extra):
    """("ok", text), ("raised", message) for the template's raise_exception, or ("error", type name)."""
    tok = _reference_tokenizer(template, special)
    kwargs = dict(extra)
    tools = kwargs.pop("tools", None)
    try:
        text = tok.apply_chat_template(
            messages, tools=tools, tokenize=False, add_generation_prompt=add_generation_prompt, **kwargs
        )
    except jinja2.exceptions.TemplateError as e:
        # raise_exception raises the base class; the sandbox, undefined values and syntax raise subclasses.
        return ("raised", str(e)) if type(e) is jinja2.exceptions.TemplateError else ("error", type(e).__name__)
    except Exception as e:  # noqa: BLE001  (Python's own errors on the data: TypeError, ZeroDivisionError, ...)
        return ("error", type(e).__name__)
    return ("ok", text)


def _ember(ember_chat, template, special, messages, add_generation_prompt, extra):
    config = json.dumps({"chat_template": template, **special})
    try:
        text = ember_chat.render_tokenizer_config(
            config, json.dumps(messages), add_generation_prompt, json.dumps(extra)
        )
    except ember_chat.TemplateRaised as e:
        return ("raised", str(e))
    except ValueError as e:
        return ("error", str(e))
    return ("ok", text)


def _check(ember_chat, template, special, messages, add_generation_prompt, extra=None):
    extra = extra or {}
    want = _reference(template, special, messages, add_generation_prompt, extra)
    got = _ember(ember_chat, template, special, messages, add_generation_prompt, extra)
    if want[0] == "error":
        assert got[0] == "error", f"transformers failed ({want[1]}), Ember rendered {got!r}"
    else:
        assert got == want
    return want


@pytest.mark.parametrize("add_generation_prompt", [False, True], ids=["no_prompt", "generation_prompt"])
@pytest.mark.parametrize("conversation", sorted(CONVERSATIONS))
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_conversations_render_as_transformers(ember_chat, family, conversation, add_generation_prompt):
    _check(ember_chat, _template(family), FAMILIES[family][1], CONVERSATIONS[conversation], add_generation_prompt)


@pytest.mark.parametrize("family,name,messages,extra", TOOL_CASES, ids=[f"{c[0]}-{c[1]}" for c in TOOL_CASES])
def test_tool_use_renders_as_transformers(ember_chat, family, name, messages, extra):
    for add_generation_prompt in (False, True):
        _check(ember_chat, _template(family), FAMILIES[family][1], messages, add_generation_prompt, extra)


def test_the_templates_refusals_are_matched(ember_chat):
    """The cases above include the templates' own refusals; these are the ones that must be refusals."""
    cases = [
        ("gemma", CONVERSATIONS["system_multi_turn"], "System role not supported"),
        ("gemma", CONVERSATIONS["two_users"], "Conversation roles must alternate user/assistant/user/assistant/..."),
        ("mistral_v0.1", CONVERSATIONS["system_multi_turn"], "Conversation roles must alternate"),
        ("mistral_v0.3", CONVERSATIONS["two_users"], "After the optional system message, conversation roles must"),
    ]
    for family, messages, message in cases:
        want = _check(ember_chat, _template(family), FAMILIES[family][1], messages, True)
        assert want[0] == "raised" and want[1].startswith(message), (family, want)


def test_plain_default_format(ember_chat):
    """A tokenizer_config.json without chat_template gets the documented plain format, which renders in
    transformers as in Ember."""
    messages = CONVERSATIONS["system_multi_turn"]
    got = ember_chat.render_tokenizer_config(json.dumps({"bos_token": "<s>"}), json.dumps(messages), True)
    assert got == (
        "System: You are a terse assistant.\n\nUser: What is 2 + 2?\n\nAssistant: 4.\n\nUser: And times 3?\n\n"
        "Assistant:"
    )
    for conversation in CONVERSATIONS.values():
        for prompt in (False, True):
            _check(ember_chat, ember_chat.PLAIN_TEMPLATE, {"bos_token": "<s>"}, conversation, prompt)


def test_malformed_templates_name_their_place(ember_chat):
    with pytest.raises(ValueError, match=r"^line 3, column 4: unknown or unsupported tag 'include'"):
        ember_chat.render("a\nb\n{% include 'x' %}", "[]")
    with pytest.raises(ValueError, match=r"^line 1, column 1: missing end of tag"):
        ember_chat.render("{{ messages", "[]")


@pytest.fixture(scope="module")
def chat_tokenizer(tmp_path_factory):
    """A byte-level BPE tokenizer.json with Llama 3's and ChatML's turn markers as special tokens, trained on the
    conversations' words (nothing downloaded)."""
    from tokenizers import decoders, pre_tokenizers, trainers

    specials = [
        "<|begin_of_text|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eot_id|>",
        "<|im_start|>",
        "<|im_end|>",
        "<|endoftext|>",
    ]
    lines = [m.get("content") or "" for conv in CONVERSATIONS.values() for m in conv] * 20
    lines += ["system user assistant You are a helpful assistant."] * 20
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=specials,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(lines, trainer)
    path = str(tmp_path_factory.mktemp("chat_tok") / "tokenizer.json")
    tok.save(path)
    return path


@pytest.mark.parametrize("family", ["llama3", "qwen2"])
def test_encoded_chat_matches_transformers_ids(ember_chat, chat_tokenizer, family):
    """encode_chat (render, then Ember's tokenizer, no special tokens added) gives apply_chat_template's ids: the
    turn markers the template writes come out as their special ids."""
    template, special = _template(family), FAMILIES[family][1]
    ref = transformers.PreTrainedTokenizerFast(tokenizer_file=chat_tokenizer, **special)
    ref.chat_template = template
    config = json.dumps({"chat_template": template, **special})
    for name in ("single", "system_multi_turn", "multi_turn", "unicode"):
        messages = CONVERSATIONS[name]
        for prompt in (False, True):
            want = ref.apply_chat_template(messages, tokenize=True, add_generation_prompt=prompt, return_dict=False)
            got = ember_chat.encode_chat(config, chat_tokenizer, json.dumps(messages), prompt, bos_id=1)
            assert got == list(want), (name, prompt)
            marker = ref.convert_tokens_to_ids("<|eot_id|>" if family == "llama3" else "<|im_end|>")
            assert marker in got
    # The plain default format writes no BOS: encode_chat puts the given one in front.
    plain = ember_chat.encode_chat("{}", chat_tokenizer, json.dumps(CONVERSATIONS["single"]), True, bos_id=0)
    assert plain[0] == 0 and plain[1:] == ref.encode(
        "User: Hello, how are you?\n\nAssistant:", add_special_tokens=False
    )


def test_encode_chat_names_what_is_wrong_in_the_tokenizer(ember_chat, tmp_path):
    """A broken tokenizer.json: the ValueError carries the loader's line (byte, line and column), not only that it
    did not load."""
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"model": {"type": "BPE",\n "vocab": {"a": 0 "b": 1}}}')
    with pytest.raises(ValueError, match=r"did not load: .*byte 44 \(line 2, column 19\)"):
        ember_chat.encode_chat("{}", str(bad), json.dumps(CONVERSATIONS["single"]), True, bos_id=0)


def test_python_module(ember_chat, tmp_path):
    """ember.chat: the same renderer from Python, from a tokenizer_config.json file, refusals as exceptions."""
    from ember import chat

    family = "gemma"
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"chat_template": _template(family), **FAMILIES[family][1]}))
    template = chat.ChatTemplate.from_tokenizer_config(str(config))
    messages = CONVERSATIONS["multi_turn"]
    assert (
        template.render(messages, add_generation_prompt=True)
        == _reference(_template(family), FAMILIES[family][1], messages, True, {})[1]
    )
    with pytest.raises(chat.TemplateRaised, match="System role not supported"):
        template.render(CONVERSATIONS["system_multi_turn"])
    with pytest.raises(ValueError, match="line 1, column 8: unknown filter 'nope'"):
        chat.ChatTemplate("{{ x | nope }}").render([])
    assert chat.ChatTemplate().render([_user("Hi")], True) == "User: Hi\n\nAssistant:"
    assert chat.ChatTemplate("{{ date_string }}").render([], date_string="1 Jan") == "1 Jan"


# Jinja semantics the templates lean on, each rendered by transformers' Jinja environment and by Ember over
# CONVERSATIONS["system_multi_turn"] (no hand-written expected strings: Jinja is the reference).
SNIPPETS = [
    # white space control
    "{% for m in messages %}\n  {{ m.role }}\n{% endfor %}",
    "{%- for m in messages -%}\n  {{- m.role }} {% endfor %}",
    "a\n    {%+ if true %}x{% endif %}\n  {% if true %}y{% endif %}  \n\t{# c #}\nz",
    "{# comment #}\nx {#- c -#}  y {{- ' ' -}} z\n\n{%- if true -%}\n\n w \n{%- endif %}",
    "  {{ 'x' }}\n  {% set a = 1 %}\n{{ a }}{{ '{{' }}{ }}",
    # literals, escapes, numbers
    "{{ 'a' 'b' \"c\" }} {{ '\\u00e9\\x41\\101\\n\\t\\\\\\q' }} {{ 1_000 }} {{ 1.5e3 }} {{ 0.1 }} {{ 1e-7 }} {{ 2.0 }}",
    "{{ none }} {{ true }} {{ False }} {{ [] }} {{ () }} {{ {} }} {{ [1, 'a', none, true, 2.5] }} {{ ('x',) }}",
    "{{ {'a': {'b': [1, (2, 3)]}, 'q': \"it's\"} }} {{ \"a'b\" }} {{ ['\\n'] }}",
    # arithmetic and comparisons
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ -7 % 3 }} {{ 1 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} "
    "{{ -7.5 % 2 }} {{ 3 * 'ab' }} {{ [1] * 3 }} {{ 1 + 2.5 }} {{ 10 - 3 - 2 }} {{ -(3) }} {{ +3 }}",
    "{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} "
    "{{ 'b' in 'abc' }} {{ 'x' not in ['x'] }} {{ 'role' in messages[0] }} {{ none == none }} {{ x == y }}",
    "{{ 1 and 'a' }} {{ 0 and 'a' }} {{ '' or 'b' }} {{ 'a' or 'b' }} {{ not '' }} {{ not messages }} "
    "{{ 'y' if messages else 'n' }} {{ 'x' if false }}|{{ 1 if 0 else 2 if 0 else 3 }}",
    # names, attributes, subscripts, slices
    "{{ messages.0.role }} {{ messages[0]['role'] }} {{ messages[-1].content }} {{ messages[9] }}|{{ messages[1:3] | "
    "length }} {{ (messages[::-1] | first).role }} {{ messages[:-3] }} {{ 'héllo'[1] }} {{ 'héllo'[-2:] }} "
    "{{ 'héllo'[::2] }} {{ 'héllo'[10:] }}|{{ [1, 2, 3][-2] }}",
    "{{ undefined_name }}|{{ messages[0].nope }}|{{ undefined_name is defined }} {{ messages[0].nope is undefined }} "
    "{{ undefined_name ~ 'x' }} {{ undefined_name | length }} {{ undefined_name | default('d') }} "
    "{{ '' | default('e', true) }} {{ none | default('n') }}",
    # loops
    "{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
    "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem.role if loop.previtem is defined }}"
    "{{ loop.nextitem.role if loop.nextitem is defined }};{% endfor %}",
    "{% for m in messages if m.role != 'system' %}{{ loop.index }}/{{ loop.length }} {{ m.role }};{% else %}none"
    "{% endfor %}{% for x in [] %}x{% else %}empty{% endfor %}{% for c in 'ab' %}{{ c }}{% endfor %}"
    "{% for k in {'a': 1, 'b': 2} %}{{ k }}{% endfor %}{% for x in undefined_name %}u{% endfor %}",
    "{% for a, b in [(1, 2), [3, 4]] %}{{ a }}{{ b }}{% endfor %}{% for k, v in {'a': 1} | items %}{{ k }}{{ v }}"
    "{% endfor %}{% for k, v in messages[0].items() %}{{ k }}={{ v }};{% endfor %}",
    "{% for i in range(5) %}{% for j in range(3) %}{% if j == 1 %}{% continue %}{% endif %}{{ loop.index }}"
    "{% endfor %}{% if i == 2 %}{% break %}{% endif %}{{ loop.index }}|{% endfor %}{{ range(3, 0, -1) | list }}",
    # scoping
    "{% set x = 0 %}{% for m in messages %}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}",
    "{% set ns = namespace(n=0, items=[]) %}{% for m in messages %}{% set ns.n = ns.n + loop.index %}"
    "{% set ns.items = ns.items + [m.role] %}{% endfor %}{{ ns.n }} {{ ns.items }}",
    "{% if true %}{% set y = 'in' %}{% endif %}{{ y }}{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, %}{{ t }}",
    "{% set messages = messages[1:] %}{{ messages | length }}{% set block %}[{{ messages[0].role }}]{% endset %}"
    "{{ block }}",
    "{% macro tag(name, close=false) %}<{{ '/' if close }}{{ name }}>{% endmacro %}{{ tag('a') }}"
    "{{ tag('a', close=true) }}{{ tag(name='b') }}",
    # filters
    "{{ '  x \\n' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 'aB cD-eF' | title }}|{{ 'aB cD' | capitalize }}|"
    "{{ 'aB' | upper }}{{ 'aB' | lower }}|{{ 'a-b-c' | replace('-', '+') }}|{{ 'a-b-c' | replace('-', '', 1) }}",
    "{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} {{ messages | "
    "sort(attribute='role') | map(attribute='role') | join(',') }} {{ ['a', 'A', 'b'] | unique | list }}",
    "{{ [1, 2, 3] | first }} {{ [1, 2, 3] | last }} {{ 'abc' | list }} {{ [1, 2] | reverse | list }} "
    "{{ 'abc' | reverse }} {{ [1, 2, 3] | sum }} {{ [1, 2, 3] | min }} {{ [1, 2, 3] | max }} {{ -3 | abs }} "
    "{{ '42' | int }} {{ 'x' | int }} {{ 3.9 | int }} {{ '2.5' | float }} {{ 7 | string }} {{ 2.567 | round(1) }}",
    "{{ messages | map(attribute='role') | list }} {{ ['a ', ' b'] | map('trim') | list }} {{ [1, 2, 3, 4] | "
    "select('odd') | list }} {{ [1, none, 2] | reject('none') | list }} {{ messages | selectattr('role', 'eq', "
    "'user') | list | length }} {{ messages | rejectattr('content') | list }} {{ [0, 1, ''] | select | list }}",
    "{{ messages[0] | tojson }} {{ messages[:2] | tojson(indent=2) }} {{ {'b': 1, 'a': [true, none, 1.5, 'é\\n\"']} "
    "| tojson(sort_keys=true) }} {{ [1, 2] | tojson(separators=(',', ':')) }} {{ {} | tojson(indent=4) }}",
    "{{ messages | length }} {{ messages[0] | length }} {{ 'héllo' | length }} {{ {'a': 1} | items | list }} "
    "{{ '<a & \"b\">' | e }} {{ ['a', 'b'] | join }} {{ messages | join(', ', attribute='role') }} "
    "{{ 'a b  c' | wordcount }}",
    # tests
    "{{ 'a' is string }} {{ 1 is number }} {{ true is number }} {{ 1 is integer }} {{ true is integer }} "
    "{{ 1.0 is float }} {{ none is none }} {{ false is boolean }} {{ {} is mapping }} {{ [] is iterable }} "
    "{{ 'a' is iterable }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 'a' is lower }} "
    "{{ 'A' is upper }} {{ 1 is eq 1 }} {{ 1 is ne 2 }} {{ 2 is gt 1 }} {{ 'a' is in 'ab' }} {{ none is sameas none }} "
    "{{ messages is sequence }} {{ range is callable }} {{ x is not defined }} {{ 1 is lt 2 }} {{ 1 is ge 2 }}",
    # string and dict methods
    "{{ ' a b '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '  a'.lstrip() }}|{{ 'a\\n'.rstrip() }}|{{ 'a,b,,c'.split(',') }}"
    " {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }}"
    " {{ 'hello world'.title() }} {{ 'ab'.upper() }} {{ 'abcb'.find('b') }} {{ 'abcb'.count('b') }} "
    "{{ 'a-b'.replace('-', '') }}",
    "{{ messages[0].get('role') }} {{ messages[0].get('x', 'd') }} {{ messages[0].get('x') }} {{ messages[0].keys() "
    "| list }} {{ messages[0].values() | list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }}",
]


@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")  # '\\q' in a snippet, on purpose
@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_jinja_semantics_match(ember_chat, index):
    want = _check(ember_chat, SNIPPETS[index], {"bos_token": "<s>"}, CONVERSATIONS["system_multi_turn"], False)
    assert want[0] == "ok", want


# Templates that fail on their data in Jinja too: both refuse.
FAILING_SNIPPETS = [
    "{{ messages[0].nope.deeper }}",
    "{{ undefined_name + 1 }}",
    "{{ undefined_name.attr }}",
    "{{ undefined_name() }}",
    "{{ 1 + 'a' }}",
    "{{ 'a' - 1 }}",
    "{{ 1 // 0 }}",
    "{{ 1.5 % 0 }}",
    "{{ 'a' < 1 }}",
    "{{ none | length }}",
    "{{ messages.append(1) }}",
    "{% for x in none %}{% endfor %}",
    "{% for a, b in [(1, 2, 3)] %}{% endfor %}",
    "{% set s = 'x' %}{% set s.attr = 1 %}",
    "{{ range(1000000) | length }}",
    "{{ 1 in 'abc' }}",
    "{{ 'x'() }}",
    "{{ messages[0] | tojson(indent=undefined_name.x) }}",
    "{{ namespace(_hidden=1) }}",
]


@pytest.mark.parametrize("index", range(len(FAILING_SNIPPETS)))
def test_jinja_failures_match(ember_chat, index):
    want = _check(ember_chat, FAILING_SNIPPETS[index], {"bos_token": "<s>"}, CONVERSATIONS["single"], False)
    assert want[0] == "error", want
