"""llm_runner --chat (examples/llm/runner/chat_loop.h) and --data: a conversation over one session generates what a
fresh run of the whole conversation rendered as one prompt generates (only each turn's new tokens are prefilled);
/save and /load continue it in another process identically; /reset starts over; errors are named and the chat
goes on. A decoder exported with external constants runs from its .ptd with --data."""

import json
import os
import re
import subprocess

from tests.conftest import ROOT, bazel_build
from tests.llm.test_llm_runner import BOS, llm_runner, model, run, runner_ids, tokenizer_file  # noqa: F401 (fixtures)

NEW = "6"  # tokens per reply


def chat(runner, pte, tok_path, lines, *extra, check=True):
    stdin = "".join(line + "\n" for line in lines).encode()
    args = [runner, "--model", pte, "--tokenizer", tok_path, "--chat", "--max-new-tokens", NEW, *extra]
    r = subprocess.run(args, input=stdin, capture_output=True, timeout=300)
    if check:
        assert r.returncode == 0, f"llm_runner --chat exited {r.returncode}:\n{r.stderr.decode()}"
    return r


def saved_messages(path):
    # Replies are the model's bytes, not necessarily UTF-8: kept as surrogate escapes, as the prompts pass them.
    with open(str(path) + ".messages.json", "rb") as f:
        messages = json.load(f)["messages"]
    # Replies that are not UTF-8 are kept as their bytes in hex.
    for m in messages:
        if "content_hex" in m:
            m["content"] = bytes.fromhex(m.pop("content_hex")).decode("utf-8", "surrogateescape")
    return messages


def plain_prompt(messages):
    """ChatTemplate::plain()'s text (kPlainChatTemplate) with the generation prompt."""
    return "".join(f"{m['role'].capitalize()}: {m['content'].strip()}\n\n" for m in messages) + "Assistant:"


def test_second_turn_equals_fresh_prompt(llm_runner, model, tokenizer_file, tmp_path):  # noqa: F811
    pte, tok = model[1], tokenizer_file[1]
    state = tmp_path / "chat.session"
    r = chat(llm_runner, pte, tok, ["hello world", "edge runtime token", f"/save {state}"])
    messages = saved_messages(state)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    replies = [messages[1]["content"], messages[3]["content"]]
    assert r.stdout == "".join(x + "\n" for x in replies).encode("utf-8", "surrogateescape")
    # The second turn prefilled only what the first had not: its turn line says how many tokens it kept.
    kept = [int(k) for k in re.findall(rb"appended, (\d+) kept", r.stderr)]
    assert len(kept) == 2 and kept[0] == 0 and kept[1] > 0
    for turn, reply in ((0, replies[0]), (2, replies[1])):
        prompt = plain_prompt(messages[: turn + 1]).encode("utf-8", "surrogateescape")
        fresh = subprocess.run(
            [llm_runner, "--model", pte, "--tokenizer", tok, "--prompt", prompt, "--max-new-tokens", NEW],
            capture_output=True,
            timeout=300,
        )
        assert fresh.returncode == 0, fresh.stderr.decode()
        # The runner ends its output with a newline, as --chat ends each reply.
        assert fresh.stdout == reply.encode("utf-8", "surrogateescape") + b"\n"
    assert len(replies[1]) > 0


def test_save_then_load_continues_identically(llm_runner, model, tokenizer_file, tmp_path):  # noqa: F811
    pte, tok = model[1], tokenizer_file[1]
    state = tmp_path / "s.session"
    whole = chat(llm_runner, pte, tok, ["memory kernel", f"/save {state}", "planned tensor"])
    first = saved_messages(state)[1]["content"].encode("utf-8", "surrogateescape")
    resumed = chat(llm_runner, pte, tok, [f"/load {state}", "planned tensor"])
    assert b"loaded" in resumed.stderr
    assert len(resumed.stdout) > 1 and whole.stdout == first + b"\n" + resumed.stdout
    # The restored session held the first turn: the second prefilled only its new tokens.
    assert int(re.search(rb"appended, (\d+) kept", resumed.stderr).group(1)) > 0


def test_reset_starts_over(llm_runner, model, tokenizer_file):  # noqa: F811
    pte, tok = model[1], tokenizer_file[1]
    once = chat(llm_runner, pte, tok, ["hello world"])
    again = chat(llm_runner, pte, tok, ["hello world", "/reset", "hello world", "/quit", "never read"])
    assert again.stdout == once.stdout * 2
    assert again.stderr.count(b"turn ") == 2


