"""The model zoo: small, seeded models (and their dynamic-shape, control-flow, MLPerf Tiny and int8 variants)
that every stage of Ember is tested, measured and demonstrated on; the commands that export and bundle them; and
running a .pte on the C++ runner with given inputs (runner_io)."""
