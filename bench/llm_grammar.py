"""Constrained decoding's mask cost on SmolLM-135M's vocabulary size (49,152 tokens).

    .venv/bin/python3 -m bench.llm_grammar [--model SMOLLM_8DA4W.pte] [--rounds 3]

Trains (once, cached under bench/.work/llm-grammar) a 49,152-token byte-level BPE on Python's standard library
sources and seeded JSON (tests/llm/grammar_support.py), then:
- grammar_tool --bench per schema / grammar: mask time per token over 20 random walks of up to 100 allowed tokens,
  the first walk with cold caches (what one generation by llm_runner pays), the later ones warm (a server reusing
  the compiled grammar);
- with --model (a decoder of SmolLM-135M's shape, e.g. `python -m examples.llm.export --model <SmolLM config>
  --quantize 8da4w --group-size 32`), llm_runner side by side, interleaved per round: the same prompt and seed
  unconstrained and with each schema; the runner's own statistics give decode time per token and mask time per
  mask, so the share is measured in one process under the same load.
Writes bench/results/<date>-grammar-bench.md (or --out)."""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys

from tests.llm import grammar_support as gs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MASK = re.compile(r"(first sequence|later sequences) \((?:cold|warm) caches\): (\d+) masks, ([\d.]+) us per mask")
DECODE = re.compile(r"decode: (\d+) tokens in ([\d.]+) ms")
GMASK = re.compile(r"grammar: (\d+) masks, ([\d.]+) us per mask")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--model", help="SmolLM-135M-shaped decoder .pte (vocabulary 49,152, EOS 0) for the side-by-side run"
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default=os.path.join(ROOT, "bench", ".work", "llm-grammar"))
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    os.makedirs(a.work, exist_ok=True)
    tok = os.path.join(a.work, "tokenizer-49152.json")
    if not os.path.exists(tok):
        gs.train_tokenizer(tok, 49152, 40_000_000)
    subprocess.run(
        ["bazel", "build", "//examples/llm:llm_runner", "//examples/llm/grammar:grammar_tool"], check=True, cwd=ROOT
    )
    tool = os.path.join(ROOT, "bazel-bin", "examples", "llm", "grammar", "grammar_tool")
    runner = os.path.join(ROOT, "bazel-bin", "examples", "llm", "llm_runner")
    cases = {}
    for name, schema in {**gs.BOUNDED_SCHEMAS, **gs.OPEN_SCHEMAS}.items():
        path = os.path.join(a.work, f"{name}.json")
        with open(path, "w") as f:
            json.dump(schema, f)
        cases[name] = ("--json-schema", path)
    for name, text in gs.GBNF_GRAMMARS.items():
        path = os.path.join(a.work, f"{name}.gbnf")
        with open(path, "w") as f:
            f.write(text)
        cases[name] = ("--grammar", path)
    load = os.getloadavg()
    lines = [
        "# Constrained decoding: mask cost per token, 49,152-token vocabulary",
        "",
        f"`python -m bench.llm_grammar{' --model ' + a.model if a.model else ''}`, {datetime.date.today()}; "
        f"load average at start {load[0]:.1f} (a shared 2-core machine: measured under load).",
        "",
        "Random walks (grammar_tool --bench, 20 sequences x up to 100 uniformly random allowed tokens):",
        "",
        "| grammar | cold: masks | cold: us/mask | warm: masks | warm: us/mask |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, (flag, path) in cases.items():
        out = subprocess.run(
            [tool, "--tokenizer", tok, flag, path, "--sequences", "20", "--max-steps", "100", "--bench"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        m = {k: (int(n), float(us)) for k, n, us in MASK.findall(out)}
        cold, warm = m["first sequence"], m["later sequences"]
        lines.append(f"| {name} | {cold[0]} | {cold[1]:.1f} | {warm[0]} | {warm[1]:.1f} |")
        print(lines[-1], file=sys.stderr)
    if a.model:
        lines += [
            "",
            f"llm_runner side by side ({a.model}; prompt 'Data: ', 128 new tokens at most, temperature 1, seed = "
            "round; one generation per run, so caches are cold), mean over rounds:",
            "",
            "| run | decode ms/token (mask included) | mask us/token | mask / unconstrained decode time |",
            "|---|---:|---:|---:|",
        ]
        stats = {}
        for r in range(a.rounds):
            for name in ["(none)"] + list(cases):
                cmd = [runner, "--model", a.model, "--tokenizer", tok, "--prompt", "Data: ", "--max-new-tokens", "128"]
                cmd += ["--temperature", "1", "--seed", str(r)]
                if name != "(none)":
                    cmd += list(cases[name])
                else:
                    cmd += ["--ignore-eos"]
                err = subprocess.run(cmd, capture_output=True, check=True).stderr.decode()
                n, ms = DECODE.search(err).groups()
                g = GMASK.search(err)
                if int(n) == 0:
                    continue
                stats.setdefault(name, []).append((float(ms) / int(n), float(g.group(2)) if g else 0.0))
        base = sum(x[0] for x in stats["(none)"]) / len(stats["(none)"])
        for name, rows in stats.items():
            dec = sum(x[0] for x in rows) / len(rows)
            mask = sum(x[1] for x in rows) / len(rows)
            lines.append(f"| {name} | {dec:.2f} | {mask:.1f} | {100 * mask / 1000 / base:.1f}% |")
            print(lines[-1], file=sys.stderr)
    lines.append("")
    out = a.out or os.path.join(ROOT, "bench", "results", f"{datetime.date.today()}-grammar-bench.md")
    with open(out, "w") as f:
        f.write("\n".join(lines))
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