def test_system_message_and_template(llm_runner, model, tokenizer_file, tmp_path):  # noqa: F811
    pte, tok = model[1], tokenizer_file[1]
    config = tmp_path / "tokenizer_config.json"
    template = "{% for m in messages %}<s>{{ m['role'] }}|{{ m['content'] }}</s>{% endfor %}"
    config.write_text(json.dumps({"chat_template": template + "{% if add_generation_prompt %}assistant|{% endif %}"}))
    state = tmp_path / "t.session"
    r = chat(
        llm_runner, pte, tok, ["edge model", f"/save {state}"], "--chat-template", str(config), "--system", "Be short."
    )
    messages = saved_messages(state)
    assert [m["role"] for m in messages] == ["system", "user", "assistant"]
    prompt = "".join(f"<s>{m['role']}|{m['content']}</s>" for m in messages[:2]) + "assistant|"
    # The template writes its own <s>: the prompt goes as rendered, without another BOS.
    fresh = run(llm_runner, "--model", pte, "--tokenizer", tok, "--prompt", prompt, "--no-bos", "--max-new-tokens", NEW)
    assert r.stdout == fresh.stdout


def test_errors_are_named_and_the_chat_goes_on(llm_runner, model, tokenizer_file, tmp_path):  # noqa: F811
    pte, tok = model[1], tokenizer_file[1]
    long_turn = " ".join(["hello world edge runtime"] * 6)
    lines = [f"/load {tmp_path / 'missing'}", "/save", long_turn, long_turn, long_turn, "/reset", "hello world"]
    r = chat(llm_runner, pte, tok, lines)
    err = r.stderr.decode()
    assert "/load" in err and "refused" in err and "missing" in err
    assert "/save needs a file name" in err
    assert "context full (OutOfResources)" in err and "--context-slide" in err
    once = chat(llm_runner, pte, tok, ["hello world"])
    assert r.stdout.endswith(once.stdout)
    # With the sliding window the same turns all get replies.
    slid = chat(llm_runner, pte, tok, ["edge runtime token model"] * 5, "--context-slide")
    assert slid.stderr.count(b"turn ") == 5 and b"slid" in slid.stderr
    # Bad usage: --chat reads its prompts from stdin.
    bad = chat(llm_runner, pte, tok, [], "--prompt", "x", check=False)
    assert bad.returncode == 2 and b"--chat reads the prompts from stdin" in bad.stderr
    bad_template = tmp_path / "bad_config.json"
    bad_template.write_text(json.dumps({"chat_template": "{% for %}"}))
    bad = chat(llm_runner, pte, tok, ["x"], "--chat-template", str(bad_template), check=False)
    assert bad.returncode == 3 and b"chat template" in bad.stderr


def test_external_weights_with_data(llm_runner, model, tmp_path):  # noqa: F811
    import exir
    from examples.llm.export import export_decoder
    from examples.llm.model import Decoder

    hf = model[0]
    # A caller's config: export_decoder keeps the KV cache in its own pool whatever the config says.
    export_decoder(Decoder.from_hf(hf, 64), exir.ExecutorchBackendConfig(external_constants=True)).save(
        str(tmp_path / "decoder.pte")
    )
    ptd = str(tmp_path / "_default_external_constant.ptd")
    assert os.path.getsize(ptd) > os.path.getsize(tmp_path / "decoder.pte")
    prompt = " ".join(map(str, [BOS, 5, 7, 9, 11]))
    want = runner_ids(run(llm_runner, "--model", model[1], "--prompt-ids", prompt, "--max-new-tokens", "12"))
    got = run(
        llm_runner,
        "--model",
        str(tmp_path / "decoder.pte"),
        "--data",
        ptd,
        "--prompt-ids",
        prompt,
        "--max-new-tokens",
        "12",
    )
    assert runner_ids(got) == want and len(want) == 12
    # The Python sessions path takes the same files.
    bazel_build("//examples/llm:_ember_llm.so")
    from ember import llm

    assert llm.__file__.startswith(ROOT)
    program = llm.load(str(tmp_path / "decoder.pte"), data_files=[ptd])
    session = program.new_session()
    logits = session.append([BOS, 5, 7, 9, 11])
    assert int(logits.argmax()) == want[0]
    missing = run(llm_runner, "--model", str(tmp_path / "decoder.pte"), "--prompt-ids", prompt, check=False)
    assert missing.returncode == 3 and b"external data file" in missing.stderr
    bad = run(
        llm_runner,
        "--model",
        str(tmp_path / "decoder.pte"),
        "--data",
        str(tmp_path / "decoder.pte"),
        "--prompt-ids",
        prompt,
        check=False,
    )
    assert bad.returncode == 3 and b"not a loadable data file" in bad.stderr
