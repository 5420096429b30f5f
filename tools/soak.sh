#!/usr/bin/env bash
# The soak tier (tests/soak/README.md): the runtime run for a long time while its resident memory, open file
# descriptors and heap bytes in use are sampled; any growth past a tolerance after warm-up fails, and under
# AddressSanitizer so does any block LeakSanitizer finds at exit.
#
#   tools/soak.sh short    the CI tier: bazel test //tests/soak:all (20,000 zoo runs, 1,000 load cycles,
#                          2,000 decode steps; seconds)
#   tools/soak.sh long     1,000,000 executions of the zoo's MLP, 100,000 load/run/destroy cycles and 100,000
#                          decode steps of a tiny decoder's chat in the default build, then the same driver built
#                          with --config=asan for 200,000 runs, 20,000 cycles and 100,000 decode steps; writes
#                          bench/results/<date>-soak.md and .json
#   tools/soak.sh asan     the --config=asan part alone (LeakSanitizer at exit), no report
#
# Counts can be changed: SOAK_RUNS, SOAK_CYCLES, SOAK_DECODE_STEPS (default build) and SOAK_ASAN_RUNS,
# SOAK_ASAN_CYCLES, SOAK_ASAN_DECODE_STEPS (the ASan build).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

RUNS="${SOAK_RUNS:-1000000}"
CYCLES="${SOAK_CYCLES:-100000}"
DECODE_STEPS="${SOAK_DECODE_STEPS:-100000}"
ASAN_RUNS="${SOAK_ASAN_RUNS:-200000}"
ASAN_CYCLES="${SOAK_ASAN_CYCLES:-20000}"
ASAN_DECODE_STEPS="${SOAK_ASAN_DECODE_STEPS:-100000}"
TARGETS=(//tests/soak:soak //tests/soak:tiny_decoder //zoo:mlp_pte)

# Builds the driver and its programs in CONFIG's output tree; prints that tree's bin directory.
build() {
  bazel build "$@" "${TARGETS[@]}" >&2
  bazel info "$@" bazel-bin 2>/dev/null
}

# soak BIN JSON RUNS CYCLES DECODE_STEPS: the driver over the MLP and the tiny decoder.
soak() {
  local bin="$1" json="$2"
  "$bin/tests/soak/soak" --zoo "$bin/zoo/mlp.pte" --runs "$3" --cycles "$4" \
    --llm "$bin/tests/soak/tiny_decoder.pte" --decode-steps "$5" --json "$json"
}

asan() {
  local bin
  bin="$(build --config=asan)"
  # LeakSanitizer at exit, as --config=asan's tests run (.bazelrc); its report fails the run.
  ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1 \
    soak "$bin" "$1" "$ASAN_RUNS" "$ASAN_CYCLES" "$ASAN_DECODE_STEPS"
}

case "${1:-}" in
  short)
    bazel test //tests/soak:all
    ;;
  long)
    date="$(date -u +%Y-%m-%d)"
    json="bench/results/$date-soak.json"
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    bin="$(build)"
    soak "$bin" "$scratch/default.jsonl" "$RUNS" "$CYCLES" "$DECODE_STEPS"
    asan "$scratch/asan.jsonl"
    .venv/bin/python3 tests/soak/report.py --default "$scratch/default.jsonl" --asan "$scratch/asan.jsonl" \
      --json "$json" --md "bench/results/$date-soak.md"
    echo "wrote bench/results/$date-soak.md and $json"
    ;;
  asan)
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    asan "$scratch/asan.jsonl"
    ;;
  *)
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
