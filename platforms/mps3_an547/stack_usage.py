"""Stack use of the Cortex-M55 firmware, two ways, against the stack region of mps3_an547.ld:

  static   the firmware built with GCC's -fstack-usage and -fcallgraph-info=su (every function's frame and its
           direct calls), newlib's functions (no such files) read from the linked ELF's prologues, and the worst
           path from reset_handler, plus the deepest interrupt handler and its exception frame on top;
  dynamic  the firmware run under qemu-system-arm: startup.cc paints the stack at reset and prints the high-water
           mark when main returns.

    python -m platforms.mps3_an547.stack_usage                 # every zoo firmware (examples/firmware)
    python -m platforms.mps3_an547.stack_usage --models mlp,small_cnn --markdown

The static build uses its own output directory (--platform_suffix) and runs its compile actions outside the
sandbox and the disk cache, so the .su/.ci files land next to the objects; it rebuilds the firmware once (a few
minutes on two cores). Where the bound is not computable (recursion, a variable-sized frame) the report says so.
Indirect calls (the method's kernel calls, the data loader's virtual functions) are bounded by the deepest
function whose address is taken (every linked function no one calls directly), assuming they nest at most two
deep (a kernel call; a loader's free callback) and never recurse: an upper bound, not a tight one.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from typing import Dict, Iterable, List, Optional, Set, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIRMWARE_MODELS = [
    "add",
    "softmax",
    "linear",
    "mlp",
    "small_cnn",
    "mobilenet_v2_035_96",
    "mlp_int8",
    "small_cnn_int8",
    "mobilenet_v2_005_96_int8",
    "ds_cnn_kws_int8",
    "resnet8_cifar10_int8",
    "mobilenet_v1_025_vww_int8",
    "autoencoder_ad_int8",
]
# GCC writes the .su/.ci files beside each object, which Bazel does not declare: --sandbox_debug keeps each
# action's sandbox so they can be collected, and no disk cache hit may skip an action that would write them.
STACK_FLAGS = [
    "--config=cortex_m55",
    "--copt=-fstack-usage",
    "--copt=-fcallgraph-info=su",
    "--platform_suffix=cortex_m55_stack",
    "--sandbox_debug",
    "--disk_cache=",
]
# Armv8-M with the FPU on: an exception pushes r0-r3, r12, lr, pc, xpsr and s0-s15, fpscr (plus a reserved word).
EXCEPTION_FRAME_BYTES = 26 * 4
HANDLERS = ("systick_handler", "fault_handler", "ember_fault_report")
ROOTS = ("reset_handler",)
INDIRECT = "__indirect_call"
# Method::execute calls a kernel through a pointer; a loader's virtual load frees through a callback: two levels.
INDIRECT_NESTING = 2


@dataclasses.dataclass
class Function:
    name: str
    frame: int = 0
    known: bool = False  # frame from -fstack-usage or a parsed prologue
    dynamic: bool = False  # a variable-sized frame (alloca, VLA): no static bound
    source: str = ""  # "su" or "elf"
    calls: Set[str] = dataclasses.field(default_factory=set)


_NODE = re.compile(r'node: \{ title: "([^"]+)" label: "((?:[^"\\]|\\.)*)"')
_EDGE = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')
_BYTES = re.compile(r"(\d+) bytes \(([a-z,]+)\)")


def _plain(title: str) -> str:
    """A local function's title is 'file:symbol'; the ELF and other units know it as 'symbol'."""
    return title.split(":", 1)[1] if ":" in title and not title.startswith("_Z") and "::" not in title else title


def parse_callgraph(texts: Iterable[str]) -> Dict[str, Function]:
    """-fcallgraph-info=su files (VCG) -> functions by title, with their frames (the largest of duplicate inline
    definitions) and direct calls. resolve() then links calls across units."""
    funcs: Dict[str, Function] = {}
    for text in texts:
        for title, label in _NODE.findall(text):
            f = funcs.setdefault(title, Function(title))
            m = _BYTES.search(label)
            if m:
                f.known = True
                f.source = "su"
                f.frame = max(f.frame, int(m.group(1)))
                f.dynamic = f.dynamic or "dynamic" in m.group(2) and "bounded" not in m.group(2)
        for src, dst in _EDGE.findall(text):
            funcs.setdefault(src, Function(src)).calls.add(dst)
            funcs.setdefault(dst, Function(dst))
    return funcs


