"""Ember's developer tools, beside the compiler (exir) and not part of it: they read what exir and the runtime
write. inspect (a .pte's methods, plan and its efficiency), profile (a runtime trace per operator and module),
etdump and raw_trace (the traces' readers), etrecord (the source map a profile joins), debug (the first operator
that leaves eager's numbers) and bundled_program (a program with its test cases, .bpte).

    python -m devtools.inspect model.pte
    python -m devtools.profile model.pte trace.etdp
"""
