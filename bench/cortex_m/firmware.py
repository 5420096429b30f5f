"""What the Cortex-M55 benchmarks share (report.py: layers, models.py: whole models): the two kernel variants,
building firmware and finding it, running it under QEMU counting instructions, and writing a result pair."""

import json
import os
import subprocess
from typing import List

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Ember's Helium kernels (the M55 default) and the scalar kernels they stand in front of.
VARIANTS = {"helium": [], "scalar": ["--//kernels:helium=false"]}


def build(flags: List[str], targets: List[str]) -> str:
    """Builds `targets` with `flags`; returns that configuration's bazel-bin (a later build may move it)."""
    subprocess.run(["bazel", "build"] + flags + targets, cwd=ROOT, check=True, capture_output=True, text=True)
    return subprocess.run(
        ["bazel", "info"] + flags + ["bazel-bin"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def run_qemu(elf: str, args: List[str], cwd: str, timeout_s: int) -> str:
    """The firmware's output on mps3-an547 with one instruction per virtual nanosecond; raises if it fails."""
    semi = ",".join(["enable=on", "target=native", "arg=runner"] + [f"arg={a}" for a in args])
    proc = subprocess.run(
        [
            "qemu-system-arm",
            "-M",
            "mps3-an547",
            "-nographic",
            "-icount",
            "shift=0",
            "-semihosting-config",
            semi,
            "-kernel",
            elf,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{elf} exited {proc.returncode}:\n{proc.stdout[-3000:]}")
    return proc.stdout


def commit() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()


def write_results(out_dir: str, name: str, markdown: str, data: dict) -> None:
    """`name`.md and `name`.json in `out_dir`, and the table on stdout."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, name + ".md"), "w") as f:
        f.write(markdown)
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(data, f, indent=1)
    print(markdown, end="")
