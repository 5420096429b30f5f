"""`ember llm export | chat | serve`: language models (examples/llm/README.md).

export  a Hugging Face checkpoint (or a config.json alone, seeded weights) to a .pte (examples.llm.export)
chat    a conversation on the terminal with llm_runner --chat (or one generation with --prompt)
serve   an OpenAI-compatible HTTP server (llm_server: /v1/completions, /v1/chat/completions)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys

from ember.cli.binaries import find_binary
from ember.cli.errors import require_file
from ember.cli.progress import Progress

SUBCOMMANDS = {
    "export": "export a decoder-only model (Llama, Qwen2, Mistral, Phi-3, Gemma) to a .pte",
    "chat": "chat with a .pte on the terminal (llm_runner --chat), or one --prompt",
    "serve": "serve a .pte over HTTP, OpenAI's API (llm_server)",
}


def _export(argv, prog: str) -> int:
    try:
        from ember.llm_export import export  # the wheel's name for examples/llm's Python side
    except ImportError:
        from examples.llm import export

    if any(a in ("-h", "--help") for a in argv):
        return export.main(argv, prog=prog)
    quiet = "-q" in argv or "--quiet" in argv
    argv = [a for a in argv if a not in ("-q", "--quiet")]
    # The tool prints its summary when done; held back until the progress line is cleared.
    out = io.StringIO()
    with Progress(f"{prog}", quiet=quiet) as progress, contextlib.redirect_stdout(out):
        progress.stage("loading, quantizing, exporting")
        code = export.main(argv, prog=prog)
    sys.stdout.write(out.getvalue())
    return code


def _native(argv, prog: str, binary: str, description: str, chat: bool) -> int:
    ap = argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog="Any other flag goes to the binary as it is (examples/llm/README.md lists them: --threads, "
        "--temperature, --seed, --chat-template, ...). Exit codes: 0 success, 1 a missing file or failed build, "
        "2 usage, and the binary's own (3 program or tokenizer refused, 4 prompt refused).",
    )
    ap.add_argument("--model", required=True, help="the .pte (ember llm export)")
    ap.add_argument(
        "--tokenizer", help="tokenizer.json or SentencePiece tokenizer.model (required but with --prompt-ids)"
    )
    ap.add_argument("--binary", metavar="PATH", help=f"this {binary} instead of the built/packaged one")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress display while building")
    if chat:
        ap.add_argument("--prompt", help="generate once from this text instead of chatting")
        ap.add_argument("--prompt-ids", metavar="'ID ID ...'", help="generate once from these token ids (prints ids)")
        ap.add_argument("--max-new-tokens", type=int, default=None, help="tokens per reply")
    else:
        ap.add_argument("--port", type=int, default=None, help="TCP port (0: any free one; the first line says which)")
    args, extra = ap.parse_known_args(argv)
    if args.tokenizer is None and not (chat and args.prompt_ids is not None):
        ap.error("--tokenizer is required (but for --prompt-ids)")
    require_file(args.model, "program")
    if args.tokenizer is not None:
        require_file(args.tokenizer, "tokenizer")
    path = args.binary or find_binary(binary, quiet=args.quiet)
    cmd = [path, "--model", args.model, *(["--tokenizer", args.tokenizer] if args.tokenizer else [])]
    if chat:
        if args.prompt is not None:
            cmd += ["--prompt", args.prompt]
        elif args.prompt_ids is not None:
            cmd += ["--prompt-ids", args.prompt_ids]
        else:
            cmd.append("--chat")
        if args.max_new_tokens is not None:
            cmd += ["--max-new-tokens", str(args.max_new_tokens)]
    elif args.port is not None:
        cmd += ["--port", str(args.port)]
    sys.stdout.flush()
    sys.stderr.flush()
    # Replaced, not wrapped: signals (Ctrl-C, a service manager's SIGTERM) and the exit code are the binary's own.
    os.execv(path, cmd + extra)


def main(argv, prog: str) -> int:
    rows = "\n".join(f"  {n:<7} {s}" for n, s in SUBCOMMANDS.items())
    text = f"usage: {prog} {{{','.join(SUBCOMMANDS)}}} ...\n\n{__doc__.splitlines()[0]}\n\n{rows}\n"
    if argv and argv[0] in ("-h", "--help"):
        sys.stdout.write(text)
        return 0
    if not argv or argv[0] not in SUBCOMMANDS:
        sys.stderr.write((f"{prog}: unknown subcommand '{argv[0]}'\n" if argv else "") + text)
        return 2
    sub, rest = argv[0], argv[1:]
    prog = f"{prog} {sub}"
    if sub == "export":
        return _export(rest, prog)
    if sub == "chat":
        return _native(rest, prog, "llm_runner", SUBCOMMANDS["chat"], chat=True)
    return _native(rest, prog, "llm_server", SUBCOMMANDS["serve"], chat=False)