def merge_elf(funcs: Dict[str, Function], elf: Dict[str, Function]) -> None:
    """Frames and calls from the linked ELF (parse_disassembly) for what no -fstack-usage file describes: library
    code, and compiler-made clones (.part, .isra) the call graph names but gives no frame."""
    plains = set()
    for title, f in funcs.items():
        plains.add(_plain(title))
        e = elf.get(_plain(title))
        if not f.known and e is not None:
            f.frame, f.known, f.source, f.calls = e.frame, True, "elf", set(e.calls)
    for name, e in elf.items():
        if name not in plains:
            funcs[name] = e


def resolve(funcs: Dict[str, Function]) -> None:
    """A call names a symbol; a unit's own (local) definition has a 'file:symbol' title. Calls to a title with no
    frame go to the definitions of the same symbol that have one."""
    by_plain: Dict[str, List[str]] = defaultdict(list)
    for title, f in funcs.items():
        if f.known:
            by_plain[_plain(title)].append(title)
    for f in list(funcs.values()):
        resolved = set()
        for c in f.calls:
            if c != INDIRECT and not funcs.get(c, Function(c)).known and by_plain.get(_plain(c)):
                resolved.update(by_plain[_plain(c)])
            else:
                resolved.add(c)
        f.calls = resolved


_PUSH = re.compile(r"\b(?:push|stmdb)(?:\.w)?\s+(?:sp!,\s*)?\{([^}]*)\}")
_VPUSH = re.compile(r"\bvpush\s+\{([^}]*)\}")
_SUB_SP = re.compile(r"\bsub(?:\.w|w)?\s+sp,\s*(?:sp,\s*)?#(\d+)")
_CALL = re.compile(r"\b(?:bl|blx|b\.w|b)\s+[0-9a-f]+ <([^>+]+)>")


def _register_count(text: str) -> int:
    n = 0
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-")
            n += int(b[1:]) - int(a[1:]) + 1
        elif part:
            n += 1
    return n


def parse_disassembly(text: str) -> Dict[str, Function]:
    """objdump -d of the ELF -> frames from each function's prologue (push, vpush, sub sp) and its direct calls
    and tail calls: for the library code no -fstack-usage file covers."""
    funcs: Dict[str, Function] = {}
    current: Optional[Function] = None
    seen = 0
    for line in text.splitlines():
        head = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if head:
            current = funcs.setdefault(head.group(1), Function(head.group(1), known=True, source="elf"))
            seen = 0
            continue
        if current is None or "\t" not in line:
            continue
        seen += 1
        if seen <= 12:  # the prologue
            m = _PUSH.search(line)
            if m:
                current.frame += 4 * _register_count(m.group(1))
            m = _VPUSH.search(line)
            if m:
                regs = _register_count(m.group(1))
                current.frame += regs * (8 if "d" in m.group(1) else 4)
            m = _SUB_SP.search(line)
            if m:
                current.frame += int(m.group(1))
        m = _CALL.search(line)
        if m and m.group(1) != current.name:
            current.calls.add(m.group(1))
    return funcs


@dataclasses.dataclass
class Bound:
    bytes: int
    path: List[Tuple[str, int]]  # (function, frame) from the root down
    computable: bool
    notes: List[str]


