"""Ember's benchmark harness: `bench/run` (see bench/README.md). Modules import only the standard library at the
top, so parts of the package run in each of the three venvs (.venv, .venv-executorch, .venv-bench)."""
