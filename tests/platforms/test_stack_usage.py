"""The static half of platforms/mps3_an547/stack_usage.py on small inputs of the formats it reads (GCC's
-fcallgraph-info=su files, objdump's disassembly): frames summed along the deepest path, calls resolved across
units, indirect calls bounded by the address-taken functions, recursion and variable frames reported as making
the bound not computable. (The dynamic half, the painted stack's high-water mark, is asserted on every zoo
firmware in test_cortex_m55.py.)"""

from platforms.mps3_an547.stack_usage import (
    EXCEPTION_FRAME_BYTES,
    firmware_bound,
    merge_elf,
    parse_callgraph,
    parse_disassembly,
    resolve,
    worst_case,
)

UNIT_A = """graph: { title: "a.cc"
node: { title: "reset_handler" label: "reset_handler\\na.cc:1:1\\n16 bytes (static)" }
node: { title: "main" label: "main\\na.cc:2:1\\n100 bytes (static)" }
edge: { sourcename: "reset_handler" targetname: "main" label: "a.cc:1:9" }
node: { title: "_Z7executev" label: "execute()\\na.cc:3:1\\n40 bytes (static)" shape : ellipse }
edge: { sourcename: "main" targetname: "_Z7executev" label: "a.cc:2:9" }
node: { title: "memcpy" label: "memcpy" shape : ellipse }
edge: { sourcename: "main" targetname: "memcpy" label: "a.cc:2:19" }
node: { title: "systick_handler" label: "systick_handler\\na.cc:9:1\\n8 bytes (static)" }
}
"""
UNIT_B = """graph: { title: "b.cc"
node: { title: "_Z7executev" label: "execute()\\nb.cc:1:1\\n40 bytes (static)" }
node: { title: "__indirect_call" label: "Indirect Call Placeholder" shape : ellipse }
edge: { sourcename: "_Z7executev" targetname: "__indirect_call" label: "b.cc:1:20" }
node: { title: "b.cc:_ZN12_GLOBAL__N_17kernel1Ev" label: "kernel1\\nb.cc:5:1\\n300 bytes (static)" }
node: { title: "b.cc:_ZN12_GLOBAL__N_17kernel2Ev" label: "kernel2\\nb.cc:6:1\\n64 bytes (static)" }
node: { title: "_Z6helperv" label: "helper()\\nb.cc:7:1\\n24 bytes (dynamic,bounded)" }
edge: { sourcename: "b.cc:_ZN12_GLOBAL__N_17kernel2Ev" targetname: "_Z6helperv" label: "b.cc:6:9" }
}
"""

DISASSEMBLY = """
10001000 <memcpy>:
10001000:\tpush\t{r4, r5, r6, lr}
10001002:\tvpush\t{d8-d9}
10001006:\tsub\tsp, #24
10001008:\tbl\t10002000 <__aeabi_helper>
1000100c:\tbne.n\t10001000 <memcpy>
10001010:\tpop\t{r4, r5, r6, pc}

10002000 <__aeabi_helper>:
10002000:\tstr.w\tr4, [sp, #-4]!
10002004:\tbx\tlr
"""


def test_prologues_from_disassembly():
    funcs = parse_disassembly(DISASSEMBLY)
    assert funcs["memcpy"].frame == 16 + 16 + 24
    assert funcs["memcpy"].calls == {"__aeabi_helper"}


def test_worst_path_across_units_with_indirect_calls_and_library_code():
    funcs = parse_callgraph([UNIT_A, UNIT_B])
    merge_elf(funcs, parse_disassembly(DISASSEMBLY))
    resolve(funcs)
    assert funcs["memcpy"].frame == 56 and funcs["memcpy"].source == "elf"
    bound = worst_case(funcs, "reset_handler")
    # reset 16 + main 100 + execute 40 + the deepest address-taken function: kernel1 (300) beats
    # kernel2 + helper (64 + 24), and beats memcpy's 56 on main's other branch.
    assert bound.bytes == 16 + 100 + 40 + 300
    assert [name for name, _ in bound.path] == [
        "reset_handler",
        "main",
        "_Z7executev",
        "(indirect call) b.cc:_ZN12_GLOBAL__N_17kernel1Ev",
        "b.cc:_ZN12_GLOBAL__N_17kernel1Ev",
    ]
    assert bound.computable
    # The __aeabi_helper frame was not parsed (no push/sub): zero, not unknown.
    whole = firmware_bound(funcs)
    assert whole.bytes == bound.bytes + EXCEPTION_FRAME_BYTES + 8


def test_recursion_and_unknown_functions_are_reported():
    unit = """graph: { title: "r.cc"
node: { title: "reset_handler" label: "reset_handler\\nr.cc:1:1\\n8 bytes (static)" }
node: { title: "f" label: "f\\nr.cc:2:1\\n32 bytes (static)" }
node: { title: "g" label: "g\\nr.cc:3:1\\n16 bytes (dynamic)" }
node: { title: "ext" label: "ext" shape : ellipse }
edge: { sourcename: "reset_handler" targetname: "f" label: "" }
edge: { sourcename: "f" targetname: "g" label: "" }
edge: { sourcename: "g" targetname: "f" label: "" }
edge: { sourcename: "g" targetname: "ext" label: "" }
}
"""
    funcs = parse_callgraph([unit])
    resolve(funcs)
    bound = worst_case(funcs, "reset_handler")
    assert not bound.computable
    assert any(n.startswith("recursion: f -> g -> f") for n in bound.notes), bound.notes
    assert any("variable-sized frame: g" in n for n in bound.notes)
    assert any("no frame information (counted as 0): ext" in n for n in bound.notes)
    assert bound.bytes == 8 + 32 + 16


def test_indirect_calls_inside_address_taken_functions_converge():
    # A loader's virtual function (address-taken) that frees through a function pointer (indirect again):
    # a bound, not a recursion.
    unit = """graph: { title: "i.cc"
node: { title: "reset_handler" label: "reset_handler\\ni.cc:1:1\\n8 bytes (static)" }
node: { title: "load" label: "load\\ni.cc:2:1\\n40 bytes (static)" }
node: { title: "free_fn" label: "free_fn\\ni.cc:3:1\\n16 bytes (static)" }
node: { title: "kernel" label: "kernel\\ni.cc:4:1\\n100 bytes (static)" }
edge: { sourcename: "reset_handler" targetname: "__indirect_call" label: "" }
edge: { sourcename: "load" targetname: "__indirect_call" label: "" }
}
"""
    funcs = parse_callgraph([unit])
    resolve(funcs)
    bound = worst_case(funcs, "reset_handler")
    # Indirect calls nest two deep at most: load (40) calling the deepest address-taken function, kernel (100).
    assert bound.computable, bound.notes
    assert bound.bytes == 8 + 40 + 100