def worst_case(funcs: Dict[str, Function], root: str, linked: Optional[Set[str]] = None) -> Bound:
    """The deepest path from `root`: frames summed, indirect calls bounded by the deepest address-taken function
    (one that no one calls directly, among those `linked` into the binary when given), recursion and dynamic
    frames noted as making the bound not computable."""
    called = {c for f in funcs.values() for c in f.calls}
    excluded = set(ROOTS) | set(HANDLERS) | {"main", INDIRECT}
    candidates = sorted(
        n
        for n, f in funcs.items()
        if n not in called and n not in excluded and f.known and (linked is None or _plain(n) in linked)
    )
    notes: List[str] = []
    unknown: Set[str] = set()
    computable = True

    def solve(indirect: Tuple[int, List[Tuple[str, int]]]):
        """Depths with every indirect call costing `indirect` (what an address-taken function needs at most)."""
        memo: Dict[str, Tuple[int, List[Tuple[str, int]]]] = {}
        active: List[str] = []
        found: List[str] = []

        def depth(name: str) -> Tuple[int, List[Tuple[str, int]]]:
            if name == INDIRECT:
                return indirect[0], [("(indirect call) " + (indirect[1][0][0] if indirect[1] else ""), 0)] + indirect[1]
            if name in memo:
                return memo[name]
            if name in active:
                found.append("recursion: " + " -> ".join(active[active.index(name) :] + [name]))
                return 0, []
            f = funcs.get(name)
            if f is None or not f.known:
                unknown.add(name)
                return 0, [(name + " (no frame information)", 0)]
            if f.dynamic:
                found.append(f"variable-sized frame: {name}")
            active.append(name)
            best = max((depth(c) for c in sorted(f.calls)), default=(0, []), key=lambda d: d[0])
            active.pop()
            memo[name] = (f.frame + best[0], [(name, f.frame)] + best[1])
            return memo[name]

        return depth, found

    # An address-taken function may itself call through a pointer (a data loader's virtual load frees through a
    # callback). Assumed: such calls nest at most INDIRECT_NESTING deep and never recurse, so the bound is the
    # candidates' depth with the previous level's bound for their own indirect calls.
    indirect: Tuple[int, List[Tuple[str, int]]] = (0, [])
    for _ in range(INDIRECT_NESTING):
        depth, _ = solve(indirect)
        indirect = max((depth(c) for c in candidates), default=(0, []), key=lambda d: d[0])
    depth, found = solve(indirect)
    total, path = depth(root)
    for note in found:
        computable = computable and not (note.startswith("recursion") or note.startswith("variable"))
        if note not in notes:
            notes.append(note)
    if unknown:
        notes.append(
            "no frame information (counted as 0): "
            + ", ".join(sorted(unknown)[:8])
            + (" ..." if len(unknown) > 8 else "")
        )
    return Bound(total, path, computable, notes)


def firmware_bound(funcs: Dict[str, Function], linked: Optional[Set[str]] = None) -> Bound:
    main = worst_case(funcs, "reset_handler", linked)
    handlers = [worst_case(funcs, h, linked) for h in HANDLERS if h in funcs]
    deepest = max(handlers, key=lambda b: b.bytes) if handlers else Bound(0, [], True, [])
    return Bound(
        main.bytes + EXCEPTION_FRAME_BYTES + deepest.bytes,
        main.path + [("exception frame", EXCEPTION_FRAME_BYTES)] + deepest.path,
        main.computable and deepest.computable,
        main.notes + deepest.notes,
    )


# --- building and running ---------------------------------------------------------------------------------------


def bazel(*args, capture=True) -> str:
    r = subprocess.run(["bazel", *args], cwd=ROOT, capture_output=capture, text=True)
    if r.returncode != 0:
        raise SystemExit(f"stack_usage: bazel {' '.join(args)} failed:\n{(r.stderr or '')[-3000:]}")
    return r.stdout.strip() if capture else ""


def collect_callgraphs(output_base: str, bin_dir: str) -> str:
    """Moves the .ci/.su files the last build left in its kept sandboxes to `bin_dir`/.stack_usage (the tree
    under bin mirrored), removing those sandboxes; files of actions that did not run again are kept from before.
    Returns that directory."""
    into = os.path.join(bin_dir, ".stack_usage")
    sandboxes = os.path.join(output_base, "sandbox", "processwrapper-sandbox")
    for box in glob.glob(os.path.join(sandboxes, "*")):
        trees = glob.glob(os.path.join(box, "execroot", "*", "bazel-out", "*cortex_m55_stack", "bin"))
        for tree in trees:
            for path in glob.glob(os.path.join(tree, "**", "*.ci"), recursive=True) + glob.glob(
                os.path.join(tree, "**", "*.su"), recursive=True
            ):
                dest = os.path.join(into, os.path.relpath(path, tree))
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                shutil.copyfile(path, dest)
        if trees:
            shutil.rmtree(box, ignore_errors=True)
    return into


def static_bounds(models: List[str]) -> Dict[str, Bound]:
    bazel("build", *STACK_FLAGS, "//examples/firmware:firmware")
    bin_dir = bazel("info", *STACK_FLAGS, "bazel-bin")
    graphs = collect_callgraphs(bazel("info", "output_base"), bin_dir)
    common = [
        p
        for p in glob.glob(os.path.join(graphs, "**", "*.ci"), recursive=True)
        if not p.startswith(os.path.join(graphs, "examples", "firmware") + os.sep)
    ]
    if not common:
        raise SystemExit(
            f"stack_usage: no -fcallgraph-info files under {graphs}: delete it and {bin_dir} to build again"
        )
    out = {}
    for model in models:
        objs = os.path.join(graphs, "examples", "firmware", "_objs")
        own = [
            p
            for d in glob.glob(os.path.join(objs, "*"))
            if os.path.basename(d) == model or os.path.basename(d).startswith(model + "_kernels")
            for p in glob.glob(os.path.join(d, "**", "*.ci"), recursive=True)
        ]
        texts = []
        for p in common + own:
            with open(p) as f:
                texts.append(f.read())
        funcs = parse_callgraph(texts)
        elf = os.path.join(bin_dir, "examples", "firmware", model)
        dis = subprocess.run(
            ["arm-none-eabi-objdump", "-d", "--no-show-raw-insn", elf], capture_output=True, text=True, check=True
        ).stdout
        from_elf = parse_disassembly(dis)
        merge_elf(funcs, from_elf)
        resolve(funcs)
        out[model] = firmware_bound(funcs, linked=set(from_elf))
    return out


def high_water(models: List[str]) -> Dict[str, Tuple[int, int]]:
    """(bytes used, region) per model, from one run of each firmware under QEMU."""
    bazel("build", "--config=cortex_m55", "//examples/firmware:firmware")
    bin_dir = bazel("info", "--config=cortex_m55", "bazel-bin")
    qemu = shutil.which("qemu-system-arm") or "qemu-system-arm"
    out = {}
    for model in models:
        elf = os.path.join(bin_dir, "examples", "firmware", model)
        r = subprocess.run(
            [
                qemu,
                "-M",
                "mps3-an547",
                "-nographic",
                "-icount",
                "shift=0",
                "-semihosting-config",
                "enable=on,target=native,arg=runner",
                "-kernel",
                elf,
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        m = re.search(r"stack: (\d+) bytes used of (\d+)", r.stdout)
        if r.returncode != 0 or m is None:
            raise SystemExit(f"stack_usage: {model} did not run cleanly (exit {r.returncode}):\n{r.stdout[-2000:]}")
        out[model] = (int(m.group(1)), int(m.group(2)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m platforms.mps3_an547.stack_usage",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--models", default=",".join(FIRMWARE_MODELS), help="comma-separated firmware names")
    ap.add_argument("--markdown", action="store_true", help="print the README's table")
    ap.add_argument("--path", action="store_true", help="print each static worst-case path")
    args = ap.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    unknown = sorted(set(models) - set(FIRMWARE_MODELS))
    if unknown:
        ap.error(f"unknown firmware {unknown}; choose from {FIRMWARE_MODELS}")
    dynamic = high_water(models)
    static = static_bounds(models)
    failed = False
    if args.markdown:
        print("| firmware | high-water (run) | static worst case | stack region |")
        print("|---|---:|---:|---:|")
    for m in models:
        used, region = dynamic[m]
        s = static[m]
        bound = f"{s.bytes:,}" + ("" if s.computable else " (not a bound: " + "; ".join(s.notes[:1]) + ")")
        fits = used < region and s.bytes < region
        failed |= not fits
        if args.markdown:
            print(f"| {m} | {used:,} | {bound} | {region:,} |")
        else:
            print(
                f"{m}: high-water {used} bytes, static worst case {bound} bytes, region {region} bytes"
                f"{'' if fits else '  <-- DOES NOT FIT'}"
            )
        if args.path:
            for name, frame in s.path:
                print(f"    {frame:6d}  {name}")
            for note in s.notes:
                print(f"    note: {note}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
